//! Accounts, sign-in codes, dashboard links, sessions, API keys and the credit balance, on the database.
//! The rules (lifetimes, caps, formats) come from `config::Signin` and `secrets`; handlers in `ops/` only
//! translate between HTTP and these functions.

pub mod caps;
pub mod ledger;
pub mod limits;
pub mod mail;
pub mod secrets;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::{Config, Signin};
use crate::db::{Db, DbResult, WriteTx, now};
use crate::error::{ApiError, ErrorCode};
use caps::{DailyCap, bump_daily};
use ledger::Ledger;
use limits::KeyLimits;
use mail::Mailer;

/// Keys per account (spec section 8).
pub const MAX_KEYS: i64 = 10;
/// How long a key look-up is trusted without the database. Revocation and rotation in this process
/// drop the entry at once; the time bounds what another process's change takes to be seen.
const KEY_CACHE_TTL: Duration = Duration::from_secs(10);

/// The kind of a browser session: signed in with an e-mailed code, or opened by browser-link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKind {
    Otp,
    Link,
}

impl SessionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Otp => "otp",
            SessionKind::Link => "link",
        }
    }
    fn parse(s: &str) -> SessionKind {
        if s == "otp" {
            SessionKind::Otp
        } else {
            SessionKind::Link
        }
    }
}

#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub id: String,
    pub account_id: String,
    pub prefix: String,
}

#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub account_id: String,
    pub kind: SessionKind,
    pub token_hash: String,
}

/// id, name, prefix, created_at, last_used_at
type KeyRow = (String, Option<String>, String, i64, Option<i64>);
/// created_at, endpoint, status, credits, request_id, key_prefix
type CallRow = (i64, String, i64, i64, String, String);

pub struct Accounts {
    pub db: Db,
    pub ledger: Ledger,
    pub limits: KeyLimits,
    pub mailer: Mailer,
    pub signin: Signin,
    public_url: String,
    secret: Vec<u8>,
    key_cache: Mutex<HashMap<String, (KeyInfo, Instant)>>,
    /// Bumped whenever a key is revoked or rotated here: a look-up that read the database before the
    /// bump does not cache what it read, so a retired key cannot come back into the cache.
    key_retirements: AtomicU64,
}

fn db_error(e: sqlx::Error) -> ApiError {
    tracing::error!(error = %e, "database error");
    ApiError::internal()
}

/// `Result` of the account functions: API errors, database errors mapped to 500.
pub type AResult<T> = Result<T, ApiError>;

/// Lower-cased, trimmed e-mail address: one account per address however it is typed.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

/// Whether the address's domain (or a parent domain) is on the maintained disposable list.
pub fn is_disposable(email: &str) -> bool {
    static LIST: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    let list = LIST.get_or_init(|| mailchecker::blacklist().into_iter().collect());
    let Some((_, domain)) = email.rsplit_once('@') else {
        return false;
    };
    let domain = domain.to_ascii_lowercase();
    let mut d = domain.as_str();
    loop {
        if list.contains(d) {
            return true;
        }
        match d.split_once('.') {
            Some((_, rest)) if rest.contains('.') => d = rest,
            _ => return false,
        }
    }
}

/// ISO-8601 UTC of unix seconds.
pub fn iso(secs: i64) -> String {
    adapters::upstream::dates::from_unix(secs).unwrap_or_default()
}

impl Accounts {
    pub async fn start(config: &Config, db: Db) -> Result<Accounts, String> {
        let secret = match &config.secret {
            Some(s) if !s.is_empty() => s.as_bytes().to_vec(),
            _ => stored_secret(&db)
                .await
                .map_err(|e| format!("server secret: {e}"))?
                .into_bytes(),
        };
        let mailer = Mailer::new(config.smtp.as_ref(), &config.mail)?;
        Ok(Accounts {
            ledger: Ledger::start(&db),
            limits: KeyLimits::new(&config.limits),
            mailer,
            signin: config.signin.clone(),
            public_url: config.public_url.trim_end_matches('/').to_string(),
            secret,
            key_cache: Mutex::new(HashMap::new()),
            key_retirements: AtomicU64::new(0),
            db,
        })
    }

    // ---- API keys --------------------------------------------------------------------------

    /// The active key behind a presented key, if any.
    pub async fn key(&self, presented: &str) -> AResult<Option<KeyInfo>> {
        if !secrets::looks_like_api_key(presented) {
            return Ok(None);
        }
        let hash = secrets::token_hash(presented);
        if let Some((info, at)) = self.cache().get(&hash)
            && at.elapsed() < KEY_CACHE_TTL
        {
            return Ok(Some(info.clone()));
        }
        let retirements = self.key_retirements.load(Ordering::Acquire);
        let row: Option<(String, String, String)> = sqlx::query_as(
            "SELECT id, account_id, prefix FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
        )
        .bind(hash.as_str())
        .fetch_optional(&self.db.read)
        .await
        .map_err(db_error)?;
        let info = row.map(|(id, account_id, prefix)| KeyInfo {
            id,
            account_id,
            prefix,
        });
        let mut cache = self.cache();
        match &info {
            Some(_) if self.key_retirements.load(Ordering::Acquire) != retirements => {}
            Some(i) => {
                if cache.len() > 100_000 {
                    cache.clear();
                }
                cache.insert(hash, (i.clone(), Instant::now()));
            }
            None => {
                cache.remove(&hash);
            }
        }
        Ok(info)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, (KeyInfo, Instant)>> {
        self.key_cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn forget_key(&self, key_id: &str) {
        let mut cache = self.cache();
        self.key_retirements.fetch_add(1, Ordering::AcqRel);
        cache.retain(|_, (info, _)| info.id != key_id);
    }

    pub async fn list_keys(&self, account_id: &str) -> AResult<Value> {
        let rows: Vec<KeyRow> = sqlx::query_as(
            "SELECT id, name, prefix, created_at, last_used_at FROM api_keys \
             WHERE account_id = $1 AND revoked_at IS NULL ORDER BY created_at, id",
        )
        .bind(account_id)
        .fetch_all(&self.db.read)
        .await
        .map_err(db_error)?;
        let keys: Vec<Value> = rows
            .into_iter()
            .map(|(id, name, prefix, created, used)| {
                json!({ "id": id, "name": name, "prefix": prefix, "created_at": iso(created), "last_used_at": used.map(iso) })
            })
            .collect();
        Ok(json!({ "ok": true, "keys": keys }))
    }

    /// Creates a key; the plaintext is in the returned body only. The count and the insert run with
    /// the account's row locked, so concurrent creations never pass the limit.
    pub async fn create_key(&self, account_id: &str, name: Option<&str>) -> AResult<Value> {
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        self.db
            .lock_account(&mut tx, account_id)
            .await
            .map_err(db_error)?;
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL",
        )
        .bind(account_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        if n >= MAX_KEYS {
            return Err(ApiError::new(
                ErrorCode::KeyLimit,
                format!("the account already holds {MAX_KEYS} keys, the maximum"),
            )
            .with_fix("revoke a key you no longer use (DELETE /v1/keys/{kid}), then create one"));
        }
        let body = insert_key(&mut tx, account_id, name)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(body)
    }

    /// Revokes a key; the sessions opened by browser-link with it end with it (see `session`).
    pub async fn revoke_key(&self, account_id: &str, key_id: &str) -> AResult<()> {
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        let revoked = retire_key(&mut tx, account_id, key_id, now())
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        self.forget_key(key_id);
        if revoked.is_none() {
            return Err(no_such_key(key_id));
        }
        Ok(())
    }

    /// Rotates a key: a new key (new id, same name) replaces it, and the old one is rotated away at
    /// once, in one transaction. The old key's row is retired by a conditional update, so of
    /// concurrent rotations of one key exactly one succeeds; the others find no active key (404).
    pub async fn rotate_key(&self, account_id: &str, key_id: &str) -> AResult<Value> {
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        let retired = retire_key(&mut tx, account_id, key_id, now())
            .await
            .map_err(db_error)?;
        let Some(name) = retired else {
            return Err(no_such_key(key_id));
        };
        let body = insert_key(&mut tx, account_id, name.as_deref())
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        self.forget_key(key_id);
        Ok(body)
    }

    // ---- Accounts and credits --------------------------------------------------------------

    pub async fn account_by_email(&self, email: &str) -> AResult<Option<(String, i64)>> {
        sqlx::query_as("SELECT id, balance FROM accounts WHERE email = $1")
            .bind(normalize_email(email))
            .fetch_optional(&self.db.read)
            .await
            .map_err(db_error)
    }

    /// The account of the address, created with `credits` (a `grant` row) when it does not exist.
    pub async fn ensure_account(&self, email: &str, credits: i64) -> AResult<(String, bool)> {
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        let r = ensure_account_tx(&mut tx, &normalize_email(email), credits)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(r)
    }

    /// Adds credits to the balance with a ledger row (`kind` grant or purchase, `reference` unique).
    pub async fn grant(
        &self,
        account_id: &str,
        credits: i64,
        kind: &str,
        reference: &str,
    ) -> AResult<i64> {
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        grant_tx(&mut tx, account_id, credits, kind, reference)
            .await
            .map_err(db_error)?;
        let (balance,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(balance)
    }

    pub async fn balance(&self, account_id: &str) -> AResult<i64> {
        let (b,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(&self.db.read)
            .await
            .map_err(db_error)?;
        Ok(b)
    }

    /// The body of GET /v1/me.
    pub async fn me(&self, account_id: &str) -> AResult<Value> {
        let (email, balance): (String, i64) =
            sqlx::query_as("SELECT email, balance FROM accounts WHERE id = $1")
                .bind(account_id)
                .fetch_one(&self.db.read)
                .await
                .map_err(db_error)?;
        let usage: Vec<(String, i64, i64, i64)> = sqlx::query_as(
            "SELECT endpoint, COUNT(*), CAST(COALESCE(SUM(credits), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS BIGINT) \
             FROM calls WHERE account_id = $1 AND created_at >= $2 GROUP BY endpoint ORDER BY endpoint",
        )
        .bind(account_id)
        .bind(now() - 7 * 86_400)
        .fetch_all(&self.db.read)
        .await
        .map_err(db_error)?;
        let recent: Vec<CallRow> = sqlx::query_as(
            "SELECT created_at, endpoint, status, credits, request_id, key_prefix FROM calls \
             WHERE account_id = $1 ORDER BY created_at DESC, request_id LIMIT 20",
        )
        .bind(account_id)
        .fetch_all(&self.db.read)
        .await
        .map_err(db_error)?;
        Ok(json!({
            "ok": true,
            "email": email,
            "balance": balance,
            "usage_7d": usage.into_iter().map(|(endpoint, calls, credits, errors)| json!({
                "endpoint": endpoint, "calls": calls, "credits": credits, "errors": errors,
            })).collect::<Vec<_>>(),
            "recent_calls": recent.into_iter().map(|(at, endpoint, status, credits, request_id, key_prefix)| json!({
                "at": iso(at), "endpoint": endpoint, "status": status, "credits": credits,
                "request_id": request_id, "key_prefix": key_prefix,
            })).collect::<Vec<_>>(),
        }))
    }

    /// An operator's view: balance and keys by prefix.
    pub async fn admin_view(&self, email: &str) -> AResult<Option<Value>> {
        let Some((id, balance)) = self.account_by_email(email).await? else {
            return Ok(None);
        };
        let keys = self.list_keys(&id).await?;
        Ok(Some(json!({
            "ok": true,
            "email": normalize_email(email),
            "account_id": id,
            "balance": balance,
            "keys": keys["keys"],
        })))
    }

    // ---- Sign-in -----------------------------------------------------------------------------

    /// Issues a code for the address and e-mails it. The answer is the same whether or not the address
    /// has an account. `client` is the caller's address, counted by its network (`caps::client_network`).
    ///
    /// One transaction: the code is written by a conditional upsert that replaces the address's code
    /// only once the cooldown has passed (so of concurrent requests inside a cooldown exactly one gets
    /// a code), then both daily caps are counted by `bump_daily`; a refusal rolls the whole back.
    pub async fn request_code(&self, email: &str, client: &str) -> AResult<()> {
        let email = normalize_email(email);
        if is_disposable(&email) {
            return Err(ApiError::new(
                ErrorCode::EmailNotAccepted,
                "addresses of disposable e-mail domains are not accepted; use a permanent address",
            ));
        }
        let s = &self.signin;
        let at = now();
        let code = secrets::new_code();
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
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
        .await
        .map_err(db_error)?;
        if written.is_none() {
            let last: Option<(i64,)> =
                sqlx::query_as("SELECT created_at FROM signin_codes WHERE email = $1")
                    .bind(email.as_str())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_error)?;
            let wait = last.map_or(s.cooldown_seconds, |(created,)| {
                created + s.cooldown_seconds - at
            });
            let mut e = ApiError::new(
                ErrorCode::RateLimited,
                format!(
                    "a code was sent to this address less than {} seconds ago; wait before asking again",
                    s.cooldown_seconds
                ),
            );
            e.retry_after = Some(wait.max(1) as u64);
            return Err(e);
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
            if !bump_daily(&mut *tx, cap, subject, limit, at)
                .await
                .map_err(db_error)?
            {
                return Err(ApiError::new(
                    ErrorCode::RateLimited,
                    "the daily cap on sign-in codes is reached; it resets at 00:00 UTC",
                ));
            }
        }
        tx.commit().await.map_err(db_error)?;
        self.mailer
            .send_code(&email, &code, s.code_ttl_seconds)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "sign-in e-mail not sent");
                ApiError::internal()
            })
    }

    /// Checks the code; on success the account exists (created with the sign-up credits on the first
    /// sign-in) and the returned one-time link token opens a session signed in with the code.
    ///
    /// The code's row is read locked (`FOR UPDATE` on PostgreSQL, the write lock on SQLite), so
    /// concurrent guesses are counted one after the other: exactly `max_wrong_guesses` answer
    /// INVALID_CODE, every later one TOO_MANY_ATTEMPTS, the right code included.
    pub async fn verify(&self, email: &str, otp: &str) -> AResult<String> {
        let email = normalize_email(email);
        let s = &self.signin;
        let at = now();
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        let row: Option<(String, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT code_hash, expires_at, wrong_guesses, state FROM signin_codes WHERE email = $1{}",
            self.db.for_update()
        )))
        .bind(email.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let Some((hash, expires_at, wrong, state)) = row.filter(|r| r.3 != "used") else {
            return Err(ApiError::new(
                ErrorCode::NoPendingCode,
                "no sign-in code is pending for this address (none was requested, or it was used)",
            )
            .with_fix("POST /v1/auth/request-code with the address to get a code"));
        };
        if state == "locked" || wrong >= s.max_wrong_guesses {
            return Err(too_many_attempts());
        }
        if at >= expires_at {
            return Err(ApiError::new(
                ErrorCode::CodeExpired,
                format!(
                    "the sign-in code is older than its lifetime of {} minutes",
                    s.code_ttl_seconds / 60
                ),
            )
            .with_fix("POST /v1/auth/request-code to get a new code"));
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
            .await
            .map_err(db_error)?;
            tx.commit().await.map_err(db_error)?;
            let Some((wrong,)) = counted else {
                return Err(too_many_attempts());
            };
            let left = (s.max_wrong_guesses - wrong).max(0);
            let mut e = ApiError::new(
                ErrorCode::InvalidCode,
                if left == 0 {
                    "wrong sign-in code; no guesses are left for this code, request a new one"
                        .to_string()
                } else {
                    format!("wrong sign-in code; {left} guesses left for this code")
                },
            );
            e.attempts_left = Some(left as u32);
            return Err(e);
        }
        sqlx::query("UPDATE signin_codes SET state = 'used' WHERE email = $1")
            .bind(email.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        let (account_id, _) = ensure_account_tx(&mut tx, &email, s.signup_credits)
            .await
            .map_err(db_error)?;
        let token = insert_link(
            &mut tx,
            &account_id,
            SessionKind::Otp,
            None,
            at + s.link_ttl_seconds,
        )
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(token)
    }

    /// A one-time link for a browser-link session of the key `key_id`, within the account's daily cap.
    pub async fn browser_link(&self, account_id: &str, key_id: &str) -> AResult<String> {
        let at = now();
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        if !bump_daily(
            &mut *tx,
            DailyCap::LinksPerAccount,
            account_id,
            self.signin.links_per_account_per_day,
            at,
        )
        .await
        .map_err(db_error)?
        {
            return Err(ApiError::new(
                ErrorCode::RateLimited,
                "the daily cap on dashboard links is reached; it resets at 00:00 UTC",
            ));
        }
        let token = insert_link(
            &mut tx,
            account_id,
            SessionKind::Link,
            Some(key_id),
            at + self.signin.link_ttl_seconds,
        )
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(token)
    }

    /// `{public_url}/dashboard#login=<token>`: the token stays out of server logs (a fragment is not sent).
    pub fn dashboard_url(&self, token: &str) -> String {
        format!("{}/dashboard#login={token}", self.public_url)
    }

    /// Exchanges a one-time link token for a session: `(session token, kind, expires_at)`. A link made
    /// by browser-link opens nothing once its key is revoked or rotated away.
    pub async fn open_session(&self, link: &str) -> AResult<(String, SessionKind, i64)> {
        let at = now();
        let unauthorized = || {
            ApiError::new(
                ErrorCode::Unauthorized,
                "the dashboard link is unknown, already used or expired",
            )
        };
        if !link.starts_with(secrets::LINK_PREFIX) {
            return Err(unauthorized());
        }
        let mut tx = self.db.begin_write().await.map_err(db_error)?;
        let row: Option<(String, String, Option<String>)> = sqlx::query_as(
            "UPDATE login_links SET used = 1 WHERE token_hash = $1 AND used = 0 AND expires_at > $2 \
             AND (key_id IS NULL OR key_id IN (SELECT id FROM api_keys WHERE revoked_at IS NULL)) \
             RETURNING account_id, kind, key_id",
        )
        .bind(secrets::token_hash(link))
        .bind(at)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let Some((account_id, kind, key_id)) = row else {
            return Err(unauthorized());
        };
        let kind = SessionKind::parse(&kind);
        let ttl = match kind {
            SessionKind::Otp => self.signin.session_ttl_seconds,
            SessionKind::Link => self.signin.link_session_ttl_seconds,
        };
        let token = secrets::new_session_token();
        sqlx::query(
            "INSERT INTO sessions (token_hash, account_id, kind, created_at, expires_at, revoked, key_id) \
             VALUES ($1, $2, $3, $4, $5, 0, $6)",
        )
        .bind(secrets::token_hash(&token))
        .bind(account_id.as_str())
        .bind(kind.as_str())
        .bind(at)
        .bind(at + ttl)
        .bind(key_id)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok((token, kind, at + ttl))
    }

    /// The live session behind a token. Read from the database on every request (never cached), with
    /// the key of a browser-link session: such a session ends as soon as its key is revoked or rotated
    /// away, whichever process did it.
    pub async fn session(&self, token: &str) -> AResult<Option<SessionInfo>> {
        if !token.starts_with(secrets::SESSION_PREFIX) {
            return Ok(None);
        }
        let hash = secrets::token_hash(token);
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT s.account_id, s.kind FROM sessions s LEFT JOIN api_keys k ON k.id = s.key_id \
             WHERE s.token_hash = $1 AND s.revoked = 0 AND s.expires_at > $2 \
             AND (s.key_id IS NULL OR (k.id IS NOT NULL AND k.revoked_at IS NULL))",
        )
        .bind(hash.as_str())
        .bind(now())
        .fetch_optional(&self.db.read)
        .await
        .map_err(db_error)?;
        Ok(row.map(|(account_id, kind)| SessionInfo {
            account_id,
            kind: SessionKind::parse(&kind),
            token_hash: hash,
        }))
    }

    pub async fn sign_out(&self, token_hash: &str) -> AResult<()> {
        sqlx::query("UPDATE sessions SET revoked = 1 WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.db.write)
            .await
            .map_err(db_error)?;
        Ok(())
    }
}

fn too_many_attempts() -> ApiError {
    ApiError::new(
        ErrorCode::TooManyAttempts,
        "too many wrong guesses for this code; request a new code after the cooldown",
    )
    .with_fix("POST /v1/auth/request-code to get a new code")
}

fn no_such_key(key_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!("no active key {key_id} on this account"),
    )
    .with_fix("GET /v1/keys lists the account's keys")
}

/// Retires an active key of the account (revoked or rotated away): `Some(name)` when it was active.
/// One conditional update, so of concurrent revocations and rotations of a key exactly one retires it.
async fn retire_key(
    tx: &mut WriteTx,
    account_id: &str,
    key_id: &str,
    at: i64,
) -> DbResult<Option<Option<String>>> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND account_id = $3 AND revoked_at IS NULL \
         RETURNING name",
    )
    .bind(at)
    .bind(key_id)
    .bind(account_id)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map(|(name,)| name))
}

/// A one-time link token; `key_id` is the key a browser-link session belongs to.
async fn insert_link(
    tx: &mut WriteTx,
    account_id: &str,
    kind: SessionKind,
    key_id: Option<&str>,
    expires_at: i64,
) -> DbResult<String> {
    let token = secrets::new_link_token();
    sqlx::query(
        "INSERT INTO login_links (token_hash, account_id, kind, expires_at, used, key_id) \
         VALUES ($1, $2, $3, $4, 0, $5)",
    )
    .bind(secrets::token_hash(&token))
    .bind(account_id)
    .bind(kind.as_str())
    .bind(expires_at)
    .bind(key_id)
    .execute(&mut **tx)
    .await?;
    Ok(token)
}

async fn insert_key(tx: &mut WriteTx, account_id: &str, name: Option<&str>) -> DbResult<Value> {
    let key = secrets::new_api_key();
    let id = secrets::new_id("key_");
    let prefix = secrets::key_display_prefix(&key);
    let at = now();
    sqlx::query(
        "INSERT INTO api_keys (id, account_id, key_hash, prefix, name, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(id.as_str())
    .bind(account_id)
    .bind(secrets::token_hash(&key))
    .bind(prefix.as_str())
    .bind(name)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(
        json!({ "ok": true, "key": key, "id": id, "name": name, "prefix": prefix, "created_at": iso(at) }),
    )
}

/// Creates a key for an operator (`admin create-key`), whatever the count; returns the plaintext.
pub async fn admin_create_key(db: &Db, account_id: &str, name: Option<&str>) -> DbResult<String> {
    let mut tx = db.begin_write().await?;
    let body = insert_key(&mut tx, account_id, name).await?;
    tx.commit().await?;
    Ok(body["key"].as_str().unwrap_or_default().to_string())
}

/// The account of the address, created with `credits` when it does not exist: `(id, created)`. The
/// insert skips an address that exists (or that a concurrent transaction has just created), so two
/// first sign-ins or `admin` commands for one address never fail on the unique address.
async fn ensure_account_tx(
    tx: &mut WriteTx,
    email: &str,
    credits: i64,
) -> DbResult<(String, bool)> {
    let id = secrets::new_id("acc_");
    let created: Option<(String,)> = sqlx::query_as(
        "INSERT INTO accounts (id, email, balance, created_at) VALUES ($1, $2, 0, $3) \
         ON CONFLICT (email) DO NOTHING RETURNING id",
    )
    .bind(id.as_str())
    .bind(email)
    .bind(now())
    .fetch_optional(&mut **tx)
    .await?;
    if created.is_none() {
        let (existing,): (String,) = sqlx::query_as("SELECT id FROM accounts WHERE email = $1")
            .bind(email)
            .fetch_one(&mut **tx)
            .await?;
        return Ok((existing, false));
    }
    if credits > 0 {
        grant_tx(tx, &id, credits, "grant", &format!("signup:{id}")).await?;
    }
    Ok((id, true))
}

async fn grant_tx(
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

/// The server secret kept in the database: made once, on first start, and reused after.
async fn stored_secret(db: &Db) -> DbResult<String> {
    sqlx::query(
        "INSERT INTO settings (name, value) VALUES ('secret', $1) ON CONFLICT (name) DO NOTHING",
    )
    .bind(secrets::new_server_secret())
    .execute(&db.write)
    .await?;
    let (v,): (String,) = sqlx::query_as("SELECT value FROM settings WHERE name = 'secret'")
        .fetch_one(&db.write)
        .await?;
    Ok(v)
}

/// The ledger invariant of every account: `(account id, balance, sum of ledger amounts, holds)` where
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposable_domains_come_from_the_maintained_list() {
        assert!(is_disposable("a@mailinator.com"));
        assert!(is_disposable("a@sub.mailinator.com"));
        assert!(!is_disposable("a@example.com"));
        assert!(!is_disposable("a@gmail.com"));
    }
}
