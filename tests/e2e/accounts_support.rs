//! Harness of the accounts and credits tests: a fresh database (SQLite file or a PostgreSQL database of
//! its own), the real `socialsearch serve` on a loopback port, a fake upstream, and helpers to sign in,
//! make keys, read the ledger and check its invariant.
//!
//! PostgreSQL: `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/test`) names a server
//! where each test creates `t_<random>` and drops it afterwards. Unreachable: the test fails when `CI`
//! is set, otherwise it is skipped with a notice.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use server::db::Db;

use crate::fake_upstream::{FakeUpstream, Route};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Runs a scenario on SQLite and on PostgreSQL, as two tests.
#[macro_export]
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::accounts_support::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::accounts_support::Backend::Postgres).await
            }
        }
    )*};
}

pub fn random_suffix() -> String {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).expect("random");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

const PG_ADMIN_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A database of one test, removed when dropped.
pub struct TestDb {
    pub backend: Backend,
    pub url: String,
    pub dir: PathBuf,
    pg_name: Option<String>,
}

impl TestDb {
    /// `None` when PostgreSQL is unreachable outside CI (the test is skipped).
    pub async fn new(backend: Backend) -> Option<TestDb> {
        let dir = std::env::temp_dir().join(format!("ss-e2e-{}", random_suffix()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        match backend {
            Backend::Sqlite => Some(TestDb {
                backend,
                url: format!("sqlite://{}/db.sqlite?mode=rwc", dir.display()),
                dir,
                pg_name: None,
            }),
            Backend::Postgres => {
                let admin =
                    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN_DEFAULT.into());
                sqlx::any::install_default_drivers();
                let conn = sqlx::AnyPool::connect(&admin).await;
                let pool = match conn {
                    Ok(p) => p,
                    Err(e) => {
                        if std::env::var_os("CI").is_some() {
                            panic!("PostgreSQL at {admin} is unreachable and CI is set: {e}");
                        }
                        eprintln!("NOTICE: PostgreSQL test skipped, {admin} is unreachable: {e}");
                        return None;
                    }
                };
                let name = format!("t_{}", random_suffix());
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                    .execute(&pool)
                    .await
                    .expect("create the test database");
                pool.close().await;
                let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
                Some(TestDb {
                    backend,
                    url: format!("{base}/{name}"),
                    dir,
                    pg_name: Some(name),
                })
            }
        }
    }

    /// A connection of the test's own, to read and check the books.
    pub async fn connect(&self) -> Db {
        Db::connect(&self.url)
            .await
            .expect("connect to the test database")
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(name) = self.pg_name.take() {
            let admin =
                std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| PG_ADMIN_DEFAULT.into());
            // A runtime of its own: Drop may run inside or outside one.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(rt) = rt {
                    rt.block_on(async {
                        if let Ok(pool) = sqlx::AnyPool::connect(&admin).await {
                            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                            )))
                            .execute(&pool)
                            .await;
                            pool.close().await;
                        }
                    });
                }
            })
            .join();
        }
    }
}

/// The running binary.
pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub log: Arc<Mutex<Vec<String>>>,
    config_path: PathBuf,
    envs: Vec<(String, String)>,
}

impl Server {
    pub fn start(config_path: PathBuf, envs: Vec<(String, String)>) -> Server {
        let log = Arc::new(Mutex::new(Vec::new()));
        let (child, base) = spawn(&config_path, &envs, log.clone());
        Server {
            child: Some(child),
            base,
            log,
            config_path,
            envs,
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits for the process to end (graceful shutdown).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(c.id().to_string())
                .status();
            for _ in 0..200 {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the binary again on the same configuration and database.
    pub fn restart(&mut self) {
        self.kill();
        let (child, base) = spawn(&self.config_path, &self.envs, self.log.clone());
        self.child = Some(child);
        self.base = base;
    }

    pub fn log_text(&self) -> String {
        self.log.lock().expect("log").join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(
    config: &PathBuf,
    envs: &[(String, String)],
    log: Arc<Mutex<Vec<String>>>,
) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_socialsearch"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start socialsearch");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(i) = line.find("listening on http://")
                && let Some(t) = tx.take()
            {
                let _ = t.send(line[i + "listening on ".len()..].trim().to_string());
            }
            log.lock().expect("log").push(line);
        }
    });
    let base = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("socialsearch did not print its address");
    (child, base)
}

/// Options of one test environment, written into the binary's TOML configuration.
#[derive(Clone)]
pub struct Options {
    pub limits: String,
    pub signin: String,
    pub extra: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            limits: String::new(),
            signin: "cooldown_seconds = 0\n".into(),
            extra: String::new(),
        }
    }
}

pub const OWNER_KEY: &str = "owner-test-key-0123456789abcdefghijklmnop";

/// One test's world: database, fake upstream, server and an HTTP client.
pub struct Env {
    pub db: TestDb,
    pub up: FakeUpstream,
    pub server: Server,
    pub http: reqwest::Client,
}

/// One `[sources.source."<id>"]` table: a source pointed at the fake upstream.
pub struct SourceAt {
    id: String,
    lines: Vec<String>,
}

/// The source `id` pointed at `base_url` (usually `up.url("/prefix")`).
pub fn at(id: &str, base_url: String) -> SourceAt {
    SourceAt {
        id: id.into(),
        lines: vec![format!("base_url = \"{base_url}\"")],
    }
}

impl SourceAt {
    /// Another line of TOML for this source's table (`credential = "..."`, `instance_port = 1234`).
    pub fn with(mut self, line: &str) -> Self {
        self.lines.push(line.into());
        self
    }
}

/// `Options::extra` that enables only the named sources, each pointed at the fake upstream, and
/// disables every other one, so no request can leave this machine. `top` is TOML for the
/// `[sources]` table itself (`allow_private_hosts = false`, `[sources.host_overrides]` ...).
pub fn only_sources(top: &str, tables: &[SourceAt]) -> String {
    let ids: Vec<&str> = adapters::platforms::all()
        .iter()
        .map(|s| s.meta().id)
        .collect();
    let mut toml = format!("[sources]\n{top}\n");
    for t in tables {
        assert!(ids.contains(&t.id.as_str()), "no source {}", t.id);
        toml.push_str(&format!(
            "[sources.source.\"{}\"]\n{}\n",
            t.id,
            t.lines.join("\n")
        ));
    }
    for id in ids {
        if !tables.iter().any(|t| t.id == id) {
            toml.push_str(&format!("[sources.source.\"{id}\"]\nenabled = false\n"));
        }
    }
    toml
}

pub fn search_fixture() -> Route {
    Route::get("/api/v1/search").file("techforum/algolia/search_story.json")
}

impl Env {
    /// `None`: skipped (PostgreSQL unreachable outside CI).
    pub async fn start(backend: Backend, opts: Options) -> Option<Env> {
        let up = FakeUpstream::start().await;
        up.route(search_fixture());
        Env::start_with(backend, opts, up.url("/api/v1"), up).await
    }

    pub async fn start_with(
        backend: Backend,
        opts: Options,
        upstream_base: String,
        up: FakeUpstream,
    ) -> Option<Env> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let db = TestDb::new(backend).await?;
        // Without sources of its own, a test gets techforum.algolia on the upstream and nothing
        // else, so no call can leave this machine.
        let mut extra = opts.extra.clone();
        if !extra.contains("[sources]") {
            extra.push('\n');
            extra.push_str(&only_sources(
                "",
                &[at("techforum.algolia", upstream_base.clone())],
            ));
        }
        let config = format!(
            "public_url = \"http://dashboard.test\"\nowner_key = \"{OWNER_KEY}\"\n{}\n[mail]\noutbox_path = \"{}\"\n[limits]\n{}\n[signin]\n{}\n",
            extra,
            db.dir.join("outbox.log").display(),
            opts.limits,
            opts.signin,
        );
        let config_path = db.dir.join("config.toml");
        std::fs::write(&config_path, config).expect("write config");
        let envs = vec![
            ("DATABASE_URL".to_string(), db.url.clone()),
            (
                "SOCIALSEARCH_SOURCE_TECHFORUM_ALGOLIA_BASE_URL".to_string(),
                upstream_base,
            ),
        ];
        let server = Server::start(config_path, envs);
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        Some(Env {
            db,
            up,
            server,
            http,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.server.base, path)
    }

    pub async fn post(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Value,
    ) -> (StatusCode, Value) {
        let mut req = self.http.post(self.url(path)).json(&body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        read(req.send().await.expect("request")).await
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> (StatusCode, Value) {
        let mut req = self.http.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        read(req.send().await.expect("request")).await
    }

    pub async fn delete(&self, path: &str, headers: &[(&str, &str)]) -> (StatusCode, Value) {
        let mut req = self.http.delete(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        read(req.send().await.expect("request")).await
    }

    /// The last code the development outbox holds for the address.
    pub fn outbox_code(&self, email: &str) -> String {
        let text = std::fs::read_to_string(self.db.dir.join("outbox.log")).unwrap_or_default();
        text.lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|m| m["to"] == email.to_ascii_lowercase().as_str())
            .and_then(|m| m["code"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("no code for {email} in the outbox"))
    }

    pub async fn request_code(&self, email: &str) -> String {
        let (s, b) = self
            .post("/v1/auth/request-code", &[], json!({ "email": email }))
            .await;
        assert_eq!(s, 200, "{b}");
        assert_schema("CodeSent", &b);
        self.outbox_code(email)
    }

    /// Exchanges a dashboard URL's one-time token for a session: (token, kind).
    pub async fn open_session(&self, dashboard_url: &str) -> (String, String) {
        let link = dashboard_url
            .split("#login=")
            .nth(1)
            .expect("a login token in the link");
        let (s, b) = self
            .post("/v1/auth/session", &[], json!({ "link": link }))
            .await;
        assert_eq!(s, 200, "{b}");
        assert_schema("SessionOpened", &b);
        (
            b["session"].as_str().expect("session").to_string(),
            b["kind"].as_str().expect("kind").to_string(),
        )
    }

    /// Signs in with an e-mailed code; returns the session token.
    pub async fn sign_in(&self, email: &str) -> String {
        let code = self.request_code(email).await;
        let (s, b) = self
            .post(
                "/v1/auth/verify",
                &[],
                json!({ "email": email, "otp": code }),
            )
            .await;
        assert_eq!(s, 200, "{b}");
        assert_schema("SignedIn", &b);
        let (session, kind) = self
            .open_session(b["dashboard_url"].as_str().expect("url"))
            .await;
        assert_eq!(kind, "otp");
        session
    }

    pub async fn create_key(&self, session: &str, name: &str) -> String {
        let (s, b) = self
            .post(
                "/v1/keys",
                &[("x-session", session)],
                json!({ "name": name }),
            )
            .await;
        assert_eq!(s, 200, "{b}");
        assert_schema("NewKey", &b);
        b["key"].as_str().expect("key").to_string()
    }

    /// A new account (50 credits) and one key of it.
    pub async fn account_with_key(&self, email: &str) -> (String, String) {
        let session = self.sign_in(email).await;
        let key = self.create_key(&session, "main").await;
        (session, key)
    }

    pub async fn balance(&self, key: &str) -> i64 {
        let (s, b) = self.get("/v1/credits/balance", &[("x-api-key", key)]).await;
        assert_eq!(s, 200, "{b}");
        assert_schema("Balance", &b);
        b["balance"].as_i64().expect("balance")
    }

    pub async fn grant(&self, email: &str, credits: i64) {
        let (s, b) = self
            .post(
                "/v1/admin/grant",
                &[("x-owner-key", OWNER_KEY)],
                json!({ "email": email, "credits": credits }),
            )
            .await;
        assert_eq!(s, 200, "{b}");
    }

    pub async fn search(&self, key: &str) -> (StatusCode, Value) {
        self.get("/v1/techforum/search?query=x", &[("x-api-key", key)])
            .await
    }

    /// The books: every account's balance equals its ledger sum, and (when `no_holds`) nothing is held.
    pub async fn check_ledger(&self, no_holds: bool) {
        let db = self.db.connect().await;
        let bad = server::accounts::ledger_mismatches(&db)
            .await
            .expect("ledger query");
        assert!(
            bad.is_empty(),
            "balance differs from the ledger sum: {bad:?}"
        );
        let (negative,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM accounts WHERE balance < 0")
            .fetch_one(&db.read)
            .await
            .expect("query");
        assert_eq!(negative, 0, "no balance is ever negative");
        if no_holds {
            assert_eq!(self.holds(&db).await, 0, "no reservation is left held");
        }
        db.close().await;
    }

    pub async fn holds(&self, db: &Db) -> i64 {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM credit_entries WHERE kind = 'charge' AND state = 'held'",
        )
        .fetch_one(&db.read)
        .await
        .expect("query");
        n
    }

    /// The balance in the database (no request, so no key's rate is spent).
    pub async fn stored_balance(&self, email: &str) -> i64 {
        let db = self.db.connect().await;
        let (n,): (i64,) = sqlx::query_as("SELECT balance FROM accounts WHERE email = $1")
            .bind(email)
            .fetch_one(&db.read)
            .await
            .expect("query");
        db.close().await;
        n
    }

    /// Settled charges of the database, in credits.
    pub async fn charged(&self) -> i64 {
        let db = self.db.connect().await;
        let (n,): (i64,) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(-amount), 0) AS BIGINT) FROM credit_entries WHERE kind = 'charge' AND state = 'settled'",
        )
        .fetch_one(&db.read)
        .await
        .expect("query");
        db.close().await;
        n
    }

    /// Checks the books with nothing held, and that the log shows no secret.
    pub async fn finish(mut self, secrets: &[&str]) {
        self.check_ledger(true).await;
        self.server.stop();
        let log = self.server.log_text();
        assert!(
            !log.contains("ledger batch failed"),
            "every ledger batch commits as one transaction"
        );
        for s in secrets {
            assert!(!log.contains(s), "a secret appears in the server log");
        }
    }
}

pub async fn read(res: reqwest::Response) -> (StatusCode, Value) {
    let status = res.status();
    let retry = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = res.text().await.expect("body");
    let mut v: Value = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text }));
    if let (Some(r), Some(o)) = (retry, v.as_object_mut()) {
        // Kept beside the body for the tests' convenience; never part of a real body.
        o.insert("__retry_after".into(), json!(r));
    }
    (status, v)
}

/// Validates a body against a response schema of the generated OpenAPI document (strict schemas).
pub fn assert_schema(name: &str, body: &Value) {
    static DOC: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let doc = DOC.get_or_init(|| serde_json::from_str(server::api::OPENAPI_JSON).expect("openapi"));
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "components": doc["components"],
        "$ref": format!("#/components/schemas/{name}"),
    });
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(body).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "{name} does not match its schema: {errors:?}\n{body}"
    );
}

/// The error type of an error body.
pub fn error_type(body: &Value) -> &str {
    body["error"]["type"].as_str().unwrap_or("")
}

/// Runs the `admin` subcommand against the test's database; returns stdout.
pub fn admin(db: &TestDb, args: &[&str]) -> String {
    try_admin(db, args).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the `admin` subcommand: stdout, or what failed with its stderr.
pub fn try_admin(db: &TestDb, args: &[&str]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_socialsearch"))
        .arg("admin")
        .args(args)
        .env("DATABASE_URL", &db.url)
        .env("SOCIALSEARCH_CONFIG", db.dir.join("config.toml"))
        .output()
        .expect("run admin");
    if !out.status.success() {
        return Err(format!(
            "admin {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

impl Env {
    /// The same POST sent `n` times at once, each on a task of its own; the answers in sending order.
    pub async fn post_parallel(
        &self,
        n: usize,
        path: &str,
        headers: &[(&str, &str)],
        body: Value,
    ) -> Vec<(StatusCode, Value)> {
        self.post_each(path, headers, vec![body; n]).await
    }

    /// One POST per body, all at once, each on a task of its own; the answers in sending order.
    pub async fn post_each(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        bodies: Vec<Value>,
    ) -> Vec<(StatusCode, Value)> {
        let tasks: Vec<_> = bodies
            .into_iter()
            .map(|body| {
                let mut req = self.http.post(self.url(path)).json(&body);
                for (k, v) in headers {
                    req = req.header(*k, *v);
                }
                tokio::spawn(async move { read(req.send().await.expect("request")).await })
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.expect("task"));
        }
        out
    }

    /// How many messages the development outbox holds for the address (`None`: for any address).
    pub fn outbox_count(&self, email: Option<&str>) -> usize {
        let text = std::fs::read_to_string(self.db.dir.join("outbox.log")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| email.is_none_or(|e| m["to"] == e.to_ascii_lowercase().as_str()))
            .count()
    }
}

/// How many answers have this status and error type (`""` for a success).
pub fn count(answers: &[(StatusCode, Value)], status: u16, error: &str) -> usize {
    answers
        .iter()
        .filter(|(s, b)| s.as_u16() == status && error_type(b) == error)
        .count()
}

/// Every answer's status and error type, for failure messages.
pub fn summary(answers: &[(StatusCode, Value)]) -> Vec<(u16, String)> {
    answers
        .iter()
        .map(|(s, b)| (s.as_u16(), error_type(b).to_string()))
        .collect()
}
