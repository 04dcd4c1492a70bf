//! The secret that seals pagination cursors: kept in the database (`settings`), so it survives
//! restarts and every instance on one database shares it. It is separate from the sign-in code
//! secret, so rotating one never disturbs the other.
//!
//! - `cursor_secret`: `{"id", "secret"}`, made on first start (insert-if-absent, then read, so two
//!   instances starting at once agree on one).
//! - `cursor_secret_previous`: the secret before the last rotation, with `rotated_at`; it still
//!   opens cursors for `[cursors] previous_accepted_hours` after the rotation.
//!
//! A rotation (`socialsearch admin rotate-cursor-secret`) writes the database only; every running
//! instance re-reads the rows every `[cursors] reload_seconds`.

use std::sync::Weak;
use std::time::Duration;

use adapters::upstream::cursor::{CursorKey, CursorKeys};
use serde::{Deserialize, Serialize};

use crate::accounts::secrets;
use crate::config::Cursors;
use crate::db::{self, Db};

const CURRENT: &str = "cursor_secret";
const PREVIOUS: &str = "cursor_secret_previous";

#[derive(Serialize, Deserialize)]
struct Stored {
    id: String,
    /// Hex.
    secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rotated_at: Option<i64>,
}

impl Stored {
    fn fresh() -> Stored {
        Stored {
            id: secrets::random_base62(8),
            secret: secrets::new_server_secret(),
            rotated_at: None,
        }
    }

    fn key(&self) -> Result<CursorKey, String> {
        let secret = unhex(&self.secret).ok_or("the stored cursor secret is not hex")?;
        CursorKey::new(&self.id, secret)
    }

    fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl std::fmt::Debug for Stored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stored")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .field("rotated_at", &self.rotated_at)
            .finish()
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn parse(name: &str, value: &str) -> Result<Stored, String> {
    serde_json::from_str(value).map_err(|_| format!("settings row {name} is not a cursor secret"))
}

async fn read(pool: &sqlx::AnyPool, name: &str) -> Result<Option<Stored>, String> {
    let row: Option<(String,)> = sqlx::query_as("SELECT value FROM settings WHERE name = $1")
        .bind(name)
        .fetch_optional(pool)
        .await
        .map_err(|e| format!("reading the cursor secret: {e}"))?;
    row.map(|(v,)| parse(name, &v)).transpose()
}

/// Stores a first secret unless one exists (two instances starting at once keep the same one).
async fn create_if_absent(db: &Db) -> Result<(), String> {
    sqlx::query("INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
        .bind(CURRENT)
        .bind(Stored::fresh().text())
        .execute(&db.write)
        .await
        .map_err(|e| format!("storing the cursor secret: {e}"))?;
    Ok(())
}

/// The secrets in force, making the first one when the database has none. Only reads once the
/// secret exists, so the periodic reload costs no write.
pub async fn load(db: &Db, config: &Cursors) -> Result<CursorKeys, String> {
    let current = match read(&db.read, CURRENT).await? {
        Some(c) => c,
        None => {
            create_if_absent(db).await?;
            read(&db.write, CURRENT)
                .await?
                .ok_or("the cursor secret vanished right after it was stored")?
        }
    };
    let mut keys = CursorKeys::new(current.key()?);
    if let Some(previous) = read(&db.read, PREVIOUS).await? {
        let until = previous.rotated_at.unwrap_or(0).max(0) as u64
            + config.previous_accepted_hours.saturating_mul(3600);
        keys.previous = Some((previous.key()?, until));
    }
    Ok(keys)
}

/// What a rotation did, as the admin command prints it (ids only, never a secret).
#[derive(Debug, Serialize)]
pub struct Rotation {
    pub key_id: String,
    pub previous_key_id: String,
    pub rotated_at: i64,
}

/// Makes a new current secret and keeps the one it replaces as `previous`, in one transaction that
/// writes first: the no-op update takes the write lock up front on SQLite (a read first could not
/// be upgraded beside a running server) and the row lock on PostgreSQL, so two rotations at once
/// run one after the other; the compare-and-swap below is a second guard.
pub async fn rotate(db: &Db) -> Result<Rotation, String> {
    let fail = |e: sqlx::Error| format!("rotating the cursor secret: {e}");
    create_if_absent(db).await?;
    for _ in 0..5 {
        let mut tx = db.write.begin().await.map_err(fail)?;
        sqlx::query("UPDATE settings SET value = value WHERE name = $1")
            .bind(CURRENT)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        let (old_text,): (String,) = sqlx::query_as("SELECT value FROM settings WHERE name = $1")
            .bind(CURRENT)
            .fetch_one(&mut *tx)
            .await
            .map_err(fail)?;
        let mut old = parse(CURRENT, &old_text)?;
        let new = Stored::fresh();
        let swapped = sqlx::query("UPDATE settings SET value = $1 WHERE name = $2 AND value = $3")
            .bind(new.text())
            .bind(CURRENT)
            .bind(&old_text)
            .execute(&mut *tx)
            .await
            .map_err(fail)?
            .rows_affected();
        if swapped != 1 {
            // Another rotation won the race; start again from its result.
            tx.rollback().await.map_err(fail)?;
            continue;
        }
        let rotated_at = db::now();
        old.rotated_at = Some(rotated_at);
        sqlx::query(
            "INSERT INTO settings (name, value) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        )
        .bind(PREVIOUS)
        .bind(old.text())
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        return Ok(Rotation {
            key_id: new.id,
            previous_key_id: old.id,
            rotated_at,
        });
    }
    Err("rotating the cursor secret: other rotations kept interfering; try again".into())
}

/// Re-reads the secrets every `reload_seconds` and hands them to the sources, until the service
/// is gone. A failed read keeps the secrets in force (and says so).
pub fn keep_loading(state: Weak<crate::Inner>, config: &Cursors) {
    let every = Duration::from_secs(config.reload_seconds.max(1));
    let config = config.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = state.upgrade() else { return };
            match load(&inner.accounts.db, &config).await {
                Ok(keys) => inner.sources.set_cursor_keys(keys),
                Err(e) => tracing::warn!("keeping the cursor secrets in force: {e}"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_secrets_never_show_in_debug_and_read_back() {
        let s = Stored::fresh();
        assert!(!format!("{s:?}").contains(&s.secret));
        let back = parse(CURRENT, &s.text()).unwrap();
        assert_eq!(back.key().unwrap().id(), s.id);
        assert_eq!(unhex("0aff"), Some(vec![10, 255]));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }

    #[tokio::test]
    async fn first_start_makes_one_secret_and_rotation_keeps_the_previous() {
        let dir = std::env::temp_dir().join(format!("ss-cursor-{}", secrets::random_base62(8)));
        std::fs::create_dir_all(&dir).unwrap();
        let url = format!("sqlite://{}/db.sqlite?mode=rwc", dir.display());
        let db = Db::connect(&url).await.unwrap();
        let config = Cursors::default();
        let (a, b) = tokio::join!(load(&db, &config), load(&db, &config));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(
            a.current.id(),
            b.current.id(),
            "one secret, whoever came first"
        );
        assert!(a.previous.is_none());
        let r = rotate(&db).await.unwrap();
        assert_eq!(r.previous_key_id, a.current.id());
        let after = load(&db, &config).await.unwrap();
        assert_eq!(after.current.id(), r.key_id);
        let (prev, until) = after.previous.expect("the previous secret is kept");
        assert_eq!(prev.id(), a.current.id());
        assert_eq!(until, r.rotated_at as u64 + 24 * 3600);
        // Two rotations at once: one after the other, each demoting the secret the other made
        // or found, never the same one twice.
        let (x, y) = tokio::join!(rotate(&db), rotate(&db));
        let (x, y) = (x.unwrap(), y.unwrap());
        assert!(
            (x.previous_key_id == r.key_id && y.previous_key_id == x.key_id)
                || (y.previous_key_id == r.key_id && x.previous_key_id == y.key_id),
            "{r:?} {x:?} {y:?}"
        );
        db.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
