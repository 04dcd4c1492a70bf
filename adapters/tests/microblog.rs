//! microblog sources against recorded upstream answers: logged-out post lookups (embed backend,
//! FxTwitter), the keyed official API, fallback, tombstones and cursors.

mod support;

use adapters::api::EndpointId;
use adapters::platforms::microblog::syndication::token;
use adapters::sources::{CallError, Sources};
use serde_json::{Value, json};
use support::{FakeUpstream, Route, assert_items_valid, at, call, header, item, sources};

const BEARER: &str = "AAAAdummy-bearer";

fn sources_at(up: &FakeUpstream, bearer: bool) -> Sources {
    sources(&[
        at("microblog.syndication", up.url("/syn")).timeout_ms(300),
        at("microblog.fxtwitter", up.url("/fx")),
        at("microblog.x_api", up.url("/x/2")).credential(bearer.then_some(BEARER)),
    ])
}

#[tokio::test]
async fn embed_lookup_skips_missing_and_marks_tombstones() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/syn/tweet-result")
            .query("id", "20")
            .query("lang", "en")
            .query("token", "6dq1a2xwd93")
            .file("microblog/syndication/tweet_20.json"),
    );
    up.route(
        Route::get("/syn/tweet-result")
            .query("id", "1899123456789012345")
            .query("token", "4lq9swfma32")
            .file("microblog/syndication/tweet_reply.json"),
    );
    up.route(
        Route::get("/syn/tweet-result")
            .query("id", "1628832338187636740")
            .file("microblog/syndication/tombstone.json"),
    );
    // id 21: no route, so 404.
    let page = call(
        &sources_at(&up, false),
        EndpointId::MicroblogPost,
        "id=20,21,1899123456789012345,1628832338187636740",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3, "the missing post is left out");
    let a = item(&page, 0);
    assert_eq!(a["id"], "20");
    assert_eq!(a["type"], "post");
    assert_eq!(a["title"], Value::Null);
    assert_eq!(a["text"], "just setting up my twttr");
    assert_eq!(a["url"], "https://x.com/jack/status/20");
    assert_eq!(a["author"], "jack");
    assert_eq!(a["author_name"], "jack");
    assert_eq!(a["created_at"], "2006-03-21T20:50:14Z");
    assert_eq!(a["metrics"], json!({"likes": 300214, "comments": 16234}));
    assert_eq!(a["extra"]["is_reply"], false);
    assert_eq!(a["extra"]["lang"], "en");
    let b = item(&page, 1);
    assert_eq!(b["type"], "comment");
    assert_eq!(b["text"], "@jack Danke & Grüße <3 — 🚀");
    assert_eq!(b["author_name"], "Jürgen Ä.");
    assert_eq!(b["created_at"], "2026-03-11T16:42:05Z");
    assert_eq!(b["metrics"], json!({"likes": 0, "comments": 0}));
    assert_eq!(b["extra"]["is_reply"], true);
    assert_eq!(b["extra"]["in_reply_to"], "20");
    let c = item(&page, 2);
    assert_eq!(c["id"], "1628832338187636740");
    assert_eq!(c["extra"]["unavailable"], true);
    assert!(
        c["extra"]["reason"]
            .as_str()
            .unwrap()
            .contains("no longer exists")
    );
    assert_eq!(
        (c["text"].clone(), c["author"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(token("1628832338187636740"), "3y54libozsy");
}

#[tokio::test]
async fn every_post_missing_ends_the_chain() {
    let up = FakeUpstream::start().await;
    let err = call(
        &sources_at(&up, true),
        EndpointId::MicroblogPost,
        "id=21,22",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Upstream(_)), "{err:?}");
    assert!(
        up.seen().iter().all(|s| s.path == "/syn/tweet-result"),
        "not found is not retried elsewhere"
    );
}

#[tokio::test]
async fn failing_embed_backend_falls_back_to_fxtwitter() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/syn/tweet-result")
            .status(500)
            .body("<html>error</html>"),
    );
    up.route(Route::get("/fx/status/20").file("microblog/fxtwitter/status.json"));
    up.route(
        Route::get("/fx/status/1899123456789012345")
            .file("microblog/fxtwitter/status_classic_date.json"),
    );
    up.route(
        Route::get("/fx/status/21")
            .status(404)
            .file("microblog/fxtwitter/not_found.json"),
    );
    let page = call(
        &sources_at(&up, false),
        EndpointId::MicroblogPost,
        "id=20,21,1899123456789012345",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 2);
    let a = item(&page, 0);
    assert_eq!(
        a["created_at"], "2006-03-21T20:50:14Z",
        "created_timestamp (unix)"
    );
    assert_eq!(
        a["metrics"],
        json!({"likes": 300214, "comments": 16234, "reposts": 121034}),
        "null views left out"
    );
    assert_eq!(a["extra"]["author_followers"], 6412345);
    let b = item(&page, 1);
    assert_eq!(b["type"], "comment");
    assert_eq!(b["created_at"], "2026-03-11T16:42:05Z", "classic date form");
    assert_eq!(
        b["metrics"],
        json!({"likes": 0, "comments": 0, "reposts": 0, "quotes": 2, "views": 1534})
    );
}

#[tokio::test]
async fn garbage_everywhere_is_all_sources_failed() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/syn/tweet-result").body("not json"));
    up.route(Route::get("/fx/status/20").hang());
    up.route(
        Route::get("/x/2/tweets")
            .status(401)
            .file("microblog/x_api/unauthorized.json"),
    );
    let toml = format!(
        "call_deadline_ms = 2000\n[source.\"microblog.syndication\"]\nbase_url = \"{}\"\n\
         [source.\"microblog.fxtwitter\"]\nbase_url = \"{}\"\ntimeout_ms = 200\n\
         [source.\"microblog.x_api\"]\nbase_url = \"{}\"\ncredential = \"{BEARER}\"\n",
        up.url("/syn"),
        up.url("/fx"),
        up.url("/x/2")
    );
    let sources = Sources::new(&toml::from_str(&toml).expect("config")).expect("sources");
    let err = call(&sources, EndpointId::MicroblogPost, "id=20")
        .await
        .unwrap_err();
    let CallError::AllSourcesFailed(why) = err else {
        panic!("{err:?}")
    };
    for id in [
        "microblog.syndication",
        "microblog.fxtwitter",
        "microblog.x_api",
    ] {
        assert!(why.contains(id), "{why}");
    }
    assert!(!why.contains(BEARER));
}

#[tokio::test]
async fn fxtwitter_profile() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/fx/jack").file("microblog/fxtwitter/user.json"));
    let page = call(
        &sources_at(&up, false),
        EndpointId::MicroblogProfile,
        "handle=jack",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    let p = item(&page, 0);
    assert_eq!(p["type"], "profile");
    assert_eq!(p["id"], "12");
    assert_eq!(p["title"], "jack");
    assert_eq!(p["text"], "no state is the best state & more");
    assert_eq!(p["url"], "https://x.com/jack");
    assert_eq!(p["created_at"], "2006-03-21T20:50:14Z");
    assert_eq!(p["extra"]["followers"], 6412345);
    assert_eq!(p["extra"]["posts_count"], 29876);
    assert_eq!(p["extra"]["verified"], true);
    assert!(
        p["extra"].get("location").is_none(),
        "empty location left out"
    );

    up.reset();
    up.route(
        Route::get("/fx/gone_user")
            .status(404)
            .body("{\"code\":404,\"message\":\"User not found\"}"),
    );
    let err = call(
        &sources_at(&up, false),
        EndpointId::MicroblogProfile,
        "handle=gone_user",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Upstream(_)), "{err:?}");
}

#[tokio::test]
async fn search_needs_the_token() {
    let up = FakeUpstream::start().await;
    let err = call(
        &sources_at(&up, false),
        EndpointId::MicroblogSearch,
        "query=rust",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::NotConfigured(_)), "{err:?}");
}

#[tokio::test]
async fn official_search_maps_and_follows_the_cursor() {
    let up = FakeUpstream::start().await;
    up.route(
        Route::get("/x/2/tweets/search/recent")
            .query("next_token", "b26v89c19zqg8o3fr5")
            .file("microblog/x_api/search_p2.json"),
    );
    up.route(
        Route::get("/x/2/tweets/search/recent")
            .query("query", "rust (async OR await)")
            .query("sort_order", "relevancy")
            .query("expansions", "author_id")
            .file("microblog/x_api/search_p1.json"),
    );
    let sources = sources_at(&up, true);
    let page = call(
        &sources,
        EndpointId::MicroblogSearch,
        "query=rust+%28async+OR+await%29&sort=top",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3);
    let a = item(&page, 0);
    assert_eq!(a["text"], "Rust & async: thread 🧵");
    assert_eq!(
        a["url"],
        "https://x.com/XDevelopers/status/1900000000000000001"
    );
    assert_eq!(a["author"], "XDevelopers");
    assert_eq!(a["author_name"], "Developers");
    assert_eq!(
        a["metrics"],
        json!({"likes": 104, "comments": 3, "reposts": 12, "quotes": 1, "views": 20345})
    );
    assert_eq!(a["extra"]["author_followers"], 700123);
    assert_eq!(a["extra"]["is_reply"], false);
    let b = item(&page, 1);
    assert_eq!(b["type"], "comment");
    assert_eq!(b["extra"]["in_reply_to"], "1900000000000000001");
    assert_eq!(b["extra"]["author_followers"], 0);
    let c = item(&page, 2);
    assert_eq!(
        c["text"], "a long post, in full, with <html>",
        "note_tweet wins"
    );
    assert_eq!(c["author"], Value::Null, "author not in includes");
    assert_eq!(c["url"], "https://x.com/i/status/1900000000000000003");
    assert_eq!(c["metrics"], json!({}));
    let auth = header(&up.seen()[0], "authorization");
    assert_eq!(auth.as_deref(), Some(format!("Bearer {BEARER}").as_str()));
    let cursor = page.next_cursor.expect("next page");
    let next = call(
        &sources,
        EndpointId::MicroblogSearch,
        &format!("query=rust+%28async+OR+await%29&sort=top&cursor={cursor}"),
    )
    .await
    .expect("second page");
    assert_eq!((next.items.len(), next.next_cursor), (0, None));
}

#[tokio::test]
async fn profile_posts_carry_the_user_id_in_the_cursor() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/x/2/users/by/username/XDevelopers").file("microblog/x_api/user.json"));
    up.route(
        Route::get("/x/2/users/2244994945/tweets")
            .query("pagination_token", "7140dibdnow9c7btw4")
            .file("microblog/x_api/search_p2.json"),
    );
    up.route(
        Route::get("/x/2/users/2244994945/tweets")
            .query("exclude", "replies")
            .file("microblog/x_api/timeline.json"),
    );
    let sources = sources_at(&up, true);
    let page = call(
        &sources,
        EndpointId::MicroblogProfilePosts,
        "handle=XDevelopers",
    )
    .await
    .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 1);
    let cursor = page.next_cursor.expect("next page");
    let next = call(
        &sources,
        EndpointId::MicroblogProfilePosts,
        &format!("handle=XDevelopers&cursor={cursor}"),
    )
    .await
    .expect("second page");
    assert_eq!(next.items.len(), 0);
    let lookups = up
        .seen()
        .iter()
        .filter(|s| s.path.starts_with("/x/2/users/by/"))
        .count();
    assert_eq!(lookups, 1, "the second page needs no user lookup");

    // replies=true drops the exclusion.
    up.reset();
    up.route(Route::get("/x/2/users/by/username/XDevelopers").file("microblog/x_api/user.json"));
    up.route(Route::get("/x/2/users/2244994945/tweets").file("microblog/x_api/timeline.json"));
    call(
        &sources,
        EndpointId::MicroblogProfilePosts,
        "handle=XDevelopers&replies=true",
    )
    .await
    .expect("page");
    let timeline = up
        .seen()
        .into_iter()
        .find(|s| s.path.ends_with("/tweets"))
        .unwrap();
    assert!(timeline.query.iter().all(|(k, _)| k != "exclude"));
}

#[tokio::test]
async fn official_profile_and_missing_user() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/x/2/users/by/username/XDevelopers").file("microblog/x_api/user.json"));
    up.route(
        Route::get("/x/2/users/by/username/nobody_here_x")
            .file("microblog/x_api/user_missing.json"),
    );
    // FxTwitter is first for profiles; make it fail so the official API answers.
    up.route(Route::get("/fx/XDevelopers").status(503).body(""));
    up.route(Route::get("/fx/nobody_here_x").status(503).body(""));
    let sources = sources_at(&up, true);
    let page = call(&sources, EndpointId::MicroblogProfile, "handle=XDevelopers")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    let p = item(&page, 0);
    assert_eq!(p["id"], "2244994945");
    assert_eq!(
        p["text"],
        "The voice of the X Dev team & your official source"
    );
    assert_eq!(p["created_at"], "2013-12-14T04:35:55Z");
    assert_eq!(p["extra"]["followers"], 700123);
    let err = call(
        &sources,
        EndpointId::MicroblogProfile,
        "handle=nobody_here_x",
    )
    .await
    .unwrap_err();
    assert!(matches!(err, CallError::Upstream(_)), "{err:?}");
}

#[tokio::test]
async fn official_lookup_and_comments() {
    let up = FakeUpstream::start().await;
    up.route(Route::get("/syn/tweet-result").status(503).body(""));
    up.route(Route::get("/fx/status/20").status(503).body(""));
    up.route(
        Route::get("/x/2/tweets")
            .query("ids", "20,21")
            .file("microblog/x_api/lookup.json"),
    );
    up.route(
        Route::get("/x/2/tweets/search/recent")
            .query("query", "conversation_id:1900000000000000001")
            .file("microblog/x_api/search_p1.json"),
    );
    let sources = sources_at(&up, true);
    let page = call(&sources, EndpointId::MicroblogPost, "id=20,21")
        .await
        .expect("page");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 1);
    assert_eq!(item(&page, 0)["metrics"]["quotes"], 12000);
    let page = call(
        &sources,
        EndpointId::MicroblogPostComments,
        "id=1900000000000000001",
    )
    .await
    .expect("comments");
    assert_items_valid(&page.items);
    assert_eq!(page.items.len(), 3);
    assert!(page.next_cursor.is_some());
}
