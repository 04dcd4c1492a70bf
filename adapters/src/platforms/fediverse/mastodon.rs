//! Mastodon's REST API on the chosen instance: the hashtag timeline
//! (`GET /api/v1/timelines/tag/{tag}`, no token) and full-text status search
//! (`GET /api/v2/search?type=statuses`, which returns statuses only with a token: the source's
//! credential, a token of the configured instance; it is never sent to another instance).
//! Published rate limit: 300 requests per 5 minutes per IP, per instance.

use serde_json::Value;

use super::PLATFORM;
use crate::api::Handlers;
use crate::api::fediverse::{self, Search, Tag};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::path::segment;
use crate::upstream::{Ctx, dates, html, json};

pub static SOURCE: Source = Source {
    id: "fediverse.mastodon",
    // The default instance; an `instance` parameter replaces it.
    default_base_url: "https://mastodon.social",
    needs_credential: false,
    rate_limit: Some((1.0, 300)),
    handlers: Handlers::Fediverse(fediverse::Handlers {
        tag: Some(serve!(tag)),
        search: Some(serve!(search).with_credential()),
    }),
};

async fn tag(ctx: &Ctx<'_>, r: &Tag) -> Result<Page, SourceError> {
    let host = instance_host(ctx)?;
    let path = format!("api/v1/timelines/tag/{}", segment(&r.query)?);
    let req = ctx.get(&path).query(&[("limit", r.limit.to_string())]);
    let body = ctx.json(req).await?;
    let statuses = body
        .as_array()
        .ok_or_else(|| SourceError::Malformed("the timeline is not an array".into()))?;
    Ok(page(statuses, &host))
}

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let host = instance_host(ctx)?;
    // The message names no host: the 501 reaches the client.
    let token = ctx.credential.ok_or_else(|| {
        SourceError::NotConfigured("this deployment holds no search token for that instance".into())
    })?;
    let req = ctx.get("api/v2/search").bearer_auth(token).query(&[
        ("q", r.query.as_str()),
        ("type", "statuses"),
        ("limit", &r.limit.to_string()),
        ("resolve", "false"),
    ]);
    let body = ctx.json(req).await?;
    let statuses = body
        .get("statuses")
        .and_then(Value::as_array)
        .ok_or_else(|| SourceError::Malformed("no `statuses` array".into()))?;
    Ok(page(statuses, &host))
}

/// The instance asked (the client's `instance`, else the configured one), for ids and authors.
fn instance_host(ctx: &Ctx<'_>) -> Result<String, SourceError> {
    ctx.base_host()
        .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        .ok_or_else(|| SourceError::NotConfigured("the base URL has no host".into()))
}

fn page(statuses: &[Value], host: &str) -> Page {
    Page {
        items: statuses
            .iter()
            .filter_map(|s| status_item(s, host))
            .collect(),
        total: None,
        next_cursor: None,
    }
}

/// `user@domain`; local accounts (no `@` in `acct`) live on `host`.
fn acct(account: &Value, host: &str) -> Option<String> {
    let acct = json::str(account, "acct")?.trim_start_matches('@');
    Some(if acct.contains('@') {
        acct.to_string()
    } else {
        format!("{acct}@{host}")
    })
}

/// A Status entity. A boost wraps the original in `reblog`: the item is the original, with the
/// booster in `extra.reblogged_by`.
fn status_item(outer: &Value, host: &str) -> Option<Item> {
    let (status, reblogged_by) = match outer.get("reblog") {
        Some(inner) if inner.is_object() => {
            (inner, outer.get("account").and_then(|a| acct(a, host)))
        }
        _ => (outer, None),
    };
    let local_id = json::id(status, "id")?;
    let in_reply_to = json::id(status, "in_reply_to_id");
    let mut item = Item::new(
        PLATFORM,
        if in_reply_to.is_some() {
            "comment"
        } else {
            "post"
        },
        format!("{host}:{local_id}"),
    );
    let account = status.get("account").unwrap_or(&Value::Null);
    item.text = html::text_or_none(json::str(status, "content"));
    item.url = json::string(status, "url").or_else(|| json::string(status, "uri"));
    item.author = acct(account, host);
    item.author_name = json::str(account, "display_name")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    item.created_at = status.get("created_at").and_then(dates::normalize);
    item.metrics.likes = json::number(status, "favourites_count");
    item.metrics.reposts = json::number(status, "reblogs_count");
    item.metrics.comments = json::number(status, "replies_count");
    item.metrics.quotes = json::number(status, "quotes_count");
    item.extra("uri", json::string(status, "uri"));
    item.extra("language", json::string(status, "language"));
    item.extra(
        "sensitive",
        status.get("sensitive").and_then(Value::as_bool),
    );
    item.extra("spoiler_text", json::string(status, "spoiler_text"));
    item.extra("in_reply_to_id", in_reply_to);
    item.extra(
        "edited_at",
        status.get("edited_at").and_then(dates::normalize),
    );
    item.extra("reblogged_by", reblogged_by);
    Some(item)
}
