//! techforum sources against recorded upstream answers.

#[path = "../../tests/support/fake_upstream.rs"]
mod fake_upstream;

use adapters::api::EndpointId;
use adapters::sources::{CallError, Sources, SourcesConfig};
use fake_upstream::{FakeUpstream, Route};
use serde_json::Value;

fn sources_at(up: &FakeUpstream) -> Sources {
    let toml = format!(
        "[source.\"techforum.algolia\"]\nbase_url = \"{}\"\n",
        up.url("/prefix/api/v1") // a base URL with a path prefix must work
    );
    let config: SourcesConfig = toml::from_str(&toml).expect("config");
    Sources::new(&config).expect("sources")
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

    assert_eq!(page.total, Some(4213));
    assert_eq!(page.items.len(), 3);
    let first = serde_json::to_value(&page.items[0]).unwrap();
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

    let ask = serde_json::to_value(&page.items[1]).unwrap();
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

    let bare = serde_json::to_value(&page.items[2]).unwrap();
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
    assert!(seen[0].query.contains(&("hitsPerPage".into(), "3".into())));
    assert!(
        seen[0]
            .headers
            .get("user-agent")
            .unwrap()
            .to_str()
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
