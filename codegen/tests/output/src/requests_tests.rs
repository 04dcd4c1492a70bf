//! The generated typed requests parse what the catalogue says (moved from `adapters`, which no
//! longer builds the mini API).

use crate::api::demo::{Search, SearchSort};
use crate::api::{EndpointId, Request, Span};
use crate::request::{DateBound, SpanUnit};

fn rules(raw: &str) -> Vec<(String, &'static str)> {
    match Search::from_query(raw) {
        Ok(_) => Vec::new(),
        Err(v) => {
            v.0.into_iter()
                .map(|v| (v.parameter, v.rule.as_str()))
                .collect()
        }
    }
}

#[test]
fn defaults_fill_absent_parameters() {
    let s = Search::from_query("query=rust").unwrap();
    assert_eq!(
        s,
        Search {
            query: Some("rust".into()),
            slug: None,
            sort: SearchSort::New,
            span: Span::All,
            limit: 5,
            flag: false,
            after: None,
            r#type: None,
        }
    );
}

#[test]
fn every_kind_is_typed() {
    let s = Search::from_query("slug=abc&sort=top&span=day&limit=10&flag=true&after=7d&type=y")
        .unwrap();
    assert_eq!(s.sort, SearchSort::Top);
    assert_eq!(s.span, Span::Day);
    assert_eq!((s.limit, s.flag), (10, true));
    assert_eq!(
        s.after,
        Some(DateBound::Ago {
            amount: 7,
            unit: SpanUnit::Day
        })
    );
    assert_eq!(s.r#type.as_deref(), Some("y"));
}

#[test]
fn each_rule_is_reported_against_its_parameter() {
    let p = |name: &str, rule| vec![(name.to_string(), rule)];
    assert_eq!(rules(""), p("query", "one_of"));
    assert_eq!(rules("query=a&limit=11"), p("limit", "maximum"));
    assert_eq!(rules("query=a&limit=0"), p("limit", "minimum"));
    assert_eq!(rules("query=a&limit=x"), p("limit", "integer"));
    assert_eq!(rules("query=a&sort=old"), p("sort", "enum"));
    assert_eq!(rules("query=a&flag=yes"), p("flag", "boolean"));
    assert_eq!(rules("slug=A"), p("slug", "pattern"));
    assert_eq!(rules("query=a&type=z"), p("type", "pattern"));
    assert_eq!(rules("query=a&after=2023-02-29"), p("after", "format"));
    assert_eq!(
        rules(&format!("query={}", "q".repeat(65))),
        p("query", "max_length")
    );
    // A choice takes the catalogue's `limits.value_max_length` (64 in the fixture), not a literal:
    // 64 characters is an unknown value, 65 is too long.
    assert_eq!(
        rules(&format!("query=a&sort={}", "s".repeat(64))),
        p("sort", "enum")
    );
    assert_eq!(
        rules(&format!("query=a&sort={}", "s".repeat(65))),
        p("sort", "max_length")
    );
    assert_eq!(rules("query=a&query=b"), p("query", "repeated"));
    assert_eq!(rules("query=a&nope=1"), p("nope", "unknown_parameter"));
    assert_eq!(rules("query="), p("query", "empty"));
    // A value that was sent but cannot be decoded is one problem, not also a missing parameter.
    assert_eq!(rules("query=%zz"), p("query", "format"));
}

#[test]
fn the_endpoint_table_dispatches() {
    let r = EndpointId::DemoItem.parse("id=abc").unwrap();
    assert_eq!(r.endpoint(), EndpointId::DemoItem);
    assert!(matches!(r, Request::DemoItem(ref i) if i.id == "abc"));
    assert_eq!(EndpointId::DemoSearch.meta().credits, 2);
    assert_eq!(
        EndpointId::DemoItem.meta().example,
        "GET /v1/demo/item?id=abc"
    );
}

/// The generator's fixture declares `type` only with `sort=top` and `slug` given, and `query`
/// and `type` exclusive: the generated parser reports each broken rule against the parameter
/// that triggered it.
fn mini_rules(raw: &str) -> Vec<(String, &'static str, String)> {
    match crate::api::demo::Search::from_query(raw) {
        Ok(_) => Vec::new(),
        Err(v) => {
            v.0.into_iter()
                .map(|v| (v.parameter, v.rule.as_str(), v.message))
                .collect()
        }
    }
}

#[test]
fn cross_parameter_rules_hold_with_their_values() {
    assert_eq!(mini_rules("slug=abc&sort=top&type=x"), vec![]);
    // Without `type` the rule does not apply: `sort` keeps its default.
    assert_eq!(mini_rules("slug=abc"), vec![]);
}

#[test]
fn a_value_condition_counts_the_default() {
    let r = mini_rules("slug=abc&type=x");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].0.as_str(), r[0].1), ("type", "requires"));
    assert!(r[0].2.contains("`sort=top`"), "{}", r[0].2);
    assert!(r[0].2.contains("defaults to `new`"), "{}", r[0].2);
    let r = mini_rules("slug=abc&type=x&sort=new");
    assert!(r[0].2.contains("got `sort=new`"), "{}", r[0].2);
}

#[test]
fn a_presence_condition() {
    let r = mini_rules("sort=top&type=x&after=7d");
    let rules: Vec<_> = r.iter().map(|v| (v.0.as_str(), v.1)).collect();
    // `slug` is missing for `type`; and nothing names `query` (absent) or `slug`.
    assert!(rules.contains(&("type", "requires")), "{r:?}");
    assert!(r.iter().any(|v| v.2.contains("add `slug`")), "{r:?}");
}

#[test]
fn exclusive_parameters_name_the_later_one() {
    let r = mini_rules("query=a&slug=abc&sort=top&type=x");
    assert_eq!(
        r.iter().map(|v| (v.0.as_str(), v.1)).collect::<Vec<_>>(),
        [("type", "exclusive")],
        "{r:?}"
    );
    assert!(r[0].2.contains("`query`"), "{}", r[0].2);
}

#[test]
fn a_value_broken_by_itself_is_reported_once() {
    // `type` fails its own pattern, `sort` its enum: no rule is judged on them as well.
    let rules: Vec<_> = mini_rules("query=a&type=z&sort=old")
        .into_iter()
        .map(|v| (v.0, v.1))
        .collect();
    assert_eq!(
        rules,
        [
            ("sort".to_string(), "enum"),
            ("type".to_string(), "pattern")
        ]
    );
}
