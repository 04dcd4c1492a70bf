//! video sources against recorded upstream answers: the keyed Data API, the channel feed, the
//! fallback between them, cursors and the key's handling.

mod support;

use adapters::api::EndpointId;
use adapters::item::Page;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, item, query_of, sources};

const KEY: &str = "AIzaDummyKey-123";

/// Sources pointed at the fake upstream; the Data API gets a key when `key` is set.
fn sources_at(up: &FakeUpstream, key: Option<&str>) -> Sources {
    sources(&[
        at("video.data_api", up.url("/yt/v3"))
            .timeout_ms(500)
            .credential(key),
        at("video.rss", up.url("/www")),
    ])
}

#[tokio::test]
async fn search_fills_metrics_from_the_video_list() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/yt/v3/search")
            .query("q", "never gonna")
            .query("type", "video")
            .query("part", "snippet")
            .query("maxResults", "3")
            .file("video/data_api/search.json"),
    );
    up.route(
        Route::get("/yt/v3/videos")
            .query("id", "dQw4w9WgXcQ,gone0000001,x_Y-z123456")
            .query("part", "snippet,statistics,contentDetails")
            .file("video/data_api/videos_search.json"),
    );
    let page = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoSearch,
        "query=never+gonna&limit=3",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2, "the private video is left out");
    assert_eq!(page.total, Some(1_000_000));
    let a = item(&page, 0);
    assert_eq!(a["id"], "dQw4w9WgXcQ", "search order kept");
    assert_eq!(a["type"], "video");
    assert_eq!(a["url"], "https://www.youtube.com/watch?v=dQw4w9WgXcQ");
    assert_eq!(a["author"], "UCuAXFkgsw1L7xaCfnd5JJOw");
    assert_eq!(a["author_name"], "Rick Astley");
    assert_eq!(a["created_at"], "2009-10-25T06:57:33Z");
    assert_eq!(
        a["metrics"],
        json!({"views": 1612345678_u64, "likes": 18234567, "comments": 2345678})
    );
    assert!(a["text"].as_str().unwrap().contains("📚 OUT NOW!"));
    assert_eq!(a["extra"]["duration"], "PT3M33S");
    assert_eq!(
        a["extra"]["channel_url"],
        "https://www.youtube.com/channel/UCuAXFkgsw1L7xaCfnd5JJOw"
    );
    assert_eq!(
        a["extra"]["thumbnail"],
        "https://i.ytimg.com/vi/dQw4w9WgXcQ/maxresdefault.jpg"
    );
    let b = item(&page, 1);
    assert_eq!(b["title"], "Rust & WebAssembly: what's new in 2026?");
    assert_eq!(b["text"], Value::Null, "empty description");
    assert_eq!(b["created_at"], "2026-03-10T19:00:07Z", "offset normalised");
    assert_eq!(
        b["metrics"],
        json!({"views": 0}),
        "hidden likes and disabled comments are absent, not 0"
    );
    assert_eq!(b["extra"]["live"], "upcoming");
    for path in ["/yt/v3/search", "/yt/v3/videos"] {
        assert!(
            query_of(&up, path).contains(&("key".into(), KEY.into())),
            "key= sent to {path}"
        );
    }
}

#[tokio::test]
async fn comments_follow_the_cursor() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/yt/v3/commentThreads")
            .query("pageToken", "QURTSl9pM2xBbmNQ")
            .file("video/data_api/comments_p2.json"),
    );
    up.route(
        Route::get("/yt/v3/commentThreads")
            .query("videoId", "dQw4w9WgXcQ")
            .query("part", "snippet")
            .file("video/data_api/comments_p1.json"),
    );
    let sources = sources_at(&up, Some(KEY));
    let page = call(
        &sources,
        EndpointId::VideoVideoComments,
        "id=https%3A%2F%2Fwww.youtube.com%2Fwatch%3Fv%3DdQw4w9WgXcQ",
    )
    .await
    .expect("first page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2);
    let c = item(&page, 0);
    assert_eq!(c["type"], "comment");
    assert_eq!(c["id"], "UgzAbC123");
    assert_eq!(c["text"], "I can't believe it's 2026 & I'm still here");
    assert_eq!(
        c["url"],
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&lc=UgzAbC123"
    );
    assert_eq!(c["author"], "UCaaaaaaaaaaaaaaaaaaaaaa");
    assert_eq!(c["author_name"], "@someone-42");
    assert_eq!(c["metrics"], json!({"likes": 1204, "comments": 17}));
    assert_eq!(c["extra"]["video_id"], "dQw4w9WgXcQ");
    assert!(c["extra"].get("updated_at").is_none(), "never edited");
    let d = item(&page, 1);
    assert_eq!(d["text"], "nice 🎵", "HTML display text as plain text");
    assert_eq!(d["author"], Value::Null, "no channel id");
    assert_eq!(d["created_at"], "2026-02-01T09:00:00Z");
    assert_eq!(d["extra"]["updated_at"], "2026-02-02T10:00:00Z");
    let cursor = page.next_cursor.expect("a next page");
    assert!(!cursor.contains("QURTSl9pM2xBbmNQ"), "cursors are opaque");
    let next = call(
        &sources,
        EndpointId::VideoVideoComments,
        &format!("id=dQw4w9WgXcQ&cursor={cursor}"),
    )
    .await
    .expect("second page");
    assert_items_valid(&next.items);
    assert_eq!(item(&next, 0)["id"], "UgxLast789");
    assert_eq!(next.next_cursor, None, "last page");
}

#[tokio::test]
async fn disabled_comments_are_an_empty_page() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/yt/v3/commentThreads")
            .status(403)
            .file("video/data_api/comments_disabled.json"),
    );
    let page = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoVideoComments,
        "id=dQw4w9WgXcQ",
    )
    .await
    .expect("empty page");
    assert_eq!((page.items.len(), page.next_cursor), (0, None));
}

#[tokio::test]
async fn channel_by_handle_hides_a_hidden_subscriber_count() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/yt/v3/channels")
            .query("forHandle", "@rickastleyyt")
            .file("video/data_api/channel.json"),
    );
    let page = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoChannel,
        "id=%40rickastleyyt",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    let c = item(&page, 0);
    assert_eq!(c["type"], "channel");
    assert_eq!(c["id"], "UCuAXFkgsw1L7xaCfnd5JJOw");
    assert_eq!(c["title"], "Rick Astley");
    assert_eq!(c["text"], "Official channel & more");
    assert_eq!(c["author"], "UCuAXFkgsw1L7xaCfnd5JJOw");
    assert_eq!(c["created_at"], "2015-02-01T16:32:37Z");
    assert_eq!(c["metrics"], json!({"views": 2790000000_u64}));
    assert_eq!(c["extra"]["handle"], "@rickastleyyt");
    assert_eq!(c["extra"]["video_count"], 312);
    assert!(c["extra"].get("subscribers").is_none());

    up.reset();
    up.route(Route::get("/yt/v3/channels").file("video/data_api/channel_none.json"));
    let err = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoChannel,
        "id=UCuAXFkgsw1L7xaCfnd5JJOw",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Upstream(_)), "{err:?}");
}

#[tokio::test]
async fn unknown_video_ends_the_chain() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/yt/v3/videos").file("video/data_api/videos_none.json"));
    let err = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoVideo,
        "id=https%3A%2F%2Fyoutu.be%2FdQw4w9WgXcQ",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Upstream(_)), "{err:?}");
    assert_eq!(
        query_of(&up, "/yt/v3/videos")
            .iter()
            .find(|(k, _)| k == "id")
            .map(|(_, v)| v.as_str()),
        Some("dQw4w9WgXcQ"),
        "the id is taken from the short link"
    );
}

#[tokio::test]
async fn channel_uploads_read_the_uploads_playlist() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/yt/v3/playlistItems")
            .query("playlistId", "UUuAXFkgsw1L7xaCfnd5JJOw")
            .file("video/data_api/playlist.json"),
    );
    up.route(
        Route::get("/yt/v3/videos")
            .query("id", "dQw4w9WgXcQ,gone0000001")
            .file("video/data_api/videos_search.json"),
    );
    let page = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoChannelVideos,
        "id=UCuAXFkgsw1L7xaCfnd5JJOw",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 1);
    assert_eq!(item(&page, 0)["id"], "dQw4w9WgXcQ");
}

async fn check_feed(page: &Page) {
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2);
    let a = item(page, 0);
    assert_eq!(a["id"], "AbCdEfGhIj0");
    assert_eq!(a["type"], "video");
    assert_eq!(a["title"], "Rick Astley & Friends – Live (Tour 2026) 🎤");
    assert_eq!(
        a["text"],
        "Tickets: https://example.com/tour\nThanks for watching <3"
    );
    assert_eq!(a["url"], "https://www.youtube.com/watch?v=AbCdEfGhIj0");
    assert_eq!(a["author"], "UCuAXFkgsw1L7xaCfnd5JJOw");
    assert_eq!(a["author_name"], "Rick Astley");
    assert_eq!(a["created_at"], "2026-03-09T17:00:06Z");
    assert_eq!(
        a["metrics"],
        json!({"views": 412093, "rating": 5, "rating_count": 20931})
    );
    assert_eq!(
        a["extra"]["thumbnail"],
        "https://i4.ytimg.com/vi/AbCdEfGhIj0/hqdefault.jpg"
    );
    let b = item(page, 1);
    assert_eq!(b["text"], Value::Null);
    assert_eq!(
        b["metrics"],
        json!({"views": 0}),
        "no rating, not a 0 rating"
    );
}

#[tokio::test]
async fn channel_uploads_fall_back_to_the_feed() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/yt/v3/playlistItems")
            .status(403)
            .file("video/data_api/quota.json"),
    );
    up.route(
        Route::get("/www/feeds/videos.xml")
            .query("channel_id", "UCuAXFkgsw1L7xaCfnd5JJOw")
            .file("video/rss/channel.xml"),
    );
    let page = call(
        &sources_at(&up, Some(KEY)),
        EndpointId::VideoChannelVideos,
        "id=UCuAXFkgsw1L7xaCfnd5JJOw",
    )
    .await
    .expect("the feed answers");
    check_feed(&page).await;
}

#[tokio::test]
async fn without_a_key_only_the_feed_serves() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/www/feeds/videos.xml").file("video/rss/channel.xml"));
    let sources = sources_at(&up, None);
    let page = call(
        &sources,
        EndpointId::VideoChannelVideos,
        "id=UCuAXFkgsw1L7xaCfnd5JJOw",
    )
    .await
    .expect("page");
    check_feed(&page).await;
    assert!(up.seen().iter().all(|s| s.path.starts_with("/www/")));
    for (endpoint, query) in [
        (EndpointId::VideoSearch, "query=x"),
        (EndpointId::VideoVideoTranscript, "id=dQw4w9WgXcQ"),
    ] {
        let err = call(&sources, endpoint, query).await.unwrap_err();
        assert!(matches!(err, CallError::NotConfigured(_)), "{err:?}");
    }
}

#[tokio::test]
async fn all_failing_never_shows_the_key() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/www/feeds/videos.xml").body("<html>oops</html>"));
    // The Data API's address refuses connections; the transport error quotes the URL with `key=`.
    let toml = format!(
        "[source.\"video.data_api\"]\nbase_url = \"http://127.0.0.1:1/yt\"\ncredential = \"{KEY}\"\n\
         [source.\"video.rss\"]\nbase_url = \"{}\"\n",
        up.url("/www")
    );
    let sources = Sources::new(&toml::from_str(&toml).expect("config")).expect("sources");
    let err = call(
        &sources,
        EndpointId::VideoChannelVideos,
        "id=UCuAXFkgsw1L7xaCfnd5JJOw",
    )
    .await
    .unwrap_err();
    let CallError::AllSourcesFailed(why) = err else {
        panic!("{err:?}")
    };
    assert!(
        why.contains("video.data_api") && why.contains("video.rss"),
        "{why}"
    );
    assert!(!why.contains(KEY), "the key leaked: {why}");
}
