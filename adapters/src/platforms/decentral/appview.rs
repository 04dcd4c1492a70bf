//! The network's public AppView (`https://public.api.bsky.app`, XRPC over GET, no credential):
//! `app.bsky.feed.searchPosts`, `app.bsky.actor.getProfile`, `app.bsky.feed.getAuthorFeed`,
//! `app.bsky.actor.searchActors` and `app.bsky.feed.getPostThread`. XRPC errors come as
//! `{"error": NAME, "message": TEXT}`; a 400 naming a missing thing means "not found".
//! Unauthenticated post search is often switched off upstream (403); that is a fall-back failure.

use serde_json::Value;

use super::{PLATFORM, post_at_uri, post_url, profile_url};
use crate::api::Handlers;
use crate::api::decentral::{self, Post, Profile, ProfilePosts, ProfileSearch, Search};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, dates, json, parse_json, status_error};

pub static SOURCE: Source = Source {
    id: "decentral.appview",
    default_base_url: "https://public.api.bsky.app",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Decentral(decentral::Handlers {
        search: Some(serve!(search)),
        profile: Some(serve!(profile)),
        profile_posts: Some(serve!(profile_posts)),
        profile_search: Some(serve!(profile_search)),
        post: Some(serve!(post)),
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let limit = r.limit.to_string();
    let mut q = vec![("q", r.query.as_str()), ("limit", limit.as_str())];
    if let Some(c) = ctx.cursor {
        q.push(("cursor", c));
    }
    let body = xrpc(ctx, "app.bsky.feed.searchPosts", &q).await?;
    let posts = body
        .get("posts")
        .and_then(Value::as_array)
        .ok_or_else(|| SourceError::Malformed("no `posts` array".into()))?;
    Ok(Page {
        items: posts.iter().filter_map(post_item).collect(),
        total: json::int(&body, "hitsTotal").map(|n| n.max(0) as u64),
        next_cursor: next_cursor(&body, posts.is_empty()),
    })
}

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let body = xrpc(ctx, "app.bsky.actor.getProfile", &[("actor", &r.handle)]).await?;
    let item = profile_item(&body)
        .ok_or_else(|| SourceError::Malformed("the profile has no DID".into()))?;
    Ok(Page::single(item))
}

async fn profile_posts(ctx: &Ctx<'_>, r: &ProfilePosts) -> Result<Page, SourceError> {
    let limit = r.limit.to_string();
    let mut q = vec![("actor", r.handle.as_str()), ("limit", limit.as_str())];
    if let Some(c) = ctx.cursor {
        q.push(("cursor", c));
    }
    let body = xrpc(ctx, "app.bsky.feed.getAuthorFeed", &q).await?;
    let feed = body
        .get("feed")
        .and_then(Value::as_array)
        .ok_or_else(|| SourceError::Malformed("no `feed` array".into()))?;
    let items = feed
        .iter()
        .filter_map(|entry| {
            let mut item = post_item(entry.get("post")?)?;
            let reason = entry.get("reason");
            if reason
                .and_then(|r| json::str(r, "$type"))
                .is_some_and(|t| t.ends_with("#reasonRepost"))
            {
                item.extra(
                    "reposted_by",
                    reason
                        .and_then(|r| r.get("by"))
                        .and_then(|by| json::string(by, "handle")),
                );
            }
            Some(item)
        })
        .collect();
    Ok(Page {
        items,
        total: None,
        next_cursor: next_cursor(&body, feed.is_empty()),
    })
}

async fn profile_search(ctx: &Ctx<'_>, r: &ProfileSearch) -> Result<Page, SourceError> {
    let limit = r.limit.to_string();
    let body = xrpc(
        ctx,
        "app.bsky.actor.searchActors",
        &[("q", r.query.as_str()), ("limit", limit.as_str())],
    )
    .await?;
    let actors = body
        .get("actors")
        .and_then(Value::as_array)
        .ok_or_else(|| SourceError::Malformed("no `actors` array".into()))?;
    Ok(Page {
        items: actors.iter().filter_map(profile_item).collect(),
        total: None,
        next_cursor: None,
    })
}

async fn post(ctx: &Ctx<'_>, r: &Post) -> Result<Page, SourceError> {
    let uri = post_at_uri(&r.url)
        .ok_or_else(|| SourceError::Rejected("not a post URL or at-uri".into()))?;
    let body = xrpc(ctx, "app.bsky.feed.getPostThread", &[("uri", &uri)]).await?;
    let thread = body
        .get("thread")
        .ok_or_else(|| SourceError::Malformed("no `thread`".into()))?;
    if !is_thread_view(thread) {
        // `#notFoundPost` or `#blockedPost`: nothing a logged-out visitor can read.
        return Err(SourceError::NotFound);
    }
    let mut item = thread
        .get("post")
        .and_then(post_item)
        .ok_or_else(|| SourceError::Malformed("the thread has no post".into()))?;
    item.extra("thread_parents_returned", count_parents(thread));
    item.extra("thread_replies_returned", count_replies(thread));
    Ok(Page::single(item))
}

/// The upstream's cursor, unless the page was empty (some AppViews repeat a cursor at the end).
fn next_cursor(body: &Value, empty: bool) -> Option<String> {
    json::string(body, "cursor").filter(|_| !empty)
}

/// One XRPC query; XRPC error bodies name what went wrong.
async fn xrpc(ctx: &Ctx<'_>, method: &str, query: &[(&str, &str)]) -> Result<Value, SourceError> {
    let req = ctx.get(&format!("xrpc/{method}")).query(query);
    let raw = ctx.send_raw(req).await?;
    let (status, body) = (raw.status, raw.body);
    if status.as_u16() == 400 {
        let err = parse_json(&body).unwrap_or(Value::Null);
        let name = json::str(&err, "error").unwrap_or("");
        let message = json::str(&err, "message").unwrap_or("");
        let missing = message.to_ascii_lowercase();
        if name == "NotFound"
            || missing.contains("not found")
            || missing.contains("could not find")
            || missing.contains("unable to resolve")
        {
            return Err(SourceError::NotFound);
        }
        return Err(SourceError::Rejected(format!("{name}: {message}")));
    }
    if let Some(e) = status_error(status) {
        return Err(e);
    }
    parse_json(&body)
}

fn is_thread_view(node: &Value) -> bool {
    node.get("post").is_some()
        && json::str(node, "$type").is_none_or(|t| t.ends_with("#threadViewPost"))
}

fn count_parents(node: &Value) -> usize {
    match node.get("parent") {
        Some(p) if is_thread_view(p) => 1 + count_parents(p),
        _ => 0,
    }
}

fn count_replies(node: &Value) -> usize {
    json::array(node, "replies")
        .iter()
        .filter(|r| is_thread_view(r))
        .map(|r| 1 + count_replies(r))
        .sum()
}

/// A `postView`.
fn post_item(post: &Value) -> Option<Item> {
    let uri = json::string(post, "uri")?;
    let record = post.get("record").unwrap_or(&Value::Null);
    let reply = record.get("reply");
    let mut item = Item::new(
        PLATFORM,
        if reply.is_some() { "comment" } else { "post" },
        uri.clone(),
    );
    let author = post.get("author").unwrap_or(&Value::Null);
    let did = json::string(author, "did");
    item.author = json::string(author, "handle");
    item.author_name = json::str(author, "displayName")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    item.url = item
        .author
        .as_deref()
        .filter(|h| *h != "handle.invalid")
        .or(did.as_deref())
        .and_then(|actor| post_url(actor, &uri));
    item.text = json::string(record, "text");
    item.created_at = record
        .get("createdAt")
        .and_then(dates::normalize)
        .or_else(|| post.get("indexedAt").and_then(dates::normalize));
    item.metrics.likes = json::number(post, "likeCount");
    item.metrics.reposts = json::number(post, "repostCount");
    item.metrics.quotes = json::number(post, "quoteCount");
    item.metrics.comments = json::number(post, "replyCount");
    item.extra("cid", json::string(post, "cid"));
    item.extra("author_did", did);
    let langs: Vec<Value> = json::array(record, "langs")
        .iter()
        .filter(|l| l.as_str().is_some_and(|s| !s.is_empty()))
        .cloned()
        .collect();
    item.extra("lang", langs.first().cloned());
    if !langs.is_empty() {
        item.extra("langs", Value::Array(langs));
    }
    let reply_uri = |which: &str| {
        reply
            .and_then(|r| r.get(which))
            .and_then(|p| json::string(p, "uri"))
    };
    item.extra("reply_parent", reply_uri("parent"));
    item.extra("reply_root", reply_uri("root"));
    item.extra(
        "indexed_at",
        post.get("indexedAt").and_then(dates::normalize),
    );
    Some(item)
}

/// A `profileView`, `profileViewBasic` or `profileViewDetailed`.
fn profile_item(profile: &Value) -> Option<Item> {
    let did = json::string(profile, "did")?;
    let mut item = Item::new(PLATFORM, "profile", did.clone());
    item.author = json::string(profile, "handle");
    item.author_name = json::str(profile, "displayName")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    item.text = json::str(profile, "description")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    item.url = Some(profile_url(
        item.author
            .as_deref()
            .filter(|h| *h != "handle.invalid")
            .unwrap_or(&did),
    ));
    item.created_at = profile.get("createdAt").and_then(dates::normalize);
    item.extra("followers_count", json::int(profile, "followersCount"));
    item.extra("follows_count", json::int(profile, "followsCount"));
    item.extra("posts_count", json::int(profile, "postsCount"));
    item.extra("avatar", json::string(profile, "avatar"));
    item.extra(
        "indexed_at",
        profile.get("indexedAt").and_then(dates::normalize),
    );
    Some(item)
}
