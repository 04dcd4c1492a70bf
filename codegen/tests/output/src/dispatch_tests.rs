//! A source of the mini catalogue's `demo` platform, registered as the real sources are: it serves
//! `search` only for `sort=top`, `echo` only with its credential, and has no function for `item`.
//! Shows that the generated handler tables say what is served and dispatch to the right function.

use adapters_runtime::item::{Item, Page};
use adapters_runtime::upstream::guard::HostGuard;
use adapters_runtime::upstream::{Ctx, Http, host_of};

use crate::api::demo::{self, Echo, Search, SearchSort};
use crate::api::{EndpointId, Handlers, Request};
use crate::slot::{Slot, SlotMeta, SourceError};

// `Slot::new` spelled out: the `serve!` shorthand is private to `adapters`.
static DEMO: Handlers = Handlers::Demo(demo::Handlers {
    search: Some(
        Slot::new(|ctx, r| Box::pin(search(ctx, r))).only_when(|r| r.sort == SearchSort::Top),
    ),
    echo: Some(Slot::new(|ctx, r| Box::pin(echo(ctx, r))).with_credential()),
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
