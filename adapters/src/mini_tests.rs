//! Exercises the code generated from the generator's fixture catalogue (`codegen/tests/fixtures`),
//! so the emitted Rust is not only compiled but shown to parse what the catalogue says.

use crate::mini_api::demo::{Search, SearchSort};
use crate::mini_api::{EndpointId, Request, Span};
use crate::request::{DateBound, SpanUnit};

fn rules(raw: &str) -> Vec<(String, &'static str)> {
    match Search::from_query(raw) {
        Ok(_) => Vec::new(),
        Err(v) => v.0.into_iter().map(|v| (v.parameter, v.rule)).collect(),
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
