//! web: general web and news search.
//!
//! Item type `page` (`article` for `topic=news`). `id` = `url` = the result's URL; `title` with tags
//! stripped; `text` = the snippet; `author` = the result's host name (without `www.`),
//! `author_name` = the site's name where the source gives one; `created_at` = the page's date when
//! the source knows it (naive times taken as UTC). No metrics.
//!
//! `extra` keys: `engines` (array; SearXNG: the engines that found the result), `score` (SearXNG),
//! `age` (Brave's human text, "2 days ago"), `source` (the publisher or site name), `thumbnail`.

pub mod brave;
pub mod searxng;

use crate::api::web::SearchTopic;
use crate::item::Item;
use crate::upstream::{dates, encoding, html};

pub const PLATFORM: &str = "web";

/// The parts of one result every web source has.
pub struct Hit<'a> {
    pub url: &'a str,
    pub title: Option<&'a str>,
    pub snippet: Option<&'a str>,
    pub date: Option<&'a str>,
    pub site_name: Option<&'a str>,
}

pub fn item_kind(topic: SearchTopic) -> &'static str {
    match topic {
        SearchTopic::General => "page",
        SearchTopic::News => "article",
    }
}

/// A result as an item; `None` without a URL.
pub fn hit_item(hit: &Hit<'_>, topic: SearchTopic) -> Option<Item> {
    let url = hit.url.trim();
    if url.is_empty() {
        return None;
    }
    let mut item = Item::new(PLATFORM, item_kind(topic), url);
    item.url = Some(url.to_string());
    item.title = html::text_or_none(hit.title);
    item.text = html::text_or_none(hit.snippet);
    item.author = encoding::url_host(url);
    item.author_name = hit
        .site_name
        .map(html::unescape)
        .filter(|n| !n.trim().is_empty());
    item.created_at = hit.date.and_then(dates::parse_text);
    item.extra("source", item.author_name.clone());
    Some(item)
}
