//! Connections (issue 8, "The server survives slow and abusive clients"): malformed framing in the
//! envelope, read timeouts, slow clients beside normal ones, graceful shutdown under load, a client
//! that hangs up mid-call, HEAD, credential headers, the owner key and the admin rate.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::accounts_support::{Backend, Env, OWNER_KEY, Options, error_type};
use crate::fake_upstream::{FakeUpstream, Route};
use crate::on_both_databases;
use crate::support::{Server, server};

const SEARCH: &str = "/v1/techforum/search?query=x";

// ---- Malformed framing ----------------------------------------------------------------------

/// Each malformed head answers 400 BAD_REQUEST in the envelope, with `x-request-id` and a message
/// saying what is wrong (hyper alone answers these with a bare status line).
#[test]
fn malformed_framing_is_answered_in_the_envelope() {
    let s = server();
    let post = |headers: &str| {
        format!("POST /v1/auth/request-code HTTP/1.1\r\nHost: t\r\n{headers}\r\n{{}}").into_bytes()
    };
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (post("Content-Length: abc\r\n"), "Content-Length"),
        (post("Content-Length: -2\r\n"), "Content-Length"),
        (
            post("Content-Length: 2\r\nContent-Length: 3\r\n"),
            "different values",
        ),
        (
            post("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"),
            "both Content-Length and Transfer-Encoding",
        ),
        (
            format!(
                "GET /v1/status?q={} HTTP/1.1\r\nHost: t\r\n\r\n",
                "a".repeat(9000)
            )
            .into_bytes(),
            "URL is over 8192 bytes",
        ),
        (
            format!(
                "GET /v1/status HTTP/1.1\r\nHost: t\r\nx-big: {}\r\n\r\n",
                "b".repeat(17_000)
            )
            .into_bytes(),
            "over 16384 bytes",
        ),
        (
            format!(
                "GET /v1/status HTTP/1.1\r\n{}\r\n",
                (0..120)
                    .map(|i| format!("x-h{i}: v\r\n"))
                    .collect::<String>()
            )
            .into_bytes(),
            "more than 100 header fields",
        ),
    ];
    for (request, says) in cases {
        let r = s.raw(&request);
        r.assert_error(400, "BAD_REQUEST");
        let message = r.body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(says), "{says}: {message}");
    }
}

/// Reads from `stream` until it closes (or `limit` passes); the bytes read.
fn read_all(stream: &mut TcpStream, limit: Duration) -> Vec<u8> {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut out = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return out,
            Ok(n) => out.extend_from_slice(&chunk[..n]),
        }
    }
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// Pipelined requests on one kept-alive connection are all answered, in order; a bad head after
/// good ones is answered in the envelope and ends the connection.
#[test]
fn pipelining_still_works_and_a_bad_head_ends_the_connection() {
    let s = server();
    let mut stream = TcpStream::connect(s.addr).unwrap();
    let body = r#"{"email":"not-an-address"}"#;
    let request = format!(
        "GET /v1/status HTTP/1.1\r\nHost: t\r\n\r\n\
         POST /v1/auth/request-code HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}\
         GET /v1/status HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /v1/status HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n\
         GET /v1/status HTTP/1.1\r\nHost: t\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let out = read_all(&mut stream, Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out);
    assert_eq!(count(&out, b"HTTP/1.1 200"), 2, "{text}");
    assert_eq!(count(&out, b"HTTP/1.1 422"), 1, "{text}");
    assert_eq!(count(&out, b"HTTP/1.1 400"), 1, "{text}");
    assert_eq!(count(&out, b"x-request-id: req-"), 4, "{text}");
    assert!(text.contains("\"BAD_REQUEST\""), "{text}");
    // The request after the refused one is never answered: the connection closed.
    let last_400 = text.rfind("HTTP/1.1 400").unwrap();
    assert!(!text[last_400..].contains("HTTP/1.1 200"), "{text}");
}

// ---- Timeouts -------------------------------------------------------------------------------

/// A connection that sends part of a head and then nothing is closed after the header timeout,
/// and so is one that sends nothing at all; a body that stops coming is cut after the body
/// timeout; a kept-alive connection is closed after the idle timeout.
#[test]
fn slow_and_idle_clients_are_disconnected() {
    let s = Server::start(Some(
        "[server]\nheader_timeout_ms = 500\nbody_timeout_ms = 500\nidle_timeout_ms = 500\n",
    ));
    // Far above the configured timeouts: if nothing closes the connection, the read gives up
    // here and the test fails.
    let patience = Duration::from_secs(20);
    let closed = |stream: &mut TcpStream| {
        let started = Instant::now();
        let out = read_all(stream, patience);
        (out, started.elapsed() < patience)
    };

    let mut partial = TcpStream::connect(s.addr).unwrap();
    partial
        .write_all(b"GET /v1/status HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    let (out, in_time) = closed(&mut partial);
    assert!(in_time && out.is_empty(), "a partial head is cut off");

    let mut silent = TcpStream::connect(s.addr).unwrap();
    let (out, in_time) = closed(&mut silent);
    assert!(in_time && out.is_empty(), "a silent connection is cut off");

    let mut slow_body = TcpStream::connect(s.addr).unwrap();
    slow_body
        .write_all(b"POST /v1/auth/request-code HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"email\"")
        .unwrap();
    let (_, in_time) = closed(&mut slow_body);
    assert!(in_time, "a body that stops coming is cut off");

    let mut idle = TcpStream::connect(s.addr).unwrap();
    idle.write_all(b"GET /v1/status HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let (out, in_time) = closed(&mut idle);
    assert!(in_time, "an idle kept-alive connection is closed");
    assert_eq!(
        count(&out, b"HTTP/1.1 200"),
        1,
        "its request was answered first"
    );
}

/// At the connection cap a further connection waits in the listen backlog: it is answered as
/// soon as another connection closes, never refused.
#[test]
fn at_the_connection_cap_a_new_connection_waits_for_a_free_place() {
    let s = Server::start(Some("[server]\nmax_connections = 2\n"));
    let first = TcpStream::connect(s.addr).unwrap();
    let second = TcpStream::connect(s.addr).unwrap();
    // Both places are taken once the server has answered on them.
    for mut held in [&first, &second] {
        held.write_all(b"GET /v1/status HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        held.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut head = [0u8; 12];
        held.read_exact(&mut head).unwrap();
        assert_eq!(&head, b"HTTP/1.1 200");
    }
    let mut third = TcpStream::connect(s.addr).expect("the kernel queues the connection");
    third
        .write_all(b"GET /v1/status HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    third.set_nonblocking(true).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let mut probe = [0u8; 1];
    let early = third.read(&mut probe);
    assert!(
        matches!(&early, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "not served while both places are taken: {early:?}"
    );
    third.set_nonblocking(false).unwrap();
    drop(first);
    let out = read_all(&mut third, Duration::from_secs(20));
    assert_eq!(
        count(&out, b"HTTP/1.1 200"),
        1,
        "{}",
        String::from_utf8_lossy(&out)
    );
    drop(second);
}

// ---- Slow clients, then SIGTERM under load --------------------------------------------------

fn addr_of(env: &Env) -> SocketAddr {
    env.server
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("the server's address")
}

/// 300 slow clients (half-open heads, and POST heads whose 100-byte body never comes) hold
/// connections; a normal client still gets each answer within 1 s. Then paid calls are in flight
/// when SIGTERM comes: they finish and are charged, the process exits within the grace period,
/// and the books balance with no hold left.
async fn slow_clients_then_sigterm(backend: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v1/search")
            .file("techforum/algolia/search_story.json")
            .delay(Duration::from_millis(1500)),
    );
    let opts = Options {
        extra: "[server]\nheader_timeout_ms = 120000\nbody_timeout_ms = 120000\nshutdown_grace_ms = 4000\n".into(),
        ..Options::default()
    };
    let Some(mut env) = Env::start_with(backend, opts, up.url("/api/v1"), up).await else {
        return;
    };
    let (_, key) = env.account_with_key("slow@example.com").await;
    let addr = addr_of(&env);

    let mut slow = Vec::new();
    for i in 0..300 {
        let mut s = TcpStream::connect(addr).expect("connect a slow client");
        let head: &[u8] = if i % 2 == 0 {
            b"GET /v1/status HTTP/1.1\r\nHost: t\r\nx-partial"
        } else {
            b"POST /v1/auth/request-code HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"em"
        };
        s.write_all(head).unwrap();
        slow.push(s);
    }
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    for _ in 0..5 {
        let res = quick
            .get(env.url("/v1/status"))
            .send()
            .await
            .expect("a normal client is answered within 1 s beside 300 slow ones");
        assert_eq!(res.status(), 200);
    }

    // Three paid calls in flight (the upstream takes 1.5 s), then SIGTERM.
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let req = env.http.get(env.url(SEARCH)).header("x-api-key", &key);
            tokio::spawn(async move { req.send().await.map(|r| r.status().as_u16()) })
        })
        .collect();
    let started = Instant::now();
    while env.up.seen().len() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the calls reach the upstream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopping = Instant::now();
    // `stop` sends SIGTERM and waits up to 10 s before it kills; the grace period is 4 s.
    tokio::task::block_in_place(|| env.server.stop());
    let took = stopping.elapsed();
    let log = env.server.log_text();
    assert!(
        log.contains("socialsearch stopped"),
        "the process ended by itself: {log}"
    );
    assert!(
        took < Duration::from_secs(8),
        "exit within the 4 s grace period (and a margin), took {took:?}"
    );
    // Half-open heads are closed at once; only the 150 bodies still owed were cut at the end.
    assert!(
        log.contains("still busy connections=150"),
        "only the unfinished bodies outlast the grace period: {log}"
    );
    for call in calls {
        assert_eq!(
            call.await.unwrap().expect("answered"),
            200,
            "a call in flight at SIGTERM finishes"
        );
    }
    drop(slow);
    env.check_ledger(true).await;
    assert_eq!(env.charged().await, 3, "the finished calls are charged");
    assert_eq!(env.stored_balance("slow@example.com").await, 47);
}

/// A paid call that outlasts the grace period is cut with its connection: its hold is released
/// before the process exits (nothing charged, nothing left held for the next start).
async fn sigterm_cuts_a_call_past_the_grace_period(backend: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v1/search")
            .file("techforum/algolia/search_story.json")
            .delay(Duration::from_secs(30)),
    );
    let opts = Options {
        extra: "[server]\nshutdown_grace_ms = 1000\n".into(),
        ..Options::default()
    };
    let Some(mut env) = Env::start_with(backend, opts, up.url("/api/v1"), up).await else {
        return;
    };
    let (_, key) = env.account_with_key("cut@example.com").await;
    let req = env.http.get(env.url(SEARCH)).header("x-api-key", &key);
    let call = tokio::spawn(async move { req.send().await.map(|r| r.status().as_u16()) });
    let started = Instant::now();
    while env.up.seen().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the call reaches the upstream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopping = Instant::now();
    tokio::task::block_in_place(|| env.server.stop());
    let log = env.server.log_text();
    assert!(
        log.contains("socialsearch stopped"),
        "the process ended by itself: {log}"
    );
    assert!(
        stopping.elapsed() < Duration::from_secs(8),
        "exit after the 1 s grace period (and a margin)"
    );
    assert!(call.await.unwrap().is_err(), "the cut call got no answer");
    env.check_ledger(true).await;
    assert_eq!(env.charged().await, 0);
    assert_eq!(env.stored_balance("cut@example.com").await, 50);
}

// ---- A client that hangs up mid-call --------------------------------------------------------

/// The client closes its connection while the upstream is still answering: the reservation is
/// released (not settled), the balance is unchanged and the call is logged with 0 credits.
async fn hang_up_is_not_charged(backend: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v1/search")
            .file("techforum/algolia/search_story.json")
            .delay(Duration::from_secs(3)),
    );
    let Some(env) = Env::start_with(backend, Options::default(), up.url("/api/v1"), up).await
    else {
        return;
    };
    let (_, key) = env.account_with_key("gone@example.com").await;
    let mut stream = TcpStream::connect(addr_of(&env)).unwrap();
    stream
        .write_all(
            format!("GET {SEARCH} HTTP/1.1\r\nHost: t\r\nx-api-key: {key}\r\n\r\n").as_bytes(),
        )
        .unwrap();
    let started = Instant::now();
    while env.up.seen().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the call reaches the upstream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(stream);

    let db = env.db.connect().await;
    let started = Instant::now();
    let (status, credits) = loop {
        let row: Option<(i64, i64)> = sqlx::query_as(
            "SELECT status, credits FROM calls WHERE endpoint = '/v1/techforum/search'",
        )
        .fetch_optional(&db.read)
        .await
        .expect("query");
        if let Some(row) = row {
            break row;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the call is logged"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    db.close().await;
    assert_eq!((status, credits), (499, 0), "logged as not charged");
    env.check_ledger(true).await;
    assert_eq!(env.charged().await, 0);
    assert_eq!(env.stored_balance("gone@example.com").await, 50);
    let log = env.server.log_text();
    assert!(
        log.contains("the client hung up before its answer"),
        "{log}"
    );
    assert!(
        !log.contains("ERROR"),
        "a hang-up is no error of the service: {log}"
    );
    env.finish(&[&key]).await;
}

// ---- HEAD -----------------------------------------------------------------------------------

/// HEAD is no method of a platform endpoint: 404 like any wrong method, no call, no charge.
async fn head_is_not_a_call(backend: Backend) {
    let Some(env) = Env::start(backend, Options::default()).await else {
        return;
    };
    let (_, key) = env.account_with_key("head@example.com").await;
    let res = env
        .http
        .head(env.url(SEARCH))
        .header("x-api-key", &key)
        .send()
        .await
        .expect("answered");
    assert_eq!(res.status(), 404);
    assert!(res.headers().contains_key("x-request-id"));
    assert!(env.up.seen().is_empty(), "nothing reached the upstream");
    assert_eq!(env.balance(&key).await, 50);
    env.check_ledger(true).await;
    // The same request as GET does run and charge: the key and credits were good.
    let (s, b) = env.search(&key).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(env.balance(&key).await, 49);
    env.finish(&[&key]).await;
}

// ---- Credential headers ---------------------------------------------------------------------

/// A key that is not visible ASCII is an unknown key (403 on a platform endpoint, 401 on an
/// operation), never a missing one; two of a credential header are 400 naming the header.
#[test]
fn credential_headers_must_be_one_readable_value() {
    let s = server();
    let key = s.key();
    let raw = |path: &str, headers: &[u8]| {
        let mut req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n").into_bytes();
        req.extend_from_slice(headers);
        req.extend_from_slice(b"\r\n");
        s.raw(&req)
    };
    raw(SEARCH, b"x-api-key: ss_live_\xff\xfe\r\n").assert_error(403, "INVALID_API_KEY");
    raw("/v1/credits/balance", b"x-api-key: \xc3\x28\r\n").assert_error(401, "UNAUTHORIZED");

    let twice = format!("x-api-key: {key}\r\nx-api-key: {key}\r\n");
    for path in [SEARCH, "/v1/credits/balance"] {
        let r = raw(path, twice.as_bytes());
        r.assert_error(400, "BAD_REQUEST");
        assert!(r.text.contains("x-api-key"), "{}", r.text);
    }
    let r = raw("/v1/keys", b"x-session: a\r\nx-session: b\r\n");
    r.assert_error(400, "BAD_REQUEST");
    assert!(r.text.contains("x-session"), "{}", r.text);
    let r = raw(
        "/v1/admin/account?email=a%40example.com",
        b"x-owner-key: a\r\nx-owner-key: b\r\n",
    );
    r.assert_error(400, "BAD_REQUEST");
    assert!(r.text.contains("x-owner-key"), "{}", r.text);
    // One good key still works.
    assert_eq!(raw("/v1/credits/balance", b"").status, 200);
}

// ---- Log levels -----------------------------------------------------------------------------

/// 501 NOT_CONFIGURED is an expected state of a deployment: logged at INFO with its reason.
#[test]
fn not_configured_is_logged_at_info() {
    let s = server();
    let r = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(s.get("/v1/techforum/search?query=log-level-probe"));
    r.assert_error(501, "NOT_CONFIGURED");
    let id = r.body["request_id"].as_str().unwrap().to_string();
    let message = r.body["error"]["message"].as_str().unwrap().to_string();
    let started = Instant::now();
    // The log is read from the server's stderr by a thread of its own: give it a moment.
    let line = loop {
        if let Some(l) = s
            .logs()
            .into_iter()
            .find(|l| l.contains("NOT_CONFIGURED") && l.contains(&message))
        {
            break l;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no log line for {id}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(line.contains(" INFO "), "{line}");
}

// ---- Owner key ------------------------------------------------------------------------------

/// An owner key shorter than 32 characters stops `serve` before it listens, with a clear message.
#[test]
fn a_short_owner_key_is_refused_at_start() {
    let path = std::env::temp_dir().join(format!("ss-owner-{}.toml", std::process::id()));
    std::fs::write(&path, "owner_key = \"too-short-0123456789\"\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_socialsearch"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env_remove("SOCIALSEARCH_CONFIG")
        .env("DATABASE_URL", "sqlite::memory:")
        .output()
        .expect("run serve");
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve refused to start: {stderr}");
    assert!(
        stderr.contains("owner_key is 20 characters; it must be at least 32"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("too-short"),
        "the key itself is not printed"
    );
}

/// Admin routes are rate-limited, and failed owner-key attempts count: after the burst even the
/// right key waits.
async fn admin_routes_are_rate_limited(backend: Backend) {
    let opts = Options {
        limits: "rate_per_second = 0.05\nburst = 3\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(backend, opts).await else {
        return;
    };
    let path = "/v1/admin/account?email=nobody%40example.com";
    for i in 0..3 {
        let (s, b) = env.get(path, &[("x-owner-key", "wrong-guess")]).await;
        assert_eq!(
            (s.as_u16(), error_type(&b)),
            (401, "UNAUTHORIZED"),
            "attempt {i}: {b}"
        );
    }
    let (s, b) = env.get(path, &[("x-owner-key", "wrong-guess")]).await;
    assert_eq!((s.as_u16(), error_type(&b)), (429, "RATE_LIMITED"), "{b}");
    assert!(b["__retry_after"].is_string(), "Retry-After is sent: {b}");
    // A stranger's guesses do not use up the operator's own rate...
    for i in 0..3 {
        let (s, b) = env.get(path, &[("x-owner-key", OWNER_KEY)]).await;
        assert_ne!(
            s.as_u16(),
            429,
            "operator call {i} limited by the guesses: {b}"
        );
        assert_ne!(s.as_u16(), 401, "operator call {i}: {b}");
    }
    // ...which is limited like any other.
    let (s, b) = env.get(path, &[("x-owner-key", OWNER_KEY)]).await;
    assert_eq!((s.as_u16(), error_type(&b)), (429, "RATE_LIMITED"), "{b}");
    env.finish(&[OWNER_KEY]).await;
}

on_both_databases!(
    slow_clients_then_sigterm,
    sigterm_cuts_a_call_past_the_grace_period,
    hang_up_is_not_charged,
    head_is_not_a_call,
    admin_routes_are_rate_limited,
);
