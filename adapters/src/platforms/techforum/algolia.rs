//! The forum's search API (Algolia HN Search): `/search`, `/search_by_date`, `/items/{id}` (a whole
//! thread in one answer) and `/users/{name}`. No credential.

use serde_json::Value;

use super::{PLATFORM, item_url, profile_item, thread_node};
use crate::api::Handlers;
use crate::api::techforum::{self, Profile, Search, SearchSort, SearchType, Story, StoryComments};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::path::segment;
use crate::upstream::{Ctx, dates, html, json};

pub static SOURCE: Source = Source {
    id: "techforum.algolia",
    default_base_url: "https://hn.algolia.com/api/v1",
    needs_credential: false,
    // The published courtesy limit is 10,000 requests an hour per IP.
    rate_limit: Some((10_000.0 / 3600.0, 100)),
    handlers: Handlers::Techforum(techforum::Handlers {
        search: Some(serve!(search)),
        story: Some(serve!(story)),
        story_comments: Some(serve!(story_comments)),
        profile: Some(serve!(profile)),
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let path = match r.sort {
        SearchSort::Relevance => "search",
        SearchSort::New => "search_by_date",
    };
    let tags = match r.r#type {
        SearchType::Story => "story",
        SearchType::Comment => "comment",
    };
    let page = ctx.cursor.and_then(|c| c.parse::<u64>().ok()).unwrap_or(0);
    let req = ctx.get(path).query(&[
        ("query", r.query.as_str()),
        ("tags", tags),
        ("hitsPerPage", &r.limit.to_string()),
        ("page", &page.to_string()),
    ]);
    let body = ctx.json(req).await?;
    search_page(&body, page)
}

async fn story(ctx: &Ctx<'_>, r: &Story) -> Result<Page, SourceError> {
    let body = ctx
        .json(ctx.get(&format!("items/{}", segment(&r.id)?)))
        .await?;
    let item = thread_item(&body, None, 0).ok_or(SourceError::NotFound)?;
    Ok(Page::single(item))
}

async fn story_comments(ctx: &Ctx<'_>, r: &StoryComments) -> Result<Page, SourceError> {
    let body = ctx
        .json(ctx.get(&format!("items/{}", segment(&r.id)?)))
        .await?;
    if body.get("id").is_none() {
        return Err(SourceError::Malformed("the thread has no id".into()));
    }
    let mut items = Vec::new();
    flatten_comments(&body, 0, &mut items);
    let total = items.len() as u64;
    items.truncate(r.limit as usize);
    Ok(Page {
        total: Some(total),
        items,
        next_cursor: None,
    })
}

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let body = ctx
        .json(ctx.get(&format!("users/{}", segment(&r.handle)?)))
        .await?;
    let name = json::string(&body, "username").ok_or(SourceError::NotFound)?;
    Ok(Page::single(profile_item(name, &body, created_at(&body))))
}

fn search_page(body: &Value, page: u64) -> Result<Page, SourceError> {
    let hits = body
        .get("hits")
        .and_then(Value::as_array)
        .ok_or_else(|| SourceError::Malformed("no `hits` array".into()))?;
    let items = hits.iter().filter_map(hit_item).collect();
    let pages = json::int(body, "nbPages").unwrap_or(0).max(0) as u64;
    Ok(Page {
        items,
        total: json::int(body, "nbHits").map(|n| n.max(0) as u64),
        next_cursor: (page + 1 < pages).then(|| (page + 1).to_string()),
    })
}

fn hit_item(hit: &Value) -> Option<Item> {
    let id = json::id(hit, "objectID")?;
    let tags: Vec<&str> = json::array(hit, "_tags")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let is_comment = tags.contains(&"comment");
    let mut item = Item::new(
        PLATFORM,
        if is_comment { "comment" } else { "post" },
        id.clone(),
    );
    item.url = Some(item_url(&id));
    item.title = json::str(hit, "title").map(html::unescape);
    let body = if is_comment {
        json::str(hit, "comment_text")
    } else {
        json::str(hit, "story_text")
    };
    item.text = html::text_or_none(body);
    item.author = json::string(hit, "author");
    item.created_at = created_at(hit);
    item.metrics.score = json::number(hit, "points");
    item.metrics.comments = json::number(hit, "num_comments");
    item.extra("external_url", json::string(hit, "url"));
    if is_comment {
        item.extra("story_id", json::id(hit, "story_id"));
        item.extra("parent_id", json::id(hit, "parent_id"));
        item.extra(
            "story_title",
            json::str(hit, "story_title").map(html::unescape),
        );
    }
    Some(item)
}

/// One node of an `/items/{id}` tree.
fn thread_item(node: &Value, parent: Option<&str>, depth: u32) -> Option<Item> {
    let mut item = thread_node(node)?;
    item.author = json::string(node, "author");
    item.created_at = created_at(node);
    item.metrics.score = json::number(node, "points");
    if item.kind == "post" {
        item.metrics.comments = Some(count_comments(node) as f64);
        item.extra("external_url", json::string(node, "url"));
    } else {
        item.extra("parent_id", parent.map(str::to_string));
        item.extra("story_id", json::id(node, "story_id"));
        item.extra("depth", depth);
    }
    if item.author.is_none() && item.kind == "comment" {
        item.extra("author_deleted", true);
    }
    Some(item)
}

/// The creation time, from the epoch seconds or else the ISO text.
fn created_at(v: &Value) -> Option<String> {
    v.get("created_at_i")
        .and_then(dates::normalize)
        .or_else(|| v.get("created_at").and_then(dates::normalize))
}

fn count_comments(node: &Value) -> usize {
    json::array(node, "children")
        .iter()
        .map(|c| 1 + count_comments(c))
        .sum()
}

/// Depth-first, siblings in the upstream's order, so a thread reads top to bottom.
fn flatten_comments(node: &Value, depth: u32, out: &mut Vec<Item>) {
    let parent = json::id(node, "id");
    for child in json::array(node, "children") {
        if let Some(item) = thread_item(child, parent.as_deref(), depth) {
            out.push(item);
        }
        flatten_comments(child, depth + 1, out);
    }
}
