//! Credits on the call path: charge on success only, 402, races, a crash under load, per-key limits,
//! and sign-in e-mail through a real SMTP listener. On SQLite and on PostgreSQL.
//!
//! The overspend race uses a 2-credit call (GET /v1/forum/community, served by forum.reddit_json from
//! the fake upstream): 50 credits over 10 keys and 100 calls means exactly 25 succeed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_like::join_all;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use adapters::api::EndpointId;

use crate::accounts_support::{Backend, Env, Options, admin, at, error_type, only_sources};
use crate::fake_upstream::{FakeUpstream, Route, fixtures_dir};
use crate::on_both_databases;

on_both_databases!(
    charge_on_success_only,
    no_credits_then_top_up,
    overspend_race,
    failure_race,
    crash_under_load,
    expired_hold_is_released,
    rate_limit_burst,
    in_flight_limit,
    call_log_survives_shutdown,
    code_through_smtp,
);

/// `join_all` without another dependency.
mod futures_like {
    pub async fn join_all<T: Send + 'static>(
        futures: Vec<impl std::future::Future<Output = T> + Send + 'static>,
    ) -> Vec<T> {
        let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
        let mut out = Vec::with_capacity(handles.len());
        for h in handles {
            out.push(h.await.expect("task"));
        }
        out
    }
}

const NO_LIMITS: &str = "rate_per_second = 100000.0\nburst = 100000\nin_flight = 100000\n";

async fn charge_on_success_only(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let (session, key) = env.account_with_key("pay@example.com").await;
    let (st, ok) = env.search(&key).await;
    assert_eq!(st, 200, "{ok}");
    assert_eq!(
        (
            ok["credits_used"].as_i64(),
            ok["credits_remaining"].as_i64()
        ),
        (Some(1), Some(49))
    );
    assert!(ok["request_id"].as_str().unwrap().starts_with("req-"));
    // Parameters (422) and upstream failures (424) cost nothing.
    let (st, body) = env
        .get("/v1/techforum/search?limit=5", &[("x-api-key", &key)])
        .await;
    assert_eq!(
        (st.as_u16(), body["credits_used"].as_i64()),
        (422, Some(0)),
        "{body}"
    );
    env.up.reset();
    env.up
        .route(Route::get("/api/v1/search").status(500).body("{}"));
    let (st, body) = env.search(&key).await;
    assert_eq!(
        (st.as_u16(), body["credits_used"].as_i64()),
        (424, Some(0)),
        "{body}"
    );
    assert_eq!(env.balance(&key).await, 49);
    assert_eq!(env.charged().await, 1);
    env.finish(&[&key, &session]).await;
}

async fn no_credits_then_top_up(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    admin(
        &env.db,
        &[
            "create-account",
            "--email",
            "poor@example.com",
            "--credits",
            "2",
        ],
    );
    let key = admin(&env.db, &["create-key", "--email", "poor@example.com"])
        .trim()
        .to_string();
    for remaining in [1, 0] {
        let (st, body) = env.search(&key).await;
        assert_eq!(
            (st.as_u16(), body["credits_remaining"].as_i64()),
            (200, Some(remaining)),
            "{body}"
        );
    }
    let (st, body) = env.search(&key).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (402, "NO_CREDITS"),
        "{body}"
    );
    assert_eq!(
        (
            body["credits_remaining"].as_i64(),
            body["credits_used"].as_i64()
        ),
        (Some(0), Some(0))
    );
    assert!(
        body["error"]["fix"]
            .as_str()
            .unwrap()
            .contains("/v1/checkout"),
        "{body}"
    );
    assert_eq!(env.up.seen().len(), 2, "a 402 never reaches the upstream");
    // After a top-up the same key works.
    env.grant("poor@example.com", 3).await;
    let (st, body) = env.search(&key).await;
    assert_eq!(
        (st.as_u16(), body["credits_remaining"].as_i64()),
        (200, Some(2)),
        "{body}"
    );
    env.finish(&[&key]).await;
}

async fn overspend_race(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/rd/r/rust/about.json").file("forum/reddit_json/about_rust.json"));
    let opts = Options {
        extra: only_sources("", &[at("forum.reddit_json", up.url("/rd"))]),
        ..Options::default()
    };
    let Some(env) = Env::start_with(b, opts, up.url("/api/v1"), up).await else {
        return;
    };
    let endpoint = EndpointId::ForumCommunity;
    let price = i64::from(endpoint.meta().credits);
    assert_eq!(price, 2, "the race needs a 2-credit endpoint");
    let session = env.sign_in("race@example.com").await;
    let mut keys = Vec::new();
    for i in 0..10 {
        keys.push(env.create_key(&session, &format!("k{i}")).await);
    }
    let calls: Vec<_> = (0..100)
        .map(|i| {
            let http = env.http.clone();
            let url = env.url(&format!("{}?community=rust", endpoint.meta().path));
            let key = keys[i % 10].clone();
            async move {
                let res = http
                    .get(url)
                    .header("x-api-key", key)
                    .send()
                    .await
                    .expect("call");
                crate::accounts_support::read(res).await
            }
        })
        .collect();
    let results = join_all(calls).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count();
    let broke = results
        .iter()
        .filter(|(s, b)| *s == 402 && error_type(b) == "NO_CREDITS")
        .count();
    assert_eq!(
        (ok as i64, broke as i64),
        (50 / price, 100 - 50 / price),
        "{:?}",
        results.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert!(
        results
            .iter()
            .all(|(_, b)| b["credits_remaining"].as_i64().unwrap_or(-1) >= 0)
    );
    for (s, body) in &results {
        if *s == 200 {
            assert_eq!(body["credits_used"].as_i64(), Some(price), "{body}");
        } else {
            assert!(
                body["credits_remaining"].is_i64(),
                "a 402 carries the balance: {body}"
            );
            assert_eq!(body["credits_used"], 0, "{body}");
        }
    }
    assert_eq!(
        env.up.seen().len(),
        ok,
        "only the calls that held credits reached the upstream"
    );
    assert_eq!(env.stored_balance("race@example.com").await, 0);
    assert_eq!(env.charged().await, 50);
    let mut secrets: Vec<&str> = keys.iter().map(String::as_str).collect();
    secrets.push(&session);
    env.finish(&secrets).await;
}

/// An upstream that fails about half of the calls, at random.
async fn flaky_upstream() -> String {
    let body =
        std::fs::read(fixtures_dir().join("techforum/algolia/search_story.json")).expect("fixture");
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move {
            let mut b = [0u8; 1];
            getrandom::fill(&mut b).expect("random");
            if b[0] < 128 {
                (
                    axum::http::StatusCode::OK,
                    [("content-type", "application/json")],
                    body,
                )
                    .into_response()
            } else {
                (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response()
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/api/v1")
}

use axum::response::IntoResponse;

async fn failure_race(b: Backend) {
    let up = FakeUpstream::start().await;
    let opts = Options {
        limits: NO_LIMITS.into(),
        ..Options::default()
    };
    let Some(env) = Env::start_with(b, opts, flaky_upstream().await, up).await else {
        return;
    };
    let session = env.sign_in("flaky@example.com").await;
    let keys = [
        env.create_key(&session, "a").await,
        env.create_key(&session, "b").await,
        env.create_key(&session, "c").await,
    ];
    env.grant("flaky@example.com", 950).await;
    let start = env.balance(&keys[0]).await;
    assert_eq!(start, 1000);
    let calls: Vec<_> = (0..300)
        .map(|i| {
            let http = env.http.clone();
            let url = env.url("/v1/techforum/search?query=x");
            let key = keys[i % 3].clone();
            async move {
                let res = http
                    .get(url)
                    .header("x-api-key", key)
                    .send()
                    .await
                    .expect("call");
                crate::accounts_support::read(res).await
            }
        })
        .collect();
    let results = join_all(calls).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count() as i64;
    for (s, body) in &results {
        match s.as_u16() {
            200 => assert_eq!(body["credits_used"], 1),
            424 => assert_eq!(body["credits_used"], 0),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(
        ok > 0 && ok < 300,
        "the upstream fails at random ({ok} of 300 succeeded)"
    );
    assert_eq!(env.balance(&keys[0]).await, start - ok);
    assert_eq!(env.charged().await, ok);
    env.finish(&[]).await;
}

async fn crash_under_load(b: Backend) {
    let opts = Options {
        limits: NO_LIMITS.into(),
        ..Options::default()
    };
    let Some(mut env) = Env::start(b, opts).await else {
        return;
    };
    let (_, key) = env.account_with_key("crash@example.com").await;
    env.up.reset();
    env.up
        .route(crate::accounts_support::search_fixture().delay(Duration::from_secs(3)));
    let load: Vec<_> = (0..40)
        .map(|_| {
            let http = env.http.clone();
            let url = env.url("/v1/techforum/search?query=x");
            let key = key.clone();
            tokio::spawn(async move {
                let _ = http.get(url).header("x-api-key", key).send().await;
            })
        })
        .collect();
    // Wait until calls hold credits, then kill the server with SIGKILL.
    let db = env.db.connect().await;
    let mut held = 0;
    for _ in 0..200 {
        held = env.holds(&db).await;
        if held >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(held > 0, "calls hold credits when the server is killed");
    env.server.kill();
    for l in load {
        let _ = l.await;
    }
    // What the killed process left: held credits, and books that already agree.
    assert!(env.holds(&db).await > 0);
    env.check_ledger(false).await;
    // Restart: every hold is released before the server listens; no credit is lost.
    env.up.reset();
    env.up.route(crate::accounts_support::search_fixture());
    env.server.restart();
    assert_eq!(env.holds(&db).await, 0);
    db.close().await;
    env.check_ledger(true).await;
    let charged = env.charged().await;
    assert_eq!(env.balance(&key).await, 50 - charged);
    let (st, body) = env.search(&key).await;
    assert_eq!(st, 200, "{body}");
    env.finish(&[&key]).await;
}

async fn expired_hold_is_released(b: Backend) {
    // A call that outlives the hold expiry: the janitor gives the credit back, and the call, which
    // then succeeds, is free.
    let opts = Options {
        limits: "hold_expiry_seconds = 1\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let (session, key) = env.account_with_key("slow@example.com").await;
    env.up.reset();
    env.up
        .route(crate::accounts_support::search_fixture().delay(Duration::from_secs(4)));
    let (st, body) = env.search(&key).await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(
        (
            body["credits_used"].as_i64(),
            body["credits_remaining"].as_i64()
        ),
        (Some(0), Some(50)),
        "{body}"
    );
    assert_eq!(env.balance(&key).await, 50);
    assert_eq!(env.charged().await, 0);
    env.finish(&[&key, &session]).await;
}

async fn rate_limit_burst(b: Backend) {
    // 10 at once, then one every 5 s: the 11th call of a burst is refused whatever the machine's speed.
    let opts = Options {
        limits: "rate_per_second = 0.2\nburst = 10\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let (session, key) = env.account_with_key("burst@example.com").await;
    for _ in 0..10 {
        let (st, body) = env.search(&key).await;
        assert_eq!(st, 200, "{body}");
    }
    let (st, body) = env.search(&key).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (429, "RATE_LIMITED"),
        "{body}"
    );
    let retry: u64 = body["__retry_after"]
        .as_str()
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=5).contains(&retry), "{retry}");
    assert_eq!(body["credits_used"], 0);
    // Nothing charged for it; another key of the account is not limited by this one.
    let other = env.create_key(&session, "other").await;
    assert_eq!(env.balance(&other).await, 40);
    let (st, _) = env.search(&other).await;
    assert_eq!(st, 200);
    env.finish(&[&key, &other, &session]).await;
}

async fn in_flight_limit(b: Backend) {
    let opts = Options {
        limits: "rate_per_second = 1000.0\nburst = 1000\nin_flight = 10\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let (session, key) = env.account_with_key("flight@example.com").await;
    env.up.reset();
    env.up
        .route(crate::accounts_support::search_fixture().delay(Duration::from_secs(2)));
    let calls: Vec<_> = (0..11)
        .map(|_| {
            let http = env.http.clone();
            let url = env.url("/v1/techforum/search?query=x");
            let key = key.clone();
            async move {
                let res = http
                    .get(url)
                    .header("x-api-key", key)
                    .send()
                    .await
                    .expect("call");
                crate::accounts_support::read(res).await
            }
        })
        .collect();
    let results = join_all(calls).await;
    let ok = results.iter().filter(|(s, _)| *s == 200).count();
    let limited: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == 429)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(
        (ok, limited.len()),
        (10, 1),
        "{:?}",
        results.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    assert_eq!(error_type(limited[0]), "RATE_LIMITED");
    assert!(
        limited[0]["__retry_after"].is_string(),
        "Retry-After is sent"
    );
    assert_eq!(
        env.balance(&key).await,
        40,
        "the refused call is not charged"
    );
    env.finish(&[&key, &session]).await;
}

async fn call_log_survives_shutdown(b: Backend) {
    let Some(mut env) = Env::start(b, Options::default()).await else {
        return;
    };
    let (_, key) = env.account_with_key("log@example.com").await;
    for _ in 0..3 {
        let (st, _) = env
            .get("/v1/techforum/search?limit=0", &[("x-api-key", &key)])
            .await;
        assert_eq!(st, 422);
    }
    env.server.stop();
    let db = env.db.connect().await;
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM calls")
        .fetch_one(&db.read)
        .await
        .unwrap();
    assert_eq!(
        n, 3,
        "refused calls are logged before a clean shutdown ends"
    );
    db.close().await;
    env.server.restart();
    env.finish(&[&key]).await;
}

/// A loopback SMTP listener speaking just enough SMTP for one client; keeps every message.
async fn smtp_sink() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().unwrap().port();
    let messages = Arc::new(Mutex::new(Vec::new()));
    let store = messages.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let store = store.clone();
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut lines = BufReader::new(r).lines();
                let _ = w.write_all(b"220 sink.test ESMTP\r\n").await;
                let mut data: Option<String> = None;
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(d) = data.as_mut() {
                        if line == "." {
                            store.lock().unwrap().push(data.take().unwrap());
                            let _ = w.write_all(b"250 queued\r\n").await;
                        } else {
                            d.push_str(&line);
                            d.push('\n');
                        }
                        continue;
                    }
                    let verb = line
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .to_ascii_uppercase();
                    let reply: &[u8] = match verb.as_str() {
                        "EHLO" | "HELO" => b"250 sink.test\r\n",
                        "DATA" => {
                            data = Some(String::new());
                            b"354 go ahead\r\n"
                        }
                        "QUIT" => {
                            let _ = w.write_all(b"221 bye\r\n").await;
                            break;
                        }
                        _ => b"250 ok\r\n",
                    };
                    let _ = w.write_all(reply).await;
                }
            });
        }
    });
    (port, messages)
}

async fn code_through_smtp(b: Backend) {
    let (port, messages) = smtp_sink().await;
    let opts = Options {
        extra: format!(
            "[smtp]\nhost = \"127.0.0.1\"\nport = {port}\nfrom = \"socialsearch <login@socialsearch.test>\"\ntls = \"none\"\n"
        ),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let (st, body) = env
        .post(
            "/v1/auth/request-code",
            &[],
            json!({ "email": "mail@example.com" }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    let message = messages
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("a message reached the SMTP listener");
    assert!(message.contains("To: mail@example.com"), "{message}");
    let code: String = message
        .split("sign-in code is ")
        .nth(1)
        .expect("the code in the body")
        .chars()
        .take(6)
        .collect();
    assert!(
        code.chars().all(|c| c.is_ascii_digit()) && code.len() == 6,
        "{code}"
    );
    assert!(
        !env.db.dir.join("outbox.log").exists(),
        "no development outbox with SMTP configured"
    );
    let (st, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": "mail@example.com", "otp": code }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    let (session, _) = env
        .open_session(body["dashboard_url"].as_str().unwrap())
        .await;
    let code_in_log = format!("code is {code}");
    env.finish(&[&session, &code_in_log]).await;
}
