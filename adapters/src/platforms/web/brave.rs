//! The Brave Search API (`https://api.search.brave.com/res/v1`): `/web/search` for the general
//! topic, `/news/search` for news. The credential (required) is the subscription token, sent in the
//! `X-Subscription-Token` header. `count` is the limit (at most 20, as the spec's range);
//! `text_decorations=false` asks for snippets without `<strong>` (tags are stripped anyway).

use serde_json::Value;

use super::{Hit, hit_item};
use crate::api::Handlers;
use crate::api::web::{self, Search, SearchTopic};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, json};

pub static SOURCE: Source = Source {
    id: "web.brave",
    default_base_url: "https://api.search.brave.com/res/v1",
    needs_credential: true,
    rate_limit: None,
    handlers: Handlers::Web(web::Handlers {
        search: Some(serve!(search)),
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let path = match r.topic {
        SearchTopic::General => "web/search",
        SearchTopic::News => "news/search",
    };
    let mut req = ctx
        .get(path)
        .query(&[
            ("q", r.query.as_str()),
            ("count", &r.limit.min(20).to_string()),
            ("text_decorations", "false"),
        ])
        .header("Accept", "application/json");
    if let Some(token) = ctx.credential {
        req = req.header("X-Subscription-Token", token);
    }
    let body = ctx.json(req).await?;
    // Web results sit under `web.results` (absent when nothing matched); news under `results`.
    let results = match r.topic {
        SearchTopic::General => body.get("web").map(|w| json::array(w, "results")),
        SearchTopic::News => Some(json::array(&body, "results")),
    };
    if !body.is_object() || json::str(&body, "type").is_none() {
        return Err(SourceError::Malformed("not a search answer".into()));
    }
    let items: Vec<Item> = results
        .unwrap_or(&[])
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
    let profile = v.get("profile").unwrap_or(&Value::Null);
    let hit = Hit {
        url: json::str(v, "url")?,
        title: json::str(v, "title"),
        snippet: json::str(v, "description"),
        date: json::str(v, "page_age"),
        site_name: json::str(profile, "name"),
    };
    let mut item = hit_item(&hit, topic)?;
    item.extra("age", json::string(v, "age"));
    item.extra(
        "thumbnail",
        v.get("thumbnail").and_then(|t| json::string(t, "src")),
    );
    Some(item)
}
