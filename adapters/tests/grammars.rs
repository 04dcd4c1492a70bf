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

// Cross-parameter rules (`requires` and `exclusive` in the catalogue), as the generated parsers
// enforce them.

mod cross_parameter {
    use adapters::api::{ENDPOINTS, EndpointId};
    use adapters::request::{EndpointMeta, Needed, ParamKind};

    fn enc(s: &str) -> String {
        form_urlencoded::byte_serialize(s.as_bytes()).collect()
    }

    fn query(pairs: &[(&str, String)]) -> String {
        pairs
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect::<Vec<_>>()
            .join("&")
    }

    /// (parameter, rule) of every violation, or nothing when the query is accepted.
    fn verdict(e: &EndpointMeta, pairs: &[(&str, String)]) -> Vec<(String, &'static str)> {
        let id = EndpointId::ALL
            .into_iter()
            .find(|id| id.meta().path == e.path)
            .expect("in the table");
        match id.parse(&query(pairs)) {
            Ok(_) => Vec::new(),
            Err(v) => {
                v.0.into_iter()
                    .map(|v| (v.parameter, v.rule.as_str()))
                    .collect()
            }
        }
    }

    fn example(e: &EndpointMeta, name: &str) -> String {
        e.params
            .iter()
            .find(|p| p.name == name)
            .expect("a rule names a parameter of its endpoint")
            .example
            .to_string()
    }

    /// Required parameters and the first member of each one-of group, leaving out `skip`.
    fn base(e: &EndpointMeta, skip: &[&str]) -> Vec<(&'static str, String)> {
        e.params
            .iter()
            .filter(|p| p.required || e.one_of.iter().any(|g| g.first() == Some(&p.name)))
            .filter(|p| !skip.contains(&p.name))
            .map(|p| (p.name, p.example.to_string()))
            .collect()
    }

    fn set(pairs: &mut Vec<(&'static str, String)>, name: &'static str, value: String) {
        pairs.retain(|(k, _)| *k != name);
        pairs.push((name, value));
    }

    /// Every declared rule: satisfied, the request passes; broken, the parser names the parameter
    /// that triggered it with rule `requires` (or `exclusive`), and nothing else.
    #[test]
    fn every_declared_rule_is_enforced() {
        let (mut requires, mut exclusive) = (0, 0);
        for e in &ENDPOINTS {
            for rule in e.requires {
                for &when in rule.when {
                    for &(then, needed) in rule.then {
                        let mut ok = base(e, &[when, then]);
                        set(&mut ok, when, example(e, when));
                        let mut bad = ok.clone();
                        match needed {
                            Needed::Present => set(&mut ok, then, example(e, then)),
                            Needed::OneOf(values) => {
                                set(&mut ok, then, values[0].to_string());
                                let p = e.params.iter().find(|p| p.name == then).unwrap();
                                let other = match p.kind {
                                    ParamKind::Choice(all) => {
                                        all.iter().find(|v| !values.contains(v)).copied()
                                    }
                                    ParamKind::Boolean => {
                                        ["true", "false"].into_iter().find(|v| !values.contains(v))
                                    }
                                    _ => None,
                                };
                                if let Some(other) = other {
                                    set(&mut bad, then, other.to_string());
                                }
                            }
                        }
                        assert_eq!(verdict(e, &ok), vec![], "{} {ok:?}", e.path);
                        assert_eq!(
                            verdict(e, &bad),
                            vec![(when.to_string(), "requires")],
                            "{} {bad:?}",
                            e.path
                        );
                        requires += 1;
                    }
                }
            }
            for group in e.exclusive {
                for &one in group.iter() {
                    let mut alone = base(e, group);
                    set(&mut alone, one, example(e, one));
                    assert_eq!(verdict(e, &alone), vec![], "{} {alone:?}", e.path);
                }
                let mut both = base(e, group);
                set(&mut both, group[0], example(e, group[0]));
                set(&mut both, group[1], example(e, group[1]));
                assert_eq!(
                    verdict(e, &both),
                    vec![(group[1].to_string(), "exclusive")],
                    "{} {both:?}",
                    e.path
                );
                exclusive += 1;
            }
        }
        assert!(
            requires >= 2,
            "community posts: after and before need sort=new"
        );
        assert!(exclusive >= 2, "forum post and post comments: url or id");
    }

    fn forum(path: &str, raw: &str) -> Vec<(String, &'static str, String)> {
        let id = EndpointId::ALL
            .into_iter()
            .find(|id| id.meta().path == path)
            .expect("in the table");
        match id.parse(raw) {
            Ok(_) => Vec::new(),
            Err(v) => {
                v.0.into_iter()
                    .map(|v| (v.parameter, v.rule.as_str(), v.message))
                    .collect()
            }
        }
    }

    /// Section 4.1: on community posts "new is the only order combinable with after/before"
    /// (`sort` defaults to `new`); `timeframe` "applies to top only" is not a refusal; community
    /// search takes `after`/`before` with every order.
    #[test]
    fn spec_wording_of_the_forum_rules() {
        let posts = "/v1/forum/community/posts";
        assert_eq!(forum(posts, "community=rust&after=7d"), vec![]);
        assert_eq!(
            forum(posts, "community=rust&sort=new&before=2024-01-01"),
            vec![]
        );
        assert_eq!(forum(posts, "community=rust&sort=top"), vec![]);
        assert_eq!(
            forum(posts, "community=rust&sort=hot&timeframe=day"),
            vec![]
        );
        let r = forum(posts, "community=rust&sort=top&after=7d");
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].0.as_str(), r[0].1), ("after", "requires"));
        assert!(
            r[0].2.contains("`sort=new`") && r[0].2.contains("`sort=top`"),
            "{}",
            r[0].2
        );
        let r = forum(posts, "community=rust&sort=rising&after=7d&before=1d");
        let named: Vec<_> = r.iter().map(|v| (v.0.as_str(), v.1)).collect();
        assert_eq!(named, [("after", "requires"), ("before", "requires")]);
        // A value wrong by itself is reported once, by its own rule.
        let r = forum(posts, "community=rust&sort=bogus&after=7d");
        assert_eq!(
            r.iter().map(|v| (v.0.as_str(), v.1)).collect::<Vec<_>>(),
            [("sort", "enum")]
        );

        let search = "/v1/forum/community/search";
        for sort in ["new", "relevance", "top", "comments"] {
            assert_eq!(
                forum(
                    search,
                    &format!("community=rust&query=x&sort={sort}&after=7d&before=1d")
                ),
                vec![],
                "{sort}"
            );
        }

        let url = "https%3A%2F%2Fwww.reddit.com%2Fr%2Frust%2Fcomments%2F1abc2de%2Ft%2F";
        for path in ["/v1/forum/post", "/v1/forum/post/comments"] {
            assert_eq!(forum(path, &format!("url={url}")), vec![]);
            assert_eq!(forum(path, "id=t3_1abc2de"), vec![]);
            let r = forum(path, &format!("url={url}&id=1abc2de"));
            assert_eq!(
                r.iter().map(|v| (v.0.as_str(), v.1)).collect::<Vec<_>>(),
                [("id", "exclusive")]
            );
        }
    }
}
