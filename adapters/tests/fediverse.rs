//! fediverse (Mastodon REST of the chosen instance) against recorded upstream answers, and the
//! SSRF guard on the client-named `instance`.

mod support;

use adapters::api::{EndpointId, Request, fediverse};
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{
    FakeUpstream, Route, assert_items_valid, at, call, has_query, header, item, sources_with,
};

fn port(up: &FakeUpstream) -> u16 {
    up.url("")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port")
}

/// The default instance is the fake upstream; client-named instances are reached on its port
/// over http. `private` turns the SSRF guard's test switch on.
fn sources_at(up: &FakeUpstream, private: bool, token: Option<&str>) -> Sources {
    let top = format!(
        "allow_private_hosts = {private}\n\
         [host_overrides]\n\"mastodon.test\" = [\"127.0.0.1\"]\n\"evil.test\" = [\"127.0.0.1\"]\n\
         \"meta.test\" = [\"169.254.169.254\"]\n\"mapped.test\" = [\"::ffff:127.0.0.1\"]\n\"lan.test\" = [\"10.0.0.1\", \"93.184.215.14\"]"
    );
    sources_with(
        &top,
        &[at("fediverse.mastodon", up.url(""))
            .with("instance_scheme = \"http\"")
            .with(&format!("instance_port = {}", port(up)))
            .credential(token)],
    )
}

#[tokio::test]
async fn tag_timeline_maps_statuses() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v1/timelines/tag/rust")
            .query("limit", "3")
            .file("fediverse/mastodon/tag_rust.json"),
    );
    up.route(
        Route::get("/api/v1/timelines/tag/%E6%97%A5%E6%9C%AC%E8%AA%9E")
            .file("fediverse/mastodon/tag_empty.json"),
    );
    let sources = sources_at(&up, true, None);

    let page = call(
        &sources,
        EndpointId::FediverseTag,
        "query=rust&limit=3&instance=mastodon.test",
    )
    .await
    .expect("tag timeline");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3, "the status without an id is skipped");
    let a = item(&page, 0);
    assert_eq!(a["id"], "mastodon.test:113301234567890123");
    assert_eq!(a["type"], "post");
    assert_eq!(
        a["text"],
        "Learning #rust & loving it <3\nÜnïcode — “quotes” 🦀"
    );
    assert_eq!(
        a["url"],
        "https://mastodon.social/@alice/113301234567890123"
    );
    assert_eq!(
        a["author"], "alice@mastodon.test",
        "local accounts get the instance host"
    );
    assert_eq!(a["author_name"], "Alice :rustacean:");
    assert_eq!(a["created_at"], "2024-10-15T16:04:05Z");
    assert_eq!(
        a["metrics"],
        json!({ "comments": 2, "likes": 17, "reposts": 5 })
    );
    assert_eq!(
        a["extra"]["uri"],
        "https://mastodon.social/users/alice/statuses/113301234567890123"
    );
    assert_eq!(a["extra"]["language"], "en");
    assert_eq!(a["extra"]["sensitive"], false);
    assert!(
        a["extra"].get("spoiler_text").is_none(),
        "an empty content warning is left out"
    );

    let b = item(&page, 1);
    assert_eq!(b["type"], "comment");
    assert_eq!(b["author"], "bob@fosstodon.org");
    assert_eq!(b["author_name"], Value::Null);
    assert_eq!(b["text"], "It's fine.\nReally.");
    assert_eq!(
        b["url"], "https://fosstodon.org/users/bob/statuses/999",
        "uri when url is null"
    );
    assert_eq!(b["extra"]["spoiler_text"], "borrow checker rant");
    assert_eq!(b["extra"]["edited_at"], "2024-10-15T17:05:00Z");
    assert_eq!(b["metrics"]["quotes"], 1);

    let boost = item(&page, 2);
    assert_eq!(
        boost["id"], "mastodon.test:113300000000000001",
        "a boost is the original status"
    );
    assert_eq!(boost["author"], "dave@chaos.social");
    assert_eq!(boost["text"], "Grüße aus #rust");
    assert_eq!(boost["extra"]["reblogged_by"], "carol@mastodon.test");

    let empty = call(
        &sources,
        EndpointId::FediverseTag,
        "query=日本語&instance=mastodon.test",
    )
    .await
    .expect("empty timeline");
    assert!(empty.items.is_empty());
    assert_eq!(empty.total, Some(0));
    let seen = up.seen();
    assert_eq!(
        header(&seen[0], "host").as_deref(),
        Some(format!("mastodon.test:{}", port(&up)).as_str())
    );
    assert!(
        seen.iter()
            .all(|s| s.headers.get("authorization").is_none()),
        "no token on the tag timeline"
    );
}

#[tokio::test]
async fn search_needs_the_instance_token() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/api/v2/search")
            .query("q", "ferris")
            .query("type", "statuses")
            .query("resolve", "false")
            .file("fediverse/mastodon/search_statuses.json"),
    );
    let request = EndpointId::FediverseSearch
        .parse("query=ferris&limit=5")
        .unwrap();

    let without = sources_at(&up, true, None).call(&request).await;
    assert!(
        matches!(without, Err(CallError::NotConfigured(_))),
        "{without:?}"
    );
    assert!(up.seen().is_empty());

    let sources = sources_at(&up, true, Some("s3cret"));
    let page = sources
        .call(&request)
        .await
        .expect("search on the default instance");
    assert_items_valid(&page.items);
    assert_eq!(page.items[0].id, "127.0.0.1:113309999999999999");
    assert_eq!(page.items[0].author.as_deref(), Some("erin@127.0.0.1"));
    assert_eq!(
        page.items[0].text.as_deref(),
        Some("Full-text search finds \"ferris\"")
    );
    let seen = up.seen();
    assert_eq!(
        header(&seen[0], "authorization").as_deref(),
        Some("Bearer s3cret")
    );
    assert!(has_query(&seen[0], "limit", "5"));

    // The token belongs to the configured instance and is never sent to another one.
    up.reset();
    let other = call(
        &sources,
        EndpointId::FediverseSearch,
        "query=ferris&instance=mastodon.test",
    )
    .await;
    assert!(
        matches!(other, Err(CallError::NotConfigured(_))),
        "{other:?}"
    );
    assert!(up.seen().is_empty());
}

/// Loopback, private, metadata and mapped addresses, and a local name: never a public host.
const NON_PUBLIC: [&str; 6] = [
    "localhost",
    "127.0.0.1",
    "10.0.0.1",
    "169.254.169.254",
    "[::1]",
    "::ffff:127.0.0.1",
];

#[test]
fn the_grammar_refuses_non_host_instances() {
    let not_hosts = ["mastodon.social:443", "http://mastodon.social", "a..b"];
    for bad in NON_PUBLIC.into_iter().chain(not_hosts) {
        let q = format!(
            "query=rust&instance={}",
            bad.replace(':', "%3A").replace('/', "%2F")
        );
        let err = EndpointId::FediverseTag.parse(&q).expect_err(bad);
        assert_eq!(err.0[0].parameter, "instance", "{bad}");
    }
}

#[tokio::test]
async fn the_guard_refuses_private_hosts_and_sends_nothing() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/api/v1/timelines/tag/rust").file("fediverse/mastodon/tag_rust.json"));
    let sources = sources_at(&up, false, Some("s3cret"));
    // Names that pass the grammar but resolve to loopback, metadata, mapped or private addresses.
    for host in [
        "evil.test",
        "meta.test",
        "mapped.test",
        "lan.test",
        "localhost.localdomain.localhost",
    ] {
        let request = EndpointId::FediverseTag
            .parse(&format!("query=rust&instance={host}"))
            .unwrap();
        let err = sources.call(&request).await.expect_err(host);
        let CallError::Refused { parameter, message } = err else {
            panic!("{host}: {err:?}")
        };
        assert_eq!(parameter, "instance");
        assert!(message.contains("not a public host"), "{message}");
    }
    // Values the grammar would refuse, built directly: the guard refuses them too.
    for host in NON_PUBLIC {
        let request = Request::FediverseTag(fediverse::Tag {
            query: "rust".into(),
            instance: Some(host.into()),
            limit: 20,
        });
        let err = sources.call(&request).await.expect_err(host);
        assert!(matches!(err, CallError::Refused { .. }), "{host}: {err:?}");
    }
    assert!(
        up.seen().is_empty(),
        "no request left the service: {:?}",
        up.seen()
    );
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let up = FakeUpstream::start().await;
    let target = format!("http://localhost:{}/internal/secret", port(&up));
    up.route(
        Route::get("/api/v1/timelines/tag/rust")
            .status(302)
            .header("location", &target),
    );
    up.route(Route::get("/internal/secret").body("[]"));
    let sources = sources_at(&up, true, None);
    let result = call(
        &sources,
        EndpointId::FediverseTag,
        "query=rust&instance=mastodon.test",
    )
    .await;
    assert!(result.is_err(), "{result:?}");
    let paths: Vec<String> = up.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(
        paths,
        ["/api/v1/timelines/tag/rust"],
        "the redirect target was never requested"
    );
}
