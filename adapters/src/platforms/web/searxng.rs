//! A self-hosted SearXNG metasearch instance's JSON API (`{base}/search?format=json`). There is no
//! public default: the JSON format is off on public instances, so the operator sets the base URL of
//! their own instance, and the source counts as not configured while the base URL is empty. No
//! credential. One page (`pageno=1`) is read and the limit applied to it.

use serde_json::Value;

use super::{Hit, hit_item};
use crate::api::Handlers;
use crate::api::web::{self, Search, SearchTopic};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, json};

pub static SOURCE: Source = Source {
    id: "web.searxng",
    // Empty: usable only once the operator points it at an instance.
    default_base_url: "",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Web(web::Handlers {
        search: Some(serve!(search)),
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let category = match r.topic {
        SearchTopic::General => "general",
        SearchTopic::News => "news",
    };
    let req = ctx.get("search").query(&[
        ("q", r.query.as_str()),
        ("format", "json"),
        ("categories", category),
        ("pageno", "1"),
    ]);
    let body = ctx.json(req).await?;
    if body.get("results").is_none_or(|r| !r.is_array()) {
        return Err(SourceError::Malformed("no `results` array".into()));
    }
    let items: Vec<Item> = json::array(&body, "results")
        .iter()
        .filter_map(|v| result_item(v, r.topic))
        .take(r.limit as usize)
        .collect();
    Ok(Page {
        items,
        total: None,
        next_cursor: None,
    })
}

fn result_item(v: &Value, topic: SearchTopic) -> Option<Item> {
    let hit = Hit {
        url: json::str(v, "url")?,
        title: json::str(v, "title"),
        snippet: json::str(v, "content"),
        date: json::str(v, "publishedDate"),
        site_name: None,
    };
    let mut item = hit_item(&hit, topic)?;
    let engines: Vec<Value> = json::array(v, "engines")
        .iter()
        .filter(|e| e.is_string())
        .cloned()
        .collect();
    if !engines.is_empty() {
        item.extra("engines", engines);
    }
    item.extra("score", json::number(v, "score"));
    item.extra(
        "thumbnail",
        json::string(v, "thumbnail").or_else(|| json::string(v, "img_src")),
    );
    Some(item)
}
