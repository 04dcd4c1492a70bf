//! techforum: a technology news forum of stories and comments.
//!
//! `extra` keys: `external_url` (the link a story points at), `story_id`, `parent_id`, `depth`
//! (comments in a thread, 0 = direct reply to the story), `story_title`, `author_deleted`, and from
//! the Firebase API `deleted`, `dead` and (profiles) `submitted_count`.

pub mod algolia;
pub mod firebase;

pub const PLATFORM: &str = "techforum";

/// The forum's own page of an item.
pub fn item_url(id: &str) -> String {
    format!("https://news.ycombinator.com/item?id={id}")
}

pub fn user_url(handle: &str) -> String {
    format!("https://news.ycombinator.com/user?id={handle}")
}
