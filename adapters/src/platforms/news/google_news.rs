//! A news aggregator's RSS search (`https://news.google.com/rss/search?q=&hl=&gl=&ceid=`). No
//! credential, no paging (the feed holds up to about 100 entries); the limit is applied here.
//! Links are the aggregator's redirect URLs; the publisher's site is in `extra.source_url`.

use super::{PLATFORM, language_prefix, strip_publisher};
use crate::api::Handlers;
use crate::api::news::{self, Search};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::feed::{self, FeedEntry};
use crate::upstream::{Ctx, encoding, html};

pub static SOURCE: Source = Source {
    id: "news.google_news",
    default_base_url: "https://news.google.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::News(news::Handlers {
        search: Some(serve!(search)),
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let country = r.country.to_ascii_uppercase();
    let ceid = format!("{country}:{}", language_prefix(&r.lang));
    let req = ctx.get("rss/search").query(&[
        ("q", r.query.as_str()),
        ("hl", r.lang.as_str()),
        ("gl", country.as_str()),
        ("ceid", ceid.as_str()),
    ]);
    let body = ctx.text(req).await?;
    let entries = feed::parse(&body).map_err(SourceError::Malformed)?;
    let total = entries.len() as u64;
    let items = entries
        .iter()
        .filter_map(entry_item)
        .take(r.limit as usize)
        .collect();
    Ok(Page {
        items,
        total: Some(total),
        next_cursor: None,
    })
}

fn entry_item(e: &FeedEntry) -> Option<Item> {
    let id = e.guid.clone().or_else(|| e.link.clone())?;
    let mut item = Item::new(PLATFORM, "article", id);
    let publisher = e.source_name.as_deref();
    item.title = e
        .title
        .as_deref()
        .map(|t| strip_publisher(&html::unescape(t), publisher));
    item.text = html::text_or_none(e.summary.as_deref());
    item.url = e.link.clone();
    item.author = e
        .source_url
        .as_deref()
        .and_then(encoding::url_host)
        .or_else(|| e.link.as_deref().and_then(encoding::url_host));
    item.author_name = e.source_name.clone();
    item.created_at = e.published.clone();
    item.extra("source", e.source_name.clone());
    item.extra("source_url", e.source_url.clone());
    item.extra("guid", e.guid.clone());
    Some(item)
}
