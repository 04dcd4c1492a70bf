//! news sources against recorded upstream answers, and the fallback between them.

mod support;

use std::time::Duration;

use adapters::api::EndpointId;
use adapters::item::Page;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, has_query, item, sources};

fn sources_at(up: &FakeUpstream) -> Sources {
    sources(&[
        at("news.google_news", up.url("/gn")).timeout_ms(300),
        at("news.gdelt", up.url("/gdelt")),
    ])
}

async fn search(sources: &Sources, query: &str) -> Result<Page, CallError> {
    call(sources, EndpointId::NewsSearch, query).await
}

#[tokio::test]
async fn google_news_rss_is_mapped() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/gn/rss/search")
            .query("q", "rust language")
            .query("hl", "de-DE")
            .query("gl", "DE")
            .query("ceid", "DE:de")
            .file("news/google_news/search_rust.xml"),
    );
    let sources = sources_at(&up);
    let page = search(
        &sources,
        "query=rust+language&lang=de-DE&country=DE&limit=3",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3, "limit applied client-side");
    assert_eq!(page.total, Some(4));
    let a = item(&page, 0);
    assert_eq!(a["type"], "article");
    assert_eq!(
        a["id"],
        "CBMiV2h0dHBzOi8vd3d3LnRoZXJlZ2lzdGVyLmNvbS8yMDI2LzAzLzEwL3J1c3Qv0gEA"
    );
    assert_eq!(
        a["title"],
        "Rust 1.85 ships the 2024 edition & async closures"
    );
    assert_eq!(
        a["text"],
        "Rust 1.85 ships the 2024 edition & async closures\u{a0}\u{a0}The Register"
    );
    assert_eq!(
        a["url"],
        "https://news.google.com/rss/articles/CBMiV2h0dHBzOi8vd3d3LnRoZXJlZ2lzdGVyLmNvbS8yMDI2LzAzLzEwL3J1c3Qv0gEA?oc=5"
    );
    assert_eq!(a["author"], "theregister.com");
    assert_eq!(a["author_name"], "The Register");
    assert_eq!(a["created_at"], "2026-03-10T14:05:00Z");
    assert_eq!(a["metrics"], json!({}));
    assert_eq!(a["extra"]["source"], "The Register");
    assert_eq!(a["extra"]["source_url"], "https://www.theregister.com");
    let b = item(&page, 1);
    assert_eq!(
        b["title"],
        "Warum Rust? Ein Überblick – „sicher“ und schnell"
    );
    assert_eq!(
        b["created_at"], "2026-03-09T07:30:00Z",
        "+0100 offset normalised"
    );
    let c = item(&page, 2);
    assert_eq!(c["title"], "Rust in the Linux kernel: a status report");
    assert_eq!(
        (
            c["created_at"].clone(),
            c["text"].clone(),
            c["author_name"].clone()
        ),
        (Value::Null, Value::Null, Value::Null)
    );
    assert_eq!(
        c["author"], "news.google.com",
        "host of the link without a source"
    );
}

#[tokio::test]
async fn empty_feed_is_an_empty_page() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gn/rss/search").file("news/google_news/empty.xml"));
    let page = search(&sources_at(&up), "query=zzzq").await.expect("page");
    assert_eq!((page.items.len(), page.total), (0, Some(0)));
}

async fn check_gdelt_answered(up: &FakeUpstream, sources: &Sources) {
    let page = search(sources, "query=rust&lang=en-US&limit=10")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3);
    let a = item(&page, 0);
    assert_eq!(a["id"], "https://www.theregister.com/2026/03/10/rust/");
    assert_eq!(
        a["title"],
        "Rust 1.85 ships the 2024 edition, with async closures!"
    );
    assert_eq!(a["created_at"], "2026-03-10T14:15:00Z");
    assert_eq!(a["author"], "theregister.com");
    assert_eq!(a["extra"]["source_country"], "United Kingdom");
    assert_eq!(
        item(&page, 1)["title"],
        "Le langage Rust: pourquoi tant d'engouement?"
    );
    let bare = item(&page, 2);
    assert_eq!(
        (bare["title"].clone(), bare["created_at"].clone()),
        (Value::Null, Value::Null)
    );
    let gdelt = up
        .seen()
        .into_iter()
        .find(|s| s.path == "/gdelt/api/v2/doc/doc")
        .expect("gdelt asked");
    for pair in [
        ("query", "rust sourcelang:english"),
        ("mode", "artlist"),
        ("format", "json"),
        ("maxrecords", "10"),
    ] {
        assert!(
            has_query(&gdelt, pair.0, pair.1),
            "{pair:?} in {:?}",
            gdelt.query
        );
    }
}

fn gdelt_route() -> Route {
    Route::get("/gdelt/api/v2/doc/doc").file("news/gdelt/artlist_rust.json")
}

#[tokio::test]
async fn falls_back_to_gdelt_on_timeout_error_and_garbage() {
    for first in [
        Route::get("/gn/rss/search")
            .file("news/google_news/search_rust.xml")
            .delay(Duration::from_millis(1500)),
        Route::get("/gn/rss/search").status(503),
        Route::get("/gn/rss/search")
            .header("content-type", "text/html")
            .body("<html><body>unusual traffic</body></html>"),
        Route::get("/gn/rss/search").status(429),
    ] {
        let up = FakeUpstream::start().await;
        up.route(first);
        up.route(gdelt_route());
        check_gdelt_answered(&up, &sources_at(&up)).await;
    }
}

#[tokio::test]
async fn gdelt_empty_and_refusals() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gn/rss/search").status(500));
    up.route(
        Route::get("/gdelt/api/v2/doc/doc")
            .query("query", "zzzq sourcelang:english")
            .file("news/gdelt/empty.json"),
    );
    up.route(
        Route::get("/gdelt/api/v2/doc/doc")
            .header("content-type", "text/html")
            .body("The specified phrase is too short."),
    );
    let sources = sources_at(&up);
    let page = search(&sources, "query=zzzq").await.expect("page");
    assert_eq!(page.items.len(), 0);
    // Both failing: every source failed.
    match search(&sources, "query=a").await {
        Err(CallError::AllSourcesFailed(why)) => {
            assert!(
                why.contains("news.google_news") && why.contains("news.gdelt"),
                "{why}"
            )
        }
        other => panic!("expected all sources failed, got {other:?}"),
    }
}

#[tokio::test]
async fn not_found_ends_the_chain() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/gn/rss/search").status(404));
    up.route(gdelt_route());
    assert!(matches!(
        search(&sources_at(&up), "query=rust").await,
        Err(CallError::Upstream(_))
    ));
    assert!(
        up.seen().iter().all(|s| s.path.starts_with("/gn")),
        "the fallback is not asked"
    );
}
