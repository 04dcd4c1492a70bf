//! The FxTwitter API (`https://api.fxtwitter.com`), a third-party, best-effort reader of public
//! posts and profiles without key: `/status/{id}` for a post (the lookup's fallback) and
//! `/{handle}` for a profile. Answers are `{code, message, tweet|user}`; the `code` mirrors the HTTP
//! status (404 not found, 401 a protected post, which counts as not found, 500 the upstream failed).

use serde_json::Value;

use super::{PostParts, ProfileParts, lookup_each, post_item, profile_item};
use crate::api::Handlers;
use crate::api::microblog::{self, Post, Profile};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::path::segment;
use crate::upstream::{Ctx, dates, json, status_error};

pub static SOURCE: Source = Source {
    id: "microblog.fxtwitter",
    default_base_url: "https://api.fxtwitter.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Microblog(microblog::Handlers {
        post: Some(serve!(post)),
        profile: Some(serve!(profile)),
        ..microblog::Handlers::NONE
    }),
};

async fn post(ctx: &Ctx<'_>, r: &Post) -> Result<Page, SourceError> {
    lookup_each(&r.id, |id| async move {
        let path = format!("status/{}", segment(&id)?);
        get(ctx, &path)
            .await?
            .get("tweet")
            .filter(|t| t.is_object())
            .map(tweet_item)
            .ok_or_else(|| SourceError::Malformed("no `tweet` object".into()))
    })
    .await
}

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let body = get(ctx, &segment(&r.handle)?).await?;
    let user = body
        .get("user")
        .filter(|u| u.is_object())
        .ok_or_else(|| SourceError::Malformed("no `user` object".into()))?;
    let item = user_item(user).ok_or(SourceError::NotFound)?;
    Ok(Page::single(item))
}

/// One call; the body's `code` is read as the status when the HTTP status says less.
async fn get(ctx: &Ctx<'_>, path: &str) -> Result<Value, SourceError> {
    let raw = ctx.send_raw(ctx.get(path)).await?;
    let body: Value = match serde_json::from_slice(&raw.body) {
        Ok(v) => v,
        Err(_) => {
            return Err(status_error(raw.status)
                .unwrap_or_else(|| SourceError::Malformed("not JSON".into())));
        }
    };
    let code = json::int(&body, "code")
        .and_then(|c| u16::try_from(c).ok())
        .and_then(|c| reqwest::StatusCode::from_u16(c).ok())
        .unwrap_or(raw.status);
    let status = if raw.status.is_success() {
        code
    } else {
        raw.status
    };
    match status_error(status) {
        None => Ok(body),
        // A protected account's post: not public, so not there for a logged-out visitor.
        Some(_) if status.as_u16() == 401 => Err(SourceError::NotFound),
        Some(e) => Err(e),
    }
}

fn tweet_item(t: &Value) -> Item {
    let id = json::id(t, "id").unwrap_or_default();
    let author = t.get("author").unwrap_or(&Value::Null);
    let in_reply_to = json::id(t, "replying_to_status");
    let created_at = t
        .get("created_timestamp")
        .and_then(dates::normalize)
        .or_else(|| json::str(t, "created_at").and_then(dates::parse_text));
    let mut item = post_item(PostParts {
        id: &id,
        text: json::str(t, "text"),
        screen_name: json::str(author, "screen_name"),
        name: json::str(author, "name"),
        created_at,
        is_reply: in_reply_to.is_some(),
        in_reply_to,
        lang: json::str(t, "lang"),
    });
    item.metrics.likes = json::number(t, "likes");
    item.metrics.comments = json::number(t, "replies");
    item.metrics.reposts = json::number(t, "retweets");
    item.metrics.quotes = json::number(t, "quotes");
    item.metrics.views = json::number(t, "views");
    item.extra("author_followers", json::int(author, "followers"));
    item
}

fn user_item(u: &Value) -> Option<Item> {
    let screen_name = json::str(u, "screen_name")?;
    let mut item = profile_item(ProfileParts {
        id: json::id(u, "id"),
        screen_name,
        name: json::str(u, "name"),
        description: json::str(u, "description"),
        created_at: json::str(u, "joined").and_then(dates::parse_text),
    });
    item.extra("followers", json::int(u, "followers"));
    item.extra("following", json::int(u, "following"));
    item.extra("posts_count", json::int(u, "tweets"));
    item.extra("likes_count", json::int(u, "likes"));
    item.extra("location", json::string(u, "location"));
    item.extra(
        "website",
        u.get("website").and_then(|w| json::string(w, "url")),
    );
    item.extra("protected", u.get("protected").and_then(Value::as_bool));
    item.extra(
        "verified",
        u.get("verification")
            .and_then(|v| v.get("verified"))
            .and_then(Value::as_bool),
    );
    Some(item)
}
