//! The forum's own item API (Firebase): `/item/{id}.json` and `/user/{id}.json`, one request per
//! item; a missing item is the JSON `null`. No credential, no published rate limit. Serves as the
//! fallback for stories, comment threads and profiles; it has no search.

use serde_json::Value;

use super::{profile_item, thread_node};
use crate::api::Handlers;
use crate::api::techforum::{self, Profile, Story, StoryComments};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{BoxFuture, Source, SourceError};
use crate::upstream::path::segment;
use crate::upstream::{Ctx, bounded, dates, json};

/// Comment requests in flight at once while walking a thread.
const FAN_OUT: usize = 8;

pub static SOURCE: Source = Source {
    id: "techforum.firebase",
    default_base_url: "https://hacker-news.firebaseio.com/v0",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Techforum(techforum::Handlers {
        story: Some(serve!(story)),
        story_comments: Some(serve!(story_comments)),
        profile: Some(serve!(profile)),
        ..techforum::Handlers::NONE
    }),
};

async fn story(ctx: &Ctx<'_>, r: &Story) -> Result<Page, SourceError> {
    let node = get_item(ctx, &r.id).await?.ok_or(SourceError::NotFound)?;
    let item =
        node_item(&node, 0).ok_or_else(|| SourceError::Malformed("the item has no id".into()))?;
    Ok(Page::single(item))
}

async fn story_comments(ctx: &Ctx<'_>, r: &StoryComments) -> Result<Page, SourceError> {
    let story = get_item(ctx, &r.id).await?.ok_or(SourceError::NotFound)?;
    let limit = r.limit as usize;
    let mut items = Vec::new();
    walk(ctx, &r.id, kids(&story), 0, limit, &mut items).await?;
    let total = json::int(&story, "descendants")
        .map(|n| n.max(0) as u64)
        .unwrap_or(items.len() as u64)
        .max(items.len() as u64);
    Ok(Page {
        total: Some(total),
        items,
        next_cursor: None,
    })
}

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let body = ctx
        .json(ctx.get(&format!("user/{}.json", segment(&r.handle)?)))
        .await?;
    let name = json::string(&body, "id").ok_or(SourceError::NotFound)?;
    let created_at = body.get("created").and_then(dates::normalize);
    let mut item = profile_item(name, &body, created_at);
    item.extra("submitted_count", json::array(&body, "submitted").len());
    Ok(Page::single(item))
}

/// One item, or `None` when the API answers `null` (no such item).
async fn get_item(ctx: &Ctx<'_>, id: &str) -> Result<Option<Value>, SourceError> {
    let body = ctx
        .json(ctx.get(&format!("item/{}.json", segment(id)?)))
        .await?;
    match body {
        Value::Null => Ok(None),
        Value::Object(_) => Ok(Some(body)),
        _ => Err(SourceError::Malformed("an item is not an object".into())),
    }
}

fn kids(node: &Value) -> Vec<String> {
    json::array(node, "kids")
        .iter()
        .filter_map(|k| match k {
            Value::Number(n) => n.as_u64().map(|n| n.to_string()),
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                Some(s.clone())
            }
            _ => None,
        })
        .collect()
}

/// Depth-first: the siblings of one level are fetched together (at most `FAN_OUT` at once), then
/// each one's replies follow it, so the order matches the thread as read. Stops at `limit`
/// comments and fetches no more than it needs.
fn walk<'a>(
    ctx: &'a Ctx<'a>,
    story: &'a str,
    ids: Vec<String>,
    depth: u32,
    limit: usize,
    out: &'a mut Vec<Item>,
) -> BoxFuture<'a, Result<(), SourceError>> {
    Box::pin(async move {
        let wanted: Vec<String> = ids
            .into_iter()
            .take(limit.saturating_sub(out.len()))
            .collect();
        let fetches = wanted
            .iter()
            .map(|id| Box::pin(get_item(ctx, id)) as BoxFuture<'_, _>)
            .collect();
        for node in bounded(fetches, FAN_OUT).await {
            if out.len() >= limit {
                break;
            }
            // A kid that no longer exists is skipped; a failing upstream fails the call.
            let Some(node) = node? else { continue };
            let Some(mut item) = node_item(&node, depth) else {
                continue;
            };
            item.extra("story_id", story);
            out.push(item);
            walk(ctx, story, kids(&node), depth + 1, limit, out).await?;
        }
        Ok(())
    })
}

/// A story, job, poll or comment. Deleted items keep their place in a thread (their replies
/// follow them) with no author and no text.
fn node_item(node: &Value, depth: u32) -> Option<Item> {
    let mut item = thread_node(node)?;
    item.author = json::string(node, "by");
    item.created_at = node.get("time").and_then(dates::normalize);
    item.metrics.score = json::number(node, "score");
    if item.kind == "post" {
        item.metrics.comments = json::number(node, "descendants");
        item.extra("external_url", json::string(node, "url"));
    } else {
        item.extra("parent_id", json::id(node, "parent"));
        item.extra("depth", depth);
    }
    let flag = |key: &str| node.get(key).and_then(Value::as_bool).filter(|b| *b);
    item.extra("deleted", flag("deleted"));
    item.extra("dead", flag("dead"));
    if item.author.is_none() {
        item.extra("author_deleted", true);
    }
    Some(item)
}
