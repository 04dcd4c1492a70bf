//! Browser sessions and the one-time dashboard links that open them (after a code, or by
//! browser-link with a key).

use super::caps::{DailyCap, bump_daily};
use super::{Accounts, AccountsError, AccountsResult, CapReached, secrets};
use crate::db::{DbResult, WriteTx, now};

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

/// The live session behind a presented token.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub account_id: String,
    pub kind: SessionKind,
    pub token_hash: String,
}

/// A session just opened from a link: its token (shown this once), kind and end (unix seconds).
/// `Debug` never shows the token.
#[derive(Clone)]
pub struct OpenedSession {
    pub token: String,
    pub kind: SessionKind,
    pub expires_at: i64,
}

impl std::fmt::Debug for OpenedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedSession")
            .field("token", &"<redacted>")
            .field("kind", &self.kind)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl Accounts {
    /// A one-time link for a browser-link session of the key `key_id`, within the account's daily cap.
    pub async fn browser_link(&self, account_id: &str, key_id: &str) -> AccountsResult<String> {
        let at = now();
        let mut tx = self.db.begin_write().await?;
        if !bump_daily(
            &mut *tx,
            DailyCap::LinksPerAccount,
            account_id,
            self.signin.links_per_account_per_day,
            at,
        )
        .await?
        {
            return Err(AccountsError::DailyCap(CapReached::DashboardLinks));
        }
        let token = insert_link(
            &mut tx,
            account_id,
            SessionKind::Link,
            Some(key_id),
            at + self.signin.link_ttl_seconds,
        )
        .await?;
        tx.commit().await?;
        Ok(token)
    }

    /// `{public_url}/dashboard#login=<token>`: the token stays out of server logs (a fragment is not sent).
    pub fn dashboard_url(&self, token: &str) -> String {
        format!("{}/dashboard#login={token}", self.public_url)
    }

    /// Exchanges a one-time link token for a session. A link made by browser-link opens nothing once
    /// its key is revoked or rotated away.
    pub async fn open_session(&self, link: &str) -> AccountsResult<OpenedSession> {
        let at = now();
        if !link.starts_with(secrets::LINK_PREFIX) {
            return Err(AccountsError::UnknownLink);
        }
        let mut tx = self.db.begin_write().await?;
        let row: Option<(String, String, Option<String>)> = sqlx::query_as(
            "UPDATE login_links SET used = 1 WHERE token_hash = $1 AND used = 0 AND expires_at > $2 \
             AND (key_id IS NULL OR key_id IN (SELECT id FROM api_keys WHERE revoked_at IS NULL)) \
             RETURNING account_id, kind, key_id",
        )
        .bind(secrets::token_hash(link))
        .bind(at)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((account_id, kind, key_id)) = row else {
            return Err(AccountsError::UnknownLink);
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
        .await?;
        tx.commit().await?;
        Ok(OpenedSession {
            token,
            kind,
            expires_at: at + ttl,
        })
    }

    /// The live session behind a token. Read from the database on every request (never cached), with
    /// the key of a browser-link session: such a session ends as soon as its key is revoked or rotated
    /// away, whichever process did it.
    pub async fn session(&self, token: &str) -> AccountsResult<Option<SessionInfo>> {
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
        .await?;
        Ok(row.map(|(account_id, kind)| SessionInfo {
            account_id,
            kind: SessionKind::parse(&kind),
            token_hash: hash,
        }))
    }

    pub async fn sign_out(&self, token_hash: &str) -> AccountsResult<()> {
        sqlx::query("UPDATE sessions SET revoked = 1 WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&self.db.write)
            .await?;
        Ok(())
    }
}

/// A one-time link token; `key_id` is the key a browser-link session belongs to.
pub(super) async fn insert_link(
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
