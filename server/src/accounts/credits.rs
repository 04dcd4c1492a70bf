//! Credits outside the call path: the balance, grants and purchases, and the reads of GET /v1/me.
//! (Reservations and settlements of paid calls are the ledger's, `ledger.rs`.)

use super::{Accounts, AccountsResult};
use crate::db::{Db, DbResult, WriteTx, now};

/// One endpoint's calls over the last seven days.
#[derive(Debug, Clone)]
pub struct UsageView {
    pub endpoint: String,
    pub calls: i64,
    pub credits: i64,
    pub errors: i64,
}

/// One recorded call; `at` in unix seconds.
#[derive(Debug, Clone)]
pub struct CallView {
    pub at: i64,
    pub endpoint: String,
    pub status: i64,
    pub credits: i64,
    pub request_id: String,
    pub key_prefix: String,
}

/// What GET /v1/me shows of an account.
#[derive(Debug, Clone)]
pub struct MeView {
    pub email: String,
    pub balance: i64,
    pub usage_7d: Vec<UsageView>,
    pub recent_calls: Vec<CallView>,
}

/// created_at, endpoint, status, credits, request_id, key_prefix
type CallRow = (i64, String, i64, i64, String, String);

impl Accounts {
    /// Adds credits to the balance with a ledger row (`kind` grant or purchase, `reference` unique);
    /// answers the balance after.
    pub async fn grant(
        &self,
        account_id: &str,
        credits: i64,
        kind: &str,
        reference: &str,
    ) -> AccountsResult<i64> {
        let mut tx = self.db.begin_write().await?;
        grant_tx(&mut tx, account_id, credits, kind, reference).await?;
        let (balance,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(balance)
    }

    pub async fn balance(&self, account_id: &str) -> AccountsResult<i64> {
        let (b,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(&self.db.read)
            .await?;
        Ok(b)
    }

    /// The account's address, balance, usage of the last seven days and last 20 calls.
    pub async fn me(&self, account_id: &str) -> AccountsResult<MeView> {
        let (email, balance): (String, i64) =
            sqlx::query_as("SELECT email, balance FROM accounts WHERE id = $1")
                .bind(account_id)
                .fetch_one(&self.db.read)
                .await?;
        let usage: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT endpoint, COUNT(*), CAST(COALESCE(SUM(credits), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS BIGINT) \
             FROM calls WHERE account_id = $1 AND created_at >= $2 GROUP BY endpoint ORDER BY endpoint",
        )
        .bind(account_id)
        .bind(now() - 7 * 86_400)
        .fetch_all(&self.db.read)
        .await?;
        let recent: Vec<CallRow> = sqlx::query_as(
            "SELECT created_at, endpoint, status, credits, request_id, key_prefix FROM calls \
             WHERE account_id = $1 ORDER BY created_at DESC, request_id LIMIT 20",
        )
        .bind(account_id)
        .fetch_all(&self.db.read)
        .await?;
        Ok(MeView {
            email,
            balance,
            usage_7d: usage
                .into_iter()
                .map(|(endpoint, calls, credits, errors)| UsageView {
                    endpoint,
                    calls,
                    credits,
                    errors,
                })
                .collect(),
            recent_calls: recent
                .into_iter()
                .map(
                    |(at, endpoint, status, credits, request_id, key_prefix)| CallView {
                        at,
                        endpoint,
                        status,
                        credits,
                        request_id,
                        key_prefix,
                    },
                )
                .collect(),
        })
    }
}

/// A `done` ledger row of `credits` and the same amount on the balance, in the caller's transaction.
pub(super) async fn grant_tx(
    tx: &mut WriteTx,
    account_id: &str,
    credits: i64,
    kind: &str,
    reference: &str,
) -> DbResult<()> {
    let at = now();
    sqlx::query(
        "INSERT INTO credit_entries (kind, ref, account_id, amount, state, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'done', $5, $5)",
    )
    .bind(kind)
    .bind(reference)
    .bind(account_id)
    .bind(credits)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    sqlx::query("UPDATE accounts SET balance = balance + $1 WHERE id = $2")
        .bind(credits)
        .bind(account_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The ledger invariant of every account: `(account id, balance, sum of ledger amounts)` where
/// balance and sum differ. Empty when the books agree.
pub async fn ledger_mismatches(db: &Db) -> DbResult<Vec<(String, i64, i64)>> {
    sqlx::query_as(
        "SELECT a.id, a.balance, CAST(COALESCE(SUM(e.amount), 0) AS BIGINT) FROM accounts a \
         LEFT JOIN credit_entries e ON e.account_id = a.id GROUP BY a.id, a.balance \
         HAVING a.balance <> CAST(COALESCE(SUM(e.amount), 0) AS BIGINT)",
    )
    .fetch_all(&db.read)
    .await
}
