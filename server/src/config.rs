//! Configuration: embedded defaults, then a TOML file (`--config` or `SOCIALSEARCH_CONFIG`).

use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address `serve` listens on; `--listen` overrides it.
    pub listen: SocketAddr,
    /// Public base URL of this deployment, used to build dashboard and pay links. Empty (the
    /// default): `http://` and the address `serve` actually listens on.
    pub public_url: String,
    /// Connection handling: timeouts, the connection cap, shutdown.
    pub server: Server,
    pub limits: Limits,
    /// Database URL (`sqlite://...` or `postgres://...`); the `DATABASE_URL` environment variable wins.
    pub database_url: Option<String>,
    /// SQLite durability: `normal` (default; commits survive a crash of the service, see
    /// docs/decisions.md) or `full` (every commit reaches the disk before it returns).
    pub sqlite_synchronous: String,
    /// Server secret keying the sign-in code hashes; when absent one is made once and kept in the database.
    pub secret: Option<String>,
    /// The operator's key for the admin routes (`x-owner-key`); without it the admin routes answer 401.
    pub owner_key: Option<String>,
    /// SMTP relay for sign-in e-mail; without it codes go to the development outbox.
    pub smtp: Option<Smtp>,
    pub mail: Mail,
    pub signin: Signin,
    /// Upstream sources: base URLs, credentials, enablement and chain order.
    pub sources: adapters::sources::SourcesConfig,
    pub cursors: Cursors,
}

/// The secret that seals pagination cursors (kept in the database; see `cursor_secret`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Cursors {
    /// How long cursors sealed with the secret before a rotation stay accepted after it.
    pub previous_accepted_hours: u64,
    /// How often a running instance re-reads the secret, so a rotation reaches every instance.
    pub reload_seconds: u64,
}

impl Default for Cursors {
    fn default() -> Self {
        // A cursor lives 24 hours, so every cursor issued before a rotation stays usable.
        Cursors {
            previous_accepted_hours: 24,
            reload_seconds: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest accepted JSON body; larger ones get 413 PAYLOAD_TOO_LARGE.
    pub body_max_bytes: usize,
    /// Sustained requests per second per key (spec section 8: 5).
    pub rate_per_second: f64,
    /// Requests a key may send at once before the rate applies (spec: 10).
    pub burst: u32,
    /// Platform calls of one key in flight at once (spec: 10).
    pub in_flight: u32,
    /// A held reservation older than this is released by the janitor (a crashed or stuck call).
    pub hold_expiry_seconds: u64,
}

/// How the listener treats connections (docs/decisions.md, "Connections").
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Server {
    /// Time for a whole request head (request line and header fields) to arrive, counted from the
    /// connection's start or the first byte of the head; then the connection is closed.
    pub header_timeout_ms: u64,
    /// Time for a whole request body to arrive once its head is in; then the connection is closed.
    pub body_timeout_ms: u64,
    /// A kept-alive connection with no request in flight is closed after this long.
    pub idle_timeout_ms: u64,
    /// Open connections at most; further ones wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// On SIGTERM/SIGINT, calls in flight get this long to finish before their connections are closed.
    pub shutdown_grace_ms: u64,
    /// Longest request target (path and query) accepted; longer ones get 400 BAD_REQUEST.
    pub max_url_bytes: usize,
    /// Longest request head (request line and header fields) accepted; longer ones get 400 BAD_REQUEST.
    pub max_head_bytes: usize,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
            max_connections: 10_000,
            shutdown_grace_ms: 10_000,
            max_url_bytes: 8 * 1024,
            max_head_bytes: 16 * 1024,
        }
    }
}

/// Shortest accepted `owner_key`: 32 characters, as long as the service's own random keys.
pub const OWNER_KEY_MIN_CHARS: usize = 32;

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Smtp {
    pub host: String,
    #[serde(default = "default_smtp_port")]
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    /// `From:` of sign-in e-mail.
    pub from: String,
    /// `none` (plain, for a local relay), `starttls` or `tls`.
    #[serde(default = "default_smtp_tls")]
    pub tls: String,
}

fn default_smtp_port() -> u16 {
    587
}

fn default_smtp_tls() -> String {
    "starttls".into()
}

impl std::fmt::Debug for Smtp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smtp")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("from", &self.from)
            .field("tls", &self.tls)
            .finish()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mail {
    /// Development outbox used when no `[smtp]` is configured: each message is appended here (and logged).
    pub outbox_path: String,
}

impl Default for Mail {
    fn default() -> Self {
        Mail {
            outbox_path: "data/outbox.log".into(),
        }
    }
}

/// Sign-in rules (docs/decisions.md explains each value).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Signin {
    pub code_ttl_seconds: i64,
    pub max_wrong_guesses: i64,
    /// Least time between two codes for one address.
    pub cooldown_seconds: i64,
    /// Codes sent to one address per UTC day (protects the mailbox).
    pub codes_per_address_per_day: i64,
    /// Codes asked for from one client network per UTC day: an IPv4 address, or an IPv6 /64.
    /// High enough for an office or campus behind one NAT address.
    pub codes_per_client_per_day: i64,
    pub links_per_account_per_day: i64,
    /// Lifetime of a one-time dashboard link.
    pub link_ttl_seconds: i64,
    /// Lifetime of a session signed in with an e-mailed code.
    pub session_ttl_seconds: i64,
    /// Lifetime of a session opened by browser-link.
    pub link_session_ttl_seconds: i64,
    /// Credits of a new account.
    pub signup_credits: i64,
}

impl Default for Signin {
    fn default() -> Self {
        Signin {
            code_ttl_seconds: 600,
            max_wrong_guesses: 5,
            cooldown_seconds: 60,
            codes_per_address_per_day: 20,
            codes_per_client_per_day: 200,
            links_per_account_per_day: 20,
            link_ttl_seconds: 900,
            session_ttl_seconds: 7 * 24 * 3600,
            link_session_ttl_seconds: 24 * 3600,
            signup_credits: 50,
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("public_url", &self.public_url)
            .field("server", &self.server)
            .field("limits", &self.limits)
            .field(
                "database_url",
                &self.database_url.as_deref().map(crate::db::redacted),
            )
            .field("sqlite_synchronous", &self.sqlite_synchronous)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("owner_key", &self.owner_key.as_ref().map(|_| "<redacted>"))
            .field("smtp", &self.smtp)
            .field("mail", &self.mail)
            .field("signin", &self.signin)
            .field("sources", &self.sources)
            .field("cursors", &self.cursors)
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: String::new(),
            server: Server::default(),
            limits: Limits::default(),
            database_url: None,
            sqlite_synchronous: "normal".into(),
            secret: None,
            owner_key: None,
            smtp: None,
            mail: Mail::default(),
            signin: Signin::default(),
            sources: Default::default(),
            cursors: Cursors::default(),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_max_bytes: 16 * 1024,
            rate_per_second: 5.0,
            burst: 10,
            in_flight: 10,
            hold_expiry_seconds: 120,
        }
    }
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
        let config: Config =
            toml::from_str(&text).map_err(|e| format!("config {}: {e}", path.display()))?;
        config
            .validate()
            .map_err(|e| format!("config {}: {e}", path.display()))?;
        Ok(config)
    }

    /// Rules serde cannot state: a guessable owner key or an unusable connection setting is refused
    /// at start rather than found out in production.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(key) = &self.owner_key {
            let chars = key.chars().count();
            if chars < OWNER_KEY_MIN_CHARS {
                return Err(format!(
                    "owner_key is {chars} characters; it must be at least {OWNER_KEY_MIN_CHARS} \
                     (for example the output of `openssl rand -hex 32`)"
                ));
            }
        }
        let s = &self.server;
        if s.max_connections == 0 || s.max_connections > 1_000_000 {
            return Err("server.max_connections must be between 1 and 1000000".into());
        }
        if s.header_timeout_ms == 0 || s.body_timeout_ms == 0 || s.idle_timeout_ms == 0 {
            return Err("server timeouts must be above 0 ms".into());
        }
        if s.max_url_bytes < 256 || s.max_head_bytes < s.max_url_bytes {
            return Err(
                "server.max_url_bytes must be at least 256 and server.max_head_bytes at least max_url_bytes"
                    .into(),
            );
        }
        Ok(())
    }

    /// The file named by `explicit`, else by `SOCIALSEARCH_CONFIG`, else the embedded defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Self, String> {
        let from_env = std::env::var_os("SOCIALSEARCH_CONFIG").filter(|v| !v.is_empty());
        match explicit.map(Path::to_path_buf).or(from_env.map(Into::into)) {
            Some(path) => Config::from_file(&path),
            None => Ok(Config::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml: &str) -> Result<(), String> {
        let c: Config = toml::from_str(toml).map_err(|e| e.to_string())?;
        c.validate()
    }

    #[test]
    fn a_short_owner_key_is_refused() {
        let err =
            parse("owner_key = \"0123456789abcdef0123456789abcde\"").expect_err("31 characters");
        assert!(
            err.contains("31 characters") && err.contains("at least 32"),
            "{err}"
        );
        assert!(
            parse("owner_key = \"\"").is_err(),
            "an empty key is not a key"
        );
        assert!(parse("owner_key = \"0123456789abcdef0123456789abcdef\"").is_ok());
        assert!(
            parse("").is_ok(),
            "no owner key: the admin routes answer 401"
        );
    }

    #[test]
    fn server_section_has_defaults_and_is_checked() {
        let c: Config = toml::from_str("[server]\nheader_timeout_ms = 500\n").expect("parses");
        assert_eq!(c.server.header_timeout_ms, 500);
        assert_eq!(c.server.max_connections, 10_000);
        assert!(parse("[server]\nmax_connections = 0\n").is_err());
    }
}
