//! What a client can put into an upstream request, and what it learns back.
//!
//! Sealed cursors, on the X API's user timeline (`/v1/microblog/profile/posts`), whose cursor carries the user id that goes into the upstream path with the operator's token: a forged,
//! altered or foreign cursor is a 422 naming `cursor`, sends nothing upstream and leaves no ledger
//! row; a genuine one works, also after a restart and, within the window, after a rotation of the
//! secret; a running instance picks up a rotation by itself. A failing upstream is named in the
//! 424 by source id and what went wrong, never by URL, host or credential; the log has the detail
//! with the request id, still without the credential.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::accounts_support::{Backend, Env, Options, TestDb, admin, at, error_type, only_sources};
use crate::fake_upstream::{FakeUpstream, Route};
use crate::on_both_databases;

on_both_databases!(
    forged_and_foreign_cursors_are_refused_before_anything_happens,
    rotation_reaches_a_running_instance,
    upstream_failures_name_no_url_host_or_credential,
    instances_starting_together_share_one_secret,
);

const EMAIL: &str = "cursors@example.com";
const TOKEN: &str = "AAAA-operator-bearer-token";
const POSTS: &str = "/v1/microblog/profile/posts?handle=XDevelopers";

async fn world(b: Backend, cursors: &str) -> Option<(Env, String)> {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/x/2/users/by/username/XDevelopers").file("microblog/x_api/user.json"));
    up.route(
        Route::get("/x/2/users/2244994945/tweets")
            .query("pagination_token", "7140dibdnow9c7btw4")
            .file("microblog/x_api/search_p2.json"),
    );
    up.route(
        Route::get("/x/2/users/2244994945/tweets")
            .query("exclude", "replies")
            .file("microblog/x_api/timeline.json"),
    );
    up.route(Route::get("/x/2/tweets/search/recent").file("microblog/x_api/search_p1.json"));
    let mut extra = only_sources(
        "",
        &[at("microblog.x_api", up.url("/x/2")).with(&format!("credential = \"{TOKEN}\""))],
    );
    extra.push_str(cursors);
    // The per-key rate is not under test here.
    let opts = Options {
        extra,
        limits: "rate_per_second = 1000.0\nburst = 1000\n".into(),
        ..Options::default()
    };
    let algolia = up.url("/api/v1");
    let env = Env::start_with(b, opts, algolia, up).await?;
    let (_, key) = env.account_with_key(EMAIL).await;
    env.grant(EMAIL, 1000).await;
    Some((env, key))
}

async fn get(env: &Env, key: &str, path: &str) -> (StatusCode, Value) {
    env.get(path, &[("x-api-key", key)]).await
}

/// A page of the timeline; its next cursor.
async fn page(env: &Env, key: &str, cursor: Option<&str>) -> Option<String> {
    let path = match cursor {
        Some(c) => format!("{POSTS}&cursor={c}"),
        None => POSTS.to_string(),
    };
    let (s, b) = get(env, key, &path).await;
    assert_eq!(s, 200, "{b}");
    b["data"]["next_cursor"].as_str().map(str::to_string)
}

async fn ledger_rows(env: &Env) -> i64 {
    let db = env.db.connect().await;
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM credit_entries")
        .fetch_one(&db.read)
        .await
        .expect("count");
    db.close().await;
    n
}

fn assert_cursor_refused(s: StatusCode, b: &Value) {
    assert_eq!(
        (s.as_u16(), error_type(b)),
        (422, "VALIDATION_ERROR"),
        "{b}"
    );
    assert_eq!(b["error"]["violations"][0]["parameter"], "cursor", "{b}");
    assert!(
        b["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("`cursor`")),
        "{b}"
    );
    assert_eq!(b["credits_used"], 0);
}

/// Base64url without padding, written out here so the test does not share the service's encoder.
fn b64url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

async fn forged_and_foreign_cursors_are_refused_before_anything_happens(b: Backend) {
    let Some((mut env, key)) = world(b, "").await else {
        return;
    };
    let first = page(&env, &key, None)
        .await
        .expect("page 1 has a next page");
    let (s, search) = get(&env, &key, "/v1/microblog/search?query=rust").await;
    assert_eq!(s, 200, "{search}");
    let foreign = search["data"]["next_cursor"]
        .as_str()
        .expect("search pages on")
        .to_string();

    // One character changed, anywhere in the cursor.
    let flip = |at: usize| {
        let mut c = first.clone().into_bytes();
        c[at] = if c[at] == b'A' { b'B' } else { b'A' };
        String::from_utf8(c).expect("ascii")
    };
    let forged = [
        // The unsigned format of before: source id and a state that walks out of the user path.
        b64url(b"microblog.x_api\n..%2F..%2Fadmin:x"),
        b64url(b"microblog.x_api\n1:x"),
        // The sealed layout with a made-up key id and tag.
        b64url(
            &[
                b"1\nk1\n9999999999\nmicroblog.x_api\n/v1/microblog/profile/posts\n1:x".as_slice(),
                &[7u8; 32],
            ]
            .concat(),
        ),
        flip(0),
        flip(first.len() / 2),
        flip(first.len() - 1),
        foreign,
        "not-a-cursor".into(),
    ];
    let seen = env.up.seen().len();
    let rows = ledger_rows(&env).await;
    let balance = env.stored_balance(EMAIL).await;
    for cursor in &forged {
        let (s, b) = get(&env, &key, &format!("{POSTS}&cursor={cursor}")).await;
        assert_cursor_refused(s, &b);
    }
    assert_eq!(env.up.seen().len(), seen, "nothing reached the upstream");
    assert_eq!(
        ledger_rows(&env).await,
        rows,
        "no ledger row for a refused cursor"
    );
    assert_eq!(env.stored_balance(EMAIL).await, balance);

    // The genuine cursor: page 2, also after a restart (the secret is the database's).
    assert_eq!(
        page(&env, &key, Some(&first)).await,
        None,
        "page 2 is the last"
    );
    env.server.restart();
    assert_eq!(page(&env, &key, Some(&first)).await, None);

    // A rotation: the previous secret's cursors still work within the window, new ones too.
    let out = admin(&env.db, &["rotate-cursor-secret"]);
    let rotation: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(rotation["ok"], true, "{out}");
    assert!(rotation["rotation"]["key_id"].is_string(), "{out}");
    let secrets = stored_secrets(&env).await;
    assert_eq!(secrets.len(), 2, "current and previous");
    for secret in &secrets {
        assert!(
            !out.contains(secret.as_str()),
            "no secret is printed: {out}"
        );
    }
    env.server.restart();
    assert_eq!(
        page(&env, &key, Some(&first)).await,
        None,
        "previous secret accepted"
    );
    let fresh = page(&env, &key, None).await.expect("a next page");
    assert_ne!(fresh, first);
    assert_eq!(page(&env, &key, Some(&fresh)).await, None);
    let secrets = stored_secrets(&env).await;
    let mut hidden: Vec<&str> = secrets.iter().map(String::as_str).collect();
    hidden.extend([key.as_str(), TOKEN]);
    env.finish(&hidden).await;
}

/// The cursor secrets in the database (hex), to check they show up nowhere.
async fn stored_secrets(env: &Env) -> Vec<String> {
    let db = env.db.connect().await;
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT value FROM settings WHERE name LIKE 'cursor_secret%'")
            .fetch_all(&db.read)
            .await
            .expect("settings");
    db.close().await;
    rows.iter()
        .map(|(v,)| {
            let v: Value = serde_json::from_str(v).expect("JSON");
            v["secret"].as_str().expect("secret").to_string()
        })
        .collect()
}

/// With no window for the previous secret, a cursor sealed before a rotation stops working once the
/// running instance has re-read the secret (every second here; 30 s by default).
async fn rotation_reaches_a_running_instance(b: Backend) {
    let cursors = "\n[cursors]\nprevious_accepted_hours = 0\nreload_seconds = 1\n";
    let Some((env, key)) = world(b, cursors).await else {
        return;
    };
    let first = page(&env, &key, None).await.expect("a next page");
    admin(&env.db, &["rotate-cursor-secret"]);
    let start = Instant::now();
    loop {
        let (s, b) = get(&env, &key, &format!("{POSTS}&cursor={first}")).await;
        if s == 422 {
            assert_cursor_refused(s, &b);
            break;
        }
        assert_eq!(s, 200, "{b}");
        // The bound the configuration promises is one reload interval; the margin is generous.
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the running instance never picked up the rotation"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // New cursors are sealed with the new secret and work.
    let fresh = page(&env, &key, None).await.expect("a next page");
    assert_eq!(page(&env, &key, Some(&fresh)).await, None);
    env.finish(&[&key, TOKEN]).await;
}

/// The video Data API, whose key goes in the query string, configured on a closed local port under
/// a recognisable path.
async fn upstream_failures_name_no_url_host_or_credential(b: Backend) {
    const CREDENTIAL: &str = "CRED-marker-9f2e51";
    const MARKER: &str = "marker-path-7431";
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let base = format!("http://127.0.0.1:{port}/{MARKER}/youtube/v3");
    let up = FakeUpstream::start().await;
    let extra = only_sources(
        "",
        &[at("video.data_api", base).with(&format!("credential = \"{CREDENTIAL}\""))],
    );
    let opts = Options {
        extra,
        ..Options::default()
    };
    let algolia = up.url("/api/v1");
    let Some(env) = Env::start_with(b, opts, algolia, up).await else {
        return;
    };
    let (_, key) = env.account_with_key(EMAIL).await;
    let res = env
        .http
        .get(env.url("/v1/video/search?query=rust"))
        .header("x-api-key", &key)
        .send()
        .await
        .expect("request");
    let request_id = res.headers()["x-request-id"]
        .to_str()
        .expect("id")
        .to_string();
    let text = res.text().await.expect("body");
    let body: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(error_type(&body), "ALL_SOURCES_FAILED", "{text}");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("video.data_api"),
        "names the source: {text}"
    );
    assert!(
        message.contains("connection refused"),
        "says what went wrong: {text}"
    );
    for hidden in [MARKER, "127.0.0.1", &port.to_string(), CREDENTIAL] {
        assert!(!text.contains(hidden), "{hidden} in the answer: {text}");
    }
    assert!(!message.contains("http"), "no URL in the message: {text}");
    assert_eq!(env.stored_balance(EMAIL).await, 50, "nothing charged");
    // The operator's detail: the URL (without its query string) under the request id. The log
    // reaches the test through a pipe and a reader thread, so it may trail the answer a little.
    let logged = |log: &str| {
        log.lines().any(|l| {
            l.contains(&request_id) && l.contains(MARKER) && l.contains("connection refused")
        })
    };
    let mut log = env.server.log_text();
    for _ in 0..50 {
        if logged(&log) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        log = env.server.log_text();
    }
    assert!(
        logged(&log),
        "no log line with the request id and the upstream URL:\n{log}"
    );
    env.finish(&[&key, CREDENTIAL]).await;
}

/// Two instances on one database, starting at once, make one secret between them; rotations at
/// once run one after the other.
async fn instances_starting_together_share_one_secret(b: Backend) {
    let Some(test_db) = TestDb::new(b).await else {
        return;
    };
    let (one, two) = (test_db.connect().await, test_db.connect().await);
    let config = server::config::Cursors::default();
    let (k1, k2) = tokio::join!(
        server::cursor_secret::load(&one, &config),
        server::cursor_secret::load(&two, &config)
    );
    let (k1, k2) = (k1.expect("load"), k2.expect("load"));
    assert_eq!(k1.current.id(), k2.current.id());
    let (r1, r2) = tokio::join!(
        server::cursor_secret::rotate(&one),
        server::cursor_secret::rotate(&two)
    );
    let (r1, r2) = (r1.expect("rotate"), r2.expect("rotate"));
    let first = k1.current.id();
    assert!(
        (r1.previous_key_id == first && r2.previous_key_id == r1.key_id)
            || (r2.previous_key_id == first && r1.previous_key_id == r2.key_id),
        "{r1:?} {r2:?}"
    );
    let after = server::cursor_secret::load(&one, &config)
        .await
        .expect("load");
    let last = if r2.previous_key_id == r1.key_id {
        &r2
    } else {
        &r1
    };
    assert_eq!(after.current.id(), last.key_id);
    one.close().await;
    two.close().await;
}
