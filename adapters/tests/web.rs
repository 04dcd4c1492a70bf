//! web sources against recorded upstream answers: the operator's SearXNG, the keyed Brave API, the
//! gating of an unconfigured SearXNG and the fallback.

mod support;

use adapters::api::EndpointId;
use adapters::item::Page;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, header, item, sources};

const TOKEN: &str = "BSAdummy-token";

/// SearXNG at `/sx` when `searxng` is set (else left unconfigured), Brave at `/brave` with a token.
fn sources_at(up: &FakeUpstream, searxng: bool) -> Sources {
    let mut tables = vec![at("web.brave", up.url("/brave")).credential(Some(TOKEN))];
    if searxng {
        tables.push(at("web.searxng", up.url("/sx")).timeout_ms(300));
    }
    sources(&tables)
}

async fn search(sources: &Sources, query: &str) -> Result<Page, CallError> {
    call(sources, EndpointId::WebSearch, query).await
}

#[tokio::test]
async fn searxng_results_are_mapped_and_cut_to_the_limit() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/sx/search")
            .query("q", "rust async")
            .query("format", "json")
            .query("categories", "general")
            .query("pageno", "1")
            .file("web/searxng/search.json"),
    );
    let page = search(&sources_at(&up, true), "query=rust+async&limit=2")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2);
    let a = item(&page, 0);
    assert_eq!(a["type"], "page");
    assert_eq!(a["id"], "https://www.rust-lang.org/learn/async");
    assert_eq!(a["url"], a["id"]);
    assert_eq!(a["title"], "Async Rust & you");
    assert_eq!(
        a["text"],
        "Learn how async/await works in Rust – “zero-cost” futures."
    );
    assert_eq!(a["author"], "rust-lang.org");
    assert_eq!(a["author_name"], Value::Null);
    assert_eq!(a["created_at"], Value::Null);
    assert_eq!(a["metrics"], json!({}));
    assert_eq!(
        a["extra"]["engines"],
        json!(["duckduckgo", "brave", "startpage"])
    );
    assert_eq!(a["extra"]["score"], 6.5);
    let b = item(&page, 1);
    assert_eq!(b["text"], Value::Null);
    assert_eq!(
        b["created_at"], "2026-03-10T08:30:00Z",
        "naive taken as UTC"
    );
    assert_eq!(b["extra"]["thumbnail"], "https://blog.example.de/t.png");
    assert!(
        up.seen().iter().all(|s| !s.path.starts_with("/brave")),
        "no fallback needed"
    );
}

#[tokio::test]
async fn news_topic_gives_articles() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/sx/search")
            .query("categories", "news")
            .file("web/searxng/search.json"),
    );
    let page = search(&sources_at(&up, true), "query=rust&topic=news")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3, "the result without a URL is skipped");
    assert!(page.items.iter().all(|i| i.kind == "article"));
    assert_eq!(item(&page, 2)["created_at"], "2026-03-09T08:00:00Z");
}

#[tokio::test]
async fn unconfigured_searxng_is_skipped_and_brave_answers() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/brave/web/search")
            .query("q", "rust async")
            .query("count", "5")
            .file("web/brave/web.json"),
    );
    let sources = sources_at(&up, false);
    let listed = sources.list();
    let sx = listed.iter().find(|s| s.id == "web.searxng").unwrap();
    assert!(!sx.enabled, "an empty base URL is not configured");
    let page = search(&sources, "query=rust+async&limit=5")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2);
    let a = item(&page, 0);
    assert_eq!(a["title"], "Async Rust & you");
    assert_eq!(a["text"], "Learn how async/await works – futures.");
    assert_eq!(a["author"], "rust-lang.org");
    assert_eq!(a["author_name"], "Rust Programming Language");
    assert_eq!(a["created_at"], "2026-02-03T11:22:33Z");
    assert_eq!(a["extra"]["age"], "February 3, 2026");
    assert_eq!(a["extra"]["source"], "Rust Programming Language");
    let b = item(&page, 1);
    assert_eq!(
        (
            b["text"].clone(),
            b["author_name"].clone(),
            b["created_at"].clone()
        ),
        (Value::Null, Value::Null, Value::Null)
    );
    let seen = &up.seen()[0];
    assert_eq!(header(seen, "x-subscription-token").as_deref(), Some(TOKEN));
    assert!(
        seen.query.iter().all(|(_, v)| v != TOKEN),
        "the token goes in a header only"
    );
}

#[tokio::test]
async fn searxng_refusing_json_falls_back_to_brave_news() {
    let up = FakeUpstream::start().await;
    // JSON output is off on most instances: 403.
    up.route(
        Route::get("/sx/search")
            .status(403)
            .header("content-type", "text/html")
            .body("<html>403 Forbidden</html>"),
    );
    up.route(Route::get("/brave/news/search").file("web/brave/news.json"));
    let page = search(&sources_at(&up, true), "query=rust+2026&topic=news")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    let a = item(&page, 0);
    assert_eq!(a["type"], "article");
    assert_eq!(a["title"], "Rust 1.85 ships \"2024 edition\"");
    assert_eq!(a["text"], "The Rust team released…");
    assert_eq!(a["author"], "theregister.com");
    assert_eq!(a["created_at"], "2026-03-10T14:05:00Z");
    assert_eq!(a["extra"]["age"], "2 days ago");
    assert_eq!(
        a["extra"]["thumbnail"],
        "https://imgs.search.brave.com/n.jpg"
    );
}

#[tokio::test]
async fn empty_results_are_an_empty_page() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/brave/web/search").file("web/brave/web_empty.json"));
    let page = search(&sources_at(&up, false), "query=zzzqqq")
        .await
        .expect("page");
    assert_eq!((page.items.len(), page.total), (0, Some(0)));
}

#[tokio::test]
async fn all_failing_is_all_sources_failed() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/sx/search").body("{\"not\": \"searxng\"}"));
    up.route(Route::get("/brave/web/search").status(429).body("{}"));
    let err = search(&sources_at(&up, true), "query=x").await.unwrap_err();
    let CallError::AllSourcesFailed(why) = err else {
        panic!("{err:?}")
    };
    assert!(
        why.contains("web.searxng") && why.contains("web.brave"),
        "{why}"
    );
    assert!(!why.contains(TOKEN));
}
