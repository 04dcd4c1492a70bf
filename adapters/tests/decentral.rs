//! decentral (public AppView XRPC) against recorded upstream answers.

mod support;

use adapters::api::EndpointId;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, has_query, item, sources};

const X: &str = "/xrpc/";

fn sources_at(up: &FakeUpstream) -> Sources {
    sources(&[at("decentral.appview", up.url(""))])
}

fn route(method: &str) -> Route {
    Route::get(&format!("{X}{method}"))
}

#[tokio::test]
async fn search_pages_through_the_same_source() {
    let up = FakeUpstream::start().await;
    up.route(
        route("app.bsky.feed.searchPosts")
            .query("cursor", "25")
            .file("decentral/appview/searchPosts_page2.json"),
    );
    up.route(
        route("app.bsky.feed.searchPosts")
            .query("q", "rust")
            .file("decentral/appview/searchPosts_page1.json"),
    );
    let sources = sources_at(&up);

    let first = call(&sources, EndpointId::DecentralSearch, "query=rust&limit=2")
        .await
        .expect("page 1");
    assert_items_valid(&first.items);
    assert_eq!(first.total, Some(1432));
    let a = item(&first, 0);
    assert_eq!(
        a["id"],
        "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l"
    );
    assert_eq!(a["type"], "post");
    assert_eq!(a["author"], "bsky.app");
    assert_eq!(a["author_name"], "Bluesky");
    assert_eq!(a["text"], "Rust & résumés — “quoted” 🦀 <not html>");
    assert_eq!(
        a["url"],
        "https://bsky.app/profile/bsky.app/post/3l6oveex3ii2l"
    );
    assert_eq!(a["created_at"], "2024-10-15T16:04:05Z");
    assert_eq!(
        a["metrics"],
        json!({ "comments": 12, "likes": 567, "reposts": 34, "quotes": 8 })
    );
    assert_eq!(a["extra"]["lang"], "en");
    assert_eq!(
        a["extra"]["cid"],
        "bafyreia6ohdb7tqklx2qnvf5lq3zxtkuw3dysk3xwl4smfqnyfjkqjnbmy"
    );
    assert_eq!(a["extra"]["indexed_at"], "2024-10-15T16:04:06Z");

    let reply = item(&first, 1);
    assert_eq!(reply["type"], "comment");
    assert_eq!(reply["author"], "handle.invalid");
    assert_eq!(
        reply["author_name"],
        Value::Null,
        "a blank display name is null"
    );
    assert_eq!(
        reply["url"],
        "https://bsky.app/profile/did:plc:ewvi7nxzyoun6zhxrhs64oiz/post/3kabc2def3ghi"
    );
    assert_eq!(
        reply["extra"]["reply_parent"],
        "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l"
    );
    assert_eq!(reply["metrics"], json!({}), "absent counts are left out");

    let cursor = first.next_cursor.expect("a next cursor");
    assert_ne!(cursor, "25", "the client cursor is opaque");
    let second = call(
        &sources,
        EndpointId::DecentralSearch,
        &format!("query=rust&cursor={cursor}"),
    )
    .await
    .expect("page 2");
    assert_items_valid(&second.items);
    assert_eq!(
        second.items[0].created_at.as_deref(),
        Some("2024-10-17T09:10:11Z"),
        "indexedAt when createdAt is missing"
    );
    assert_eq!(second.items[0].extra["langs"], json!(["ja", "en"]));
    assert_eq!(second.next_cursor, None, "last page");
    let seen = up.seen();
    assert_eq!(seen.len(), 2);
    assert!(has_query(&seen[1], "cursor", "25"), "{:?}", seen[1].query);

    assert!(matches!(
        call(
            &sources,
            EndpointId::DecentralSearch,
            "query=rust&cursor=bogus"
        )
        .await,
        Err(CallError::BadCursor(_))
    ));
}

#[tokio::test]
async fn closed_public_search_is_a_fallback_failure() {
    let up = FakeUpstream::start().await;
    up.route(
        route("app.bsky.feed.searchPosts")
            .status(403)
            .body(r#"{"error":"Forbidden","message":"search is disabled"}"#),
    );
    let err = call(&sources_at(&up), EndpointId::DecentralSearch, "query=rust")
        .await
        .expect_err("403");
    assert!(matches!(err, CallError::AllSourcesFailed(_)), "{err:?}");
}

#[tokio::test]
async fn profile_feed_and_actor_search() {
    let up = FakeUpstream::start().await;
    up.route(
        route("app.bsky.actor.getProfile")
            .query("actor", "bsky.app")
            .file("decentral/appview/getProfile.json"),
    );
    up.route(
        route("app.bsky.feed.getAuthorFeed")
            .query("cursor", "2024-10-14T10:00:00.000Z")
            .file("decentral/appview/getAuthorFeed_last.json"),
    );
    up.route(
        route("app.bsky.feed.getAuthorFeed")
            .query("actor", "bsky.app")
            .query("limit", "5")
            .file("decentral/appview/getAuthorFeed.json"),
    );
    up.route(
        route("app.bsky.actor.searchActors")
            .query("q", "blue sky")
            .file("decentral/appview/searchActors.json"),
    );
    up.route(
        route("app.bsky.actor.getProfile")
            .query("actor", "nobody.example")
            .status(400)
            .body(r#"{"error":"InvalidRequest","message":"Profile not found"}"#),
    );
    let sources = sources_at(&up);

    let profile = call(&sources, EndpointId::DecentralProfile, "handle=@bsky.app")
        .await
        .expect("profile");
    assert_items_valid(&profile.items);
    let p = item(&profile, 0);
    assert_eq!(p["id"], "did:plc:z72i7hdynmk6r22z27h6tvur");
    assert_eq!(p["type"], "profile");
    assert_eq!(p["author"], "bsky.app");
    assert_eq!(p["url"], "https://bsky.app/profile/bsky.app");
    assert_eq!(p["created_at"], "2023-04-12T04:53:57Z");
    assert_eq!(p["extra"]["followers_count"], 31234567);
    assert_eq!(p["metrics"], json!({}));

    let feed = call(
        &sources,
        EndpointId::DecentralProfilePosts,
        "handle=bsky.app&limit=5",
    )
    .await
    .expect("feed");
    assert_items_valid(&feed.items);
    assert_eq!(feed.items.len(), 3, "the entry without a uri is skipped");
    assert_eq!(feed.items[1].extra["reposted_by"], "bsky.app");
    assert_eq!(feed.items[1].text, None, "empty text is null");
    assert_eq!(
        feed.items[1].created_at.as_deref(),
        Some("2024-10-14T14:00:00Z"),
        "offset normalised to UTC"
    );
    assert_eq!(
        feed.items[2].created_at.as_deref(),
        Some("2024-10-14T10:00:00Z"),
        "unparsable createdAt: indexedAt"
    );
    assert_eq!(feed.items[2].kind, "comment");
    let next = feed.next_cursor.expect("cursor");
    let last = call(
        &sources,
        EndpointId::DecentralProfilePosts,
        &format!("handle=bsky.app&cursor={next}"),
    )
    .await
    .expect("last page");
    assert!(last.items.is_empty());
    assert_eq!(last.next_cursor, None);

    let actors = call(
        &sources,
        EndpointId::DecentralProfileSearch,
        "query=blue%20sky",
    )
    .await
    .expect("actors");
    assert_items_valid(&actors.items);
    assert_eq!(actors.items.len(), 2);
    assert_eq!(actors.next_cursor, None, "the endpoint takes no cursor");
    let bare = item(&actors, 1);
    assert_eq!(
        (
            bare["author_name"].clone(),
            bare["text"].clone(),
            bare["created_at"].clone()
        ),
        (Value::Null, Value::Null, Value::Null)
    );

    let missing = call(
        &sources,
        EndpointId::DecentralProfile,
        "handle=nobody.example",
    )
    .await;
    assert!(
        matches!(missing, Err(CallError::Upstream(_))),
        "{missing:?}"
    );
}

#[tokio::test]
async fn post_by_web_url_with_thread_counts() {
    let up = FakeUpstream::start().await;
    up.route(
        route("app.bsky.feed.getPostThread")
            .query("uri", "at://bsky.app/app.bsky.feed.post/3l6oveex3ii2l")
            .file("decentral/appview/getPostThread.json"),
    );
    up.route(route("app.bsky.feed.getPostThread").status(400).body(r#"{"error":"NotFound","message":"Post not found: at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/zzz"}"#));
    let sources = sources_at(&up);
    let page = call(
        &sources,
        EndpointId::DecentralPost,
        "url=https://bsky.app/profile/bsky.app/post/3l6oveex3ii2l",
    )
    .await
    .expect("post");
    assert_items_valid(&page.items);
    let p = item(&page, 0);
    assert_eq!(
        p["id"], "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l",
        "the canonical at-uri"
    );
    assert_eq!(
        p["metrics"],
        json!({ "comments": 3, "likes": 50, "reposts": 4, "quotes": 2 })
    );
    assert_eq!(p["extra"]["thread_parents_returned"], 1);
    assert_eq!(
        p["extra"]["thread_replies_returned"], 2,
        "blocked and missing replies are not counted"
    );
    assert_eq!(
        p["extra"]["reply_root"],
        "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3root"
    );

    let gone = call(
        &sources,
        EndpointId::DecentralPost,
        "url=at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/zzz",
    )
    .await;
    assert!(matches!(gone, Err(CallError::Upstream(_))), "{gone:?}");
}
