//! One transaction of the ledger, phase by phase (`Batch`), and the statements it is made of. Each
//! phase is one job and, where it can be, one statement for the whole batch.

use std::collections::{HashMap, HashSet};

use sqlx::{Any, Transaction};

use super::{CallRecord, LAST_USED_EVERY, Op, Outcome, PendingHold, Reservation};
use crate::db::DbResult;

pub(super) type Tx = Transaction<'static, Any>;

/// What one transaction of the ledger has done so far, phase by phase.
pub(super) struct Batch<'a> {
    pub(super) at: i64,
    /// Whether the batch statements are kept prepared (SQLite).
    pub(super) cache: bool,
    /// The answer of each operation, by its index in the batch.
    pub(super) outcomes: Vec<Option<Outcome>>,
    /// Balances this transaction leaves, for `Writer::balances` once it commits.
    pub(super) seen: HashMap<String, i64>,
    /// Hold rows to insert: request id, account, amount.
    pub(super) holds: Vec<(&'a str, &'a str, i64)>,
}

impl<'a> Batch<'a> {
    /// Pending holds: one guarded decrement per account for all of its holds, which the database
    /// still checks (`balance >= total`): were the count of `balances` ever wrong, the holds of that
    /// account are dropped (their calls are free) rather than the balance going below zero, and the
    /// account's known balance is forgotten.
    pub(super) async fn write_pending(
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
    pub(super) async fn reserve(&mut self, tx: &mut Tx, ops: &'a [Op]) -> DbResult<()> {
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
    pub(super) async fn insert_holds(&mut self, tx: &mut Tx) -> DbResult<()> {
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
    pub(super) async fn settle(&mut self, tx: &mut Tx, ops: &[Op]) -> DbResult<HashSet<String>> {
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
    pub(super) async fn release_and_record(
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
    pub(super) async fn log_calls(&self, tx: &mut Tx, calls: &[CallRecord]) -> DbResult<()> {
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
    pub(super) async fn touch_keys<'c>(
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
