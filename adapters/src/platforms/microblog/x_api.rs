//! The network's official API v2 (`https://api.x.com/2`) with the operator's bearer token
//! (required, `Authorization: Bearer`). Serves everything the logged-out sources cannot: recent
//! search (last 7 days; `latest` -> `sort_order=recency`, `top` -> `relevancy`), profiles, a user's
//! posts (`exclude=replies` unless `replies=true`), post lookup by ids, and a post's replies (recent
//! search for `conversation_id:{id}`, so only replies of the last 7 days). Authors come from the
//! `author_id` expansion. Cursors are the upstream's `next_token`; a user's posts carry the user id
//! with it (`{user_id}:{token}`) so the next page needs no second lookup.
//!
//! A 200 answer may carry `errors` instead of `data` (a missing or suspended user or post): that is
//! not found. 401 and 403 (a refused or under-tiered token) fall back; 400 is refused with the
//! upstream's message.

use std::collections::HashMap;

use serde_json::Value;

use super::{PostParts, ProfileParts, post_item, profile_item};
use crate::api::Handlers;
use crate::api::microblog::{self, Post, PostComments, Profile, ProfilePosts, Search, SearchSort};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::path::{digits, segment};
use crate::upstream::{Ctx, dates, found, json, status_error};

/// Posts asked per page (the upstream allows 5-100 on timelines and 10-100 on search).
const PAGE_SIZE: &str = "20";
const TWEET_FIELDS: &str = "created_at,public_metrics,author_id,conversation_id,lang,referenced_tweets,in_reply_to_user_id,note_tweet";
const USER_FIELDS: &str = "username,name,public_metrics";
const PROFILE_FIELDS: &str =
    "created_at,description,public_metrics,verified,protected,location,url";

pub static SOURCE: Source = Source {
    id: "microblog.x_api",
    default_base_url: "https://api.x.com/2",
    needs_credential: true,
    rate_limit: None,
    handlers: Handlers::Microblog(microblog::Handlers {
        search: Some(serve!(serve_search)),
        post_comments: Some(serve!(post_comments)),
        profile: Some(serve!(profile)),
        profile_posts: Some(serve!(profile_posts)),
        post: Some(serve!(post)),
    }),
};

async fn serve_search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let order = match r.sort {
        SearchSort::Latest => "recency",
        SearchSort::Top => "relevancy",
    };
    search(ctx, &r.query, order).await
}

async fn post_comments(ctx: &Ctx<'_>, r: &PostComments) -> Result<Page, SourceError> {
    search(ctx, &format!("conversation_id:{}", r.id), "recency").await
}

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let user = user_by_name(ctx, &r.handle, PROFILE_FIELDS).await?;
    found(user_item(&user))
}

async fn profile_posts(ctx: &Ctx<'_>, r: &ProfilePosts) -> Result<Page, SourceError> {
    user_posts(ctx, &r.handle, r.replies).await
}

async fn post(ctx: &Ctx<'_>, r: &Post) -> Result<Page, SourceError> {
    let ids = r.id.join(",");
    let body = get(ctx, "tweets", &tweet_query(&[("ids", &ids)])).await?;
    let page = tweets_page(&body);
    if page.items.is_empty() {
        return Err(SourceError::NotFound);
    }
    Ok(page)
}

/// The fields and expansions every post request asks for, plus `extra`.
fn tweet_query<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut q = vec![
        ("tweet.fields", TWEET_FIELDS),
        ("expansions", "author_id"),
        ("user.fields", USER_FIELDS),
    ];
    q.extend_from_slice(extra);
    q
}

async fn get(ctx: &Ctx<'_>, path: &str, query: &[(&str, &str)]) -> Result<Value, SourceError> {
    let mut req = ctx.get(path).query(query);
    if let Some(token) = ctx.credential {
        req = req.bearer_auth(token);
    }
    let raw = ctx.send_raw(req).await?;
    let body: Option<Value> = serde_json::from_slice(&raw.body).ok();
    match status_error(raw.status) {
        None => body
            .filter(Value::is_object)
            .ok_or_else(|| SourceError::Malformed("not a JSON object".into())),
        Some(SourceError::Rejected(_)) => {
            // `{errors: [{message}]}` or a problem document `{title, detail}`.
            let message = body.as_ref().and_then(|b| {
                json::array(b, "errors")
                    .first()
                    .and_then(|e| json::string(e, "message"))
                    .or_else(|| json::string(b, "detail"))
            });
            Err(SourceError::Rejected(match message {
                Some(m) => format!("answered {}: {m}", raw.status),
                None => format!("answered {}", raw.status),
            }))
        }
        Some(e) => Err(e),
    }
}

async fn search(ctx: &Ctx<'_>, query: &str, order: &str) -> Result<Page, SourceError> {
    let mut q = tweet_query(&[
        ("query", query),
        ("sort_order", order),
        ("max_results", PAGE_SIZE),
    ]);
    if let Some(token) = ctx.cursor {
        q.push(("next_token", token));
    }
    let body = get(ctx, "tweets/search/recent", &q).await?;
    let mut page = tweets_page(&body);
    page.next_cursor = body.get("meta").and_then(|m| json::string(m, "next_token"));
    Ok(page)
}

async fn user_by_name(ctx: &Ctx<'_>, handle: &str, fields: &str) -> Result<Value, SourceError> {
    let body = get(
        ctx,
        &format!("users/by/username/{}", segment(handle)?),
        &[("user.fields", fields)],
    )
    .await?;
    // A missing or suspended user is a 200 with `errors` and no `data`.
    body.get("data")
        .filter(|d| d.is_object())
        .cloned()
        .ok_or(SourceError::NotFound)
}

async fn user_posts(ctx: &Ctx<'_>, handle: &str, replies: bool) -> Result<Page, SourceError> {
    // The user id comes from the cursor or the upstream's answer: checked against the API's id
    // grammar before it goes into the path.
    let (user_id, token) = match ctx.cursor {
        Some(c) => {
            let (id, token) = c
                .split_once(':')
                .ok_or_else(|| SourceError::Malformed("the cursor lacks the user id".into()))?;
            (digits(id, "the cursor's user id")?.to_string(), Some(token))
        }
        None => {
            let user = user_by_name(ctx, handle, USER_FIELDS).await?;
            let id = json::id(&user, "id").ok_or(SourceError::NotFound)?;
            (digits(&id, "the user id in the answer")?.to_string(), None)
        }
    };
    let mut q = tweet_query(&[("max_results", PAGE_SIZE)]);
    if !replies {
        q.push(("exclude", "replies"));
    }
    if let Some(token) = token {
        q.push(("pagination_token", token));
    }
    let body = get(ctx, &format!("users/{}/tweets", segment(&user_id)?), &q).await?;
    let mut page = tweets_page(&body);
    page.next_cursor = body
        .get("meta")
        .and_then(|m| json::string(m, "next_token"))
        .map(|t| format!("{user_id}:{t}"));
    Ok(page)
}

/// The posts of `data`, with authors from `includes.users`.
fn tweets_page(body: &Value) -> Page {
    let users: HashMap<String, &Value> = body
        .get("includes")
        .map(|i| json::array(i, "users"))
        .unwrap_or(&[])
        .iter()
        .filter_map(|u| Some((json::id(u, "id")?, u)))
        .collect();
    let items = json::array(body, "data")
        .iter()
        .filter_map(|t| tweet_item(t, &users))
        .collect();
    Page {
        items,
        total: None,
        next_cursor: None,
    }
}

fn tweet_item(t: &Value, users: &HashMap<String, &Value>) -> Option<Item> {
    let id = json::id(t, "id")?;
    let user = json::id(t, "author_id").and_then(|a| users.get(&a).copied());
    let replied_to = json::array(t, "referenced_tweets")
        .iter()
        .find(|r| json::str(r, "type") == Some("replied_to"))
        .and_then(|r| json::id(r, "id"));
    let text = t
        .get("note_tweet")
        .and_then(|n| json::str(n, "text"))
        .or_else(|| json::str(t, "text"));
    let mut item = post_item(PostParts {
        id: &id,
        text,
        screen_name: user.and_then(|u| json::str(u, "username")),
        name: user.and_then(|u| json::str(u, "name")),
        created_at: t.get("created_at").and_then(dates::normalize),
        is_reply: replied_to.is_some(),
        in_reply_to: replied_to,
        lang: json::str(t, "lang"),
    });
    if let Some(m) = t.get("public_metrics") {
        item.metrics.likes = json::number(m, "like_count");
        item.metrics.comments = json::number(m, "reply_count");
        item.metrics.reposts = json::number(m, "retweet_count");
        item.metrics.quotes = json::number(m, "quote_count");
        item.metrics.views = json::number(m, "impression_count");
    }
    item.extra(
        "author_followers",
        user.and_then(|u| u.get("public_metrics"))
            .and_then(|m| json::int(m, "followers_count")),
    );
    item.extra("conversation_id", json::string(t, "conversation_id"));
    Some(item)
}

fn user_item(u: &Value) -> Option<Item> {
    let screen_name = json::str(u, "username")?;
    let mut item = profile_item(ProfileParts {
        id: json::id(u, "id"),
        screen_name,
        name: json::str(u, "name"),
        description: json::str(u, "description"),
        created_at: u.get("created_at").and_then(dates::normalize),
    });
    if let Some(m) = u.get("public_metrics") {
        item.extra("followers", json::int(m, "followers_count"));
        item.extra("following", json::int(m, "following_count"));
        item.extra("posts_count", json::int(m, "tweet_count"));
        item.extra("likes_count", json::int(m, "like_count"));
    }
    item.extra("location", json::string(u, "location"));
    item.extra("website", json::string(u, "url"));
    item.extra("protected", u.get("protected").and_then(Value::as_bool));
    item.extra("verified", u.get("verified").and_then(Value::as_bool));
    Some(item)
}
