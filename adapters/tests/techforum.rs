//! techforum sources against recorded upstream answers.

mod support;

use std::time::Duration;

use adapters::api::EndpointId;
use adapters::sources::{BreakerState, CallError, Sources};
use serde_json::{Value, json};
use support::{
    FakeUpstream, Route, assert_items_valid, at, call, disabled, has_query, header, item, sources,
};

/// Algolia at `/prefix/api/v1` (a base URL with a path prefix must work), Firebase at `/fb/v0`,
/// plus `extra` TOML at the top of the `[sources]` table.
fn sources_with(up: &FakeUpstream, extra: &str) -> Sources {
    support::sources_with(
        extra,
        &[
            at("techforum.algolia", up.url("/prefix/api/v1")).timeout_ms(500),
            at("techforum.firebase", up.url("/fb/v0")),
        ],
    )
}

/// Algolia alone (the Firebase fallback switched off).
fn sources_at(up: &FakeUpstream) -> Sources {
    sources(&[
        at("techforum.algolia", up.url("/prefix/api/v1")),
        disabled("techforum.firebase"),
    ])
}

fn firebase_routes(up: &FakeUpstream) {
    for id in ["8863", "9224", "9272", "8917", "8950", "8884", "121003"] {
        up.route(
            Route::get(&format!("/fb/v0/item/{id}.json"))
                .file(&format!("techforum/firebase/item_{id}.json")),
        );
    }
    up.route(Route::get("/fb/v0/user/pg.json").file("techforum/firebase/user_pg.json"));
}

fn paths(up: &FakeUpstream) -> Vec<String> {
    up.seen().into_iter().map(|s| s.path).collect()
}

fn ids_and_depths(items: &[adapters::item::Item]) -> Vec<(String, Value)> {
    items
        .iter()
        .map(|i| {
            (
                i.id.clone(),
                i.extra.get("depth").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

#[tokio::test]
async fn search_maps_hits_and_pages() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/prefix/api/v1/search")
            .query("tags", "story")
            .query("query", "dropbox")
            .file("techforum/algolia/search_story.json"),
    );
    let sources = sources_at(&up);
    let request = EndpointId::TechforumSearch
        .parse("query=dropbox&limit=3")
        .expect("valid request");
    let page = sources.call(&request).await.expect("page");
    assert_items_valid(&page.items);

    assert_eq!(page.total, Some(4213));
    assert_eq!(page.items.len(), 3);
    let first = item(&page, 0);
    assert_eq!(first["id"], "8863");
    assert_eq!(first["type"], "post");
    assert_eq!(first["created_at"], "2007-04-04T19:16:40Z");
    assert_eq!(
        first["metrics"],
        serde_json::json!({ "score": 111, "comments": 71 })
    );
    assert_eq!(
        first["extra"]["external_url"],
        "http://www.getdropbox.com/u/2/screencast.html"
    );
    assert_eq!(first["url"], "https://news.ycombinator.com/item?id=8863");

    let ask = item(&page, 1);
    assert_eq!(ask["title"], "Ask HN: Rust & Go?");
    assert_eq!(
        ask["text"],
        "Rust & Go: what's your take?\nÜnïcode — “quotes”"
    );
    assert_eq!(
        ask["created_at"], "2008-02-25T22:10:05Z",
        "ISO date used when the unix one is missing"
    );
    assert!(
        ask["extra"].get("external_url").is_none(),
        "a null url is left out of extra"
    );

    let bare = item(&page, 2);
    assert_eq!(
        (
            bare["author"].clone(),
            bare["title"].clone(),
            bare["created_at"].clone()
        ),
        (Value::Null, Value::Null, Value::Null)
    );

    assert_eq!(
        page.next_cursor, None,
        "the endpoint takes no cursor, so none is offered"
    );
    let seen = up.seen();
    assert!(has_query(&seen[0], "hitsPerPage", "3"));
    assert!(
        header(&seen[0], "user-agent")
            .unwrap()
            .starts_with("socialsearch/")
    );
}

#[tokio::test]
async fn upstream_failures_map_to_call_errors() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/prefix/api/v1/items/1")
            .status(404)
            .body(r#"{"error":"not found"}"#),
    );
    up.route(Route::get("/prefix/api/v1/items/2").status(500));
    up.route(Route::get("/prefix/api/v1/items/3").body("<html>garbage"));
    let sources = sources_at(&up);
    let call = |id: &str| {
        let request = EndpointId::TechforumStory
            .parse(&format!("id={id}"))
            .unwrap();
        let sources = &sources;
        async move { sources.call(&request).await }
    };
    assert!(matches!(call("1").await, Err(CallError::Upstream(_))));
    assert!(matches!(
        call("2").await,
        Err(CallError::AllSourcesFailed(_))
    ));
    assert!(matches!(
        call("3").await,
        Err(CallError::AllSourcesFailed(_))
    ));
}

#[tokio::test]
async fn firebase_answers_when_algolia_fails_and_maps_the_thread() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/prefix/api/v1/items/8863").status(500));
    up.route(Route::get("/prefix/api/v1/items/121003").status(502));
    up.route(Route::get("/prefix/api/v1/users/pg").body("<html>garbage</html>"));
    firebase_routes(&up);
    let sources = sources_with(&up, "");

    let story = call(&sources, EndpointId::TechforumStory, "id=8863")
        .await
        .expect("story from firebase");
    assert_items_valid(&story.items);
    let s = item(&story, 0);
    assert_eq!(s["title"], "My YC app: Dropbox - Throw away your USB drive");
    assert_eq!(s["author"], "dhouston");
    assert_eq!(s["created_at"], "2007-04-04T19:16:40Z");
    assert_eq!(s["metrics"], json!({ "score": 111, "comments": 4 }));
    assert_eq!(
        s["extra"]["external_url"],
        "http://www.getdropbox.com/u/2/screencast.html"
    );

    let comments = call(&sources, EndpointId::TechforumStoryComments, "id=8863")
        .await
        .expect("comments from firebase");
    assert_items_valid(&comments.items);
    assert_eq!(
        ids_and_depths(&comments.items),
        [
            ("9224".to_string(), json!(0)),
            ("9272".to_string(), json!(1)),
            ("8917".to_string(), json!(0)),
            ("8950".to_string(), json!(1)),
        ],
        "depth-first, replies after their parent; the vanished kid 8884 is skipped"
    );
    assert_eq!(comments.total, Some(4));
    let reply = item(&comments, 1);
    assert_eq!(
        reply["text"],
        "1. re: the first part, many people want something \"that just works\" & that's all.\nÜnïcode — “quotes” 日本語"
    );
    assert_eq!(reply["extra"]["parent_id"], "9224");
    assert_eq!(reply["extra"]["story_id"], "8863");
    let deleted = item(&comments, 2);
    assert_eq!(
        (deleted["author"].clone(), deleted["text"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(deleted["extra"]["deleted"], true);
    assert_eq!(deleted["extra"]["author_deleted"], true);
    assert_eq!(comments.items[3].extra["dead"], true);

    let limited = call(
        &sources,
        EndpointId::TechforumStoryComments,
        "id=8863&limit=2",
    )
    .await
    .expect("limited");
    assert_eq!(ids_and_depths(&limited.items).len(), 2);
    assert_eq!(limited.items[1].id, "9272");

    let profile = call(&sources, EndpointId::TechforumProfile, "handle=pg")
        .await
        .expect("profile from firebase");
    assert_items_valid(&profile.items);
    let p = item(&profile, 0);
    assert_eq!(p["type"], "profile");
    assert_eq!(p["text"], "Bug fixer of <Arc>.\nMore at paulgraham.com");
    assert_eq!(p["created_at"], "2006-10-09T18:21:32Z");
    assert_eq!(p["metrics"], json!({ "score": 157236 }));
    assert_eq!(p["extra"]["submitted_count"], 3);

    let untitled = call(&sources, EndpointId::TechforumStory, "id=121003")
        .await
        .expect("an Ask-style story without url");
    assert_items_valid(&untitled.items);
    assert_eq!(
        untitled.items[0].text.as_deref(),
        Some(
            "or HN: the Next Iteration\nI get the impression that with Arc being released a lot of people who never had time for HN before are suddenly dropping in more often."
        )
    );
    assert!(untitled.items[0].extra.get("external_url").is_none());
}

#[tokio::test]
async fn algolia_and_firebase_flatten_a_thread_alike() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/prefix/api/v1/items/8863").file("techforum/algolia/items_8863.json"));
    up.route(Route::get("/prefix/api/v1/users/pg").file("techforum/algolia/users_pg.json"));
    firebase_routes(&up);
    let sources = sources_with(&up, "");
    let request = EndpointId::TechforumStoryComments.parse("id=8863").unwrap();
    let from_algolia = sources.call(&request).await.expect("algolia");
    assert_items_valid(&from_algolia.items);
    assert!(
        paths(&up).iter().all(|p| p.starts_with("/prefix/")),
        "algolia answered alone"
    );

    let profile = call(&sources, EndpointId::TechforumProfile, "handle=pg")
        .await
        .expect("algolia profile");
    assert_items_valid(&profile.items);
    assert_eq!(
        profile.items[0].created_at.as_deref(),
        Some("2006-10-09T18:21:32Z")
    );

    let only_firebase = sources_with(
        &up,
        "[order]\ntechforum = [\"techforum.firebase\", \"techforum.algolia\"]",
    );
    let from_firebase = only_firebase.call(&request).await.expect("firebase");
    assert_eq!(
        ids_and_depths(&from_algolia.items),
        ids_and_depths(&from_firebase.items)
    );
}

#[tokio::test]
async fn timeout_falls_back_and_all_failing_is_all_sources_failed() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/prefix/api/v1/items/8863").delay(Duration::from_secs(3)));
    firebase_routes(&up);
    let sources = sources_with(&up, "");
    let page = call(&sources, EndpointId::TechforumStory, "id=8863")
        .await
        .expect("firebase after the algolia timeout");
    assert_eq!(page.items[0].id, "8863");

    up.reset();
    up.route(Route::get("/prefix/api/v1/items/5").status(503));
    up.route(Route::get("/fb/v0/item/5.json").body("{not json"));
    let err = call(&sources, EndpointId::TechforumStory, "id=5")
        .await
        .expect_err("both fail");
    let CallError::AllSourcesFailed(why) = err else {
        panic!("{err:?}")
    };
    assert!(
        why.contains("techforum.algolia") && why.contains("techforum.firebase"),
        "{why}"
    );
}

#[tokio::test]
async fn breaker_opens_skips_the_source_then_half_opens() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/prefix/api/v1/items/8863").status(500).times(2));
    up.route(Route::get("/prefix/api/v1/items/8863").file("techforum/algolia/items_8863.json"));
    firebase_routes(&up);
    let sources = sources_with(&up, "breaker_failures = 2\nbreaker_cooldown_ms = 300");
    let request = EndpointId::TechforumStory.parse("id=8863").unwrap();
    let algolia_calls = |up: &FakeUpstream| {
        paths(up)
            .iter()
            .filter(|p| p.starts_with("/prefix/"))
            .count()
    };

    for _ in 0..2 {
        sources.call(&request).await.expect("served by firebase");
    }
    assert_eq!(algolia_calls(&up), 2);
    let state = &sources.source_states("techforum")[0];
    assert_eq!(
        (state.id, state.state, state.consecutive_failures),
        ("techforum.algolia", BreakerState::Open, 2)
    );

    sources.call(&request).await.expect("served by firebase");
    assert_eq!(
        algolia_calls(&up),
        2,
        "an open breaker skips algolia: nothing sent"
    );

    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(
        sources.source_states("techforum")[0].state,
        BreakerState::HalfOpen
    );
    let before = up.seen().len();
    let page = sources.call(&request).await.expect("the probe succeeds");
    assert_eq!(
        algolia_calls(&up),
        3,
        "half-open: one probe goes to algolia"
    );
    assert_eq!(up.seen().len(), before + 1, "and firebase is not needed");
    assert_eq!(
        page.items[0].metrics.comments,
        Some(4.0),
        "algolia counts the whole tree"
    );
    assert_eq!(
        sources.source_states("techforum")[0].state,
        BreakerState::Closed
    );
}
