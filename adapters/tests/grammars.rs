//! The shared value grammars against their own examples and against the spec's wording (section 4):
//! boundary lengths, prefixes, `.`/`..` in repository ids, id counts and lengths, watch URL forms.

use adapters::api::grammar;
use adapters::request::Grammar;

fn g(name: &str) -> &'static Grammar {
    grammar::ALL
        .iter()
        .copied()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no grammar `{name}` in the catalogue"))
}

fn rep(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}

#[test]
fn catalogue_examples_get_their_verdict() {
    let mut checked = 0;
    for g in grammar::ALL {
        for v in g.valid {
            assert!(
                g.accepts(v),
                "grammar `{}` refuses its valid example {v:?}",
                g.name
            );
            checked += 1;
        }
        for v in g.invalid {
            assert!(
                !g.accepts(v),
                "grammar `{}` accepts its invalid example {v:?}",
                g.name
            );
            checked += 1;
        }
        for v in g.invalid_by_parser {
            // These pass the pattern (so JSON Schema accepts them) and only the typed parser refuses.
            assert!(
                g.is_match(v),
                "grammar `{}`: {v:?} should pass the pattern",
                g.name
            );
            let check = g
                .parser_check
                .expect("a grammar with invalid_by_parser has a parser");
            assert!(
                check(v).is_err(),
                "grammar `{}`: parser accepts {v:?}",
                g.name
            );
            assert!(!g.accepts(v));
            checked += 1;
        }
    }
    assert!(
        checked > 200,
        "only {checked} examples: the catalogue lost its examples?"
    );
}

#[test]
fn every_shared_grammar_has_examples_both_ways() {
    // Inline patterns of single parameters are named `<operation>_<parameter>` and carry no
    // examples; every grammar declared under `grammars:` must show both verdicts.
    let shared = grammar::ALL
        .iter()
        .filter(|g| !g.valid.is_empty() || !g.invalid.is_empty());
    let mut n = 0;
    for g in shared {
        assert!(
            !g.valid.is_empty() && !g.invalid.is_empty(),
            "grammar `{}`",
            g.name
        );
        n += 1;
    }
    assert!(n >= 30, "{n} grammars with examples");
}

/// (grammar, value, accepted?) straight from the spec's wording.
fn spec_cases() -> Vec<(&'static str, String, bool)> {
    let s = |v: &str| v.to_string();
    let mut c = vec![
        // forum community: 2-21 letters, digits, underscore, optional leading prefix with slash
        ("forum_community", s("ab"), true),
        ("forum_community", s("a"), false),
        ("forum_community", rep('c', 21), true),
        ("forum_community", rep('c', 22), false),
        ("forum_community", format!("r/{}", rep('c', 21)), true),
        ("forum_community", s("r/rust"), true),
        ("forum_community", s("/r/rust"), true),
        ("forum_community", s("rust-lang"), false),
        // forum handle: 3-20 letters, digits, underscore, hyphen; optional prefix with slash
        ("forum_handle", s("abc"), true),
        ("forum_handle", s("ab"), false),
        ("forum_handle", rep('h', 20), true),
        ("forum_handle", rep('h', 21), false),
        ("forum_handle", s("u/some-user"), true),
        ("forum_handle", s("/u/some_user"), true),
        // microblog handle: 1-15 letters, digits, underscore; no leading @
        ("microblog_handle", s("a"), true),
        ("microblog_handle", rep('m', 15), true),
        ("microblog_handle", rep('m', 16), false),
        ("microblog_handle", s("@jack"), false),
        // microblog post: one id of 1-25 digits or up to 5 comma-separated
        ("microblog_post_ids", rep('1', 25), true),
        ("microblog_post_ids", rep('1', 26), false),
        ("microblog_post_ids", s("1,2,3,4,5"), true),
        ("microblog_post_ids", s("1,2,3,4,5,6"), false),
        (
            "microblog_post_ids",
            format!("{0},{0},{0},{0},{0}", rep('9', 25)),
            true,
        ),
        ("microblog_post_ids", s("1,,2"), false),
        ("microblog_post_id", rep('1', 25), true),
        ("microblog_post_id", rep('1', 26), false),
        ("microblog_post_id", s("1,2"), false),
        // photo handle: 1-30 of letters, digits, dot, underscore, at least one letter or digit
        ("photo_handle", s("a"), true),
        ("photo_handle", rep('p', 30), true),
        ("photo_handle", rep('p', 31), false),
        ("photo_handle", s("a.b_c"), true),
        ("photo_handle", s("._."), false),
        ("photo_handle", s("@natgeo"), false),
        // short-video handle: same form, 1-24
        ("shortvideo_handle", rep('s', 24), true),
        ("shortvideo_handle", rep('s', 25), false),
        ("shortvideo_handle", s("__"), false),
        // video id: 11 characters, or a watch URL in the long form or the short-link form
        ("video_ref", s("dQw4w9WgXcQ"), true),
        ("video_ref", s("dQw4w9W-_cQ"), true),
        ("video_ref", rep('v', 10), false),
        ("video_ref", rep('v', 12), false),
        (
            "video_ref",
            s("https://www.youtube.com/watch?v=dQw4w9WgXcQ"),
            true,
        ),
        ("video_ref", s("https://youtu.be/dQw4w9WgXcQ"), true),
        (
            "video_ref",
            s("https://www.youtube.com/watch?v=dQw4w9WgXc"),
            false,
        ),
        ("video_ref", s("https://youtu.be/dQw4w9WgXc"), false),
        // channel id: UC followed by 22 characters
        ("video_channel_id", format!("UC{}", rep('x', 22)), true),
        ("video_channel_id", format!("UC{}", rep('x', 21)), false),
        ("video_channel_id", format!("UC{}", rep('x', 23)), false),
        ("video_channel_id", format!("UX{}", rep('x', 22)), false),
        // channel: id as above, or @ and a 3-30 character handle
        ("video_channel", format!("UC{}", rep('x', 22)), true),
        ("video_channel", format!("UC{}", rep('x', 21)), false),
        ("video_channel", format!("@{}", rep('h', 3)), true),
        ("video_channel", format!("@{}", rep('h', 30)), true),
        ("video_channel", format!("@{}", rep('h', 2)), false),
        ("video_channel", format!("@{}", rep('h', 31)), false),
        ("video_channel", s("@a.b-c_d"), true),
        // code login: 1-39 letters, digits, hyphen, starting with a letter or digit
        ("code_login", s("a"), true),
        ("code_login", rep('l', 39), true),
        ("code_login", rep('l', 40), false),
        ("code_login", s("-octocat"), false),
        // repo id: owner/name, parts of letters, digits, _ . -, neither part `.` or `..`
        ("code_repo", s("rust-lang/rust"), true),
        ("code_repo", s("owner/.github"), true),
        ("code_repo", s("o.w.n/n_a-m.e"), true),
        ("code_repo", s("./rust"), false),
        ("code_repo", s("../rust"), false),
        ("code_repo", s("owner/."), false),
        ("code_repo", s("owner/.."), false),
        ("code_repo", s("./."), false),
        ("code_repo", s("owner"), false),
        ("code_repo", s("a/b/c"), false),
        // issue id: owner/name/number, number digits only
        ("code_issue", s("rust-lang/rust/1"), true),
        ("code_issue", s("rust-lang/rust/x1"), false),
        ("code_issue", s("../rust/1"), false),
        ("code_issue", s("rust-lang/../1"), false),
        // dates: YYYY-MM-DD or a relative span
        ("date_bound", s("2024-01-31"), true),
        ("date_bound", s("7d"), true),
        ("date_bound", s("1year"), true),
        ("date_bound", s("2024-02-30"), false),
        ("date_bound", s("yesterday"), false),
        // decentral: handle or DID
        ("decentral_actor", s("alice.bsky.social"), true),
        (
            "decentral_actor",
            s("did:plc:z72i7hdynmk6r22z27h6tvur"),
            true,
        ),
        (
            "decentral_post",
            s("at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l"),
            true,
        ),
        // hashtags without #
        ("hashtag", s("rustlang"), true),
        ("hashtag", s("#rustlang"), false),
        // cursor: up to 4096
        ("cursor", rep('c', 4096), true),
        ("cursor", rep('c', 4097), false),
    ];
    // instance: a host name of at most 253 characters
    let host = |last: usize| format!("{0}.{0}.{0}.{1}", rep('a', 63), rep('b', last));
    assert_eq!(host(61).len(), 253);
    c.push(("instance", host(61), true));
    c.push(("instance", host(62), false));
    c
}

#[test]
fn spec_wording_cases() {
    let mut wrong = Vec::new();
    for (name, value, expected) in spec_cases() {
        if g(name).accepts(&value) != expected {
            let shown: String = value.chars().take(60).collect();
            wrong.push(format!(
                "{name}: {shown:?} should be {}",
                if expected { "accepted" } else { "refused" }
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn typed_parsers_return_the_useful_part() {
    use adapters::api::{EndpointId, Request};
    let req = |e: EndpointId, q: &str| e.parse(q).unwrap_or_else(|v| panic!("{q}: {v}"));
    match req(EndpointId::ForumCommunity, "community=%2Fr%2Frust") {
        Request::ForumCommunity(r) => assert_eq!(r.community, "rust"),
        other => panic!("{other:?}"),
    }
    match req(
        EndpointId::VideoVideo,
        "id=https%3A%2F%2Fyoutu.be%2FdQw4w9WgXcQ%3Ft%3D1",
    ) {
        Request::VideoVideo(r) => assert_eq!(r.id, "dQw4w9WgXcQ"),
        other => panic!("{other:?}"),
    }
    match req(EndpointId::MicroblogPost, "id=1%2C2%2C3") {
        Request::MicroblogPost(r) => assert_eq!(r.id, ["1", "2", "3"]),
        other => panic!("{other:?}"),
    }
    match req(EndpointId::CodeIssue, "id=rust-lang/rust/42") {
        Request::CodeIssue(r) => assert_eq!(
            (r.id.repo.to_string(), r.id.number),
            ("rust-lang/rust".into(), 42)
        ),
        other => panic!("{other:?}"),
    }
}
