//! A self-hosted SearXNG metasearch instance's JSON API (`{base}/search?format=json`). There is no
//! public default: the JSON format is off on public instances, so the operator sets the base URL of
//! their own instance, and the source counts as not configured while the base URL is empty. No
//! credential. One page (`pageno=1`) is read and the limit applied to it.

use serde_json::Value;

use super::{Hit, PLATFORM, hit_item};
use crate::api::web::SearchTopic;
use crate::api::{EndpointId, Request};
use crate::item::{Item, Page};
use crate::sources::{BoxFuture, Source, SourceError, SourceMeta};
use crate::upstream::{Ctx, json};

pub struct Searxng;

const META: SourceMeta = SourceMeta {
    id: "web.searxng",
    platform: PLATFORM,
    // Empty: usable only once the operator points it at an instance.
    default_base_url: "",
    endpoints: &[EndpointId::WebSearch],
    needs_credential: false,
};

impl Source for Searxng {
    fn meta(&self) -> &'static SourceMeta {
        &META
    }
    fn fetch<'a>(
        &'a self,
        ctx: &'a Ctx<'a>,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Page, SourceError>> {
        Box::pin(async move {
            let Request::WebSearch(r) = request else {
                return Err(SourceError::unsupported(request));
            };
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
        })
    }
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
