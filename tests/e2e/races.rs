//! Every account rule under concurrent requests, on SQLite and on PostgreSQL: at least 50 requests
//! at once against the real binary, and the rule holds exactly (keys per account, wrong guesses per
//! code, the resend cooldown, the daily caps on codes and dashboard links, rotation racing rotation),
//! and the `admin` commands beside a serving process under load.

use serde_json::json;

use crate::accounts_support::{
    Backend, Env, Options, TestDb, at, count, error_type, only_sources, search_fixture, summary,
    try_admin,
};
use crate::fake_upstream::FakeUpstream;
use crate::on_both_databases;

on_both_databases!(
    keys_per_account,
    wrong_guesses_per_code,
    one_code_per_cooldown,
    daily_caps_on_codes,
    daily_cap_on_dashboard_links,
    rotation_races_rotation,
    one_session_per_link,
    admin_beside_serve,
    one_account_per_address,
    first_start_from_several_processes,
);

/// No per-key rate or in-flight limit in the way of the rule under test.
const NO_KEY_LIMITS: &str = "rate_per_second = 100000.0\nburst = 100000\nin_flight = 100000\n";

async fn keys_per_account(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let session = env.sign_in("keys-race@example.com").await;
    let s = [("x-session", session.as_str())];
    let answers = env
        .post_parallel(60, "/v1/keys", &s, json!({ "name": "k" }))
        .await;
    assert_eq!(
        (count(&answers, 200, ""), count(&answers, 409, "KEY_LIMIT")),
        (10, 50),
        "{:?}",
        summary(&answers)
    );
    let (st, list) = env.get("/v1/keys", &s).await;
    assert_eq!(st, 200, "{list}");
    assert_eq!(list["keys"].as_array().map(Vec::len), Some(10), "{list}");
    let keys: Vec<String> = answers
        .iter()
        .filter_map(|(_, b)| b["key"].as_str().map(str::to_string))
        .collect();
    let mut secrets: Vec<&str> = keys.iter().map(String::as_str).collect();
    secrets.push(&session);
    env.finish(&secrets).await;
}

async fn wrong_guesses_per_code(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let email = "guess-race@example.com";
    let code = env.request_code(email).await;
    let wrong = if code == "000000" { "000001" } else { "000000" };
    let answers = env
        .post_parallel(
            50,
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": wrong }),
        )
        .await;
    assert_eq!(
        (
            count(&answers, 400, "INVALID_CODE"),
            count(&answers, 400, "TOO_MANY_ATTEMPTS")
        ),
        (5, 45),
        "{:?}",
        summary(&answers)
    );
    // Each wrong guess was counted once: attempts_left went 4, 3, 2, 1, 0.
    let mut left: Vec<i64> = answers
        .iter()
        .filter(|(_, b)| error_type(b) == "INVALID_CODE")
        .map(|(_, b)| b["error"]["attempts_left"].as_i64().expect("attempts_left"))
        .collect();
    left.sort_unstable();
    assert_eq!(left, vec![0, 1, 2, 3, 4]);
    // The code is locked: the right code does not sign in.
    let (st, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (400, "TOO_MANY_ATTEMPTS"),
        "{body}"
    );
    env.finish(&[]).await;
}

async fn one_code_per_cooldown(b: Backend) {
    let opts = Options {
        signin: "cooldown_seconds = 3600\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let email = "cool-race@example.com";
    let answers = env
        .post_parallel(50, "/v1/auth/request-code", &[], json!({ "email": email }))
        .await;
    assert_eq!(
        (
            count(&answers, 200, ""),
            count(&answers, 429, "RATE_LIMITED")
        ),
        (1, 49),
        "{:?}",
        summary(&answers)
    );
    assert!(
        answers
            .iter()
            .filter(|(s, _)| *s == 429)
            .all(|(_, b)| b["__retry_after"].is_string()),
        "inside the cooldown the answer says how long to wait"
    );
    assert_eq!(env.outbox_count(Some(email)), 1, "exactly one code is sent");
    // The one code sent is the one that signs in.
    let code = env.outbox_code(email);
    let (st, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    env.finish(&[]).await;
}

async fn daily_caps_on_codes(b: Backend) {
    let opts = Options {
        signin:
            "cooldown_seconds = 0\ncodes_per_address_per_day = 7\ncodes_per_client_per_day = 20\n"
                .into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    // One address: exactly its cap.
    let email = "cap-race@example.com";
    let answers = env
        .post_parallel(60, "/v1/auth/request-code", &[], json!({ "email": email }))
        .await;
    assert_eq!(
        (
            count(&answers, 200, ""),
            count(&answers, 429, "RATE_LIMITED")
        ),
        (7, 53),
        "{:?}",
        summary(&answers)
    );
    assert_eq!(env.outbox_count(Some(email)), 7);
    // One client, many addresses: the client's cap, of which 7 are spent.
    let bodies = (0..60)
        .map(|i| json!({ "email": format!("client-race-{i}@example.com") }))
        .collect();
    let answers = env.post_each("/v1/auth/request-code", &[], bodies).await;
    assert_eq!(
        (
            count(&answers, 200, ""),
            count(&answers, 429, "RATE_LIMITED")
        ),
        (13, 47),
        "{:?}",
        summary(&answers)
    );
    assert_eq!(
        env.outbox_count(None),
        20,
        "exactly the client's cap is sent"
    );
    assert!(
        answers
            .iter()
            .filter(|(s, _)| *s == 429)
            .all(|(_, b)| b.get("__retry_after").is_none()),
        "a daily cap has no Retry-After"
    );
    env.finish(&[]).await;
}

async fn daily_cap_on_dashboard_links(b: Backend) {
    let opts = Options {
        limits: NO_KEY_LIMITS.into(),
        signin: "cooldown_seconds = 0\nlinks_per_account_per_day = 6\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let (session, key) = env.account_with_key("link-race@example.com").await;
    let answers = env
        .post_parallel(
            60,
            "/v1/auth/browser-link",
            &[("x-api-key", &key)],
            json!({}),
        )
        .await;
    assert_eq!(
        (
            count(&answers, 200, ""),
            count(&answers, 429, "RATE_LIMITED")
        ),
        (6, 54),
        "{:?}",
        summary(&answers)
    );
    assert!(
        answers
            .iter()
            .filter(|(s, _)| *s == 429)
            .all(|(_, b)| b.get("__retry_after").is_none()),
        "a daily cap has no Retry-After"
    );
    env.finish(&[&session, &key]).await;
}

async fn rotation_races_rotation(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let session = env.sign_in("rotate-race@example.com").await;
    let s = [("x-session", session.as_str())];
    let (st, created) = env.post("/v1/keys", &s, json!({ "name": "main" })).await;
    assert_eq!(st, 200, "{created}");
    let old_key = created["key"].as_str().unwrap().to_string();
    let kid = created["id"].as_str().unwrap().to_string();
    let answers = env
        .post_parallel(20, &format!("/v1/keys/{kid}/rotate"), &s, json!({}))
        .await;
    assert_eq!(
        (count(&answers, 200, ""), count(&answers, 404, "NOT_FOUND")),
        (1, 19),
        "{:?}",
        summary(&answers)
    );
    let rotated = &answers.iter().find(|(s, _)| *s == 200).unwrap().1;
    let new_key = rotated["key"].as_str().unwrap().to_string();
    assert_eq!(rotated["name"], "main", "the new key keeps the name");
    let (st, list) = env.get("/v1/keys", &s).await;
    assert_eq!(st, 200, "{list}");
    let listed: Vec<&str> = list["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["id"].as_str())
        .collect();
    assert_eq!(listed, vec![rotated["id"].as_str().unwrap()], "{list}");
    let (st, body) = env.search(&old_key).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (403, "INVALID_API_KEY"),
        "{body}"
    );
    let (st, body) = env.search(&new_key).await;
    assert_eq!(st, 200, "{body}");
    env.finish(&[&session, &old_key, &new_key]).await;
}

/// A one-time dashboard link opened by 50 requests at once opens exactly one session.
async fn one_session_per_link(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let email = "link-once@example.com";
    let code = env.request_code(email).await;
    let (st, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    let url = body["dashboard_url"].as_str().unwrap();
    let link = url.split("#login=").nth(1).unwrap();
    let answers = env
        .post_parallel(50, "/v1/auth/session", &[], json!({ "link": link }))
        .await;
    assert_eq!(
        (
            count(&answers, 200, ""),
            count(&answers, 401, "UNAUTHORIZED")
        ),
        (1, 49),
        "{:?}",
        summary(&answers)
    );
    let session = answers.iter().find(|(s, _)| *s == 200).unwrap().1["session"]
        .as_str()
        .unwrap()
        .to_string();
    env.finish(&[&session, link]).await;
}

/// `admin` commands (each its own process) in a loop beside a serving process under load: every one
/// succeeds, the load is answered, and the books agree. On SQLite this needs the write lock taken up
/// front with a busy timeout; before, a command answered "database is locked".
async fn admin_beside_serve(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(search_fixture());
    let base = up.url("/api/v1");
    let opts = Options {
        limits: NO_KEY_LIMITS.into(),
        signin: "cooldown_seconds = 0\ncodes_per_client_per_day = 1000000\n".into(),
        // No local rate limit on the source: the load is answered, not skipped.
        extra: only_sources(
            "",
            &[at("techforum.algolia", base.clone()).with("rate_per_sec = 0")],
        ),
    };
    let Some(env) = Env::start_with(b, opts, base, up).await else {
        return;
    };
    let (session, key) = env.account_with_key("load@example.com").await;
    env.grant("load@example.com", 1_000_000).await;
    let env = std::sync::Arc::new(env);

    // Load: paid calls (ledger writes) and sign-ins (account writes) until the admin loop is done.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load: Vec<_> = (0..8)
        .map(|worker| {
            let (env, done, key) = (env.clone(), done.clone(), key.clone());
            tokio::spawn(async move {
                let mut answered = 0u32;
                let mut i = 0u32;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let (st, body) = if worker % 4 == 0 {
                        i += 1;
                        env.post(
                            "/v1/auth/request-code",
                            &[],
                            json!({ "email": format!("w{worker}-{i}@example.com") }),
                        )
                        .await
                    } else {
                        env.search(&key).await
                    };
                    assert_eq!(st, 200, "the service answers under the admin loop: {body}");
                    answered += 1;
                }
                answered
            })
        })
        .collect();

    let rounds = 12;
    let admin_loop = tokio::task::spawn_blocking({
        let env = env.clone();
        move || {
            let mut failed = Vec::new();
            for i in 0..rounds {
                let email = format!("ops{i}@example.com");
                for args in [
                    vec!["create-account", "--email", &email, "--credits", "3"],
                    vec!["grant", "--email", &email, "--credits", "4"],
                    vec!["grant", "--email", "load@example.com", "--credits", "1"],
                    vec!["create-key", "--email", &email],
                ] {
                    if let Err(e) = try_admin(&env.db, &args) {
                        failed.push(e);
                    }
                }
            }
            failed
        }
    });
    let failed = admin_loop.await.expect("admin loop");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for l in load {
        assert!(l.await.expect("load") > 0, "every load worker was answered");
    }

    assert!(
        failed.is_empty(),
        "every admin command succeeds: {failed:?}"
    );
    for i in 0..rounds {
        assert_eq!(env.stored_balance(&format!("ops{i}@example.com")).await, 7);
    }
    env.check_ledger(true).await;
    let env = std::sync::Arc::try_unwrap(env).ok().expect("one owner");
    env.finish(&[&session, &key]).await;
}

/// `admin create-account` for one address from several processes at once, beside sign-in codes for
/// it: every command succeeds, one account exists, with the sign-up credits once.
async fn one_account_per_address(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let env = std::sync::Arc::new(env);
    let email = "once@example.com";
    let commands: Vec<_> = (0..8)
        .map(|_| {
            let env = env.clone();
            tokio::task::spawn_blocking(move || {
                try_admin(
                    &env.db,
                    &["create-account", "--email", email, "--credits", "9"],
                )
            })
        })
        .collect();
    let mut created = 0;
    for c in commands {
        let out = c
            .await
            .expect("task")
            .expect("every create-account succeeds");
        let view: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(view["balance"], 9, "{view}");
        created += usize::from(view["created"] == true);
    }
    assert_eq!(created, 1, "exactly one command created the account");
    assert_eq!(env.stored_balance(email).await, 9);
    env.check_ledger(true).await;
    let env = std::sync::Arc::try_unwrap(env).ok().expect("one owner");
    env.finish(&[]).await;
}

/// Several `admin` processes start at once on a database nobody has migrated yet: the migrations run
/// once, every command succeeds, and one account is made.
async fn first_start_from_several_processes(b: Backend) {
    let Some(db) = TestDb::new(b).await else {
        return;
    };
    std::fs::write(db.dir.join("config.toml"), "").expect("config");
    let db = std::sync::Arc::new(db);
    let commands: Vec<_> = (0..6)
        .map(|_| {
            let db = db.clone();
            tokio::task::spawn_blocking(move || {
                try_admin(&db, &["create-account", "--email", "first@example.com"])
            })
        })
        .collect();
    let mut created = 0;
    for c in commands {
        let out = c.await.expect("task").expect("every command succeeds");
        let view: serde_json::Value = serde_json::from_str(&out).expect("json");
        created += usize::from(view["created"] == true);
    }
    assert_eq!(created, 1, "exactly one command created the account");
    let conn = db.connect().await;
    // Every migration is in: the latest one's column is there.
    let (sessions,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM sessions WHERE key_id IS NULL")
        .fetch_one(&conn.read)
        .await
        .expect("the migrated schema");
    assert_eq!(sessions, 0);
    assert!(
        server::accounts::ledger_mismatches(&conn)
            .await
            .expect("ledger")
            .is_empty()
    );
    conn.close().await;
}
