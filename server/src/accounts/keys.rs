//! API keys: the look-up of a presented key (with a short cache), and listing, creating, rotating
//! and revoking an account's keys.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{Accounts, AccountsError, AccountsResult, secrets};
use crate::db::{Db, DbResult, WriteTx, now};

/// Keys per account (spec section 8).
pub const MAX_KEYS: i64 = adapters::api::limits::KEYS_PER_ACCOUNT as i64;
/// How long a key look-up is trusted without the database. Revocation and rotation in this process
/// drop the entry at once; the time bounds what another process's change takes to be seen.
const KEY_CACHE_TTL: Duration = Duration::from_secs(10);

/// The active key behind a presented key.
#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub id: String,
    pub account_id: String,
    pub prefix: String,
}

/// A key as listed (never its plaintext); times in unix seconds.
#[derive(Debug, Clone)]
pub struct KeyView {
    pub id: String,
    pub name: Option<String>,
    pub prefix: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// A key just made: its plaintext, shown this once, and its listing. `Debug` never shows the key.
#[derive(Clone)]
pub struct NewKey {
    pub key: String,
    pub view: KeyView,
}

impl std::fmt::Debug for NewKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewKey")
            .field("key", &"<redacted>")
            .field("view", &self.view)
            .finish()
    }
}

/// id, name, prefix, created_at, last_used_at
type KeyRow = (String, Option<String>, String, i64, Option<i64>);

impl Accounts {
    /// The active key behind a presented key, if any.
    pub async fn key(&self, presented: &str) -> AccountsResult<Option<KeyInfo>> {
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
        .await?;
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

    /// The account's active keys, oldest first.
    pub async fn list_keys(&self, account_id: &str) -> AccountsResult<Vec<KeyView>> {
        let rows: Vec<KeyRow> = sqlx::query_as(
            "SELECT id, name, prefix, created_at, last_used_at FROM api_keys \
             WHERE account_id = $1 AND revoked_at IS NULL ORDER BY created_at, id",
        )
        .bind(account_id)
        .fetch_all(&self.db.read)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, name, prefix, created_at, last_used_at)| KeyView {
                id,
                name,
                prefix,
                created_at,
                last_used_at,
            })
            .collect())
    }

    /// Creates a key. The count and the insert run with the account's row locked, so concurrent
    /// creations never pass the limit.
    pub async fn create_key(&self, account_id: &str, name: Option<&str>) -> AccountsResult<NewKey> {
        let mut tx = self.db.begin_write().await?;
        self.db.lock_account(&mut tx, account_id).await?;
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL",
        )
        .bind(account_id)
        .fetch_one(&mut *tx)
        .await?;
        if n >= MAX_KEYS {
            return Err(AccountsError::KeyLimit { max: MAX_KEYS });
        }
        let key = insert_key(&mut tx, account_id, name).await?;
        tx.commit().await?;
        Ok(key)
    }

    /// Revokes a key; the sessions opened by browser-link with it end with it (see `session`).
    pub async fn revoke_key(&self, account_id: &str, key_id: &str) -> AccountsResult<()> {
        let mut tx = self.db.begin_write().await?;
        let revoked = retire_key(&mut tx, account_id, key_id, now()).await?;
        tx.commit().await?;
        self.forget_key(key_id);
        if revoked.is_none() {
            return Err(no_such_key(key_id));
        }
        Ok(())
    }

    /// Rotates a key: a new key (new id, same name) replaces it, and the old one is rotated away at
    /// once, in one transaction. The old key's row is retired by a conditional update, so of
    /// concurrent rotations of one key exactly one succeeds; the others find no active key.
    pub async fn rotate_key(&self, account_id: &str, key_id: &str) -> AccountsResult<NewKey> {
        let mut tx = self.db.begin_write().await?;
        let retired = retire_key(&mut tx, account_id, key_id, now()).await?;
        let Some(name) = retired else {
            return Err(no_such_key(key_id));
        };
        let key = insert_key(&mut tx, account_id, name.as_deref()).await?;
        tx.commit().await?;
        self.forget_key(key_id);
        Ok(key)
    }
}

fn no_such_key(key_id: &str) -> AccountsError {
    AccountsError::NoSuchKey {
        key_id: key_id.to_string(),
    }
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

async fn insert_key(tx: &mut WriteTx, account_id: &str, name: Option<&str>) -> DbResult<NewKey> {
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
    Ok(NewKey {
        key,
        view: KeyView {
            id,
            name: name.map(str::to_string),
            prefix,
            created_at: at,
            last_used_at: None,
        },
    })
}

/// Creates a key for an operator (`admin create-key`), whatever the count; returns the plaintext.
pub async fn admin_create_key(
    db: &Db,
    account_id: &str,
    name: Option<&str>,
) -> AccountsResult<String> {
    let mut tx = db.begin_write().await?;
    let new = insert_key(&mut tx, account_id, name).await?;
    tx.commit().await?;
    Ok(new.key)
}
