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

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use tokio::sync::{mpsc, oneshot};

use crate::db::{Backend, Db, DbResult, now};
use batch::{Batch, Tx};

mod batch;
#[cfg(test)]
mod tests;

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
