//! The database: one schema on SQLite (default, a file under `./data/`) or PostgreSQL, chosen by the URL.
//!
//! Both back ends go through sqlx's `Any` driver with runtime queries and `$N` placeholders, which both
//! understand, so every statement is written once. Writes and reads use two pools: on SQLite the write
//! pool has exactly one connection, so write transactions of one process never contend, while WAL
//! readers run beside it; on PostgreSQL both are the same pool.
//!
//! Every write transaction starts with `begin_write`: on SQLite `BEGIN IMMEDIATE`, which takes the
//! database's write lock up front (waiting up to the busy timeout for another process, such as an
//! `admin` command beside `serve`), so a transaction that reads before it writes can never fail half way
//! with "database is locked"; on PostgreSQL a plain `BEGIN`, with the rows a rule reads before it writes
//! locked (`lock_account`, `for_update`).

use std::path::Path;
use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};

/// The default database: a SQLite file under `./data/`, created on first start.
pub const DEFAULT_URL: &str = "sqlite://data/socialsearch.db?mode=rwc";

/// The migrations, applied in order and recorded in `schema_migrations`.
const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("../../migrations/0001_accounts.sql")),
    (2, include_str!("../../migrations/0002_session_keys.sql")),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone)]
pub struct Db {
    pub backend: Backend,
    /// Every write transaction: one connection on SQLite.
    pub write: AnyPool,
    /// Reads.
    pub read: AnyPool,
    /// The WAL checkpoints, on SQLite.
    checkpoints: Option<AnyPool>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("backend", &self.backend)
            .finish()
    }
}

pub type DbResult<T> = Result<T, sqlx::Error>;

/// The PostgreSQL advisory lock key that serialises migrations ("ssmigrat" in ASCII, any fixed number).
const MIGRATION_LOCK: i64 = 0x7373_6d69_6772_6174;

/// A write transaction (see `Db::begin_write`).
pub type WriteTx = sqlx::Transaction<'static, sqlx::Any>;

/// How long a SQLite connection waits for another process's write lock before "database is locked".
pub const SQLITE_BUSY_TIMEOUT_MS: u64 = 10_000;

/// Unix seconds now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The database URL in force: `DATABASE_URL` wins over the configuration, then the default.
pub fn resolve_url(configured: Option<&str>) -> String {
    std::env::var("DATABASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| configured.map(str::to_string))
        .unwrap_or_else(|| DEFAULT_URL.to_string())
}

/// The URL without a password, for messages.
pub fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}{}@{}", &url[..s + 3], user, &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

impl Db {
    /// Connects with the default SQLite `synchronous` mode (NORMAL); see `connect_with`.
    pub async fn connect(url: &str) -> Result<Db, String> {
        Db::connect_with(url, "normal").await
    }

    /// Connects, creating the SQLite file's directory if needed, and applies the migrations.
    /// `sqlite_synchronous` is `normal` (a commit survives a crash of the process; an OS crash or power
    /// loss can lose the last commits) or `full` (every commit is on disk before it returns).
    pub async fn connect_with(url: &str, sqlite_synchronous: &str) -> Result<Db, String> {
        let pragma: &'static str = match sqlite_synchronous {
            "normal" => "PRAGMA synchronous = NORMAL",
            "full" => "PRAGMA synchronous = FULL",
            other => {
                return Err(format!(
                    "sqlite_synchronous must be normal or full, not {other}"
                ));
            }
        };
        install_default_drivers();
        let fail = |e: sqlx::Error| format!("database {}: {e}", redacted(url));
        let db = if url.starts_with("sqlite:") {
            if let Some(parent) = sqlite_path(url).and_then(|p| p.parent().map(Path::to_path_buf))
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(&parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            let opts = || {
                AnyPoolOptions::new()
                    .acquire_timeout(Duration::from_secs(30))
                    .after_connect(move |conn, _| {
                        Box::pin(async move {
                            conn.execute(sqlx::AssertSqlSafe(format!(
                                "PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}"
                            )))
                            .await?;
                            conn.execute(pragma).await?;
                            conn.execute("PRAGMA foreign_keys = ON").await?;
                            // No connection checkpoints on commit: a checkpoint copies the WAL into the
                            // database file and syncs both, which stalled the ledger writer for
                            // milliseconds several times a second. `checkpointer` does it beside it.
                            conn.execute("PRAGMA wal_autocheckpoint = 0").await?;
                            Ok(())
                        })
                    })
            };
            // The local file needs no liveness test before each use (a round trip to the
            // connection's thread, on every ledger batch).
            let write = opts()
                .max_connections(1)
                .test_before_acquire(false)
                .connect(url)
                .await
                .map_err(fail)?;
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&write)
                .await
                .map_err(fail)?;
            let read = opts().max_connections(4).connect(url).await.map_err(fail)?;
            let checkpoints = opts().max_connections(1).connect(url).await.map_err(fail)?;
            tokio::spawn(checkpointer(checkpoints.clone()));
            Db {
                backend: Backend::Sqlite,
                write,
                read,
                checkpoints: Some(checkpoints),
            }
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let pool = AnyPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(Duration::from_secs(30))
                .connect(url)
                .await
                .map_err(fail)?;
            Db {
                backend: Backend::Postgres,
                write: pool.clone(),
                read: pool,
                checkpoints: None,
            }
        } else {
            return Err(format!(
                "DATABASE_URL must start with sqlite: or postgres:, not {}",
                redacted(url)
            ));
        };
        db.migrate().await.map_err(fail)?;
        Ok(db)
    }

    /// Begins a write transaction: on SQLite with the write lock taken at once (`BEGIN IMMEDIATE`, the
    /// busy timeout waiting for another process), on PostgreSQL a plain `BEGIN`.
    pub async fn begin_write(&self) -> DbResult<WriteTx> {
        match self.backend {
            Backend::Sqlite => self.write.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.write.begin().await,
        }
    }

    /// Locks the account's row until the transaction ends, so a rule per account that counts before it
    /// writes (keys per account) holds under concurrent requests: `SELECT ... FOR UPDATE` on PostgreSQL;
    /// a plain read on SQLite, where `begin_write` already holds the database's write lock. `true`
    /// when the account exists.
    pub async fn lock_account(&self, tx: &mut WriteTx, account_id: &str) -> DbResult<bool> {
        let sql = match self.backend {
            Backend::Postgres => "SELECT id FROM accounts WHERE id = $1 FOR UPDATE",
            Backend::Sqlite => "SELECT id FROM accounts WHERE id = $1",
        };
        let row: Option<(String,)> = sqlx::query_as(sql)
            .bind(account_id)
            .fetch_optional(&mut **tx)
            .await?;
        Ok(row.is_some())
    }

    /// `" FOR UPDATE"` on PostgreSQL, empty on SQLite (see `lock_account`): appended to a `SELECT` of a
    /// write transaction whose rows the transaction goes on to change.
    pub fn for_update(&self) -> &'static str {
        match self.backend {
            Backend::Postgres => " FOR UPDATE",
            Backend::Sqlite => "",
        }
    }

    /// Applies the missing migrations, all in one write transaction, so processes starting at once on
    /// a new database (a service and `admin` commands) apply each exactly once: SQLite serialises them
    /// by `BEGIN IMMEDIATE`, PostgreSQL by a transaction-scoped advisory lock (its `CREATE TABLE IF NOT
    /// EXISTS` is not safe against a concurrent one).
    async fn migrate(&self) -> DbResult<()> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(MIGRATION_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)",
        )
        .execute(&mut *tx)
        .await?;
        for (version, sql) in MIGRATIONS {
            let done: Option<(i64,)> =
                sqlx::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                    .bind(*version)
                    .fetch_optional(&mut *tx)
                    .await?;
            if done.is_some() {
                continue;
            }
            for statement in statements(sql) {
                sqlx::query(sqlx::AssertSqlSafe(statement))
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)")
                .bind(*version)
                .bind(now())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await
    }

    pub async fn close(&self) {
        if let Some(c) = &self.checkpoints {
            c.close().await;
        }
        self.write.close().await;
        self.read.close().await;
    }
}

/// How often the WAL is checkpointed into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// Checkpoints the SQLite WAL on a connection of its own, so that no commit waits for one (connections
/// run with `wal_autocheckpoint = 0`). PASSIVE: it copies what it can without blocking readers or the
/// writer, and the writer starts the WAL over once everything is copied. Checkpoints do not change what
/// a commit guarantees: a commit is durable per `synchronous` when it returns, whether or not it has
/// been copied yet. Ends when the pool is closed; the last connection to close checkpoints the rest.
async fn checkpointer(pool: AnyPool) {
    loop {
        tokio::time::sleep(CHECKPOINT_EVERY).await;
        if pool.is_closed() {
            return;
        }
        if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
            .execute(&pool)
            .await
        {
            if pool.is_closed() || matches!(e, sqlx::Error::PoolClosed) {
                return;
            }
            tracing::warn!(error = %e, "WAL checkpoint failed");
        }
    }
}

/// The statements of a migration file: comments dropped, split on `;` at the end of a line.
fn statements(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in sql.lines() {
        let line = line.split("--").next().unwrap_or("").trim_end();
        if line.trim().is_empty() {
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
        if line.ends_with(';') {
            out.push(cur.trim().trim_end_matches(';').to_string());
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The file of a `sqlite:` URL, if it names one.
fn sqlite_path(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or("");
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Some(path.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_statements_and_drops_comments() {
        let s =
            statements("-- a; comment\nCREATE TABLE a (x BIGINT);\n\nCREATE INDEX i ON a (x);\n");
        assert_eq!(
            s,
            vec!["CREATE TABLE a (x BIGINT)", "CREATE INDEX i ON a (x)"]
        );
    }

    #[test]
    fn finds_the_sqlite_file_and_redacts_passwords() {
        assert_eq!(
            sqlite_path(DEFAULT_URL),
            Some("data/socialsearch.db".into())
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(
            redacted("postgres://u:secret@h:5432/db"),
            "postgres://u@h:5432/db"
        );
    }
}
