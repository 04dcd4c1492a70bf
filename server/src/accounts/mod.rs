//! Accounts, sign-in codes, dashboard links, sessions, API keys and the credit balance, on the database.
//! The rules (lifetimes, caps, formats) come from `config::Signin` and `secrets`. These modules answer
//! domain values and `AccountsError`; handlers in `ops/` turn them into bodies and envelopes.

pub mod caps;
pub mod ledger;
pub mod limits;
pub mod mail;
pub mod secrets;

mod account;
mod codes;
mod credits;
mod error;
mod keys;
mod sessions;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use crate::config::{Config, Signin};
use crate::db::{Db, DbResult};
use ledger::Ledger;
use limits::KeyLimits;
use mail::Mailer;

pub use account::{AdminView, is_disposable, normalize_email};
pub use credits::{CallView, MeView, UsageView, ledger_mismatches};
pub use error::{AccountsError, AccountsResult, CapReached};
pub use keys::{KeyInfo, KeyView, MAX_KEYS, NewKey, admin_create_key};
pub use sessions::{OpenedSession, SessionInfo, SessionKind};

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
