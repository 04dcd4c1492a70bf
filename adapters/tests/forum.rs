//! forum sources against recorded upstream answers: the live JSON listings, the archive, the
//! fallback and the cursor between pages.

mod support;

use std::time::Duration;

use adapters::api::EndpointId;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, has_query, item, sources};

fn sources_at(up: &FakeUpstream) -> Sources {
    sources(&[
        at("forum.reddit_json", up.url("/rd")),
        at("forum.arctic_shift", up.url("/as")).timeout_ms(300),
    ])
}

#[tokio::test]
async fn search_maps_posts() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/rd/search.json")
            .query("q", "wasm")
            .query("sort", "top")
            .query("t", "week")
            .query("raw_json", "1")
            .query("limit", "3")
            .file("forum/reddit_json/search_wasm.json"),
    );
    let sources = sources_at(&up);
    let page = call(
        &sources,
        EndpointId::ForumSearch,
        "query=wasm&sort=top&timeframe=week&limit=3",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert!(page.next_cursor.is_some(), "search pages on");
    let p = item(&page, 0);
    assert_eq!(p["id"], "1abc2de");
    assert_eq!(p["type"], "post");
    assert_eq!(p["title"], "Rust & WebAssembly — “fast” 🚀");
    assert_eq!(
        p["text"],
        "I tried **wasm-bindgen** & it works.\n\nÜnïcode ok."
    );
    assert_eq!(
        p["url"],
        "https://www.reddit.com/r/rust/comments/1abc2de/slug/"
    );
    assert_eq!(p["author"], "ferris");
    assert_eq!(p["created_at"], "2026-01-08T10:00:00Z");
    assert_eq!(p["metrics"], json!({ "score": 345, "comments": 42 }));
    assert_eq!(p["extra"]["community"], "rust");
    assert_eq!(p["extra"]["flair"], "🛠️ project");
    assert!(
        p["extra"].get("link_url").is_none(),
        "a self post links nowhere else"
    );
    let link = item(&page, 1);
    assert_eq!(link["author"], Value::Null);
    assert_eq!(link["extra"]["author_deleted"], true);
    assert_eq!(
        link["extra"]["link_url"],
        "https://blog.example.com/rust-2026?x=1"
    );
    let removed = item(&page, 2);
    assert_eq!(
        (removed["title"].clone(), removed["text"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(removed["extra"]["over_18"], true);
}

#[tokio::test]
async fn search_by_url_keeps_posts_linking_there() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/rd/search.json")
            .query("q", "url:\"https://blog.example.com/rust\"")
            .file("forum/reddit_json/search_url.json"),
    );
    let page = call(
        &sources_at(&up),
        EndpointId::ForumSearch,
        "url=https://blog.example.com/rust",
    )
    .await
    .expect("page");
    let ids: Vec<&str> = page.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["1abc2df"]);
}

#[tokio::test]
async fn community_posts_cursor_goes_back_to_the_same_source() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/rd/r/rust/hot.json")
            .query("after", "t3_1abc2df")
            .file("forum/reddit_json/community_hot_p2.json"),
    );
    up.route(Route::get("/rd/r/rust/hot.json").file("forum/reddit_json/community_hot_p1.json"));
    let sources = sources_at(&up);
    let first = call(
        &sources,
        EndpointId::ForumCommunityPosts,
        "community=r/rust&sort=hot&limit=2",
    )
    .await
    .expect("page 1");
    assert_items_valid(&first.items);
    assert_eq!(first.items.len(), 2);
    let cursor = first.next_cursor.clone().expect("a next page");
    let second = call(
        &sources,
        EndpointId::ForumCommunityPosts,
        &format!("community=rust&sort=hot&limit=2&cursor={cursor}"),
    )
    .await
    .expect("page 2");
    assert_eq!(second.items[0].id, "1abc2dg");
    assert_eq!(second.next_cursor, None, "last page");
    let seen = up.seen();
    assert!(
        seen.iter().all(|s| s.path.starts_with("/rd/")),
        "the archive does not rank by hotness"
    );
    assert!(has_query(&seen[1], "after", "t3_1abc2df"));
    assert!(
        !has_query(&seen[0], "t", "week"),
        "timeframe applies to top only"
    );
}

#[tokio::test]
async fn community_posts_new_come_from_the_archive_and_page_by_date() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/as/api/posts/search")
            .query("before", "1767862800")
            .file("forum/arctic_shift/posts_rust_p2.json"),
    );
    up.route(
        Route::get("/as/api/posts/search")
            .query("subreddit", "rust")
            .query("sort", "desc")
            .query("limit", "2")
            .query("after", "1735689600")
            .file("forum/arctic_shift/posts_rust_p1.json"),
    );
    let sources = sources_at(&up);
    let first = call(
        &sources,
        EndpointId::ForumCommunityPosts,
        "community=rust&after=2025-01-01&limit=2",
    )
    .await
    .expect("page 1");
    assert_items_valid(&first.items);
    let a = item(&first, 0);
    assert_eq!(a["title"], "Archived post & more");
    assert_eq!(a["extra"]["from_archive"], true);
    assert_eq!(a["created_at"], "2026-01-08T10:00:00Z");
    let b = item(&first, 1);
    assert_eq!(
        b["created_at"], "2026-01-08T09:00:00Z",
        "a date written as a string"
    );
    assert_eq!(b["extra"]["author_deleted"], true);
    let cursor = first.next_cursor.expect("a full page has a next one");
    let second = call(
        &sources,
        EndpointId::ForumCommunityPosts,
        &format!("community=rust&after=2025-01-01&limit=2&cursor={cursor}"),
    )
    .await
    .expect("page 2");
    assert_eq!(second.items[0].id, "1new03");
    assert_eq!(second.next_cursor, None);
    let seen = up.seen();
    assert!(
        has_query(&seen[1], "after", "1735689600"),
        "the bound is kept on later pages"
    );
}

#[tokio::test]
async fn community_posts_new_fall_back_to_the_live_listing() {
    for archive in [
        Route::get("/as/api/posts/search").status(500),
        Route::get("/as/api/posts/search")
            .file("forum/arctic_shift/posts_rust_p1.json")
            .delay(Duration::from_millis(1500)),
        Route::get("/as/api/posts/search").body("<html>maintenance</html>"),
        Route::get("/as/api/posts/search")
            .status(400)
            .body(r#"{"data":null,"error":"Timeout. Maybe slow down a bit"}"#),
    ] {
        let up = FakeUpstream::start().await;
        up.route(archive);
        up.route(Route::get("/rd/r/rust/new.json").file("forum/reddit_json/community_new.json"));
        let page = call(
            &sources_at(&up),
            EndpointId::ForumCommunityPosts,
            "community=rust&after=2026-01-08",
        )
        .await
        .expect("the live listing answers");
        // The live listing cannot filter by date upstream: the bound is applied to the page read.
        let ids: Vec<&str> = page.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["1abc2de", "1abc2df", "1abc2dg"]);
        assert!(
            page.items
                .iter()
                .all(|i| i.extra.get("from_archive").is_none())
        );
    }
}

#[tokio::test]
async fn all_failing_and_not_found() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/as/api/posts/search").status(502));
    up.route(
        Route::get("/rd/r/rust/new.json")
            .status(403)
            .header("content-type", "text/html")
            .body("<html>whoa there, pardner! blocked due to a network policy</html>"),
    );
    up.route(
        Route::get("/rd/r/nosuchplace/about.json")
            .status(404)
            .body(r#"{"message":"Not Found","error":404}"#),
    );
    up.route(
        Route::get("/rd/r/secret/about.json")
            .status(403)
            .body(r#"{"reason":"private","message":"Forbidden","error":403}"#),
    );
    let sources = sources_at(&up);
    match call(&sources, EndpointId::ForumCommunityPosts, "community=rust").await {
        Err(CallError::AllSourcesFailed(why)) => {
            assert!(
                why.contains("forum.arctic_shift") && why.contains("forum.reddit_json"),
                "{why}"
            )
        }
        other => panic!("expected all sources failed, got {other:?}"),
    }
    assert!(matches!(
        call(
            &sources,
            EndpointId::ForumCommunity,
            "community=nosuchplace"
        )
        .await,
        Err(CallError::Upstream(_))
    ));
    match call(&sources, EndpointId::ForumCommunity, "community=secret").await {
        Err(CallError::Upstream(why)) => assert!(why.contains("private"), "{why}"),
        other => panic!("expected an upstream error, got {other:?}"),
    }
}

#[test]
fn another_order_with_dates_is_refused() {
    // A catalogue rule (`requires`): the parser refuses it, so no source is asked and no credit
    // is reserved.
    let v = EndpointId::ForumCommunityPosts
        .parse("community=rust&sort=top&before=7d")
        .expect_err("refused by the parser");
    assert_eq!(v.0.len(), 1, "{v:?}");
    assert_eq!(
        (v.0[0].parameter.as_str(), v.0[0].rule.as_str()),
        ("before", "requires")
    );
    assert!(v.0[0].message.contains("sort=new"), "{}", v.0[0].message);
}

#[tokio::test]
async fn community_and_communities() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/rd/r/rust/about.json").file("forum/reddit_json/about_rust.json"));
    up.route(
        Route::get("/rd/subreddits/search.json")
            .query("q", "rust")
            .file("forum/reddit_json/subreddits_rust.json"),
    );
    let sources = sources_at(&up);
    let page = call(&sources, EndpointId::ForumCommunity, "community=/r/rust")
        .await
        .unwrap();
    assert_items_valid(&page.items);
    let c = item(&page, 0);
    assert_eq!(c["type"], "community");
    assert_eq!(c["id"], "rust");
    assert_eq!(
        c["text"],
        "A place for all things related to the Rust programming language & its community."
    );
    assert_eq!(c["url"], "https://www.reddit.com/r/rust/");
    assert_eq!(c["created_at"], "2008-11-22T07:00:00Z");
    assert_eq!(c["extra"]["subscribers"], 345678);
    assert_eq!(c["metrics"], json!({}));

    let page = call(
        &sources,
        EndpointId::ForumCommunities,
        "query=rust&min_followers=1000&limit=2",
    )
    .await
    .unwrap();
    assert_items_valid(&page.items);
    let ids: Vec<&str> = page.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(
        ids,
        ["rust", "rust_gamedev"],
        "name prefix, by subscribers, at least 1000"
    );
    assert_eq!(page.total, Some(2));
}

#[tokio::test]
async fn profile_and_its_comments() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/rd/user/ferris/about.json").file("forum/reddit_json/user_about.json"));
    up.route(
        Route::get("/rd/user/ferris/comments.json").file("forum/reddit_json/user_comments.json"),
    );
    up.route(
        Route::get("/as/api/comments/search")
            .query("author", "ferris")
            .file("forum/arctic_shift/comments_search.json"),
    );
    let sources = sources_at(&up);
    let page = call(&sources, EndpointId::ForumProfile, "handle=u/ferris")
        .await
        .unwrap();
    assert_items_valid(&page.items);
    let p = item(&page, 0);
    assert_eq!(p["type"], "profile");
    assert_eq!(p["author_name"], "Ferris the Crab");
    assert_eq!(p["text"], "🦀 I like <Rust>");
    assert_eq!(p["metrics"], json!({ "score": 4600 }));
    assert_eq!(p["extra"]["comment_karma"], 3400);

    let page = call(&sources, EndpointId::ForumProfileComments, "handle=ferris")
        .await
        .unwrap();
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2, "no bound: the live listing");
    let c = item(&page, 0);
    assert_eq!(c["type"], "comment");
    assert_eq!(c["extra"]["post_title"], "Why Rust & not C?");
    assert_eq!(c["extra"]["parent_id"], "zz");
    assert_eq!(c["extra"]["link_id"], "1abc2de");

    let page = call(
        &sources,
        EndpointId::ForumProfileComments,
        "handle=ferris&after=2025-01-01",
    )
    .await
    .unwrap();
    assert_items_valid(&page.items);
    assert_eq!(
        item(&page, 0)["extra"]["from_archive"],
        true,
        "a date bound goes to the archive"
    );
}

#[tokio::test]
async fn post_and_its_comment_tree() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/rd/comments/1abc2de.json")
            .query("sort", "old")
            .query("limit", "50")
            .file("forum/reddit_json/comments_1abc2de.json"),
    );
    up.route(
        Route::get("/rd/comments/1abc2de.json")
            .query("limit", "1")
            .file("forum/reddit_json/comments_1abc2de.json"),
    );
    let sources = sources_at(&up);
    let page = call(
        &sources,
        EndpointId::ForumPost,
        "url=https://www.reddit.com/r/rust/comments/1abc2de/rust_webassembly/",
    )
    .await
    .unwrap();
    assert_items_valid(&page.items);
    assert_eq!(item(&page, 0)["id"], "1abc2de");
    let by_id = call(&sources, EndpointId::ForumPost, "id=t3_1abc2de")
        .await
        .unwrap();
    assert_eq!(by_id.items, page.items);

    let page = call(
        &sources,
        EndpointId::ForumPostComments,
        "id=1abc2de&sort=old",
    )
    .await
    .unwrap();
    assert_items_valid(&page.items);
    let order: Vec<(String, Value, Value)> = page
        .items
        .iter()
        .map(|i| {
            (
                i.id.clone(),
                i.extra["depth"].clone(),
                i.extra["parent_id"].clone(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("c1".to_string(), json!(0), json!("1abc2de")),
            ("c11".to_string(), json!(1), json!("c1")),
            ("c111".to_string(), json!(2), json!("c11")),
            ("c12".to_string(), json!(1), json!("c1")),
            ("c2".to_string(), json!(0), json!("1abc2de")),
        ]
    );
    assert_eq!(
        page.total,
        Some(42),
        "the post's comment count, with the replies behind stubs"
    );
    let c11 = item(&page, 1);
    assert_eq!(c11["text"], "reply > one");
    assert_eq!(c11["author"], Value::Null);
    assert_eq!(c11["created_at"], "2026-01-08T10:43:20Z");
    assert_eq!(c11["extra"]["more_replies"], 4);
    let c12 = item(&page, 3);
    assert_eq!(
        (c12["text"].clone(), c12["author"].clone()),
        (Value::Null, Value::Null)
    );
    let c2 = item(&page, 4);
    assert_eq!(c2["metrics"], json!({}), "a hidden score is left out");
    assert_eq!(c2["extra"]["score_hidden"], true);

    up.route(
        Route::get("/rd/comments/1abc2de.json")
            .query("limit", "2")
            .file("forum/reddit_json/comments_1abc2de.json"),
    );
    let short = call(
        &sources,
        EndpointId::ForumPostComments,
        "id=1abc2de&limit=2",
    )
    .await
    .unwrap();
    let ids: Vec<&str> = short.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["c1", "c11"], "the limit cuts the depth-first walk");
}

#[tokio::test]
async fn comment_search_goes_to_the_archive() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/as/api/comments/search")
            .query("body", "\"borrow checker\" OR lifetimes -unsafe")
            .query("subreddit", "rust")
            .query("limit", "10")
            .file("forum/arctic_shift/comments_search.json"),
    );
    let sources = sources_at(&up);
    let page = call(
        &sources,
        EndpointId::ForumCommentsSearch,
        "query=%22borrow+checker%22+OR+lifetimes+-unsafe&community=rust",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    let a = item(&page, 0);
    assert_eq!(a["url"], "https://www.reddit.com/r/rust/comments/p1/_/kc1/");
    assert_eq!(a["text"], "I love \"borrow checker\" errors");
    let b = item(&page, 1);
    assert_eq!(b["text"], "borrow checker & lifetimes");
    assert_eq!(b["extra"]["author_deleted"], true);
    let seen = &up.seen()[0];
    let after: i64 = seen
        .query
        .iter()
        .find(|(k, _)| k == "after")
        .map(|(_, v)| v.parse().unwrap())
        .expect("after defaults to 30 days back");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - 30 * 86_400 - after).abs() < 60);
}

#[tokio::test]
async fn transcript_is_not_configured() {
    let up = FakeUpstream::start().await;
    let result = call(
        &sources_at(&up),
        EndpointId::ForumPostTranscript,
        "url=https://www.reddit.com/r/videos/comments/1abc2de/x/",
    )
    .await;
    assert!(matches!(result, Err(CallError::NotConfigured(_))));
}
