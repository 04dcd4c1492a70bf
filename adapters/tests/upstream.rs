//! What reaches an upstream, whatever the client sends: values in URL paths arrive as one encoded
//! segment or not at all, ids taken from cursors and answers are checked against the upstream's id
//! grammar, the video id sent is the one validated, and redirects are followed only to public
//! addresses, at most 3 hops. Every check is on the request the fake upstream received.

mod support;

use adapters::api::EndpointId;
use adapters::sources::{CallError, Sources};
use adapters::upstream::cursor::{self, CursorKey, CursorKeys};
use support::{FakeUpstream, Route, assert_items_valid, at, call, query_of, sources, sources_with};

/// A query component, percent-encoded.
fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn paths(up: &FakeUpstream) -> Vec<String> {
    up.seen().into_iter().map(|s| s.path).collect()
}

#[tokio::test]
async fn a_fediverse_tag_is_one_path_segment() {
    let up = FakeUpstream::start().await;
    let sources = sources(&[at("fediverse.mastodon", up.url(""))]);
    // The tag grammar refuses every value that could change the path: 422, nothing sent.
    for tag in ["a/b", "x?y", "x#y", "%2e%2e", "../../admin", "..", "."] {
        assert!(
            EndpointId::FediverseTag
                .parse(&format!("query={}", enc(tag)))
                .is_err(),
            "tag {tag:?} passed the grammar"
        );
    }
    // A tag in another script is sent as one percent-encoded segment.
    up.reset();
    let _ = call(
        &sources,
        EndpointId::FediverseTag,
        &format!("query={}", enc("日本語")),
    )
    .await;
    assert_eq!(
        paths(&up),
        ["/api/v1/timelines/tag/%E6%97%A5%E6%9C%AC%E8%AA%9E"]
    );
}

const EP: &str = "/v1/microblog/profile/posts";

fn x_api(up: &FakeUpstream, keys: &CursorKeys) -> Sources {
    let s = sources(&[at("microblog.x_api", up.url("/x/2")).credential(Some("bearer"))]);
    s.set_cursor_keys(keys.clone());
    s
}

/// Even a genuinely sealed cursor (a bug in a source, a leaked secret) cannot put anything but a
/// numeric user id into the X API path; nor can the upstream's own answer.
#[tokio::test]
async fn x_user_ids_from_cursors_and_answers_are_checked() {
    let up = FakeUpstream::start().await;
    let keys = CursorKeys::new(CursorKey::new("t1", vec![9; 32]).unwrap());
    let sources = x_api(&up, &keys);
    for state in [
        "../../admin:tok",
        "1/2:tok",
        "1?x=2:tok",
        "%2e%2e:tok",
        "12",
        ":tok",
    ] {
        up.reset();
        let c = cursor::seal(&keys, "microblog.x_api", EP, state, cursor::now()).unwrap();
        let result = call(
            &sources,
            EndpointId::MicroblogProfilePosts,
            &format!("handle=XDevelopers&cursor={c}"),
        )
        .await;
        assert!(result.is_err(), "{state}: {result:?}");
        assert!(paths(&up).is_empty(), "{state}: sent {:?}", paths(&up));
    }

    // A fresh chain: the failures above opened the source's circuit breaker.
    let sources = x_api(&up, &keys);
    up.reset();
    up.route(
        Route::get("/x/2/users/by/username/XDevelopers")
            .body(r#"{"data":{"id":"1/../../2","username":"XDevelopers","name":"X"}}"#),
    );
    let result = call(
        &sources,
        EndpointId::MicroblogProfilePosts,
        "handle=XDevelopers",
    )
    .await;
    assert!(result.is_err(), "{result:?}");
    assert_eq!(paths(&up), ["/x/2/users/by/username/XDevelopers"]);
}

#[tokio::test]
async fn the_video_id_sent_is_the_one_validated() {
    let up = FakeUpstream::start().await;
    let sources = sources(&[at("video.data_api", up.url("/yt/v3")).credential(Some("k"))]);
    for id in [
        "dQw4w9WgXcQ",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
        "https://www.youtube.com/watch?list=PLx_1&v=dQw4w9WgXcQ&t=42s",
        "https://m.youtube.com/watch?ref=youtu.be/AAAAAAAAAAA&index=2&v=dQw4w9WgXcQ",
        "https://youtu.be/dQw4w9WgXcQ?t=42",
    ] {
        up.reset();
        let _ = call(&sources, EndpointId::VideoVideo, &format!("id={}", enc(id))).await;
        let sent = query_of(&up, "/yt/v3/videos");
        assert!(
            sent.contains(&("id".into(), "dQw4w9WgXcQ".into())),
            "{id}: {sent:?}"
        );
        up.reset();
        let _ = call(
            &sources,
            EndpointId::VideoVideoComments,
            &format!("id={}", enc(id)),
        )
        .await;
        let sent = query_of(&up, "/yt/v3/commentThreads");
        assert!(
            sent.contains(&("videoId".into(), "dQw4w9WgXcQ".into())),
            "{id}: {sent:?}"
        );
    }
    // Two `v` parameters: which one was meant is unknowable, so the request is refused.
    let two = enc("https://www.youtube.com/watch?v=AAAAAAAAAAA&v=dQw4w9WgXcQ");
    assert!(EndpointId::VideoVideo.parse(&format!("id={two}")).is_err());
}

/// The tech forum search, answered by the fake upstream with a redirect to `location`.
async fn redirected(top: &str, up: &FakeUpstream, location: &str) -> Result<(), CallError> {
    up.reset();
    up.route(
        Route::get("/api/v1/search")
            .status(302)
            .header("location", location),
    );
    let s = sources_with(top, &[at("techforum.algolia", up.url("/api/v1"))]);
    call(&s, EndpointId::TechforumSearch, "query=rust")
        .await
        .map(|_| ())
}

#[tokio::test]
async fn redirects_to_non_public_addresses_are_not_followed() {
    let up = FakeUpstream::start().await;
    let port = up.url("").rsplit(':').next().unwrap().to_string();
    // With the guard on (the default): `inside.test` resolves to loopback.
    let top = "[host_overrides]\n\"inside.test\" = [\"127.0.0.1\"]";
    for location in [
        format!("http://127.0.0.1:{port}/internal"),
        format!("http://[::1]:{port}/internal"),
        format!("http://inside.test:{port}/internal"),
        format!("http://localhost:{port}/internal"),
        "http://10.0.0.1/internal".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "file:///etc/passwd".to_string(),
        "ftp://example.com/x".to_string(),
    ] {
        let result = redirected(top, &up, &location).await;
        assert!(
            matches!(result, Err(CallError::AllSourcesFailed(_))),
            "{location}: {result:?}"
        );
        assert_eq!(paths(&up), ["/api/v1/search"], "{location} was requested");
    }
}

#[tokio::test]
async fn at_most_three_redirects_are_followed() {
    let up = FakeUpstream::start().await;
    // The guard's test switch lets the hops stay on the fake upstream; only the count is tested.
    let top = "allow_private_hosts = true";
    let hop = |n: usize| up.url(&format!("/hop{n}"));
    let chain = |hops: usize| {
        up.reset();
        up.route(
            Route::get("/api/v1/search")
                .status(302)
                .header("location", &hop(1)),
        );
        for n in 1..hops {
            up.route(
                Route::get(&format!("/hop{n}"))
                    .status(302)
                    .header("location", &hop(n + 1)),
            );
        }
        up.route(Route::get(&format!("/hop{hops}")).file("techforum/algolia/search_story.json"));
    };
    let s = sources_with(top, &[at("techforum.algolia", up.url("/api/v1"))]);
    chain(3);
    let page = call(&s, EndpointId::TechforumSearch, "query=rust")
        .await
        .expect("three redirects are followed");
    assert_items_valid(&page.items);
    assert_eq!(paths(&up).len(), 4);
    chain(4);
    let result = call(&s, EndpointId::TechforumSearch, "query=rust").await;
    assert!(result.is_err(), "{result:?}");
    assert!(
        !paths(&up).contains(&"/hop4".to_string()),
        "the fourth hop was followed: {:?}",
        paths(&up)
    );
}

/// `%XX` sequences decoded (and nothing else), to compare what arrived with what was sent.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every source that puts a client's value into a URL path: a hostile value is refused by the
/// parameter's grammar or the path helper (nothing sent), or arrives as exactly one segment that
/// decodes back to the value.
#[tokio::test]
async fn hostile_values_never_change_an_upstream_path() {
    let up = FakeUpstream::start().await;
    // (source, base path, endpoint, query with `{}` for the value, path before the value, after it)
    let cases: &[(&str, &str, EndpointId, &str, &str, &str)] = &[
        (
            "code.github",
            "/gh",
            EndpointId::CodeProfile,
            "handle={}",
            "/gh/users/",
            "",
        ),
        (
            "code.github",
            "/gh",
            EndpointId::CodeRepo,
            "id={}%2Fname",
            "/gh/repos/",
            "/name",
        ),
        (
            "code.github",
            "/gh",
            EndpointId::CodeRepo,
            "id=owner%2F{}",
            "/gh/repos/owner/",
            "",
        ),
        (
            "forum.reddit_json",
            "/rd",
            EndpointId::ForumCommunity,
            "community={}",
            "/rd/r/",
            "/about.json",
        ),
        (
            "forum.reddit_json",
            "/rd",
            EndpointId::ForumProfile,
            "handle={}",
            "/rd/user/",
            "/about.json",
        ),
        (
            "forum.reddit_json",
            "/rd",
            EndpointId::ForumPost,
            "id={}",
            "/rd/comments/",
            ".json",
        ),
        (
            "techforum.algolia",
            "/al",
            EndpointId::TechforumStory,
            "id={}",
            "/al/items/",
            "",
        ),
        (
            "techforum.algolia",
            "/al",
            EndpointId::TechforumProfile,
            "handle={}",
            "/al/users/",
            "",
        ),
        (
            "techforum.firebase",
            "/fb",
            EndpointId::TechforumProfile,
            "handle={}",
            "/fb/user/",
            ".json",
        ),
        (
            "microblog.fxtwitter",
            "/fx",
            EndpointId::MicroblogProfile,
            "handle={}",
            "/fx/",
            "",
        ),
        (
            "microblog.fxtwitter",
            "/fx",
            EndpointId::MicroblogPost,
            "id={}",
            "/fx/status/",
            "",
        ),
        (
            "microblog.x_api",
            "/x",
            EndpointId::MicroblogProfile,
            "handle={}",
            "/x/users/by/username/",
            "",
        ),
        (
            "fediverse.mastodon",
            "",
            EndpointId::FediverseTag,
            "query={}",
            "/api/v1/timelines/tag/",
            "",
        ),
    ];
    let hostile = [
        "..",
        ".",
        "a/b",
        "x?y",
        "x#y",
        "%2e%2e",
        "../../admin",
        "a b",
        // Passes the tag grammar, and must still arrive as one segment.
        "日本語",
    ];
    let mut sent = 0;
    for (id, base, endpoint, query, before, after) in cases {
        // Only this source is on, so nothing can fall back to a real upstream.
        let mut tables: Vec<support::SourceAt> = adapters::platforms::all()
            .iter()
            .map(|s| s.meta().id)
            .filter(|other| other != id)
            .map(support::disabled)
            .collect();
        tables.push(at(id, up.url(base)).credential(Some("cred")));
        let s = sources(&tables);
        for value in hostile {
            up.reset();
            let query = query.replace("{}", &enc(value));
            let Ok(request) = endpoint.parse(&query) else {
                continue; // refused by the grammar: 422, nothing sent
            };
            let _ = s.call(&request).await;
            for seen in up.seen() {
                sent += 1;
                let rest = seen
                    .path
                    .strip_prefix(before)
                    .and_then(|r| r.strip_suffix(after))
                    .unwrap_or_else(|| panic!("{id} {value:?}: sent {}", seen.path));
                assert!(!rest.contains('/'), "{id} {value:?}: {}", seen.path);
                assert_eq!(percent_decoded(rest), *value, "{id}: {}", seen.path);
            }
        }
    }
    assert!(
        sent > 0,
        "at least the non-ASCII tag reaches an upstream, encoded"
    );
}

/// A sealed cursor is still refused, before anything is sent, when it has expired or when its
/// source does not serve the endpoint on this deployment.
#[tokio::test]
async fn expired_and_orphaned_cursors_are_refused_before_sending() {
    let up = FakeUpstream::start().await;
    let keys = CursorKeys::new(CursorKey::new("t1", vec![9; 32]).unwrap());
    let sources = x_api(&up, &keys);
    let day_ago = cursor::now() - cursor::LIFETIME.as_secs() - 60;
    let expired = cursor::seal(&keys, "microblog.x_api", EP, "1:tok", day_ago).unwrap();
    let orphan = cursor::seal(&keys, "microblog.fxtwitter", EP, "1:tok", cursor::now()).unwrap();
    for (c, why) in [
        (expired, cursor::Refusal::Expired),
        (orphan, cursor::Refusal::SourceGone),
    ] {
        let result = call(
            &sources,
            EndpointId::MicroblogProfilePosts,
            &format!("handle=XDevelopers&cursor={c}"),
        )
        .await;
        assert_eq!(result.unwrap_err(), CallError::BadCursor(why));
    }
    assert!(paths(&up).is_empty(), "sent {:?}", paths(&up));
}
