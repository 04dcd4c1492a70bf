//! Shared helpers of the end-to-end tests: the real `socialsearch` binary on a loopback port, and
//! small HTTP helpers that check what every response must carry.
//!
//! - [`server`] is one binary shared by every test of the process, started on first use and stopped
//!   when the process exits, with an API key of its own ([`Server::key`]) and per-key limits high
//!   enough for sweeps over every endpoint. Use it unless a test needs its own configuration.
//! - [`Server::start`] starts a private binary with a TOML configuration; it stops on drop.
//! - [`Server::get`], [`Server::send`] (reqwest) and [`Server::raw`] (bytes on a socket, for requests
//!   a client library would refuse or fix up) all return a [`Reply`] whose envelope basics (the
//!   `x-request-id` header, `request_id` in an error body) are already asserted.

#![allow(dead_code)] // each test module uses a different part

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_socialsearch");

/// A running `socialsearch serve`.
pub struct Server {
    child: Mutex<Child>,
    /// An API key of this server's database; sent by [`Server::get`] and [`Server::raw`].
    key: String,
    pub addr: SocketAddr,
    /// Everything the server logged so far (kept so a failing test can show it).
    logs: Arc<Mutex<Vec<String>>>,
    client: reqwest::Client,
}

impl Server {
    /// Starts the binary on `127.0.0.1:0` with `config` (TOML; `None` for the built-in defaults)
    /// and waits until it logs its address.
    pub fn start(config: Option<&str>) -> Server {
        static N: AtomicUsize = AtomicUsize::new(0);
        // A database and working directory of its own (the dev outbox is written under it).
        let dir = std::env::temp_dir().join(format!(
            "socialsearch-e2e-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create the test directory");
        let database_url = format!("sqlite://{}/e2e.db?mode=rwc", dir.display());
        let key = create_key(&dir, &database_url);
        let mut cmd = Command::new(BINARY);
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .current_dir(&dir)
            .env("DATABASE_URL", &database_url)
            .env_remove("SOCIALSEARCH_CONFIG")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(toml) = config {
            let path = std::env::temp_dir().join(format!(
                "socialsearch-e2e-{}-{}.toml",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::write(&path, toml).expect("write the test configuration");
            cmd.arg("--config").arg(path);
        }
        let mut child = cmd.spawn().expect("start the socialsearch binary");
        let stderr = child.stderr.take().expect("stderr is piped");

        // The server logs a line per failed request; the pipe is drained for the server's whole
        // life so a full pipe can never block it.
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let sink = Arc::clone(&logs);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(addr) = line
                    .split("listening on http://")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|a| a.parse::<SocketAddr>().ok())
                {
                    let _ = tx.send(addr);
                }
                let mut logs = sink.lock().unwrap();
                if logs.len() < 10_000 {
                    logs.push(line);
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "socialsearch did not report its address; it logged:\n{}",
                    logs.lock().unwrap().join("\n")
                );
            }
        };
        Server {
            child: Mutex::new(child),
            key,
            addr,
            logs,
            client: client(),
        }
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.addr)
    }

    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap().clone()
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// GET `path_and_query`, sent exactly as written, with the server's API key.
    pub async fn get(&self, path_and_query: &str) -> Reply {
        self.send(
            self.client
                .get(self.url(path_and_query))
                .header("x-api-key", &self.key),
        )
        .await
    }

    /// Sends a request built on [`Server::client`].
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let res = req.send().await.expect("the server answers");
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.expect("the body is readable");
        Reply::new(status, headers, text)
    }

    /// Writes `request` (a whole HTTP/1.1 request, `\r\n` line ends) to a fresh connection and
    /// reads the reply until the server closes it. `Connection: close` is added to the head.
    pub fn raw(&self, request: &[u8]) -> Reply {
        let mut stream = TcpStream::connect(self.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let split = find(request, b"\r\n\r\n").expect("a request head ends with an empty line");
        let mut bytes = request[..split].to_vec();
        bytes.extend_from_slice(b"\r\nConnection: close");
        if find(&request[..split].to_ascii_lowercase(), b"\r\nx-api-key:").is_none() {
            bytes.extend_from_slice(format!("\r\nx-api-key: {}", self.key).as_bytes());
        }
        bytes.extend_from_slice(&request[split..]);
        // The server may answer (and close) before reading a refused body; that is fine.
        let _ = stream.write_all(&bytes);
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        parse_raw_response(&out)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap();
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The server shared by every test of this process.
pub fn server() -> &'static Server {
    static SHARED: OnceLock<Server> = OnceLock::new();
    static PID: AtomicI32 = AtomicI32::new(0);
    extern "C" fn stop_shared() {
        let pid = PID.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: plain syscall on a pid this process spawned.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
    SHARED.get_or_init(|| {
        // Sweeps send hundreds of calls with one key: lift the per-key limits for this server.
        // Every source is disabled, so a valid call ends at 501 NOT_CONFIGURED and no test
        // request ever leaves this machine.
        let mut config = String::from(
            "[limits]\nrate_per_second = 1000000.0\nburst = 1000000\nin_flight = 100000\n",
        );
        for id in source_ids() {
            config.push_str(&format!("[sources.source.\"{id}\"]\nenabled = false\n"));
        }
        let s = Server::start(Some(&config));
        PID.store(s.child.lock().unwrap().id() as i32, Ordering::SeqCst);
        // SAFETY: registers a function without captures; it only reads an atomic and calls kill.
        unsafe { libc::atexit(stop_shared) };
        s
    })
}

/// The ids of every source, from `socialsearch sources`.
fn source_ids() -> Vec<String> {
    let out = Command::new(BINARY)
        .arg("sources")
        .env_remove("SOCIALSEARCH_CONFIG")
        .output()
        .expect("run socialsearch sources");
    let list: Value = serde_json::from_slice(&out.stdout).expect("sources prints JSON");
    list.as_array()
        .expect("a JSON array")
        .iter()
        .filter_map(|s| s["id"].as_str().map(str::to_string))
        .collect()
}

/// Creates an account and a key with `socialsearch admin create-key` (which prints only the key).
fn create_key(dir: &std::path::Path, database_url: &str) -> String {
    let out = Command::new(BINARY)
        .args(["admin", "create-key", "--email", "e2e@example.com"])
        .current_dir(dir)
        .env("DATABASE_URL", database_url)
        .env_remove("SOCIALSEARCH_CONFIG")
        .output()
        .expect("run socialsearch admin create-key");
    assert!(
        out.status.success(),
        "admin create-key failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 key")
        .trim()
        .to_string()
}

/// A reqwest client for plain-HTTP loopback tests. Installs the ring TLS provider once, which
/// reqwest's `rustls-no-provider` build needs before any client is made.
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        // Each #[tokio::test] has its own runtime; a pooled connection belongs to the runtime that
        // opened it and dies with it, so the shared client must not keep any.
        .pool_max_idle_per_host(0)
        .build()
        .expect("build the HTTP client")
}

/// A response, with the body parsed as JSON when it is JSON (`Value::Null` otherwise).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub body: Value,
}

impl Reply {
    /// Checks what every response carries: `x-request-id` starting `req-`, equal to the body's
    /// `request_id` when the body has one.
    pub fn new(status: u16, headers: reqwest::header::HeaderMap, text: String) -> Reply {
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        let id = headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no x-request-id on a {status} response: {text}"));
        assert!(id.starts_with("req-"), "x-request-id {id:?}");
        if let Some(body_id) = body.get("request_id") {
            assert_eq!(body_id, id, "body request_id differs from x-request-id");
        }
        Reply {
            status,
            headers,
            text,
            body,
        }
    }

    /// `error.type` of an error envelope.
    pub fn error_type(&self) -> &str {
        self.body["error"]["type"].as_str().unwrap_or("")
    }

    /// Asserts an error envelope (spec section 2.3) with this status and code.
    pub fn assert_error(&self, status: u16, code: &str) -> &Self {
        assert_eq!(
            (self.status, self.error_type()),
            (status, code),
            "body: {}",
            self.text
        );
        let b = &self.body;
        assert_eq!(b["success"], false, "{}", self.text);
        assert_eq!(b["credits_used"], 0, "{}", self.text);
        assert_eq!(b["error"]["status"], status, "{}", self.text);
        assert!(b["endpoint"].is_string(), "{}", self.text);
        assert!(
            b["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        assert!(
            b["error"]["docs_url"]
                .as_str()
                .is_some_and(|u| u.contains(code))
        );
        self
    }

    /// Asserts a 422 VALIDATION_ERROR that names `parameter` in the message and in
    /// `error.violations[].parameter`, with `error.fix` present.
    pub fn assert_names(&self, parameter: &str) -> &Self {
        self.assert_error(422, "VALIDATION_ERROR");
        let e = &self.body["error"];
        let message = e["message"].as_str().unwrap_or("");
        assert!(
            message.contains(&format!("`{parameter}`")),
            "message does not name `{parameter}`: {message}"
        );
        let named = e["violations"]
            .as_array()
            .is_some_and(|vs| vs.iter().any(|v| v["parameter"] == parameter));
        assert!(named, "no violation names `{parameter}`: {}", self.text);
        assert!(
            e["fix"].as_str().is_some_and(|f| !f.is_empty()),
            "no error.fix: {}",
            self.text
        );
        self
    }
}

/// Encodes a query component as an HTML form does (`+` for a space), the form the service reads.
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse_raw_response(bytes: &[u8]) -> Reply {
    let split = find(bytes, b"\r\n\r\n").unwrap_or_else(|| {
        panic!(
            "no HTTP response head in {:?}",
            String::from_utf8_lossy(bytes)
        )
    });
    let head = String::from_utf8_lossy(&bytes[..split]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let mut headers = reqwest::header::HeaderMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':')
            && let (Ok(k), Ok(v)) = (
                reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()),
                reqwest::header::HeaderValue::from_str(v.trim()),
            )
        {
            headers.append(k, v);
        }
    }
    let text = String::from_utf8_lossy(&bytes[split + 4..]).into_owned();
    Reply::new(status, headers, text)
}
