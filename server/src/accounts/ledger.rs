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
        reply: oneshot::Sender<DbResult<Reservation>>,
    },
    /// Settles the hold and records the call; answers whether a hold was settled.
    Settle {
        record: CallRecord,
        reply: oneshot::Sender<DbResult<bool>>,
    },
    /// Releases the hold (if still held) and records the call when there is one.
    Release {
        request_id: String,
        record: Option<CallRecord>,
        reply: Option<oneshot::Sender<DbResult<()>>>,
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

    async fn send(&self, account_id: &str, op: Op) -> DbResult<()> {
        self.writer_for(account_id)
            .send(op)
            .await
            .map_err(|_| sqlx::Error::PoolClosed)
    }

    pub async fn reserve(
        &self,
        account_id: &str,
        request_id: &str,
        price: i64,
    ) -> DbResult<Reservation> {
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
        rx.await.map_err(|_| sqlx::Error::PoolClosed)?
    }

    /// Turns the hold into a charge; `false` when it was no longer held (released by the janitor).
    pub async fn settle(&self, record: CallRecord) -> DbResult<bool> {
        let (reply, rx) = oneshot::channel();
        let account = record.account_id.clone();
        self.send(&account, Op::Settle { record, reply }).await?;
        rx.await.map_err(|_| sqlx::Error::PoolClosed)?
    }

    pub async fn release(&self, record: CallRecord) -> DbResult<()> {
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
        rx.await.map_err(|_| sqlx::Error::PoolClosed)?
    }

    /// Releases a hold with no call to record (the janitor).
    pub async fn release_hold(&self, account_id: &str, request_id: &str) -> DbResult<()> {
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
        rx.await.map_err(|_| sqlx::Error::PoolClosed)?
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
    pub async fn release_stale(&self, db: &Db, cutoff: i64) -> DbResult<usize> {
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
                op => w.hold(op),
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

/// A hold taken in memory (`Writer::hold`), written with the next transaction.
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
    fn hold(&mut self, op: Op) -> Option<Op> {
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
                tracing::error!(error = %e, "ledger write failed");
                for op in ops {
                    answer(op, Err(e.to_string()));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, ops = ops.len(), "ledger batch failed; applying its operations one by one");
                for op in ops {
                    let one = [op];
                    let result = self.apply(&one, &[]).await;
                    let [op] = one;
                    match result {
                        Ok(mut o) => answer(op, Ok(o.remove(0))),
                        Err(e) => {
                            tracing::error!(error = %e, "ledger write failed");
                            answer(op, Err(e.to_string()));
                        }
                    }
                }
            }
        }
    }

    async fn apply(&mut self, ops: &[Op], pending: &[PendingHold]) -> DbResult<Vec<Outcome>> {
        let at = now();
        // The batch statements have as many shapes as batch sizes. SQLite keeps the few common ones
        // prepared on its connection (a least-recently-used cache); PostgreSQL parses each.
        let cache = self.db.backend == Backend::Sqlite;
        let mut tx = self.db.begin_write().await?;
        let only_reserves = ops.iter().all(|op| matches!(op, Op::Reserve { .. }));
        if only_reserves && self.db.backend == Backend::Postgres {
            sqlx::query("SET LOCAL synchronous_commit TO OFF")
                .execute(&mut *tx)
                .await?;
        }
        let mut outcomes: Vec<Option<Outcome>> = ops.iter().map(|_| None).collect();
        // Balances this transaction leaves, for `balances` once it commits.
        let mut seen: HashMap<String, i64> = HashMap::new();
        let mut holds: Vec<(&str, &str, i64)> = Vec::new();

        // Pending holds: one guarded decrement per account for all of its holds, which the database
        // still checks (`balance >= total`): were the count of `balances` ever wrong, the holds of that
        // account are dropped (their calls are free) rather than the balance going below zero.
        if !pending.is_empty() {
            let mut totals: Vec<(&str, i64)> = Vec::new();
            for h in pending {
                match totals.iter_mut().find(|(a, _)| *a == h.account_id) {
                    Some((_, t)) => *t += h.price,
                    None => totals.push((h.account_id.as_str(), h.price)),
                }
            }
            let paid = take_groups(&mut tx, &totals, cache).await?;
            for h in pending {
                if paid.contains_key(&h.account_id) {
                    holds.push((&h.request_id, &h.account_id, -h.price));
                } else {
                    tracing::error!(account = %h.account_id, "a pending hold exceeded the balance; dropped");
                }
            }
            for (account, _) in &totals {
                if !paid.contains_key(*account) {
                    self.balances.remove(*account);
                }
            }
            seen.extend(paid);
        }

        // Reservations. The batch's reservations are grouped by account; one statement takes from every
        // account that can pay for all of its group (`balance >= group total`, checked per row, so the
        // balance never goes below zero). An account that cannot pay for its whole group, which only
        // happens near zero, is then served one reservation at a time, in arrival order.
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
        let paid = take_groups(&mut tx, &totals, cache).await?;
        seen.extend(paid.iter().map(|(a, b)| (a.clone(), *b)));
        for (account, total, members) in &groups {
            if let Some(after) = paid.get(*account) {
                let mut balance = after + total;
                for &i in members {
                    if let Op::Reserve {
                        request_id, price, ..
                    } = &ops[i]
                    {
                        balance -= price;
                        holds.push((request_id, account, -*price));
                        outcomes[i] =
                            Some(Outcome::Reserved(Reservation::Held { remaining: balance }));
                    }
                }
                continue;
            }
            for &i in members {
                let Op::Reserve {
                    request_id, price, ..
                } = &ops[i]
                else {
                    continue;
                };
                let held: Option<(i64,)> = sqlx::query_as(
                    "UPDATE accounts SET balance = balance - $1 WHERE id = $2 AND balance >= $1 RETURNING balance",
                )
                .bind(*price)
                .bind(*account)
                .fetch_optional(&mut *tx)
                .await?;
                outcomes[i] = Some(Outcome::Reserved(match held {
                    Some((remaining,)) => {
                        holds.push((request_id, account, -*price));
                        seen.insert(account.to_string(), remaining);
                        Reservation::Held { remaining }
                    }
                    None => {
                        let balance: Option<(i64,)> =
                            sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
                                .bind(*account)
                                .fetch_optional(&mut *tx)
                                .await?;
                        if let Some((b,)) = balance {
                            seen.insert(account.to_string(), b);
                        }
                        Reservation::Insufficient {
                            balance: balance.map(|b| b.0).unwrap_or(0),
                        }
                    }
                }));
            }
        }
        if !holds.is_empty() {
            let sql = format!(
                "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) VALUES {}",
                rows(holds.len(), 3, 2, |r| format!(
                    "('charge', ${}, ${}, ${}, 'held', $1, $1)",
                    r,
                    r + 1,
                    r + 2
                ))
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .persistent(cache)
                .bind(at);
            for (r, a, amount) in &holds {
                q = q.bind(*r).bind(*a).bind(*amount);
            }
            q.execute(&mut *tx).await?;
        }

        // Settlements: every held charge of the batch flips in one statement.
        let settle_refs: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Settle { record, .. } => Some(record.request_id.as_str()),
                _ => None,
            })
            .collect();
        let mut settled: HashSet<String> = HashSet::new();
        if !settle_refs.is_empty() {
            let sql = format!(
                "UPDATE credit_entries SET state = 'settled', updated_at = $1 \
                 WHERE kind = 'charge' AND state = 'held' AND ref IN ({}) RETURNING ref",
                (0..settle_refs.len())
                    .map(|i| format!("${}", i + 2))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut q = sqlx::query_as::<_, (String,)>(sqlx::AssertSqlSafe(sql))
                .persistent(cache)
                .bind(at);
            for r in &settle_refs {
                q = q.bind(*r);
            }
            settled = q
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .map(|r| r.0)
                .collect();
        }

        // Releases (failed calls, expired holds): one at a time, they are the rare path.
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
                    outcomes[i] = Some(Outcome::Settled(done));
                }
                Op::Release {
                    request_id, record, ..
                } => {
                    if let Some((account, balance)) = release(&mut tx, request_id, at).await? {
                        seen.insert(account, balance);
                    }
                    if let Some(record) = record {
                        let mut record = record.clone();
                        record.credits = 0;
                        calls.push(record);
                    }
                    outcomes[i] = Some(Outcome::Done);
                }
                Op::Log { record } => {
                    calls.push(record.clone());
                    outcomes[i] = Some(Outcome::Done);
                }
                Op::Reserve { .. } => {}
                Op::Flush { .. } | Op::Stop { .. } => outcomes[i] = Some(Outcome::Done),
            }
        }

        // The call log, in one statement.
        if !calls.is_empty() {
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
                .persistent(cache)
                .bind(at);
            for c in &calls {
                q = q
                    .bind(c.request_id.as_str())
                    .bind(c.account_id.as_str())
                    .bind(c.key_id.as_str())
                    .bind(c.key_prefix.as_str())
                    .bind(c.endpoint.as_str())
                    .bind(i64::from(c.status))
                    .bind(c.credits);
            }
            q.execute(&mut *tx).await?;
        }

        // Last use of the keys, at most once a minute per key.
        let mut used: Vec<&str> = calls
            .iter()
            .map(|c| c.key_id.as_str())
            .filter(|k| {
                self.last_used
                    .get(*k)
                    .is_none_or(|t| at - t >= LAST_USED_EVERY)
            })
            .collect();
        used.sort_unstable();
        used.dedup();
        if !used.is_empty() {
            let sql = format!(
                "UPDATE api_keys SET last_used_at = $1 WHERE id IN ({})",
                (0..used.len())
                    .map(|i| format!("${}", i + 2))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
                .persistent(cache)
                .bind(at);
            for k in &used {
                q = q.bind(*k);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
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
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Outcome::Done))
            .collect())
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

fn answer(op: Op, outcome: Result<Outcome, String>) {
    let err = |m: &String| sqlx::Error::Protocol(m.clone());
    let unexpected = || sqlx::Error::Protocol("unexpected ledger outcome".into());
    match op {
        Op::Reserve { reply, .. } => {
            let _ = reply.send(match &outcome {
                Ok(Outcome::Reserved(r)) => Ok(*r),
                Ok(_) => Err(unexpected()),
                Err(m) => Err(err(m)),
            });
        }
        Op::Settle { reply, .. } => {
            let _ = reply.send(match &outcome {
                Ok(Outcome::Settled(b)) => Ok(*b),
                Ok(_) => Err(unexpected()),
                Err(m) => Err(err(m)),
            });
        }
        Op::Release { reply, .. } => {
            if let Some(reply) = reply {
                let _ = reply.send(outcome.map(|_| ()).map_err(|m| err(&m)));
            }
        }
        Op::Log { .. } | Op::Flush { .. } | Op::Stop { .. } => {}
    }
}
