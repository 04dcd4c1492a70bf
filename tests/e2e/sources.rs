//! Paid calls end to end, one scenario per platform that has sources: the real `socialsearch serve`,
//! a real key, and every source pointed at the fake upstream serving the recorded answers of
//! `tests/fixtures/` (every other source disabled, so no request leaves this machine).
//!
//! Each scenario checks the success envelope of spec 2.1 and the items of 2.2 against the catalogue,
//! that prices come from the catalogue, that failures cost nothing, and the books at the end.

use adapters::api::EndpointId;
use reqwest::StatusCode;
use serde_json::Value;

use crate::accounts_support::{
    Backend, Env, Options, SourceAt, assert_schema, at, error_type, only_sources,
};
use crate::fake_upstream::{FakeUpstream, Route, Seen};
use crate::on_both_databases;

on_both_databases!(
    techforum_search,
    decentral_search_pages,
    fediverse_tag_and_the_instance_guard,
    code_repo_and_not_found,
    news_search_and_all_sources_failing,
    forum_community_posts_pages_and_refusals,
    status_follows_the_configured_sources,
);

const EMAIL: &str = "sources@example.com";

/// One answer: status, the `x-request-id` header and the body.
struct Reply {
    status: StatusCode,
    request_id: String,
    body: Value,
}

/// A scenario's world: the server with only `tables` enabled, an account with 50 credits and a key.
async fn world(
    b: Backend,
    up: FakeUpstream,
    top: &str,
    tables: &[SourceAt],
) -> Option<(Env, String, String)> {
    let opts = Options {
        extra: only_sources(top, tables),
        ..Options::default()
    };
    // The harness always sets techforum.algolia's base URL; the prefix is the one its fixtures use.
    let algolia = up.url("/api/v1");
    let env = Env::start_with(b, opts, algolia, up).await?;
    let (session, key) = env.account_with_key(EMAIL).await;
    Some((env, session, key))
}

async fn call(env: &Env, key: &str, path_and_query: &str) -> Reply {
    let res = env
        .http
        .get(env.url(path_and_query))
        .header("x-api-key", key)
        .send()
        .await
        .expect("request");
    let request_id = res
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .expect("an x-request-id header")
        .to_string();
    let (status, body) = crate::accounts_support::read(res).await;
    Reply {
        status,
        request_id,
        body,
    }
}

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v
        .as_object()
        .unwrap_or_else(|| panic!("an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect();
    k.sort_unstable();
    k
}

/// The success envelope of spec 2.1, with items of 2.2, charged at the endpoint's catalogue price and
/// showing the balance GET /v1/credits/balance reads afterwards. Returns the body.
async fn assert_paid(env: &Env, key: &str, endpoint: EndpointId, reply: &Reply) -> Value {
    let meta = endpoint.meta();
    let b = &reply.body;
    assert_eq!(reply.status, 200, "{b}");
    assert_schema("SuccessEnvelope", b);
    assert_eq!(
        keys(b),
        [
            "credits_remaining",
            "credits_used",
            "data",
            "platform",
            "request_id",
            "success"
        ],
        "{b}"
    );
    assert_eq!(b["success"], true);
    let segment = meta.path.split('/').nth(2).expect("a platform segment");
    assert_eq!(b["platform"], segment);
    assert_eq!(segment, meta.platform);
    assert_eq!(keys(&b["data"]), ["items", "next_cursor", "total"], "{b}");
    assert!(b["data"]["total"].is_u64(), "total is an integer: {b}");
    assert!(
        b["data"]["next_cursor"].is_string() || b["data"]["next_cursor"].is_null(),
        "{b}"
    );
    let items = b["data"]["items"].as_array().expect("items");
    assert!(!items.is_empty(), "the fixture has items: {b}");
    for item in items {
        assert_schema("Item", item);
        assert_eq!(
            keys(item),
            [
                "author",
                "author_name",
                "created_at",
                "extra",
                "id",
                "metrics",
                "platform",
                "text",
                "title",
                "type",
                "url"
            ]
        );
        assert_eq!(item["platform"], segment);
    }
    assert_eq!(b["credits_used"].as_u64(), Some(u64::from(meta.credits)));
    assert_eq!(
        b["credits_remaining"].as_i64(),
        Some(env.balance(key).await),
        "credits_remaining is the balance after the call"
    );
    let rid = b["request_id"].as_str().expect("request_id");
    assert!(rid.starts_with("req-"), "{rid}");
    assert_eq!(
        rid, reply.request_id,
        "request_id is the x-request-id header"
    );
    b.clone()
}

/// An error envelope of spec 2.3 with nothing charged.
fn assert_failed(reply: &Reply, status: u16, kind: &str, path: &str) {
    let b = &reply.body;
    assert_eq!(
        (reply.status.as_u16(), error_type(b)),
        (status, kind),
        "{b}"
    );
    assert_schema("ErrorEnvelope", b);
    assert_eq!(b["success"], false);
    assert_eq!(b["credits_used"], 0, "a failure is never charged: {b}");
    assert_eq!(b["endpoint"], path, "{b}");
    assert_eq!(b["request_id"], reply.request_id.as_str());
}

/// A 422 naming `parameter` (with `rule`, when given).
fn assert_names(reply: &Reply, parameter: &str, rule: Option<&str>, path: &str) {
    assert_failed(reply, 422, "VALIDATION_ERROR", path);
    let b = &reply.body;
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains(parameter),
        "{b}"
    );
    let v = &b["error"]["violations"][0];
    assert_eq!(v["parameter"], parameter, "{b}");
    if let Some(rule) = rule {
        assert_eq!(v["rule"], rule, "{b}");
    }
}

fn has_query(s: &Seen, key: &str, value: &str) -> bool {
    s.query.iter().any(|(k, v)| k == key && v == value)
}

async fn techforum_search(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v1/search")
            .query("tags", "story")
            .query("query", "dropbox")
            .file("techforum/algolia/search_story.json"),
    );
    let algolia = at("techforum.algolia", up.url("/api/v1"));
    let Some((env, session, key)) = world(b, up, "", &[algolia]).await else {
        return;
    };
    let reply = call(&env, &key, "/v1/techforum/search?query=dropbox&limit=3").await;
    let body = assert_paid(&env, &key, EndpointId::TechforumSearch, &reply).await;
    assert_eq!(body["data"]["total"], 4213);
    assert_eq!(body["data"]["items"][0]["id"], "8863");
    assert_eq!(
        body["data"]["next_cursor"],
        Value::Null,
        "search has no cursor"
    );
    let price = i64::from(EndpointId::TechforumSearch.meta().credits);
    assert_eq!(env.balance(&key).await, 50 - price);
    assert_eq!(env.charged().await, price);
    assert_eq!(env.up.seen().len(), 1);
    env.finish(&[&key, &session]).await;
}

async fn decentral_search_pages(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/xrpc/app.bsky.feed.searchPosts")
            .query("cursor", "25")
            .file("decentral/appview/searchPosts_page2.json"),
    );
    up.route(
        Route::get("/xrpc/app.bsky.feed.searchPosts")
            .query("q", "rust")
            .file("decentral/appview/searchPosts_page1.json"),
    );
    let appview = at("decentral.appview", up.url(""));
    let Some((env, session, key)) = world(b, up, "", &[appview]).await else {
        return;
    };
    let price = i64::from(EndpointId::DecentralSearch.meta().credits);
    let first = call(&env, &key, "/v1/decentral/search?query=rust&limit=2").await;
    let first = assert_paid(&env, &key, EndpointId::DecentralSearch, &first).await;
    assert_eq!(first["data"]["total"], 1432);
    let cursor = first["data"]["next_cursor"]
        .as_str()
        .expect("page 1 has a next page")
        .to_string();
    assert_ne!(
        cursor, "25",
        "the cursor is the service's, not the upstream's"
    );
    let second = call(
        &env,
        &key,
        &format!("/v1/decentral/search?query=rust&limit=2&cursor={cursor}"),
    )
    .await;
    let second = assert_paid(&env, &key, EndpointId::DecentralSearch, &second).await;
    assert_eq!(second["data"]["next_cursor"], Value::Null, "the last page");
    assert_ne!(
        first["data"]["items"][0]["id"],
        second["data"]["items"][0]["id"]
    );
    let seen = env.up.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(!seen[0].query.iter().any(|(k, _)| k == "cursor"));
    assert!(
        has_query(&seen[1], "cursor", "25"),
        "the upstream got its own cursor back: {seen:?}"
    );
    // Each page charged once.
    assert_eq!(env.balance(&key).await, 50 - 2 * price);
    assert_eq!(env.charged().await, 2 * price);

    // Forged cursors: not one this service issued, or one of another platform's source.
    // `other`: the unsigned format cursors had before they were sealed (another source's state).
    let other = "Zm9ydW0ucmVkZGl0X2pzb24KdDNfMWFiYzJkZg";
    for forged in ["not-a-cursor", "AAAA", other] {
        let reply = call(
            &env,
            &key,
            &format!("/v1/decentral/search?query=rust&cursor={forged}"),
        )
        .await;
        assert_names(&reply, "cursor", None, "/v1/decentral/search");
    }
    assert_eq!(
        env.up.seen().len(),
        2,
        "a forged cursor reaches no upstream"
    );
    assert_eq!(env.balance(&key).await, 50 - 2 * price);
    env.finish(&[&key, &session]).await;
}

async fn fediverse_tag_and_the_instance_guard(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v1/timelines/tag/rust")
            .query("limit", "3")
            .file("fediverse/mastodon/tag_rust.json"),
    );
    let port = up.url("").rsplit(':').next().expect("port").to_string();
    // `evil.test` resolves to loopback, and client-named hosts are reached over http on the fake
    // upstream's port: were the guard to let it through, the fake upstream would see the request.
    let top =
        "allow_private_hosts = false\n[sources.host_overrides]\n\"evil.test\" = [\"127.0.0.1\"]";
    let mastodon = at("fediverse.mastodon", up.url(""))
        .with("instance_scheme = \"http\"")
        .with(&format!("instance_port = {port}"));
    let Some((env, session, key)) = world(b, up, top, &[mastodon]).await else {
        return;
    };
    let price = i64::from(EndpointId::FediverseTag.meta().credits);
    let reply = call(&env, &key, "/v1/fediverse/tag?query=rust&limit=3").await;
    let body = assert_paid(&env, &key, EndpointId::FediverseTag, &reply).await;
    let items = body["data"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert!(
        items[0]["id"]
            .as_str()
            .unwrap()
            .ends_with(":113301234567890123"),
        "{body}"
    );
    assert_eq!(env.up.seen().len(), 1);

    // A host resolving to loopback: refused before anything is sent, and free.
    let reply = call(
        &env,
        &key,
        "/v1/fediverse/tag?query=rust&limit=3&instance=evil.test",
    )
    .await;
    assert_names(&reply, "instance", Some("refused"), "/v1/fediverse/tag");
    assert_eq!(env.up.seen().len(), 1, "the fake upstream saw nothing more");
    // Search needs the instance token, which this deployment lacks.
    let reply = call(&env, &key, "/v1/fediverse/search?query=ferris").await;
    assert_failed(&reply, 501, "NOT_CONFIGURED", "/v1/fediverse/search");
    assert_eq!(env.up.seen().len(), 1);
    assert_eq!(env.balance(&key).await, 50 - price);
    assert_eq!(env.charged().await, price);
    env.finish(&[&key, &session]).await;
}

async fn code_repo_and_not_found(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gh/repos/rust-lang/rust").file("code/github/repo.json"));
    up.route(
        Route::get("/gh/users/nobody")
            .status(404)
            .body(r#"{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}"#),
    );
    let github = at("code.github", up.url("/gh"));
    let Some((env, session, key)) = world(b, up, "", &[github]).await else {
        return;
    };
    let price = i64::from(EndpointId::CodeRepo.meta().credits);
    let reply = call(&env, &key, "/v1/code/repo?id=rust-lang/rust").await;
    let body = assert_paid(&env, &key, EndpointId::CodeRepo, &reply).await;
    assert_eq!(body["data"]["items"][0]["id"], "rust-lang/rust");
    assert_eq!(body["data"]["items"][0]["type"], "repository");

    // The upstream says "not found": 424 UPSTREAM_ERROR, free.
    let reply = call(&env, &key, "/v1/code/profile?handle=nobody").await;
    assert_failed(&reply, 424, "UPSTREAM_ERROR", "/v1/code/profile");
    assert_eq!(env.up.seen().len(), 2, "not found ends the chain at once");
    assert_eq!(env.balance(&key).await, 50 - price);
    assert_eq!(env.charged().await, price);
    env.finish(&[&key, &session]).await;
}

async fn news_search_and_all_sources_failing(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/gn/rss/search")
            .query("q", "rust language")
            .file("news/google_news/search_rust.xml"),
    );
    up.route(Route::get("/gn/rss/search").status(500).body("boom"));
    up.route(Route::get("/gdelt/api/v2/doc/doc").status(500).body("boom"));
    let sources = [
        at("news.google_news", up.url("/gn")),
        at("news.gdelt", up.url("/gdelt")),
    ];
    let Some((env, session, key)) = world(b, up, "", &sources).await else {
        return;
    };
    let price = i64::from(EndpointId::NewsSearch.meta().credits);
    let reply = call(&env, &key, "/v1/news/search?query=rust+language&limit=3").await;
    let body = assert_paid(&env, &key, EndpointId::NewsSearch, &reply).await;
    assert_eq!(body["data"]["items"].as_array().unwrap().len(), 3);
    assert_eq!(body["data"]["items"][0]["type"], "article");

    // Every source answers 500: 424 ALL_SOURCES_FAILED, free, and both sources were tried.
    let before = env.up.seen().len();
    let reply = call(&env, &key, "/v1/news/search?query=zzzq").await;
    assert_failed(&reply, 424, "ALL_SOURCES_FAILED", "/v1/news/search");
    let tried: Vec<String> = env.up.seen()[before..]
        .iter()
        .map(|s| s.path.clone())
        .collect();
    assert!(
        tried.iter().any(|p| p.starts_with("/gn/"))
            && tried.iter().any(|p| p.starts_with("/gdelt/")),
        "{tried:?}"
    );
    assert_eq!(env.balance(&key).await, 50 - price);
    assert_eq!(env.charged().await, price);
    env.finish(&[&key, &session]).await;
}

async fn forum_community_posts_pages_and_refusals(b: Backend) {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/rd/r/rust/hot.json")
            .query("after", "t3_1abc2df")
            .file("forum/reddit_json/community_hot_p2.json"),
    );
    up.route(Route::get("/rd/r/rust/hot.json").file("forum/reddit_json/community_hot_p1.json"));
    up.route(Route::get("/rd/r/rust/new.json").status(500).body("boom"));
    up.route(Route::get("/as/api/posts/search").status(500).body("boom"));
    let sources = [
        at("forum.reddit_json", up.url("/rd")),
        at("forum.arctic_shift", up.url("/as")),
    ];
    let Some((env, session, key)) = world(b, up, "", &sources).await else {
        return;
    };
    let endpoint = EndpointId::ForumCommunityPosts;
    let price = i64::from(endpoint.meta().credits);
    let path = endpoint.meta().path;

    // Two pages, each from the live listing, each charged once.
    let first = call(
        &env,
        &key,
        &format!("{path}?community=r/rust&sort=hot&limit=2"),
    )
    .await;
    let first = assert_paid(&env, &key, endpoint, &first).await;
    assert_eq!(first["data"]["items"].as_array().unwrap().len(), 2);
    let cursor = first["data"]["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let second = call(
        &env,
        &key,
        &format!("{path}?community=rust&sort=hot&limit=2&cursor={cursor}"),
    )
    .await;
    let second = assert_paid(&env, &key, endpoint, &second).await;
    assert_eq!(second["data"]["items"][0]["id"], "1abc2dg");
    assert_eq!(second["data"]["next_cursor"], Value::Null);
    let seen = env.up.seen();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|s| s.path == "/rd/r/rust/hot.json"));
    assert!(has_query(&seen[1], "after", "t3_1abc2df"), "{seen:?}");
    assert_eq!(env.balance(&key).await, 50 - 2 * price);

    // Another order with a date bound: refused before any upstream is asked, free.
    let reply = call(
        &env,
        &key,
        &format!("{path}?community=rust&sort=top&after=7d"),
    )
    .await;
    assert_names(&reply, "after", Some("requires"), path);
    assert_eq!(env.up.seen().len(), 2, "the fake upstream saw nothing");

    // Both sources answer 500 (the archive, then the live listing): 424, free.
    let reply = call(&env, &key, &format!("{path}?community=rust")).await;
    assert_failed(&reply, 424, "ALL_SOURCES_FAILED", path);
    let tried: Vec<String> = env.up.seen()[2..].iter().map(|s| s.path.clone()).collect();
    assert_eq!(tried, ["/as/api/posts/search", "/rd/r/rust/new.json"]);

    // An endpoint without a source: 501, free, nothing sent.
    let reply = call(
        &env,
        &key,
        "/v1/forum/post/transcript?url=https://www.reddit.com/r/rust/comments/1abc2de/slug/",
    )
    .await;
    assert_failed(&reply, 501, "NOT_CONFIGURED", "/v1/forum/post/transcript");
    assert_eq!(env.up.seen().len(), 4);

    assert_eq!(env.balance(&key).await, 50 - 2 * price);
    assert_eq!(env.charged().await, 2 * price);
    env.finish(&[&key, &session]).await;
}

async fn status_follows_the_configured_sources(b: Backend) {
    let up = FakeUpstream::start().await;
    let sources = [
        at("techforum.algolia", up.url("/api/v1")),
        at("techforum.firebase", up.url("/fb/v0")),
        at("decentral.appview", up.url("")),
        at("fediverse.mastodon", up.url("")),
        at("code.github", up.url("/gh")),
        at("news.google_news", up.url("/gn")),
        at("news.gdelt", up.url("/gdelt")),
        at("forum.arctic_shift", up.url("/as")),
        at("forum.reddit_json", up.url("/rd")),
    ];
    let enabled: Vec<&str> = vec![
        "techforum.algolia",
        "techforum.firebase",
        "decentral.appview",
        "fediverse.mastodon",
        "code.github",
        "news.google_news",
        "news.gdelt",
        "forum.arctic_shift",
        "forum.reddit_json",
    ];
    let Some((env, session, _key)) = world(b, up, "", &sources).await else {
        return;
    };
    let (st, body) = env.get("/v1/status", &[]).await;
    assert_eq!(st, 200, "{body}");
    assert_schema("Status", &body);
    let platforms = body["platforms"].as_array().expect("platforms");
    let all = adapters::platforms::all();
    let mut names: Vec<&str> = Vec::new();
    for p in platforms {
        let name = p["platform"].as_str().unwrap();
        names.push(name);
        let endpoints: Vec<EndpointId> = EndpointId::ALL
            .into_iter()
            .filter(|e| e.meta().platform == name)
            .collect();
        assert_eq!(p["endpoints"].as_u64(), Some(endpoints.len() as u64));
        // Served: an enabled source lists the endpoint and needs no credential for it (none is set).
        let served = endpoints
            .iter()
            .filter(|e| {
                all.iter().any(|s| {
                    enabled.contains(&s.meta().id)
                        && !s.meta().needs_credential
                        && s.meta().endpoints.contains(e)
                        && !s.needs_credential_for(**e)
                })
            })
            .count();
        let expected = match served {
            0 => "not_configured",
            n if n == endpoints.len() => "ok",
            _ => "degraded",
        };
        assert_eq!(p["status"], expected, "{name}: {p}");
        let listed: Vec<&str> = p["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = enabled
            .iter()
            .copied()
            .filter(|id| id.split('.').next() == Some(name))
            .collect();
        let mut got = listed.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "{name}: the enabled sources are listed");
        assert!(
            p["sources"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["state"] == "closed"),
            "{p}"
        );
    }
    // What the table above computes, for this configuration.
    let status_of = |n: &str| {
        platforms
            .iter()
            .find(|p| p["platform"] == n)
            .map(|p| p["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    for (platform, status) in [
        ("techforum", "ok"),
        ("decentral", "ok"),
        ("code", "ok"),
        ("news", "ok"),
        ("fediverse", "degraded"),
        ("forum", "degraded"),
        ("microblog", "not_configured"),
        ("video", "not_configured"),
        ("web", "not_configured"),
        ("photo", "not_configured"),
    ] {
        assert_eq!(status_of(platform), status, "{platform}");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 12, "twelve platforms: {names:?}");
    assert_eq!(body["status"], "degraded");
    assert_eq!(
        body["endpoint_count"].as_u64(),
        Some(EndpointId::ALL.len() as u64)
    );
    assert!(env.up.seen().is_empty(), "status asks no upstream");
    env.finish(&[&session]).await;
}
