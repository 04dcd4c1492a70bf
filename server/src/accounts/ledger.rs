//! The credit ledger on the call path: reserve, settle, release, and the call log, written by writer
//! tasks that group many calls into one transaction (group commit).
//!
//! The rules, each one statement guarded so that it can only happen once:
//! - **reserve**: `UPDATE accounts SET balance = balance - price WHERE id = ? AND balance >= price`
//!   and a `charge` row (amount `-price`, state `held`) keyed by the request id. No row updated means
//!   402: nothing is held, and the balance can never go below zero whatever runs concurrently.
//! - **settle** (the call succeeded): the `charge` row goes `held -> settled`. The balance is untouched.
//! - **release** (the call failed, or its hold expired): the `charge` row goes `held -> released`, the
//!   price goes back on the balance and a `refund` row (`+price`) records it.
//!
//! So at every commit the balance of an account equals the sum of its ledger amounts.
//!
//! A settlement or release is answered only after the transaction holding it has committed, so no
//! call is answered before its charge is committed. A reservation the writer's own count of the
//! balance covers is answered at once, its hold written with the writer's next transaction, at the
//! latest the one of the call's settlement (see `Writer::balances`); other reservations are answered
//! after their commit. Calls of one account always go to the same writer, so
//! writers never wait on each other's rows. Each batch is at most two transactions (reservations, then
//! everything else) whose statements cover many calls at once: the hold rows, the settlements, the
//! call log and the keys' last use are one statement each per batch.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use sqlx::{Any, Transaction};
use tokio::sync::{mpsc, oneshot};

use crate::db::{Backend, Db, DbResult, now};

/// Why a ledger operation has no answer. Never a client's mistake: each is a fault of the service.
#[derive(Debug)]
pub enum LedgerError {
    /// The writer is not running (stopped at shutdown, or its thread ended).
    Stopped,
    /// The transaction that carried the operation failed (alone: see `Writer::run_part`); the
    /// database's message.
    WriteFailed(String),
    /// The writer answered with an outcome of another operation: a bug.
    WrongOutcome,
    /// A read of the ledger (the janitor's list of stale holds) failed.
    Db(sqlx::Error),
}

impl std::fmt::Display for LedgerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LedgerError::Stopped => write!(f, "the ledger writer is not running"),
            LedgerError::WriteFailed(e) => write!(f, "ledger write failed: {e}"),
            LedgerError::WrongOutcome => write!(f, "the ledger answered another operation"),
            LedgerError::Db(e) => write!(f, "ledger read failed: {e}"),
        }
    }
}

impl std::error::Error for LedgerError {}

impl From<sqlx::Error> for LedgerError {
    fn from(e: sqlx::Error) -> Self {
        LedgerError::Db(e)
    }
}

pub type LedgerResult<T> = Result<T, LedgerError>;

/// Operations one transaction carries at most.
const MAX_BATCH: usize = 512;

/// One call as recorded for GET /v1/me.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub request_id: String,
    pub account_id: String,
    pub key_id: String,
    pub key_prefix: String,
    pub endpoint: String,
    pub status: u16,
    pub credits: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// The price is held; the balance after it.
    Held { remaining: i64 },
    /// Not enough credits; the balance, untouched.
    Insufficient { balance: i64 },
}

enum Op {
    Reserve {
        account_id: String,
        request_id: String,
        price: i64,
        reply: oneshot::Sender<LedgerResult<Reservation>>,
    },
    /// Settles the hold and records the call; answers whether a hold was settled.
    Settle {
        record: CallRecord,
        reply: oneshot::Sender<LedgerResult<bool>>,
    },
    /// Releases the hold (if still held) and records the call when there is one.
    Release {
        request_id: String,
        record: Option<CallRecord>,
        reply: Option<oneshot::Sender<LedgerResult<()>>>,
    },
    /// Records a call that held nothing (refused before the reservation).
    Log {
        record: CallRecord,
    },
    /// Answered once every operation sent before it to this writer is committed.
    Flush {
        reply: oneshot::Sender<()>,
    },
    Stop {
        reply: oneshot::Sender<()>,
    },
}

#[cfg_attr(test, derive(Debug, PartialEq))]
enum Outcome {
    Reserved(Reservation),
    Settled(bool),
    Done,
}

#[derive(Clone)]
pub struct Ledger {
    writers: Vec<mpsc::Sender<Op>>,
}

impl Ledger {
    /// Starts the writers: one on SQLite (it has one writer anyway), four on PostgreSQL.
    pub fn start(db: &Db) -> Ledger {
        let n = match db.backend {
            Backend::Sqlite => 1,
            Backend::Postgres => 4,
        };
        // Each writer runs on a thread of its own rather than as a task among the requests: it waits
        // on the database many times per batch, and each wake-up would otherwise queue behind every
        // request task of the runtime.
        let handle = tokio::runtime::Handle::current();
        let writers = (0..n)
            .map(|i| {
                let (tx, rx) = mpsc::channel(65_536);
                let (db, handle) = (db.clone(), handle.clone());
                std::thread::Builder::new()
                    .name(format!("ledger-writer-{i}"))
                    .spawn(move || handle.block_on(writer(db, rx)))
                    .expect("start a ledger writer thread");
                tx
            })
            .collect();
        Ledger { writers }
    }

    fn writer_for(&self, account_id: &str) -> &mpsc::Sender<Op> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        account_id.hash(&mut h);
        &self.writers[(h.finish() as usize) % self.writers.len()]
    }

    async fn send(&self, account_id: &str, op: Op) -> LedgerResult<()> {
        self.writer_for(account_id)
            .send(op)
            .await
            .map_err(|_| LedgerError::Stopped)
    }

    pub async fn reserve(
        &self,
        account_id: &str,
        request_id: &str,
        price: i64,
    ) -> LedgerResult<Reservation> {
        let (reply, rx) = oneshot::channel();
        self.send(
            account_id,
            Op::Reserve {
                account_id: account_id.into(),
                request_id: request_id.into(),
                price,
                reply,
            },
        )
        .await?;
        rx.await.map_err(|_| LedgerError::Stopped)?
    }

    /// Turns the hold into a charge; `false` when it was no longer held (released by the janitor).
    pub async fn settle(&self, record: CallRecord) -> LedgerResult<bool> {
        let (reply, rx) = oneshot::channel();
        let account = record.account_id.clone();
        self.send(&account, Op::Settle { record, reply }).await?;
        rx.await.map_err(|_| LedgerError::Stopped)?
    }

    pub async fn release(&self, record: CallRecord) -> LedgerResult<()> {
        let (reply, rx) = oneshot::channel();
        let account = record.account_id.clone();
        self.send(
            &account,
            Op::Release {
                request_id: record.request_id.clone(),
                record: Some(record),
                reply: Some(reply),
            },
        )
        .await?;
        rx.await.map_err(|_| LedgerError::Stopped)?
    }

    /// Releases a hold with no call to record (the janitor).
    pub async fn release_hold(&self, account_id: &str, request_id: &str) -> LedgerResult<()> {
        let (reply, rx) = oneshot::channel();
        self.send(
            account_id,
            Op::Release {
                request_id: request_id.into(),
                record: None,
                reply: Some(reply),
            },
        )
        .await?;
        rx.await.map_err(|_| LedgerError::Stopped)?
    }

    /// Records a call that held nothing; written with the next batch (and before shutdown ends).
    pub async fn log(&self, record: CallRecord) {
        let account = record.account_id.clone();
        let _ = self.send(&account, Op::Log { record }).await;
    }

    /// Waits until every operation sent for `account_id` before this call is committed (pending holds
    /// and call records included), so a read that follows sees the caller's own calls.
    pub async fn flush(&self, account_id: &str) {
        let (reply, rx) = oneshot::channel();
        if self.send(account_id, Op::Flush { reply }).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// Waits until every operation sent before this call is committed, then stops the writers.
    pub async fn shutdown(&self) {
        for w in &self.writers {
            let (reply, rx) = oneshot::channel();
            if w.send(Op::Stop { reply }).await.is_ok() {
                let _ = rx.await;
            }
        }
    }

    /// Releases every hold created before `cutoff` (unix seconds); returns how many.
    pub async fn release_stale(&self, db: &Db, cutoff: i64) -> LedgerResult<usize> {
        let stale: Vec<(String, String)> = sqlx::query_as(
            "SELECT account_id, ref FROM credit_entries WHERE kind = 'charge' AND state = 'held' AND created_at < $1",
        )
        .bind(cutoff)
        .fetch_all(&db.read)
        .await?;
        for (account, request) in &stale {
            self.release_hold(account, request).await?;
        }
        Ok(stale.len())
    }
}

async fn writer(db: Db, mut rx: mpsc::Receiver<Op>) {
    let mut w = Writer {
        db,
        last_used: HashMap::new(),
        balances: HashMap::new(),
        pending: Vec::new(),
    };
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let first = if w.pending.is_empty() {
            rx.recv().await
        } else {
            match tokio::time::timeout(FLUSH_HOLDS_AFTER, rx.recv()).await {
                Ok(op) => op,
                Err(_) => {
                    w.run(Vec::new()).await;
                    continue;
                }
            }
        };
        let Some(first) = first else {
            w.run(Vec::new()).await;
            return;
        };
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let stop = batch
            .iter()
            .position(|op| matches!(op, Op::Stop { .. }))
            .map(|i| batch.split_off(i));
        let mut flushed = Vec::new();
        let ops: Vec<Op> = batch
            .drain(..)
            .filter_map(|op| match op {
                Op::Flush { reply } => {
                    flushed.push(reply);
                    None
                }
                op => w.pass_unless_held(op),
            })
            .collect();
        if !ops.is_empty() || stop.is_some() || !flushed.is_empty() {
            w.run(ops).await;
        }
        for reply in flushed {
            let _ = reply.send(());
        }
        if let Some(mut rest) = stop {
            if let Op::Stop { reply } = rest.remove(0) {
                let _ = reply.send(());
            }
            return;
        }
    }
}

/// `last_used_at` of a key is written at most once a minute.
const LAST_USED_EVERY: i64 = 60;

/// Holds taken in memory reach the database at the latest this long after, when no other operation
/// carries them there first.
const FLUSH_HOLDS_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// A hold taken in memory (`Writer::pass_unless_held`), written with the next transaction.
struct PendingHold {
    account_id: String,
    request_id: String,
    price: i64,
}

struct Writer {
    db: Db,
    /// When this writer last wrote each key's `last_used_at`.
    last_used: HashMap<String, i64>,
    /// For the accounts of this writer whose balance it has seen: that balance as last committed by
    /// this writer, minus the holds in `pending`. Only this writer takes credits from a balance (grants
    /// and top-ups only add), so the true balance is never below it: a hold it allows can always be
    /// written. Entries are refreshed from the database by every transaction touching the account.
    balances: HashMap<String, i64>,
    /// Holds answered from `balances` and not yet written. They are written, each with its balance
    /// decrement, in the next transaction this writer commits, which is before or with the
    /// settlement or release of the same call (that call's next operation, on this writer). A call is
    /// answered only after its settlement commits, so a crash that loses pending holds loses only
    /// calls that were never answered; nothing was charged for them and nothing stays held.
    pending: Vec<PendingHold>,
}

impl Writer {
    /// Answers a reservation at once when the account's known balance covers it (the hold is then
    /// pending, see `pending`); hands back every other operation, for the database.
    fn pass_unless_held(&mut self, op: Op) -> Option<Op> {
        let Op::Reserve {
            account_id,
            request_id,
            price,
            reply,
        } = op
        else {
            return Some(op);
        };
        match self.balances.get_mut(&account_id) {
            Some(balance) if *balance >= price && price >= 0 && self.pending.len() < MAX_BATCH => {
                *balance -= price;
                let remaining = *balance;
                self.pending.push(PendingHold {
                    account_id,
                    request_id,
                    price,
                });
                let _ = reply.send(Ok(Reservation::Held { remaining }));
                None
            }
            // Unknown balance, or too low by this writer's count (a grant may have raised it since):
            // the database decides, as for every reservation before.
            _ => Some(Op::Reserve {
                account_id,
                request_id,
                price,
                reply,
            }),
        }
    }

    /// On PostgreSQL, reservations first, in a transaction of their own, answered at its commit; then
    /// settlements, releases and the call log in a second one. The first commits asynchronously
    /// (`synchronous_commit = off`): a reservation lost in a crash holds nothing, and the second,
    /// synchronous commit flushes the log up to itself, reservations included. So each call waits for
    /// one durable commit, its settlement, before it is answered. On SQLite one transaction.
    async fn run(&mut self, batch: Vec<Op>) {
        // SQLite commits without fsync (see `db`), so one transaction serves the whole batch there.
        let parts = if self.db.backend == Backend::Postgres {
            let (reserves, rest): (Vec<Op>, Vec<Op>) = batch
                .into_iter()
                .partition(|op| matches!(op, Op::Reserve { .. }));
            vec![reserves, rest]
        } else {
            vec![batch]
        };
        // Pending holds go with the first transaction, before anything else reads or writes their
        // balances (and before the settlements and releases that need them). The balances the
        // transactions leave are then the whole truth for `balances`: no hold is taken meanwhile.
        let mut pending = std::mem::take(&mut self.pending);
        let last = parts.len() - 1;
        for (i, part) in parts.into_iter().enumerate() {
            let pending = if !part.is_empty() || i == last {
                std::mem::take(&mut pending)
            } else {
                Vec::new()
            };
            if !part.is_empty() || !pending.is_empty() {
                let (n, started) = (part.len() + pending.len(), std::time::Instant::now());
                self.run_part(part, pending).await;
                tracing::debug!(
                    ops = n,
                    micros = started.elapsed().as_micros() as u64,
                    "ledger batch"
                );
            }
        }
    }

    /// Applies operations in one transaction and answers each after the commit. If the transaction
    /// fails, each operation is retried alone, so one bad operation fails only itself.
    ///
    /// Pending holds are written first. Should that transaction fail they are dropped (the calls'
    /// settlements then find nothing held, and the calls are free) and every known balance is
    /// forgotten, so the next reservations go to the database again.
    async fn run_part(&mut self, ops: Vec<Op>, pending: Vec<PendingHold>) {
        let result = self.apply(&ops, &pending).await;
        if result.is_err() {
            self.balances.clear();
            if !pending.is_empty() {
                tracing::error!(
                    holds = pending.len(),
                    "pending holds not written; their calls will not be charged"
                );
            }
        }
        match result {
            Ok(outcomes) => {
                for (op, outcome) in ops.into_iter().zip(outcomes) {
                    answer(op, Ok(outcome));
                }
            }
            Err(e) if ops.len() == 1 => {
                for op in ops {
                    fail(op, &e);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, ops = ops.len(), "ledger batch failed; applying its operations one by one");
                for op in ops {
                    let one = [op];
                    let result = self.apply(&one, &[]).await;
                    let [op] = one;
                    match result {
                        Ok(mut o) => {
                            answer(op, Ok(o.remove(0)));
                        }
                        Err(e) => fail(op, &e),
                    }
                }
            }
        }
    }

    /// One transaction of the batch, in named phases: pending holds, reservations, the hold rows,
    /// settlements, releases (with the call records), the call log, the keys' last use; then the
    /// commit, after which this writer remembers the balances and last uses it wrote.
    async fn apply(&mut self, ops: &[Op], pending: &[PendingHold]) -> DbResult<Vec<Outcome>> {
        // The batch statements have as many shapes as batch sizes. SQLite keeps the few common ones
        // prepared on its connection (a least-recently-used cache); PostgreSQL parses each.
        let cache = self.db.backend == Backend::Sqlite;
        let mut b = Batch {
            at: now(),
            cache,
            outcomes: ops.iter().map(|_| None).collect(),
            seen: HashMap::new(),
            holds: Vec::new(),
        };
        let mut tx = self.begin(ops).await?;
        b.write_pending(&mut tx, pending, &mut self.balances)
            .await?;
        b.reserve(&mut tx, ops).await?;
        b.insert_holds(&mut tx).await?;
        let settled = b.settle(&mut tx, ops).await?;
        let calls = b.release_and_record(&mut tx, ops, &settled).await?;
        b.log_calls(&mut tx, &calls).await?;
        let used = b.touch_keys(&mut tx, &calls, &self.last_used).await?;
        tx.commit().await?;
        self.remember(b.seen, used, b.at);
        Ok(b.outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Outcome::Done))
            .collect())
    }

    /// Begins the write transaction; one of reservations only commits asynchronously on PostgreSQL
    /// (see `run`).
    async fn begin(&self, ops: &[Op]) -> DbResult<Tx> {
        let mut tx = self.db.begin_write().await?;
        let only_reserves = ops.iter().all(|op| matches!(op, Op::Reserve { .. }));
        if only_reserves && self.db.backend == Backend::Postgres {
            sqlx::query("SET LOCAL synchronous_commit TO OFF")
                .execute(&mut *tx)
                .await?;
        }
        Ok(tx)
    }

    /// After a commit: the balances the transaction left and the keys whose last use it wrote.
    fn remember(&mut self, seen: HashMap<String, i64>, used: Vec<&str>, at: i64) {
        if self.balances.len() > 100_000 {
            self.balances.clear();
        }
        self.balances.extend(seen);
        if self.last_used.len() > 100_000 {
            self.last_used.clear();
        }
        for k in used {
            self.last_used.insert(k.to_string(), at);
        }
    }
}

type Tx = Transaction<'static, Any>;

/// What one transaction of the ledger has done so far, phase by phase.
struct Batch<'a> {
    at: i64,
    /// Whether the batch statements are kept prepared (SQLite).
    cache: bool,
    /// The answer of each operation, by its index in the batch.
    outcomes: Vec<Option<Outcome>>,
    /// Balances this transaction leaves, for `Writer::balances` once it commits.
    seen: HashMap<String, i64>,
    /// Hold rows to insert: request id, account, amount.
    holds: Vec<(&'a str, &'a str, i64)>,
}

impl<'a> Batch<'a> {
    /// Pending holds: one guarded decrement per account for all of its holds, which the database
    /// still checks (`balance >= total`): were the count of `balances` ever wrong, the holds of that
    /// account are dropped (their calls are free) rather than the balance going below zero, and the
    /// account's known balance is forgotten.
    async fn write_pending(
        &mut self,
        tx: &mut Tx,
        pending: &'a [PendingHold],
        balances: &mut HashMap<String, i64>,
    ) -> DbResult<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let mut totals: Vec<(&str, i64)> = Vec::new();
        for h in pending {
            match totals.iter_mut().find(|(a, _)| *a == h.account_id) {
                Some((_, t)) => *t += h.price,
                None => totals.push((h.account_id.as_str(), h.price)),
            }
        }
        let paid = take_groups(tx, &totals, self.cache).await?;
        for h in pending {
            if paid.contains_key(&h.account_id) {
                self.holds.push((&h.request_id, &h.account_id, -h.price));
            } else {
                tracing::error!(account = %h.account_id, "a pending hold exceeded the balance; dropped");
            }
        }
        for (account, _) in &totals {
            if !paid.contains_key(*account) {
                balances.remove(*account);
            }
        }
        self.seen.extend(paid);
        Ok(())
    }

    /// Reservations. The batch's reservations are grouped by account; one statement takes from every
    /// account that can pay for all of its group (`balance >= group total`, checked per row, so the
    /// balance never goes below zero). An account that cannot pay for its whole group, which only
    /// happens near zero, is then served one reservation at a time, in arrival order.
    async fn reserve(&mut self, tx: &mut Tx, ops: &'a [Op]) -> DbResult<()> {
        let mut groups: Vec<(&str, i64, Vec<usize>)> = Vec::new();
        let mut group_of: HashMap<&str, usize> = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            if let Op::Reserve {
                account_id, price, ..
            } = op
            {
                let g = *group_of.entry(account_id.as_str()).or_insert_with(|| {
                    groups.push((account_id.as_str(), 0, Vec::new()));
                    groups.len() - 1
                });
                groups[g].1 += *price;
                groups[g].2.push(i);
            }
        }
        let totals: Vec<(&str, i64)> = groups.iter().map(|(a, t, _)| (*a, *t)).collect();
        let paid = take_groups(tx, &totals, self.cache).await?;
        self.seen.extend(paid.iter().map(|(a, b)| (a.clone(), *b)));
        for (account, total, members) in &groups {
            if let Some(after) = paid.get(*account) {
                let mut balance = after + total;
                for &i in members {
                    if let Op::Reserve {
                        request_id, price, ..
                    } = &ops[i]
                    {
                        balance -= price;
                        self.holds.push((request_id, account, -*price));
                        self.outcomes[i] =
                            Some(Outcome::Reserved(Reservation::Held { remaining: balance }));
                    }
                }
                continue;
            }
            for &i in members {
                if let Op::Reserve {
                    request_id, price, ..
                } = &ops[i]
                {
                    let r = self.reserve_one(tx, account, request_id, *price).await?;
                    self.outcomes[i] = Some(Outcome::Reserved(r));
                }
            }
        }
        Ok(())
    }

    /// One reservation of an account that could not pay for its whole group.
    async fn reserve_one(
        &mut self,
        tx: &mut Tx,
        account: &'a str,
        request_id: &'a str,
        price: i64,
    ) -> DbResult<Reservation> {
        let held: Option<(i64,)> = sqlx::query_as(
            "UPDATE accounts SET balance = balance - $1 WHERE id = $2 AND balance >= $1 RETURNING balance",
        )
        .bind(price)
        .bind(account)
        .fetch_optional(&mut **tx)
        .await?;
        if let Some((remaining,)) = held {
            self.holds.push((request_id, account, -price));
            self.seen.insert(account.to_string(), remaining);
            return Ok(Reservation::Held { remaining });
        }
        let balance: Option<(i64,)> = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
            .bind(account)
            .fetch_optional(&mut **tx)
            .await?;
        if let Some((b,)) = balance {
            self.seen.insert(account.to_string(), b);
        }
        Ok(Reservation::Insufficient {
            balance: balance.map(|b| b.0).unwrap_or(0),
        })
    }

    /// The `charge` rows (state `held`) of the pending holds and the reservations, in one statement.
    async fn insert_holds(&mut self, tx: &mut Tx) -> DbResult<()> {
        if self.holds.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) VALUES {}",
            rows(self.holds.len(), 3, 2, |r| format!(
                "('charge', ${}, ${}, ${}, 'held', $1, $1)",
                r,
                r + 1,
                r + 2
            ))
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .persistent(self.cache)
            .bind(self.at);
        for (r, a, amount) in &self.holds {
            q = q.bind(*r).bind(*a).bind(*amount);
        }
        q.execute(&mut **tx).await?;
        Ok(())
    }

    /// Settlements: every held charge of the batch flips to `settled` in one statement; answers the
    /// request ids that were still held.
    async fn settle(&mut self, tx: &mut Tx, ops: &[Op]) -> DbResult<HashSet<String>> {
        let settle_refs: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Settle { record, .. } => Some(record.request_id.as_str()),
                _ => None,
            })
            .collect();
        if settle_refs.is_empty() {
            return Ok(HashSet::new());
        }
        let sql = format!(
            "UPDATE credit_entries SET state = 'settled', updated_at = $1 \
             WHERE kind = 'charge' AND state = 'held' AND ref IN ({}) RETURNING ref",
            (0..settle_refs.len())
                .map(|i| format!("${}", i + 2))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut q = sqlx::query_as::<_, (String,)>(sqlx::AssertSqlSafe(sql))
            .persistent(self.cache)
            .bind(self.at);
        for r in &settle_refs {
            q = q.bind(*r);
        }
        Ok(q.fetch_all(&mut **tx)
            .await?
            .into_iter()
            .map(|r| r.0)
            .collect())
    }

    /// Releases (failed calls, expired holds), one at a time: they are the rare path. Answers every
    /// operation other than a reservation, and the calls to record: a call whose charge was not
    /// settled (released, or never held) is recorded at 0 credits.
    async fn release_and_record(
        &mut self,
        tx: &mut Tx,
        ops: &[Op],
        settled: &HashSet<String>,
    ) -> DbResult<Vec<CallRecord>> {
        let mut calls: Vec<CallRecord> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Settle { record, .. } => {
                    let done = settled.contains(&record.request_id);
                    let mut record = record.clone();
                    if !done {
                        record.credits = 0;
                    }
                    calls.push(record);
                    self.outcomes[i] = Some(Outcome::Settled(done));
                }
                Op::Release {
                    request_id, record, ..
                } => {
                    if let Some((account, balance)) = release(tx, request_id, self.at).await? {
                        self.seen.insert(account, balance);
                    }
                    if let Some(record) = record {
                        let mut record = record.clone();
                        record.credits = 0;
                        calls.push(record);
                    }
                    self.outcomes[i] = Some(Outcome::Done);
                }
                Op::Log { record } => {
                    calls.push(record.clone());
                    self.outcomes[i] = Some(Outcome::Done);
                }
                Op::Reserve { .. } => {}
                Op::Flush { .. } | Op::Stop { .. } => self.outcomes[i] = Some(Outcome::Done),
            }
        }
        Ok(calls)
    }

    /// The call log, in one statement.
    async fn log_calls(&self, tx: &mut Tx, calls: &[CallRecord]) -> DbResult<()> {
        if calls.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO calls (request_id, account_id, key_id, key_prefix, endpoint, status, credits, created_at) VALUES {}",
            rows(calls.len(), 7, 2, |r| format!(
                "(${}, ${}, ${}, ${}, ${}, ${}, ${}, $1)",
                r,
                r + 1,
                r + 2,
                r + 3,
                r + 4,
                r + 5,
                r + 6
            ))
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .persistent(self.cache)
            .bind(self.at);
        for c in calls {
            q = q
                .bind(c.request_id.as_str())
                .bind(c.account_id.as_str())
                .bind(c.key_id.as_str())
                .bind(c.key_prefix.as_str())
                .bind(c.endpoint.as_str())
                .bind(i64::from(c.status))
                .bind(c.credits);
        }
        q.execute(&mut **tx).await?;
        Ok(())
    }

    /// Last use of the keys, at most once a minute per key; answers the keys written.
    async fn touch_keys<'c>(
        &self,
        tx: &mut Tx,
        calls: &'c [CallRecord],
        last_used: &HashMap<String, i64>,
    ) -> DbResult<Vec<&'c str>> {
        let at = self.at;
        let mut used: Vec<&str> = calls
            .iter()
            .map(|c| c.key_id.as_str())
            .filter(|k| last_used.get(*k).is_none_or(|t| at - t >= LAST_USED_EVERY))
            .collect();
        used.sort_unstable();
        used.dedup();
        if used.is_empty() {
            return Ok(used);
        }
        let sql = format!(
            "UPDATE api_keys SET last_used_at = $1 WHERE id IN ({})",
            (0..used.len())
                .map(|i| format!("${}", i + 2))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .persistent(self.cache)
            .bind(at);
        for k in &used {
            q = q.bind(*k);
        }
        q.execute(&mut **tx).await?;
        Ok(used)
    }
}

/// `n` rows of placeholders; row `i` starts at parameter `first + i * width`.
fn rows(n: usize, width: usize, first: usize, row: impl Fn(usize) -> String) -> String {
    (0..n)
        .map(|i| row(first + i * width))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Takes `total` from each account's balance where the balance covers it, in one statement; answers the
/// balances after, of the accounts that paid.
async fn take_groups(
    tx: &mut Transaction<'static, Any>,
    groups: &[(&str, i64)],
    cache: bool,
) -> DbResult<HashMap<String, i64>> {
    if groups.is_empty() {
        return Ok(HashMap::new());
    }
    let cases: String = (0..groups.len())
        .map(|g| format!("WHEN ${} THEN ${}", 2 * g + 1, 2 * g + 2))
        .collect::<Vec<_>>()
        .join(" ");
    let ids: String = (0..groups.len())
        .map(|g| format!("${}", 2 * g + 1))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "UPDATE accounts SET balance = balance - (CASE id {cases} END) \
         WHERE id IN ({ids}) AND balance >= (CASE id {cases} END) RETURNING id, balance"
    );
    let mut q = sqlx::query_as::<_, (String, i64)>(sqlx::AssertSqlSafe(sql)).persistent(cache);
    for (account, total) in groups {
        q = q.bind(*account).bind(*total);
    }
    Ok(q.fetch_all(&mut **tx).await?.into_iter().collect())
}

/// Releases a hold if still held; answers the account and its balance after the refund.
async fn release(
    tx: &mut Transaction<'static, Any>,
    request_id: &str,
    at: i64,
) -> DbResult<Option<(String, i64)>> {
    let released: Option<(String, i64)> = sqlx::query_as(
        "UPDATE credit_entries SET state = 'released', updated_at = $1 \
         WHERE kind = 'charge' AND ref = $2 AND state = 'held' RETURNING account_id, amount",
    )
    .bind(at)
    .bind(request_id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((account_id, amount)) = released else {
        return Ok(None);
    };
    let (balance,): (i64,) = sqlx::query_as(
        "UPDATE accounts SET balance = balance + $1 WHERE id = $2 RETURNING balance",
    )
    .bind(-amount)
    .bind(account_id.as_str())
    .fetch_one(&mut **tx)
    .await?;
    {
        sqlx::query(
            "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) \
             VALUES ('refund', $1, $2, $3, 'done', $4, $4)",
        )
        .bind(request_id)
        .bind(account_id.as_str())
        .bind(-amount)
        .bind(at)
        .execute(&mut **tx)
        .await?;
    }
    Ok(Some((account_id, balance)))
}

/// Answers a failed operation. The failure is logged here only when no caller receives it (a call
/// record, or a caller gone): a caller that does logs it once, with the request it fails.
fn fail(op: Op, e: &sqlx::Error) {
    if !answer(op, Err(e.to_string())) {
        tracing::error!(error = %e, "ledger write failed");
    }
}

/// Sends each operation its answer; `Err` carries the failed transaction's message. Answers whether
/// a caller received it (a caller that did logs a failure itself; see `Writer::run_part`).
fn answer(op: Op, outcome: Result<Outcome, String>) -> bool {
    let failed = |m: &String| LedgerError::WriteFailed(m.clone());
    match op {
        Op::Reserve { reply, .. } => reply
            .send(match &outcome {
                Ok(Outcome::Reserved(r)) => Ok(*r),
                Ok(_) => Err(LedgerError::WrongOutcome),
                Err(m) => Err(failed(m)),
            })
            .is_ok(),
        Op::Settle { reply, .. } => reply
            .send(match &outcome {
                Ok(Outcome::Settled(b)) => Ok(*b),
                Ok(_) => Err(LedgerError::WrongOutcome),
                Err(m) => Err(failed(m)),
            })
            .is_ok(),
        Op::Release { reply, .. } => reply.is_some_and(|reply| {
            reply
                .send(outcome.map(|_| ()).map_err(|m| failed(&m)))
                .is_ok()
        }),
        Op::Log { .. } | Op::Flush { .. } | Op::Stop { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    //! Each phase of `Writer::apply`, and the retry of a failed batch, on SQLite and on PostgreSQL
    //! (`TEST_DATABASE_URL`, else the local server; skipped when unreachable unless `CI` is set).

    use super::writer as writer_task;
    use super::*;

    const PG_ADMIN_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";

    fn suffix() -> String {
        crate::accounts::secrets::random_base62(12).to_ascii_lowercase()
    }

    /// A PostgreSQL database of one test, dropped with this guard.
    struct Dropped(Option<String>);

    impl Drop for Dropped {
        fn drop(&mut self) {
            let Some(name) = self.0.take() else { return };
            let admin =
                std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN_DEFAULT.into());
            // A runtime of its own: the test's is ending.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                rt.block_on(async {
                    if let Ok(pool) = sqlx::AnyPool::connect(&admin).await {
                        let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                        )))
                        .execute(&pool)
                        .await;
                    }
                });
            })
            .join();
        }
    }

    /// A migrated database of one test: SQLite in a temp dir, or a new PostgreSQL database.
    async fn database(backend: Backend) -> Option<(Db, Dropped)> {
        let url = match backend {
            Backend::Sqlite => {
                let dir = std::env::temp_dir().join(format!("ss-ledger-{}", suffix()));
                std::fs::create_dir_all(&dir).expect("temp dir");
                (
                    format!("sqlite://{}/db.sqlite?mode=rwc", dir.display()),
                    None,
                )
            }
            Backend::Postgres => {
                let admin =
                    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN_DEFAULT.into());
                sqlx::any::install_default_drivers();
                let pool = match sqlx::AnyPool::connect(&admin).await {
                    Ok(p) => p,
                    Err(e) if std::env::var_os("CI").is_none() => {
                        eprintln!("NOTICE: PostgreSQL test skipped, {admin}: {e}");
                        return None;
                    }
                    Err(e) => panic!("PostgreSQL at {admin} is unreachable and CI is set: {e}"),
                };
                let name = format!("t_ledger_{}", suffix());
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&pool)
                    .await
                    .expect("create the test database");
                pool.close().await;
                let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
                (format!("{base}/{name}"), Some(name))
            }
        };
        let (url, name) = url;
        let guard = Dropped(name);
        let db = Db::connect_with(&url, "normal").await.expect("connect");
        Some((db, guard))
    }

    /// Runs `test` on SQLite and on PostgreSQL.
    macro_rules! on_both {
        ($name:ident, $body:expr) => {
            mod $name {
                use super::*;
                #[tokio::test]
                async fn sqlite() {
                    let (db, _guard) = database(Backend::Sqlite).await.expect("sqlite");
                    ($body)(db.clone()).await;
                    db.close().await;
                }
                #[tokio::test]
                async fn postgres() {
                    if let Some((db, _guard)) = database(Backend::Postgres).await {
                        ($body)(db.clone()).await;
                        db.close().await;
                    }
                }
            }
        };
    }

    fn writer(db: &Db) -> Writer {
        Writer {
            db: db.clone(),
            last_used: HashMap::new(),
            balances: HashMap::new(),
            pending: Vec::new(),
        }
    }

    async fn account(db: &Db, id: &str, balance: i64) {
        sqlx::query("INSERT INTO accounts (id, email, balance, created_at) VALUES ($1, $2, $3, 0)")
            .bind(id)
            .bind(format!("{id}@example.com"))
            .bind(balance)
            .execute(&db.write)
            .await
            .expect("account");
        // The books stay balanced: the opening balance is a grant.
        sqlx::query(
            "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) \
             VALUES ('grant', $1, $1, $2, 'done', 0, 0)",
        )
        .bind(id)
        .bind(balance)
        .execute(&db.write)
        .await
        .expect("grant");
        sqlx::query(
            "INSERT INTO api_keys (id, account_id, key_hash, prefix, created_at) VALUES ($1, $2, $1, 'ss_x', 0)",
        )
        .bind(format!("key_{id}"))
        .bind(id)
        .execute(&db.write)
        .await
        .expect("key");
    }

    async fn balance(db: &Db, id: &str) -> i64 {
        let (b,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
            .bind(id)
            .fetch_one(&db.read)
            .await
            .expect("balance");
        b
    }

    async fn charge_state(db: &Db, request_id: &str) -> Option<String> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT state FROM credit_entries WHERE kind = 'charge' AND ref = $1")
                .bind(request_id)
                .fetch_optional(&db.read)
                .await
                .expect("charge");
        row.map(|r| r.0)
    }

    fn record(account: &str, request_id: &str, credits: i64) -> CallRecord {
        CallRecord {
            request_id: request_id.into(),
            account_id: account.into(),
            key_id: format!("key_{account}"),
            key_prefix: "ss_x".into(),
            endpoint: "/v1/test".into(),
            status: 200,
            credits,
        }
    }

    fn reserve(
        account: &str,
        request_id: &str,
        price: i64,
    ) -> (Op, oneshot::Receiver<LedgerResult<Reservation>>) {
        let (reply, rx) = oneshot::channel();
        let op = Op::Reserve {
            account_id: account.into(),
            request_id: request_id.into(),
            price,
            reply,
        };
        (op, rx)
    }

    fn settle(record: CallRecord) -> (Op, oneshot::Receiver<LedgerResult<bool>>) {
        let (reply, rx) = oneshot::channel();
        (Op::Settle { record, reply }, rx)
    }

    fn pending(account: &str, request_id: &str, price: i64) -> PendingHold {
        PendingHold {
            account_id: account.into(),
            request_id: request_id.into(),
            price,
        }
    }

    fn batch<'a>(ops: &[Op]) -> Batch<'a> {
        Batch {
            at: now(),
            cache: false,
            outcomes: ops.iter().map(|_| None).collect(),
            seen: HashMap::new(),
            holds: Vec::new(),
        }
    }

    on_both!(
        pending_holds_are_taken_or_dropped_per_account,
        |db: Db| async move {
            account(&db, "a", 10).await;
            account(&db, "b", 3).await;
            let mut w = writer(&db);
            w.balances.insert("b".into(), 100);
            let holds = [
                pending("a", "r1", 4),
                pending("a", "r2", 5),
                pending("b", "r3", 4),
            ];
            let mut b = batch(&[]);
            let mut tx = db.begin_write().await.expect("tx");
            b.write_pending(&mut tx, &holds, &mut w.balances)
                .await
                .expect("phase");
            tx.commit().await.expect("commit");
            // a pays for both of its holds at once; b cannot, so its hold is dropped and its count forgotten.
            assert_eq!(b.holds, vec![("r1", "a", -4), ("r2", "a", -5)]);
            assert_eq!(b.seen.get("a"), Some(&1));
            assert!(!b.seen.contains_key("b"));
            assert!(!w.balances.contains_key("b"));
            assert_eq!(balance(&db, "a").await, 1);
            assert_eq!(balance(&db, "b").await, 3);
        }
    );

    on_both!(
        reservations_are_grouped_then_served_one_by_one,
        |db: Db| async move {
            account(&db, "a", 10).await;
            account(&db, "b", 5).await;
            let (r1, _) = reserve("a", "r1", 3);
            let (r2, _) = reserve("b", "r2", 3);
            let (r3, _) = reserve("a", "r3", 3);
            let (r4, _) = reserve("b", "r4", 3);
            let ops = [r1, r2, r3, r4];
            let mut b = batch(&ops);
            let mut tx = db.begin_write().await.expect("tx");
            b.reserve(&mut tx, &ops).await.expect("phase");
            tx.commit().await.expect("commit");
            let held = |remaining| Some(Outcome::Reserved(Reservation::Held { remaining }));
            // a pays for its group (6 of 10) in one statement; b cannot pay 6 of 5, so its first
            // reservation is held and its second finds the balance too low.
            assert_eq!(b.outcomes[0], held(7));
            assert_eq!(b.outcomes[2], held(4));
            assert_eq!(b.outcomes[1], held(2));
            assert_eq!(
                b.outcomes[3],
                Some(Outcome::Reserved(Reservation::Insufficient { balance: 2 }))
            );
            assert_eq!(b.holds.len(), 3);
            assert_eq!((b.seen["a"], b.seen["b"]), (4, 2));
            assert_eq!((balance(&db, "a").await, balance(&db, "b").await), (4, 2));
        }
    );

    on_both!(
        holds_are_written_and_settled_in_one_statement_each,
        |db: Db| async move {
            account(&db, "a", 10).await;
            let mut b = batch(&[]);
            b.holds = vec![("r1", "a", -2), ("r2", "a", -3)];
            let mut tx = db.begin_write().await.expect("tx");
            b.insert_holds(&mut tx).await.expect("holds");
            // r9 was never held: a settlement finds nothing for it.
            let (s1, _) = settle(record("a", "r1", 2));
            let (s9, _) = settle(record("a", "r9", 2));
            let ops = [s1, s9];
            let settled = b.settle(&mut tx, &ops).await.expect("settle");
            tx.commit().await.expect("commit");
            assert_eq!(settled, HashSet::from(["r1".to_string()]));
            assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("settled"));
            assert_eq!(charge_state(&db, "r2").await.as_deref(), Some("held"));
        }
    );

    on_both!(
        releases_refund_and_unsettled_calls_are_free,
        |db: Db| async move {
            account(&db, "a", 10).await;
            let mut w = writer(&db);
            let (r1, _) = reserve("a", "r1", 4);
            w.apply(&[r1], &[]).await.expect("reserve");
            assert_eq!(balance(&db, "a").await, 6);
            let (s2, _) = settle(record("a", "r2", 4));
            let ops = [
                Op::Release {
                    request_id: "r1".into(),
                    record: Some(record("a", "r1", 4)),
                    reply: None,
                },
                s2,
                Op::Log {
                    record: record("a", "r3", 0),
                },
            ];
            let mut b = batch(&ops);
            let mut tx = db.begin_write().await.expect("tx");
            let calls = b
                .release_and_record(&mut tx, &ops, &HashSet::new())
                .await
                .expect("phase");
            tx.commit().await.expect("commit");
            assert_eq!(b.seen.get("a"), Some(&10));
            assert_eq!(balance(&db, "a").await, 10);
            assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("released"));
            let credits: Vec<(&str, i64)> = calls
                .iter()
                .map(|c| (c.request_id.as_str(), c.credits))
                .collect();
            assert_eq!(credits, vec![("r1", 0), ("r2", 0), ("r3", 0)]);
            assert_eq!(b.outcomes[1], Some(Outcome::Settled(false)));
            assert!(ledger_balanced(&db).await);
        }
    );

    on_both!(
        calls_are_logged_and_last_use_written_once_a_minute,
        |db: Db| async move {
            account(&db, "a", 10).await;
            let calls = [record("a", "r1", 1), record("a", "r2", 1)];
            let b = batch(&[]);
            let mut tx = db.begin_write().await.expect("tx");
            b.log_calls(&mut tx, &calls).await.expect("log");
            let used = b
                .touch_keys(&mut tx, &calls, &HashMap::new())
                .await
                .expect("keys");
            assert_eq!(used, vec!["key_a"]);
            // Written less than a minute ago: not again.
            let recent = HashMap::from([("key_a".to_string(), b.at)]);
            let again = b.touch_keys(&mut tx, &calls, &recent).await.expect("keys");
            assert!(again.is_empty());
            tx.commit().await.expect("commit");
            let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM calls WHERE account_id = 'a'")
                .fetch_one(&db.read)
                .await
                .expect("calls");
            assert_eq!(n, 2);
            let (last,): (Option<i64>,) =
                sqlx::query_as("SELECT last_used_at FROM api_keys WHERE id = 'key_a'")
                    .fetch_one(&db.read)
                    .await
                    .expect("key");
            assert_eq!(last, Some(b.at));
        }
    );

    on_both!(
        a_failed_batch_is_retried_one_operation_at_a_time,
        |db: Db| async move {
            account(&db, "a", 10).await;
            // A call already recorded under r0: settling another call with that request id breaks the
            // calls table's primary key, so the batch's transaction fails.
            let mut w = writer(&db);
            w.apply(
                &[Op::Log {
                    record: record("a", "r0", 0),
                }],
                &[],
            )
            .await
            .expect("first call");
            let (r1, reserved) = reserve("a", "r1", 3);
            let (bad, settled_bad) = settle(record("a", "r0", 0));
            let (r2, reserved_2) = reserve("a", "r2", 2);
            w.run_part(vec![r1, bad, r2], Vec::new()).await;
            assert_eq!(
                reserved.await.expect("answer").expect("held"),
                Reservation::Held { remaining: 7 }
            );
            assert!(matches!(
                settled_bad.await.expect("answer"),
                Err(LedgerError::WriteFailed(_))
            ));
            assert_eq!(
                reserved_2.await.expect("answer").expect("held"),
                Reservation::Held { remaining: 5 }
            );
            assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("held"));
            assert_eq!(charge_state(&db, "r2").await.as_deref(), Some("held"));
            assert_eq!(balance(&db, "a").await, 5);
            assert!(ledger_balanced(&db).await);
        }
    );

    on_both!(
        the_writer_answers_and_a_stopped_ledger_says_so,
        |db: Db| async move {
            account(&db, "a", 10).await;
            let (tx, rx) = mpsc::channel(16);
            let task = tokio::spawn(writer_task(db.clone(), rx));
            let ledger = Ledger { writers: vec![tx] };
            assert_eq!(
                ledger.reserve("a", "r1", 4).await.expect("reserve"),
                Reservation::Held { remaining: 6 }
            );
            assert!(ledger.settle(record("a", "r1", 4)).await.expect("settle"));
            ledger.shutdown().await;
            task.await.expect("writer");
            assert!(matches!(
                ledger.reserve("a", "r2", 1).await,
                Err(LedgerError::Stopped)
            ));
            assert_eq!(charge_state(&db, "r1").await.as_deref(), Some("settled"));
        }
    );

    async fn ledger_balanced(db: &Db) -> bool {
        crate::accounts::ledger_mismatches(db)
            .await
            .expect("books")
            .is_empty()
    }
}
