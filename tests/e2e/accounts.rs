//! Sign-in codes, sessions, keys, account reads and the authentication rules of spec section 5, on
//! SQLite and on PostgreSQL.

use serde_json::json;

use crate::accounts_support::{Backend, Env, OWNER_KEY, Options, admin, assert_schema, error_type};
use crate::on_both_databases;

on_both_databases!(
    code_states,
    code_expiry,
    request_code_rules,
    daily_caps,
    keys_lifecycle,
    browser_link_sessions,
    section_5_rules,
    me_and_balance,
    admin_routes_and_commands,
    documented_bodies_are_accepted,
    fresh_code_after_a_strangers_guesses,
    link_sessions_end_with_their_key,
);

async fn code_states(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let email = "ada@example.com";

    // Never requested.
    let (s, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": "123456" }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (400, "NO_PENDING_CODE"),
        "{body}"
    );

    // Wrong guesses count down, then the code is locked even for the right code.
    let code = env.request_code(email).await;
    let wrong = if code == "000000" { "000001" } else { "000000" };
    for left in (0..5).rev() {
        let (s, body) = env
            .post(
                "/v1/auth/verify",
                &[],
                json!({ "email": email, "otp": wrong }),
            )
            .await;
        assert_eq!(
            (s.as_u16(), error_type(&body)),
            (400, "INVALID_CODE"),
            "{body}"
        );
        assert_eq!(body["attempts_left"], left, "{body}");
        assert_eq!(body["error"]["attempts_left"], left, "{body}");
        assert_eq!(body["credits_used"], 0);
    }
    let (s, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (400, "TOO_MANY_ATTEMPTS"),
        "{body}"
    );

    // A new request replaces the code; a wrong guess keeps it valid; the right one signs in.
    let old = code;
    let code = env.request_code(email).await;
    if old != code {
        let (_, body) = env
            .post(
                "/v1/auth/verify",
                &[],
                json!({ "email": email, "otp": old }),
            )
            .await;
        assert_eq!(
            error_type(&body),
            "INVALID_CODE",
            "the replaced code no longer works"
        );
    }
    let (s, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    assert_schema("SignedIn", &body);
    assert!(
        !body.to_string().contains("ss_live_"),
        "sign-in never returns a key"
    );
    let url = body["dashboard_url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with("http://dashboard.test/dashboard#login="),
        "{url}"
    );

    // Used: no pending code.
    let (s, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": email, "otp": code }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (400, "NO_PENDING_CODE"),
        "{body}"
    );

    // The link opens a session once.
    let (session, kind) = env.open_session(&url).await;
    assert_eq!(kind, "otp");
    let link = url.split("#login=").nth(1).unwrap();
    let (s, body) = env
        .post("/v1/auth/session", &[], json!({ "link": link }))
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "{body}"
    );

    // Login is signup: 50 credits, once. Signing in again makes no second account or grant.
    let key = env.create_key(&session, "k").await;
    assert_eq!(env.balance(&key).await, 50);
    let again = env.sign_in("ADA@example.com").await;
    let key2 = env.create_key(&again, "k2").await;
    assert_eq!(env.balance(&key2).await, 50);
    let (_, list) = env.get("/v1/keys", &[("x-session", &session)]).await;
    assert_eq!(
        list["keys"].as_array().unwrap().len(),
        2,
        "one account for both sign-ins"
    );
    // The same answer for an address with an account and one without (no enumeration).
    let known = env.sign_in_answer(email).await;
    let unknown = env.sign_in_answer("never@example.com").await;
    assert_eq!(known, unknown);
    env.finish(&[&key, &key2, &session, &again, link]).await;
}

async fn code_expiry(b: Backend) {
    let opts = Options {
        signin: "cooldown_seconds = 0\ncode_ttl_seconds = 1\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let code = env.request_code("late@example.com").await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let (s, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": "late@example.com", "otp": code }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (400, "CODE_EXPIRED"),
        "{body}"
    );
    env.finish(&[]).await;
}

async fn request_code_rules(b: Backend) {
    let opts = Options {
        signin: "cooldown_seconds = 60\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    // Disposable domains, from the maintained list.
    for email in ["x@mailinator.com", "x@guerrillamail.com", "x@yopmail.com"] {
        let (s, body) = env
            .post("/v1/auth/request-code", &[], json!({ "email": email }))
            .await;
        assert_eq!(
            (s.as_u16(), error_type(&body)),
            (400, "EMAIL_NOT_ACCEPTED"),
            "{email}: {body}"
        );
    }
    // Malformed addresses: 422 naming the field; a body that is not JSON: 400.
    for email in ["ada", "ada@", "ada@example", "@example.com"] {
        let (s, body) = env
            .post("/v1/auth/request-code", &[], json!({ "email": email }))
            .await;
        assert_eq!(
            (s.as_u16(), error_type(&body)),
            (422, "VALIDATION_ERROR"),
            "{email}: {body}"
        );
        assert!(
            body["error"]["message"].as_str().unwrap().contains("email"),
            "{body}"
        );
    }
    let (s, body) = env.post("/v1/auth/request-code", &[], json!({})).await;
    assert_eq!(s, 422, "missing field: {body}");
    let (s, body) = env
        .post(
            "/v1/auth/request-code",
            &[],
            json!({ "email": "a@example.com", "extra": 1 }),
        )
        .await;
    assert_eq!(s, 422, "unknown field: {body}");
    let res = env
        .http
        .post(env.url("/v1/auth/request-code"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
    // Cooldown: 429 with Retry-After.
    env.request_code("cool@example.com").await;
    let (s, body) = env
        .post(
            "/v1/auth/request-code",
            &[],
            json!({ "email": "cool@example.com" }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (429, "RATE_LIMITED"),
        "{body}"
    );
    let retry: u64 = body["__retry_after"]
        .as_str()
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    env.finish(&[]).await;
}

impl Env {
    /// The body of request-code with the changing parts kept (there are none).
    async fn sign_in_answer(&self, email: &str) -> serde_json::Value {
        let (_, body) = self
            .post("/v1/auth/request-code", &[], json!({ "email": email }))
            .await;
        body
    }
}

async fn daily_caps(b: Backend) {
    let opts = Options {
        signin: "cooldown_seconds = 0\ncodes_per_address_per_day = 2\ncodes_per_client_per_day = 4\nlinks_per_account_per_day = 2\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    env.request_code("cap@example.com").await;
    env.request_code("cap@example.com").await;
    let (s, body) = env
        .post(
            "/v1/auth/request-code",
            &[],
            json!({ "email": "cap@example.com" }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (429, "RATE_LIMITED"),
        "{body}"
    );
    assert!(
        body.get("__retry_after").is_none(),
        "a daily cap has no Retry-After"
    );
    // Per client address: 2 more codes from this client, then the cap.
    env.request_code("other1@example.com").await;
    let code = env.request_code("other2@example.com").await;
    let (s, body) = env
        .post(
            "/v1/auth/request-code",
            &[],
            json!({ "email": "other3@example.com" }),
        )
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (429, "RATE_LIMITED"),
        "{body}"
    );
    assert!(body.get("__retry_after").is_none());
    // Dashboard links: 2 per account per day.
    let (s, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": "other2@example.com", "otp": code }),
        )
        .await;
    assert_eq!(s, 200, "{body}");
    let (session, _) = env
        .open_session(body["dashboard_url"].as_str().unwrap())
        .await;
    let key = env.create_key(&session, "k").await;
    for _ in 0..2 {
        let (s, body) = env
            .post("/v1/auth/browser-link", &[("x-api-key", &key)], json!({}))
            .await;
        assert_eq!(s, 200, "{body}");
    }
    let (s, body) = env
        .post("/v1/auth/browser-link", &[("x-api-key", &key)], json!({}))
        .await;
    assert_eq!(
        (s.as_u16(), error_type(&body)),
        (429, "RATE_LIMITED"),
        "{body}"
    );
    assert!(body.get("__retry_after").is_none());
    env.finish(&[&key, &session]).await;
}

async fn keys_lifecycle(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let session = env.sign_in("keys@example.com").await;
    let s = [("x-session", session.as_str())];
    let (st, body) = env.post("/v1/keys", &s, json!({ "name": "first" })).await;
    assert_eq!(st, 200, "{body}");
    assert_schema("NewKey", &body);
    let key = body["key"].as_str().unwrap().to_string();
    let kid = body["id"].as_str().unwrap().to_string();
    assert!(key.starts_with("ss_live_") && key.len() == 40, "{key}");
    assert!(key.starts_with(body["prefix"].as_str().unwrap()));
    let (st, _) = env.search(&key).await;
    assert_eq!(st, 200);

    // Listed by prefix, name, creation and last use; never the plaintext.
    let (st, list) = env.get("/v1/keys", &s).await;
    assert_eq!(st, 200);
    assert_schema("KeyList", &list);
    assert!(
        !list.to_string().contains(&key),
        "the listing never shows a key"
    );
    let entry = &list["keys"][0];
    assert_eq!(
        (entry["id"].as_str(), entry["name"].as_str()),
        (Some(kid.as_str()), Some("first"))
    );
    assert!(entry["last_used_at"].is_string(), "{entry}");

    // Rotation: a new key (a new id, the same name) at once, the old one refused at once.
    let (st, rotated) = env
        .post(&format!("/v1/keys/{kid}/rotate"), &s, json!({}))
        .await;
    assert_eq!(st, 200, "{rotated}");
    assert_schema("NewKey", &rotated);
    let new_key = rotated["key"].as_str().unwrap().to_string();
    assert_ne!(new_key, key);
    let new_kid = rotated["id"].as_str().unwrap().to_string();
    assert_ne!(new_kid, kid);
    assert_eq!(rotated["name"], "first");
    // The rotated-away key cannot be rotated or revoked again.
    for (st, body) in [
        env.post(&format!("/v1/keys/{kid}/rotate"), &s, json!({}))
            .await,
        env.delete(&format!("/v1/keys/{kid}"), &s).await,
    ] {
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (404, "NOT_FOUND"),
            "{body}"
        );
    }
    let (st, body) = env.search(&key).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (403, "INVALID_API_KEY"),
        "{body}"
    );
    let (st, _) = env.search(&new_key).await;
    assert_eq!(st, 200);

    // Revocation: refused at once; revoking again or an unknown id is 404.
    let (st, body) = env.delete(&format!("/v1/keys/{new_kid}"), &s).await;
    assert_eq!(st, 200, "{body}");
    assert_schema("KeyRevoked", &body);
    let (st, body) = env.search(&new_key).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (403, "INVALID_API_KEY"),
        "{body}"
    );
    let (st, body) = env.delete(&format!("/v1/keys/{new_kid}"), &s).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (404, "NOT_FOUND"),
        "{body}"
    );
    let (st, body) = env.post("/v1/keys/key_nope/rotate", &s, json!({})).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (404, "NOT_FOUND"),
        "{body}"
    );
    let (st, list) = env.get("/v1/keys", &s).await;
    assert_eq!(
        (st.as_u16(), list["keys"].as_array().unwrap().len()),
        (200, 0)
    );

    // Ten keys at most.
    let mut keys = Vec::new();
    for i in 0..10 {
        keys.push(env.create_key(&session, &format!("k{i}")).await);
    }
    let (st, body) = env.post("/v1/keys", &s, json!({})).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (409, "KEY_LIMIT"),
        "{body}"
    );

    // Sign-out revokes the session.
    let (st, body) = env.post("/v1/auth/signout", &s, json!({})).await;
    assert_eq!(st, 200, "{body}");
    assert_schema("SignedOut", &body);
    let (st, body) = env.get("/v1/keys", &s).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "{body}"
    );
    let mut secrets: Vec<&str> = keys.iter().map(String::as_str).collect();
    secrets.extend([key.as_str(), new_key.as_str(), session.as_str()]);
    env.finish(&secrets).await;
}

async fn browser_link_sessions(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let (otp_session, key) = env.account_with_key("link@example.com").await;
    let (st, body) = env
        .post("/v1/auth/browser-link", &[("x-api-key", &key)], json!({}))
        .await;
    assert_eq!(st, 200, "{body}");
    assert_schema("DashboardLink", &body);
    let (session, kind) = env
        .open_session(body["dashboard_url"].as_str().unwrap())
        .await;
    assert_eq!(kind, "link");
    let s = [("x-session", session.as_str())];
    // It can look, and reach checkout (billing is a later issue: 503 here), but not manage keys.
    let (st, list) = env.get("/v1/keys", &s).await;
    assert_eq!(st, 200, "{list}");
    let kid = list["keys"][0]["id"].as_str().unwrap().to_string();
    let (st, body) = env
        .post("/v1/checkout", &s, json!({ "plan": "starter" }))
        .await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (503, "CHECKOUT_UNAVAILABLE"),
        "{body}"
    );
    for (st, body) in [
        env.post("/v1/keys", &s, json!({})).await,
        env.post(&format!("/v1/keys/{kid}/rotate"), &s, json!({}))
            .await,
        env.delete(&format!("/v1/keys/{kid}"), &s).await,
    ] {
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (403, "OTP_SIGNIN_REQUIRED"),
            "{body}"
        );
    }
    // The e-mailed-code session still can.
    let (st, _) = env
        .post(
            &format!("/v1/keys/{kid}/rotate"),
            &[("x-session", &otp_session)],
            json!({}),
        )
        .await;
    assert_eq!(st, 200);
    // browser-link needs a valid key.
    let (st, body) = env.post("/v1/auth/browser-link", &[], json!({})).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "{body}"
    );
    let (st, body) = env
        .post("/v1/auth/browser-link", &[("x-api-key", &key)], json!({}))
        .await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "rotated key: {body}"
    );
    env.finish(&[&key, &session, &otp_session]).await;
}

async fn section_5_rules(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let (session, key) = env.account_with_key("rules@example.com").await;
    let unknown = "ss_live_00000000000000000000000000000000";
    // 5.1 platform endpoints.
    let (st, body) = env.get("/v1/techforum/search?query=x", &[]).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "MISSING_API_KEY"),
        "{body}"
    );
    for bad in [unknown, "nonsense", &session] {
        let (st, body) = env
            .get("/v1/techforum/search?query=x", &[("x-api-key", bad)])
            .await;
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (403, "INVALID_API_KEY"),
            "{body}"
        );
    }
    // 5.2 account operations with a key: missing or unknown is 401 UNAUTHORIZED.
    for path in ["/v1/me", "/v1/credits/balance"] {
        for headers in [
            vec![],
            vec![("x-api-key", unknown)],
            vec![("x-session", session.as_str())],
        ] {
            let (st, body) = env.get(path, &headers).await;
            assert_eq!(
                (st.as_u16(), error_type(&body)),
                (401, "UNAUTHORIZED"),
                "{path}: {body}"
            );
        }
    }
    // 5.3 key management and sign-out never accept x-api-key; unknown sessions are 401.
    for headers in [
        vec![("x-api-key", key.as_str())],
        vec![],
        vec![("x-session", "ss_sess_unknown")],
    ] {
        let (st, body) = env.get("/v1/keys", &headers).await;
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (401, "UNAUTHORIZED"),
            "{body}"
        );
        let (st, body) = env.post("/v1/keys", &headers, json!({})).await;
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (401, "UNAUTHORIZED"),
            "{body}"
        );
        let (st, body) = env.post("/v1/auth/signout", &headers, json!({})).await;
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (401, "UNAUTHORIZED"),
            "{body}"
        );
    }
    // Admin routes: the owner key or 401.
    for headers in [
        vec![],
        vec![("x-owner-key", "wrong")],
        vec![("x-api-key", key.as_str())],
    ] {
        let (st, body) = env
            .get("/v1/admin/account?email=rules@example.com", &headers)
            .await;
        assert_eq!(
            (st.as_u16(), error_type(&body)),
            (401, "UNAUTHORIZED"),
            "{body}"
        );
    }
    env.finish(&[&key, &session]).await;
}

async fn me_and_balance(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let (session, key) = env.account_with_key("me@example.com").await;
    let (st, ok) = env.search(&key).await;
    assert_eq!(st, 200, "{ok}");
    assert_eq!(
        (
            ok["credits_used"].as_i64(),
            ok["credits_remaining"].as_i64()
        ),
        (Some(1), Some(49))
    );
    let (st, bad) = env
        .get(
            "/v1/techforum/search?query=x&limit=0",
            &[("x-api-key", &key)],
        )
        .await;
    assert_eq!(st, 422, "{bad}");
    let (st, body) = env.get("/v1/credits/balance", &[("x-api-key", &key)]).await;
    assert_eq!(
        (st.as_u16(), body.clone()),
        (200, json!({ "ok": true, "balance": 49 }))
    );
    let (st, me) = env.get("/v1/me", &[("x-api-key", &key)]).await;
    assert_eq!(st, 200, "{me}");
    assert_schema("Me", &me);
    assert_eq!(me["balance"], 49);
    assert_eq!(me["email"], "me@example.com");
    assert_eq!(
        me["usage_7d"],
        json!([{ "endpoint": "/v1/techforum/search", "calls": 2, "credits": 1, "errors": 1 }])
    );
    let recent = me["recent_calls"].as_array().unwrap();
    assert_eq!(recent.len(), 2);
    let ids: Vec<&str> = recent
        .iter()
        .map(|c| c["request_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&ok["request_id"].as_str().unwrap()));
    assert!(ids.contains(&bad["request_id"].as_str().unwrap()));
    assert!(recent.iter().all(|c| c["key_prefix"] == key[..12]));
    assert!(!me.to_string().contains(&key), "/v1/me never shows a key");
    env.finish(&[&key, &session]).await;
}

async fn admin_routes_and_commands(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    // Commands on the database directly.
    let created = admin(
        &env.db,
        &[
            "create-account",
            "--email",
            "ops@example.com",
            "--credits",
            "7",
        ],
    );
    let created: serde_json::Value = serde_json::from_str(&created).expect("json");
    assert_eq!(
        (created["balance"].as_i64(), created["created"].as_bool()),
        (Some(7), Some(true))
    );
    let granted: serde_json::Value = serde_json::from_str(&admin(
        &env.db,
        &["grant", "--email", "ops@example.com", "--credits", "5"],
    ))
    .unwrap();
    assert_eq!(granted["balance"], 12);
    let key = admin(
        &env.db,
        &["create-key", "--email", "ops@example.com", "--name", "cli"],
    );
    let key = key.trim().to_string();
    assert!(
        key.starts_with("ss_live_") && !key.contains('\n'),
        "only the key is printed: {key}"
    );
    assert_eq!(env.balance(&key).await, 12);
    let view: serde_json::Value =
        serde_json::from_str(&admin(&env.db, &["account", "--email", "ops@example.com"])).unwrap();
    assert_eq!(view["balance"], 12);
    assert_eq!(view["keys"][0]["prefix"], key[..12]);
    assert!(!view.to_string().contains(&key));
    // create-key makes the account when needed, with the sign-up credits.
    let other = admin(&env.db, &["create-key", "--email", "new@example.com"]);
    assert_eq!(env.balance(other.trim()).await, 50);

    // HTTP routes with the owner key.
    let o = [("x-owner-key", OWNER_KEY)];
    let (st, body) = env
        .post(
            "/v1/admin/grant",
            &o,
            json!({ "email": "ops@example.com", "credits": "3" }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    assert_schema("AdminGranted", &body);
    assert_eq!(body["balance"], 15);
    let (st, body) = env.get("/v1/admin/account?email=ops@example.com", &o).await;
    assert_eq!(st, 200, "{body}");
    assert_schema("AdminAccount", &body);
    assert_eq!(body["balance"], 15);
    let (st, body) = env
        .get("/v1/admin/account?email=none@example.com", &o)
        .await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (404, "NOT_FOUND"),
        "{body}"
    );
    let (st, body) = env
        .post(
            "/v1/admin/grant",
            &o,
            json!({ "email": "ops@example.com", "credits": "0" }),
        )
        .await;
    assert_eq!(st, 422, "{body}");
    env.finish(&[&key, other.trim()]).await;
}

/// Every request body the OpenAPI document declares, built from each operation's schema (every enum
/// value, an integer's minimum and maximum, with and without the optional fields, each body checked
/// against the schema first), sent with the credential the operation declares: none is refused as
/// malformed (no 422, no 400 BAD_REQUEST). A documented integer is sent as a JSON integer.
async fn documented_bodies_are_accepted(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let email = "documented@example.com";
    let (session, key) = env.account_with_key(email).await;
    let doc: serde_json::Value = serde_json::from_str(server::api::OPENAPI_JSON).expect("openapi");
    let schemes = &doc["components"]["securitySchemes"];
    let mut sent = 0;
    for (path, ops) in doc["paths"].as_object().expect("paths") {
        for (method, op) in ops.as_object().expect("operations") {
            let Some(schema) = op["requestBody"]["content"]["application/json"]["schema"]
                .as_object()
                .map(|s| serde_json::Value::Object(s.clone()))
            else {
                continue;
            };
            assert_eq!(method, "post", "{path}: bodies are sent with POST");
            // Path parameters: the document's own example.
            let mut url = path.clone();
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "path" {
                    let example = p["example"].as_str().expect("a path parameter example");
                    url = url.replace(&format!("{{{}}}", p["name"].as_str().unwrap()), example);
                }
            }
            // The credential the operation declares (its first scheme).
            let header: Option<(String, String)> = op["security"]
                .as_array()
                .and_then(|list| list.first())
                .and_then(|s| s.as_object())
                .and_then(|s| s.keys().next().cloned())
                .map(|scheme| {
                    let name = schemes[&scheme]["name"]
                        .as_str()
                        .expect("header")
                        .to_string();
                    let value = match scheme.as_str() {
                        "ApiKey" => key.clone(),
                        "Session" => session.clone(),
                        "OwnerKey" => OWNER_KEY.to_string(),
                        other => panic!("{path}: unknown scheme {other}"),
                    };
                    (name, value)
                });
            for body in documented_bodies(&env, &key, email, &schema).await {
                let validator = jsonschema::validator_for(&schema).expect("body schema");
                assert!(
                    validator.is_valid(&body),
                    "{path}: the test built a body its schema refuses: {body}"
                );
                let headers: Vec<(&str, &str)> = header
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let (st, answer) = env.post(&url, &headers, body.clone()).await;
                assert!(
                    st != 422 && !matches!(error_type(&answer), "BAD_REQUEST" | "VALIDATION_ERROR"),
                    "{path} refused its documented body {body}: {st} {answer}"
                );
                sent += 1;
            }
        }
    }
    assert!(sent >= 9, "every documented body was sent ({sent})");
    env.finish(&[&session, &key]).await;
}

/// The bodies of one schema: every property at its first value, each further value of a property in
/// a body of its own, and the required properties alone.
async fn documented_bodies(
    env: &Env,
    key: &str,
    email: &str,
    schema: &serde_json::Value,
) -> Vec<serde_json::Value> {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str())
        .collect();
    let mut values: Vec<(String, Vec<serde_json::Value>)> = Vec::new();
    for (name, p) in &props {
        values.push((
            name.clone(),
            documented_values(env, key, email, name, p).await,
        ));
    }
    let first = |only_required: bool| {
        let mut body = serde_json::Map::new();
        for (name, vs) in &values {
            if !only_required || required.contains(&name.as_str()) {
                body.insert(name.clone(), vs[0].clone());
            }
        }
        serde_json::Value::Object(body)
    };
    let mut bodies = vec![first(false)];
    for (name, vs) in &values {
        for v in &vs[1..] {
            let mut body = first(false);
            body[name.as_str()] = v.clone();
            bodies.push(body);
        }
    }
    if required.len() < props.len() {
        bodies.push(first(true));
    }
    bodies
}

/// Values of one property: from its schema (enum values, an integer's bounds), or, for the fields that
/// must name something real, a live one (an account's address, its pending code, a fresh link).
async fn documented_values(
    env: &Env,
    key: &str,
    email: &str,
    name: &str,
    p: &serde_json::Value,
) -> Vec<serde_json::Value> {
    if let Some(values) = p["enum"].as_array() {
        return values.clone();
    }
    if p["type"] == "integer" {
        return vec![p["minimum"].clone(), p["maximum"].clone()];
    }
    if p["type"] == "boolean" {
        return vec![json!(true), json!(false)];
    }
    let live = match name {
        "email" => email.to_string(),
        "otp" => env.request_code(email).await,
        "link" => {
            let (st, body) = env
                .post("/v1/auth/browser-link", &[("x-api-key", key)], json!({}))
                .await;
            assert_eq!(st, 200, "{body}");
            let url = body["dashboard_url"].as_str().expect("url");
            url.split("#login=").nth(1).expect("token").to_string()
        }
        _ => {
            let min = p["minLength"].as_u64().unwrap_or(1) as usize;
            let sample = "documented";
            sample.repeat(min.div_ceil(sample.len()).max(1))
        }
    };
    vec![json!(live)]
}

/// A stranger's wrong guesses lock the code, not the address: after the cooldown the owner of the
/// address gets a fresh code and signs in.
async fn fresh_code_after_a_strangers_guesses(b: Backend) {
    let opts = Options {
        signin: "cooldown_seconds = 1\n".into(),
        ..Options::default()
    };
    let Some(env) = Env::start(b, opts).await else {
        return;
    };
    let victim = "victim@example.com";
    let code = env.request_code(victim).await;
    let wrong = if code == "000000" { "000001" } else { "000000" };
    for left in (0..5).rev() {
        let (st, body) = env
            .post(
                "/v1/auth/verify",
                &[],
                json!({ "email": victim, "otp": wrong }),
            )
            .await;
        assert_eq!(
            (
                st.as_u16(),
                error_type(&body),
                body["error"]["attempts_left"].as_i64()
            ),
            (400, "INVALID_CODE", Some(left)),
            "{body}"
        );
    }
    let (st, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": victim, "otp": code }),
        )
        .await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (400, "TOO_MANY_ATTEMPTS"),
        "the burned code stays locked: {body}"
    );
    // The cooldown (1 s, whole seconds) passes; then the owner asks again and gets in.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let fresh = env.request_code(victim).await;
    let (st, body) = env
        .post(
            "/v1/auth/verify",
            &[],
            json!({ "email": victim, "otp": fresh }),
        )
        .await;
    assert_eq!(st, 200, "{body}");
    assert_schema("SignedIn", &body);
    env.finish(&[]).await;
}

/// A session opened by browser-link ends when the key that asked for the link is revoked or rotated
/// away; its unopened links open nothing; sessions of other keys go on.
async fn link_sessions_end_with_their_key(b: Backend) {
    let Some(env) = Env::start(b, Options::default()).await else {
        return;
    };
    let (otp, key_a) = env.account_with_key("ends@example.com").await;
    let key_b = env.create_key(&otp, "b").await;
    let o = [("x-session", otp.as_str())];
    let (_, list) = env.get("/v1/keys", &o).await;
    let id_of = |key: &str| {
        list["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| key.starts_with(k["prefix"].as_str().unwrap()))
            .and_then(|k| k["id"].as_str())
            .unwrap()
            .to_string()
    };
    let (kid_a, kid_b) = (id_of(&key_a), id_of(&key_b));
    let link = |key: String| {
        let env = &env;
        async move {
            let (st, body) = env
                .post("/v1/auth/browser-link", &[("x-api-key", &key)], json!({}))
                .await;
            assert_eq!(st, 200, "{body}");
            body["dashboard_url"].as_str().unwrap().to_string()
        }
    };
    let (session_a, _) = env.open_session(&link(key_a.clone()).await).await;
    let unopened_a = link(key_a.clone()).await;
    let (session_b, _) = env.open_session(&link(key_b.clone()).await).await;
    let works = |session: String| {
        let env = &env;
        async move { env.get("/v1/keys", &[("x-session", &session)]).await }
    };
    assert_eq!(works(session_a.clone()).await.0, 200);
    assert_eq!(works(session_b.clone()).await.0, 200);

    // Revoke key A: its session ends at once, its unopened link opens nothing; B's session goes on.
    let (st, body) = env.delete(&format!("/v1/keys/{kid_a}"), &o).await;
    assert_eq!(st, 200, "{body}");
    let (st, body) = works(session_a.clone()).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "revoked key: {body}"
    );
    let token = unopened_a.split("#login=").nth(1).unwrap();
    let (st, body) = env
        .post("/v1/auth/session", &[], json!({ "link": token }))
        .await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "link of a revoked key: {body}"
    );
    assert_eq!(works(session_b.clone()).await.0, 200);

    // Rotate key B away: its session ends too; a link of the new key works.
    let (st, rotated) = env
        .post(&format!("/v1/keys/{kid_b}/rotate"), &o, json!({}))
        .await;
    assert_eq!(st, 200, "{rotated}");
    let (st, body) = works(session_b.clone()).await;
    assert_eq!(
        (st.as_u16(), error_type(&body)),
        (401, "UNAUTHORIZED"),
        "rotated-away key: {body}"
    );
    let new_key = rotated["key"].as_str().unwrap().to_string();
    let (session_new, _) = env.open_session(&link(new_key.clone()).await).await;
    assert_eq!(works(session_new.clone()).await.0, 200);
    // The e-mailed-code session belongs to no key and goes on.
    assert_eq!(works(otp.clone()).await.0, 200);
    env.finish(&[
        &otp,
        &key_a,
        &key_b,
        &new_key,
        &session_a,
        &session_b,
        &session_new,
    ])
    .await;
}
