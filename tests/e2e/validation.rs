//! Query validation of every platform endpoint over HTTP: each broken rule is a 422
//! VALIDATION_ERROR naming the parameter in `error.message` and `error.violations[].parameter`,
//! with `error.fix`. The endpoint table comes from the catalogue, so a new endpoint is covered
//! without touching this file.

use adapters::api::ENDPOINTS;
use adapters::request::{EndpointMeta, ParamKind, ParamMeta};

use crate::support::{enc, server};

/// A query that passes validation: required parameters and the first member of each one-of group.
fn valid_pairs(e: &EndpointMeta) -> Vec<(&'static str, String)> {
    e.params
        .iter()
        .filter(|p| p.required || e.one_of.iter().any(|g| g.first() == Some(&p.name)))
        .map(|p| (p.name, p.example.to_string()))
        .collect()
}

fn query(pairs: &[(&str, String)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// `pairs` with `name` set to `value` (replacing it when present).
fn with(
    pairs: &[(&'static str, String)],
    name: &'static str,
    value: String,
) -> Vec<(&'static str, String)> {
    let mut out: Vec<_> = pairs.iter().filter(|(k, _)| *k != name).cloned().collect();
    out.push((name, value));
    out
}

fn url(e: &EndpointMeta, pairs: &[(&str, String)]) -> String {
    format!("{}?{}", e.path, query(pairs))
}

/// A value of exactly `max_length` characters that the parameter accepts, where one is easy to
/// make: free text, cursors and instance host names (the spec's three limits).
fn longest_valid(p: &ParamMeta) -> Option<String> {
    let n = p.max_length as usize;
    match p.kind {
        ParamKind::Text(None) => Some("q".repeat(n)),
        ParamKind::Text(Some(g)) if g.name == "cursor" => Some("c".repeat(n)),
        ParamKind::Text(Some(g)) if g.name == "instance" => {
            // dot-separated labels of at most 63 characters
            let mut labels = Vec::new();
            let mut left = n;
            while left > 64 {
                labels.push("a".repeat(63));
                left -= 64;
            }
            labels.push("b".repeat(left));
            Some(labels.join("."))
        }
        _ => None,
    }
}

#[test]
fn value_limits_follow_the_spec() {
    // Section 8: 512 characters, except `cursor` (4096) and `instance` (253). A grammar may be
    // narrower (a 30-character handle) but never wider; free text gets exactly the limit.
    for e in &ENDPOINTS {
        for p in e.params.iter() {
            let limit = match p.name {
                "cursor" => 4096,
                "instance" => 253,
                _ => 512,
            };
            match p.kind {
                ParamKind::Text(None) => assert_eq!(p.max_length, limit, "{} `{}`", e.path, p.name),
                ParamKind::Text(Some(g)) if g.name == "cursor" || g.name == "instance" => {
                    assert_eq!(p.max_length, limit, "{} `{}`", e.path, p.name)
                }
                _ => assert!(p.max_length <= limit, "{} `{}`", e.path, p.name),
            }
        }
    }
}

#[tokio::test]
async fn a_valid_query_passes_validation() {
    let s = server();
    for e in &ENDPOINTS {
        // The shared server has every source disabled, so passing validation ends at 501.
        s.get(&url(e, &valid_pairs(e)))
            .await
            .assert_error(501, "NOT_CONFIGURED");
    }
}

#[tokio::test]
async fn missing_required_parameter() {
    let s = server();
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        for p in e.params.iter().filter(|p| p.required) {
            let pairs: Vec<_> = base.iter().filter(|(k, _)| *k != p.name).cloned().collect();
            let r = s.get(&url(e, &pairs)).await;
            r.assert_names(p.name);
            assert!(r.text.contains("\"rule\":\"required\""), "{}", r.text);
        }
    }
}

#[tokio::test]
async fn one_of_group_empty() {
    let s = server();
    let mut groups = 0;
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        for group in e.one_of {
            let pairs: Vec<_> = base
                .iter()
                .filter(|(k, _)| !group.contains(k))
                .cloned()
                .collect();
            let r = s.get(&url(e, &pairs)).await;
            r.assert_names(group[0]);
            for member in *group {
                assert!(
                    r.body["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains(&format!("`{member}`"))
                );
            }
            groups += 1;
        }
    }
    assert!(
        groups >= 3,
        "the catalogue has one-of groups on forum search, comments search, post"
    );
}

#[tokio::test]
async fn integer_out_of_range() {
    let s = server();
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        for p in e.params {
            let ParamKind::Integer { min, max } = p.kind else {
                continue;
            };
            for bad in [min - 1, max + 1] {
                s.get(&url(e, &with(&base, p.name, bad.to_string())))
                    .await
                    .assert_names(p.name);
            }
            for good in [min, max] {
                s.get(&url(e, &with(&base, p.name, good.to_string())))
                    .await
                    .assert_error(501, "NOT_CONFIGURED");
            }
            s.get(&url(e, &with(&base, p.name, "ten".into())))
                .await
                .assert_names(p.name);
        }
    }
}

#[tokio::test]
async fn bad_enum_value() {
    let s = server();
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        for p in e.params {
            match p.kind {
                ParamKind::Choice(values) => {
                    let r = s.get(&url(e, &with(&base, p.name, "bogus".into()))).await;
                    r.assert_names(p.name);
                    // The message lists what is allowed.
                    for v in values {
                        assert!(r.body["error"]["message"].as_str().unwrap().contains(v));
                    }
                }
                ParamKind::Boolean => {
                    s.get(&url(e, &with(&base, p.name, "yes".into())))
                        .await
                        .assert_names(p.name);
                }
                _ => {}
            }
        }
    }
}

#[tokio::test]
async fn over_long_value() {
    let s = server();
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        for p in e
            .params
            .iter()
            .filter(|p| matches!(p.kind, ParamKind::Text(_)))
        {
            let long = "a".repeat(p.max_length as usize + 1);
            let r = s.get(&url(e, &with(&base, p.name, long))).await;
            r.assert_names(p.name);
            assert!(r.text.contains("\"rule\":\"max_length\""), "{}", r.text);
            assert!(
                r.body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(&p.max_length.to_string())
            );
            if let Some(at_limit) = longest_valid(p) {
                assert_eq!(at_limit.chars().count(), p.max_length as usize);
                s.get(&url(e, &with(&base, p.name, at_limit)))
                    .await
                    .assert_error(501, "NOT_CONFIGURED");
            }
        }
    }
}

#[tokio::test]
async fn unknown_parameter() {
    let s = server();
    for e in &ENDPOINTS {
        let mut pairs = valid_pairs(e);
        pairs.push(("bogus_param", "1".into()));
        s.get(&url(e, &pairs)).await.assert_names("bogus_param");
    }
}

#[tokio::test]
async fn repeated_parameter() {
    let s = server();
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        let (name, value) = base
            .first()
            .cloned()
            .unwrap_or((e.params[0].name, e.params[0].example.into()));
        let mut pairs = base.clone();
        pairs.push((name, value));
        let r = s.get(&url(e, &pairs)).await;
        r.assert_names(name);
        assert!(r.text.contains("\"rule\":\"repeated\""), "{}", r.text);
    }
}

#[tokio::test]
async fn empty_value_is_an_error_not_an_absence() {
    let s = server();
    for e in &ENDPOINTS {
        let base = valid_pairs(e);
        let p = &e.params[0];
        s.get(&url(e, &with(&base, p.name, String::new())))
            .await
            .assert_names(p.name);
    }
}

#[test]
fn malformed_percent_escape_is_422_not_500() {
    let s = server();
    for target in [
        "/v1/forum/search?query=%zz",
        "/v1/forum/search?query=%ff",
        "/v1/forum/search?query=%4",
        "/v1/forum/search?qu%zzery=rust",
    ] {
        let request = format!("GET {target} HTTP/1.1\r\nHost: test\r\n\r\n");
        let r = s.raw(request.as_bytes());
        r.assert_error(422, "VALIDATION_ERROR");
        assert!(r.body["error"]["fix"].is_string(), "{}", r.text);
    }
    let r = s.raw(b"GET /v1/forum/search?query=%zz HTTP/1.1\r\nHost: test\r\n\r\n");
    r.assert_names("query");
}
