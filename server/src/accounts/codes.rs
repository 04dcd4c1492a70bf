//! Sign-in codes: issued by e-mail within the cooldown and the daily caps, and checked with a
//! bounded number of wrong guesses.

use super::account::{ensure_account_tx, is_disposable, normalize_email};
use super::caps::{self, DailyCap, bump_daily};
use super::sessions::{SessionKind, insert_link};
use super::{Accounts, AccountsError, AccountsResult, CapReached, secrets};
use crate::db::now;

impl Accounts {
    /// Issues a code for the address and e-mails it. The answer is the same whether or not the address
    /// has an account. `client` is the caller's address, counted by its network (`caps::client_network`).
    ///
    /// One transaction: the code is written by a conditional upsert that replaces the address's code
    /// only once the cooldown has passed (so of concurrent requests inside a cooldown exactly one gets
    /// a code), then both daily caps are counted by `bump_daily`; a refusal rolls the whole back.
    pub async fn request_code(&self, email: &str, client: &str) -> AccountsResult<()> {
        let email = normalize_email(email);
        if is_disposable(&email) {
            return Err(AccountsError::EmailNotAccepted);
        }
        let s = &self.signin;
        let at = now();
        let code = secrets::new_code();
        let mut tx = self.db.begin_write().await?;
        let written: Option<(String,)> = sqlx::query_as(
            "INSERT INTO signin_codes (email, code_hash, created_at, expires_at, wrong_guesses, state) \
             VALUES ($1, $2, $3, $4, 0, 'pending') \
             ON CONFLICT (email) DO UPDATE SET code_hash = excluded.code_hash, created_at = excluded.created_at, \
             expires_at = excluded.expires_at, wrong_guesses = 0, state = 'pending' \
             WHERE signin_codes.created_at + $5 <= excluded.created_at RETURNING email",
        )
        .bind(email.as_str())
        .bind(secrets::code_hash(&self.secret, &email, &code))
        .bind(at)
        .bind(at + s.code_ttl_seconds)
        .bind(s.cooldown_seconds)
        .fetch_optional(&mut *tx)
        .await?;
        if written.is_none() {
            let last: Option<(i64,)> =
                sqlx::query_as("SELECT created_at FROM signin_codes WHERE email = $1")
                    .bind(email.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
            let wait = last.map_or(s.cooldown_seconds, |(created,)| {
                created + s.cooldown_seconds - at
            });
            return Err(AccountsError::Cooldown {
                retry_after: wait.max(1) as u64,
                cooldown_seconds: s.cooldown_seconds,
            });
        }
        let network = caps::client_network(client);
        for (cap, subject, limit) in [
            (
                DailyCap::CodesPerAddress,
                email.as_str(),
                s.codes_per_address_per_day,
            ),
            (
                DailyCap::CodesPerClient,
                network.as_str(),
                s.codes_per_client_per_day,
            ),
        ] {
            if !bump_daily(&mut *tx, cap, subject, limit, at).await? {
                return Err(AccountsError::DailyCap(CapReached::SigninCodes));
            }
        }
        tx.commit().await?;
        self.mailer
            .send_code(&email, &code, s.code_ttl_seconds)
            .await
            .map_err(AccountsError::Mail)
    }

    /// Checks the code; on success the account exists (created with the sign-up credits on the first
    /// sign-in) and the returned one-time link token opens a session signed in with the code.
    ///
    /// The code's row is read locked (`FOR UPDATE` on PostgreSQL, the write lock on SQLite), so
    /// concurrent guesses are counted one after the other: exactly `max_wrong_guesses` answer
    /// `InvalidCode`, every later one `TooManyAttempts`, the right code included.
    pub async fn verify(&self, email: &str, otp: &str) -> AccountsResult<String> {
        let email = normalize_email(email);
        let s = &self.signin;
        let at = now();
        let mut tx = self.db.begin_write().await?;
        let row: Option<(String, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT code_hash, expires_at, wrong_guesses, state FROM signin_codes WHERE email = $1{}",
            self.db.for_update()
        )))
        .bind(email.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        let Some((hash, expires_at, wrong, state)) = row.filter(|r| r.3 != "used") else {
            return Err(AccountsError::NoPendingCode);
        };
        if state == "locked" || wrong >= s.max_wrong_guesses {
            return Err(AccountsError::TooManyAttempts);
        }
        if at >= expires_at {
            return Err(AccountsError::CodeExpired {
                lifetime_minutes: s.code_ttl_seconds / 60,
            });
        }
        if !secrets::same_hash(&hash, &secrets::code_hash(&self.secret, &email, otp)) {
            // Guarded as well as locked: the count never passes the limit.
            let counted: Option<(i64,)> = sqlx::query_as(
                "UPDATE signin_codes SET wrong_guesses = wrong_guesses + 1, \
                 state = CASE WHEN wrong_guesses + 1 >= $1 THEN 'locked' ELSE 'pending' END \
                 WHERE email = $2 AND state = 'pending' AND wrong_guesses < $1 RETURNING wrong_guesses",
            )
            .bind(s.max_wrong_guesses)
            .bind(email.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            let Some((wrong,)) = counted else {
                return Err(AccountsError::TooManyAttempts);
            };
            return Err(AccountsError::InvalidCode {
                attempts_left: (s.max_wrong_guesses - wrong).max(0) as u32,
            });
        }
        sqlx::query("UPDATE signin_codes SET state = 'used' WHERE email = $1")
            .bind(email.as_str())
            .execute(&mut *tx)
            .await?;
        let (account_id, _) = ensure_account_tx(&mut tx, &email, s.signup_credits).await?;
        let token = insert_link(
            &mut tx,
            &account_id,
            SessionKind::Otp,
            None,
            at + s.link_ttl_seconds,
        )
        .await?;
        tx.commit().await?;
        Ok(token)
    }
}
