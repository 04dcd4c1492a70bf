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
//! A caller is answered only after the transaction holding its operation has committed, so no call
//! is answered before its charge is durable. Calls of one account always go to the same writer, so
//! writers never wait on each other's rows.

use std::collections::HashSet;
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
        let writers = (0..n)
            .map(|_| {
                let (tx, rx) = mpsc::channel(65_536);
                tokio::spawn(writer(db.clone(), rx));
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
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = rx.recv().await {
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
        run_batch(&db, std::mem::take(&mut batch)).await;
        if let Some(mut rest) = stop {
            if let Op::Stop { reply } = rest.remove(0) {
                let _ = reply.send(());
            }
            return;
        }
    }
}

/// Applies a batch in one transaction and answers each operation after the commit. If the
/// transaction fails, each operation is retried alone, so one bad operation fails only itself.
async fn run_batch(db: &Db, batch: Vec<Op>) {
    if batch.is_empty() {
        return;
    }
    match apply_in_tx(db, &batch).await {
        Ok(outcomes) => {
            for (op, outcome) in batch.into_iter().zip(outcomes) {
                answer(op, Ok(outcome));
            }
        }
        Err(e) if batch.len() == 1 => {
            tracing::error!(error = %e, "ledger write failed");
            for op in batch {
                answer(op, Err(e.to_string()));
            }
        }
        Err(_) => {
            for op in batch {
                let one = [op];
                match apply_in_tx(db, &one).await {
                    Ok(mut o) => {
                        let [op] = one;
                        answer(op, Ok(o.remove(0)));
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "ledger write failed");
                        let [op] = one;
                        answer(op, Err(e.to_string()));
                    }
                }
            }
        }
    }
}

fn answer(op: Op, outcome: Result<Outcome, String>) {
    let err = |m: &String| sqlx::Error::Protocol(m.clone());
    match op {
        Op::Reserve { reply, .. } => {
            let _ = reply.send(match &outcome {
                Ok(Outcome::Reserved(r)) => Ok(*r),
                Ok(_) => Err(sqlx::Error::Protocol("unexpected outcome".into())),
                Err(m) => Err(err(m)),
            });
        }
        Op::Settle { reply, .. } => {
            let _ = reply.send(match &outcome {
                Ok(Outcome::Settled(b)) => Ok(*b),
                Ok(_) => Err(sqlx::Error::Protocol("unexpected outcome".into())),
                Err(m) => Err(err(m)),
            });
        }
        Op::Release { reply, .. } => {
            if let Some(reply) = reply {
                let _ = reply.send(outcome.map(|_| ()).map_err(|m| err(&m)));
            }
        }
        Op::Log { .. } | Op::Stop { .. } => {}
    }
}

async fn apply_in_tx(db: &Db, batch: &[Op]) -> DbResult<Vec<Outcome>> {
    let mut tx = db.write.begin().await?;
    let at = now();
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut used_keys: HashSet<&str> = HashSet::new();
    for op in batch {
        outcomes.push(apply(&mut tx, op, at).await?);
        match op {
            Op::Settle { record, .. }
            | Op::Log { record }
            | Op::Release {
                record: Some(record),
                ..
            } => {
                used_keys.insert(record.key_id.as_str());
            }
            _ => {}
        }
    }
    for key in used_keys {
        sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE id = $2")
            .bind(at)
            .bind(key)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(outcomes)
}

async fn apply(tx: &mut Transaction<'static, Any>, op: &Op, at: i64) -> DbResult<Outcome> {
    match op {
        Op::Reserve {
            account_id,
            request_id,
            price,
            ..
        } => {
            let held: Option<(i64,)> = sqlx::query_as(
                "UPDATE accounts SET balance = balance - $1 WHERE id = $2 AND balance >= $1 RETURNING balance",
            )
            .bind(*price)
            .bind(account_id.as_str())
            .fetch_optional(&mut **tx)
            .await?;
            match held {
                Some((remaining,)) => {
                    sqlx::query(
                        "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) \
                         VALUES ('charge', $1, $2, $3, 'held', $4, $4)",
                    )
                    .bind(request_id.as_str())
                    .bind(account_id.as_str())
                    .bind(-*price)
                    .bind(at)
                    .execute(&mut **tx)
                    .await?;
                    Ok(Outcome::Reserved(Reservation::Held { remaining }))
                }
                None => {
                    let balance: Option<(i64,)> =
                        sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
                            .bind(account_id.as_str())
                            .fetch_optional(&mut **tx)
                            .await?;
                    Ok(Outcome::Reserved(Reservation::Insufficient {
                        balance: balance.map(|b| b.0).unwrap_or(0),
                    }))
                }
            }
        }
        Op::Settle { record, .. } => {
            let done = sqlx::query(
                "UPDATE credit_entries SET state = 'settled', updated_at = $1 \
                 WHERE kind = 'charge' AND ref = $2 AND state = 'held'",
            )
            .bind(at)
            .bind(record.request_id.as_str())
            .execute(&mut **tx)
            .await?
            .rows_affected()
                == 1;
            let mut record = record.clone();
            if !done {
                record.credits = 0;
            }
            insert_call(tx, &record, at).await?;
            Ok(Outcome::Settled(done))
        }
        Op::Release {
            request_id, record, ..
        } => {
            let released: Option<(String, i64)> = sqlx::query_as(
                "UPDATE credit_entries SET state = 'released', updated_at = $1 \
                 WHERE kind = 'charge' AND ref = $2 AND state = 'held' RETURNING account_id, amount",
            )
            .bind(at)
            .bind(request_id.as_str())
            .fetch_optional(&mut **tx)
            .await?;
            if let Some((account_id, amount)) = released {
                sqlx::query("UPDATE accounts SET balance = balance + $1 WHERE id = $2")
                    .bind(-amount)
                    .bind(account_id.as_str())
                    .execute(&mut **tx)
                    .await?;
                sqlx::query(
                    "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) \
                     VALUES ('refund', $1, $2, $3, 'done', $4, $4)",
                )
                .bind(request_id.as_str())
                .bind(account_id.as_str())
                .bind(-amount)
                .bind(at)
                .execute(&mut **tx)
                .await?;
            }
            if let Some(record) = record {
                let mut record = record.clone();
                record.credits = 0;
                insert_call(tx, &record, at).await?;
            }
            Ok(Outcome::Done)
        }
        Op::Log { record } => {
            insert_call(tx, record, at).await?;
            Ok(Outcome::Done)
        }
        Op::Stop { .. } => Ok(Outcome::Done),
    }
}

async fn insert_call(tx: &mut Transaction<'static, Any>, r: &CallRecord, at: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO calls (request_id, account_id, key_id, key_prefix, endpoint, status, credits, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(r.request_id.as_str())
    .bind(r.account_id.as_str())
    .bind(r.key_id.as_str())
    .bind(r.key_prefix.as_str())
    .bind(r.endpoint.as_str())
    .bind(i64::from(r.status))
    .bind(r.credits)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
