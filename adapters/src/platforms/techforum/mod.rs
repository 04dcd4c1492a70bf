//! techforum: a technology news forum of stories and comments.
//!
//! `extra` keys: `external_url` (the link a story points at), `story_id`, `parent_id`, `depth`
//! (comments in a thread, 0 = direct reply to the story), `story_title`, `author_deleted`, and from
//! the Firebase API `deleted`, `dead` and (profiles) `submitted_count`.

pub mod algolia;
pub mod firebase;

use serde_json::Value;

use crate::item::Item;
use crate::upstream::{html, json};

pub const PLATFORM: &str = "techforum";

/// The forum's own page of an item.
pub fn item_url(id: &str) -> String {
    format!("https://news.ycombinator.com/item?id={id}")
}

pub fn user_url(handle: &str) -> String {
    format!("https://news.ycombinator.com/user?id={handle}")
}

/// What both upstreams give alike for one node of a thread: the id, the kind (`comment`, else
/// `post`), the forum's URL, the title and the text.
pub fn thread_node(node: &Value) -> Option<Item> {
    let id = json::id(node, "id")?;
    let kind = match json::str(node, "type") {
        Some("comment") => "comment",
        _ => "post",
    };
    let mut item = Item::new(PLATFORM, kind, id.clone());
    item.url = Some(item_url(&id));
    item.title = json::str(node, "title").map(html::unescape);
    item.text = html::text_or_none(json::str(node, "text"));
    Some(item)
}

/// A user profile: `about` and `karma` are named alike upstream; the name and the creation time
/// are not.
pub fn profile_item(name: String, user: &Value, created_at: Option<String>) -> Item {
    let mut item = Item::new(PLATFORM, "profile", name.clone());
    item.url = Some(user_url(&name));
    item.author = Some(name);
    item.text = html::text_or_none(json::str(user, "about"));
    item.created_at = created_at;
    item.metrics.score = json::number(user, "karma");
    item
}
