//! Exercises the code generated from the generator's fixture catalogue (`codegen/tests/fixtures`),
//! so the emitted Rust is not only compiled but shown to parse what the catalogue says.

use crate::mini_api::demo::{Search, SearchSort};
use crate::mini_api::{EndpointId, Request, Span};
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

/// A source of the mini catalogue's `demo` platform, registered as the real sources are: it serves
/// `search` only for `sort=top`, `echo` only with its credential, and has no function for `item`.
mod demo_source {
    use crate::item::{Item, Page};
    use crate::mini_api::demo::{self, Echo, Search, SearchSort};
    use crate::mini_api::{EndpointId, Handlers, Request};
    use crate::sources::SourceError;
    use crate::sources::slot::{SlotMeta, serve};
    use crate::upstream::Ctx;
    use crate::upstream::guard::HostGuard;
    use crate::upstream::{Http, host_of};

    static DEMO: Handlers = Handlers::Demo(demo::Handlers {
        search: Some(serve!(search).only_when(|r| r.sort == SearchSort::Top)),
        echo: Some(serve!(echo).with_credential()),
        ..demo::Handlers::NONE
    });

    async fn search(_ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
        let mut item = Item::new("demo", "post", r.query.clone().unwrap_or_default());
        item.title = Some(format!("limit {}", r.limit));
        Ok(Page::single(item))
    }

    /// The handler of the test-only endpoint: the second of its two edits.
    async fn echo(ctx: &Ctx<'_>, r: &Echo) -> Result<Page, SourceError> {
        let mut item = Item::new("demo", "post", r.word.clone());
        item.author = host_of(ctx.base_url).map(str::to_string);
        Ok(Page::single(item))
    }

    #[test]
    fn the_table_says_what_is_served_without_calling_anything() {
        assert_eq!(DEMO.platform(), "demo");
        let meta = |id| DEMO.slot(id);
        assert_eq!(
            meta(EndpointId::DemoSearch),
            Some(SlotMeta {
                needs_credential: false,
                conditional: true
            })
        );
        assert_eq!(
            meta(EndpointId::DemoEcho),
            Some(SlotMeta {
                needs_credential: true,
                conditional: false
            })
        );
        // No function for `item`: visibly not served, never a failure at run time.
        assert_eq!(meta(EndpointId::DemoItem), None);
        let item = EndpointId::DemoItem.parse("id=abc").unwrap();
        assert!(!DEMO.serves(&item));
    }

    #[test]
    fn a_slot_condition_decides_which_requests_it_takes() {
        let top = EndpointId::DemoSearch.parse("query=a&sort=top").unwrap();
        let new = EndpointId::DemoSearch.parse("query=a&sort=new").unwrap();
        assert!(DEMO.serves(&top));
        assert!(!DEMO.serves(&new));
    }

    #[test]
    fn the_instance_is_a_generated_accessor() {
        let named = EndpointId::DemoEcho.parse("word=hi&instance=abc").unwrap();
        assert_eq!(named.instance(), Some("abc"));
        let unnamed = EndpointId::DemoEcho.parse("word=hi").unwrap();
        assert_eq!(unnamed.instance(), None);
        // Endpoints without the parameter have none.
        let search = EndpointId::DemoSearch.parse("query=a").unwrap();
        assert_eq!(search.instance(), None);
    }

    #[tokio::test]
    async fn dispatch_calls_the_function_of_the_request_endpoint() {
        let guard = std::sync::Arc::new(HostGuard::new(false, Default::default()));
        let http = Http::new(guard, Vec::new()).unwrap();
        let ctx = Ctx {
            source: "demo.test",
            http: &http,
            base_url: "https://echo.example",
            credential: None,
            cursor: None,
            deadline: std::time::Instant::now() + std::time::Duration::from_secs(60),
        };
        let echo = EndpointId::DemoEcho.parse("word=hello").unwrap();
        let page = DEMO.dispatch(&ctx, &echo).expect("served").await.unwrap();
        assert_eq!(page.items[0].id, "hello");
        assert_eq!(page.items[0].author.as_deref(), Some("echo.example"));
        let search = EndpointId::DemoSearch
            .parse("query=rust&sort=top&limit=3")
            .unwrap();
        let page = DEMO.dispatch(&ctx, &search).expect("served").await.unwrap();
        assert_eq!(page.items[0].id, "rust");
        assert_eq!(page.items[0].title.as_deref(), Some("limit 3"));
        let item = EndpointId::DemoItem.parse("id=abc").unwrap();
        assert!(matches!(&item, Request::DemoItem(_)));
        assert!(DEMO.dispatch(&ctx, &item).is_none());
    }
}
