//! microblog: a short-post microblogging network, read as a logged-out visitor can (post lookups)
//! and, with an operator token, through the network's official API (search, timelines, replies).
//!
//! Item types: `post`, `comment` (a reply), `profile`. `id` = the post's id string (a profile's
//! numeric user id); `title` is null; `text` is the post with entities decoded; `url` =
//! `https://x.com/{screen_name}/status/{id}` (`/i/status/{id}` without a known author); `author` =
//! screen name, `author_name` = display name. Metrics: `likes`, `comments` (replies), `reposts`,
//! `quotes`, `views`, each only when the source reports it.
//!
//! `extra` keys:
//! - posts: `is_reply` (boolean), `lang`, `author_followers` (when the source gives it),
//!   `conversation_id` (official API), `in_reply_to` (id of the post replied to, when known).
//! - an unavailable post (withheld, deleted, protected): `unavailable` (true) and `reason` (the
//!   network's text), with every other key null.
//! - profiles: `followers`, `following`, `posts_count`, `likes_count`, `location`, `website`,
//!   `protected`, `verified`.

pub mod fxtwitter;
pub mod syndication;
pub mod x_api;

use std::future::Future;

use crate::item::{Item, Page};
use crate::sources::SourceError;
use crate::upstream::html;

pub const PLATFORM: &str = "microblog";

/// The permalink of a post.
pub fn status_url(screen_name: Option<&str>, id: &str) -> String {
    format!("https://x.com/{}/status/{id}", screen_name.unwrap_or("i"))
}

/// The parts of a post every source gives in some form.
pub struct PostParts<'a> {
    pub id: &'a str,
    pub text: Option<&'a str>,
    pub screen_name: Option<&'a str>,
    pub name: Option<&'a str>,
    pub created_at: Option<String>,
    pub in_reply_to: Option<String>,
    pub is_reply: bool,
    pub lang: Option<&'a str>,
}

/// A `post` (or `comment` when it replies) with identity, text, author and the shared extra keys.
pub fn post_item(p: PostParts<'_>) -> Item {
    let kind = if p.is_reply { "comment" } else { "post" };
    let mut item = Item::new(PLATFORM, kind, p.id);
    item.text = p.text.map(html::unescape).filter(|t| !t.trim().is_empty());
    item.url = Some(status_url(p.screen_name, p.id));
    item.author = p.screen_name.map(str::to_string);
    item.author_name = p.name.map(str::to_string);
    item.created_at = p.created_at;
    item.extra("is_reply", p.is_reply);
    item.extra("lang", p.lang.filter(|l| !l.is_empty()));
    item.extra("in_reply_to", p.in_reply_to);
    item
}

/// A post the network no longer shows (deleted, withheld, protected).
pub fn unavailable_item(id: &str, reason: Option<String>) -> Item {
    let mut item = Item::new(PLATFORM, "post", id);
    item.url = Some(status_url(None, id));
    item.extra("unavailable", true);
    item.extra("reason", reason);
    item
}

/// The parts of a profile.
pub struct ProfileParts<'a> {
    pub id: Option<String>,
    pub screen_name: &'a str,
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
    pub created_at: Option<String>,
}

pub fn profile_item(p: ProfileParts<'_>) -> Item {
    let id = p.id.unwrap_or_else(|| p.screen_name.to_string());
    let mut item = Item::new(PLATFORM, "profile", id);
    item.title = p.name.map(str::to_string);
    item.text = p
        .description
        .map(html::unescape)
        .filter(|t| !t.trim().is_empty());
    item.url = Some(format!("https://x.com/{}", p.screen_name));
    item.author = Some(p.screen_name.to_string());
    item.author_name = p.name.map(str::to_string);
    item.created_at = p.created_at;
    item
}

/// Reads up to five posts one by one (`one` answers `NotFound` for a missing post): missing posts
/// are left out, and the call is `NotFound` only when every post is missing. Any other failure
/// fails the whole lookup, so the next source can try all of them.
pub async fn lookup_each<F, Fut>(ids: &[String], mut one: F) -> Result<Page, SourceError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<Item, SourceError>>,
{
    let mut items = Vec::new();
    for id in ids {
        match one(id.clone()).await {
            Ok(item) => items.push(item),
            Err(SourceError::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    if items.is_empty() {
        return Err(SourceError::NotFound);
    }
    Ok(Page {
        items,
        total: None,
        next_cursor: None,
    })
}
