//! video: a video sharing site's videos, channels and comments.
//!
//! Item types: `video`, `channel`, `comment`. `id` = the video id (11 characters), the channel id
//! (`UC…`) or the comment id; `url` = `https://www.youtube.com/watch?v=ID` (comments add `&lc=ID`,
//! channels are `/channel/UC…`). `author` = the channel id `UC…` (the one author key every source
//! exposes), `author_name` = the channel's title. Metrics: `views`, `likes`, `comments` (hidden
//! counts are left out), and on the feed `rating`/`rating_count` from its star rating.
//!
//! `extra` keys:
//! - videos: `duration` (ISO 8601 as given, `PT19M42S`), `channel_url`, `thumbnail`,
//!   `live` (`upcoming`/`live` while not a finished video; Data API only).
//! - channels: `channel_url`, `thumbnail`, `handle` (`@name`), `subscribers` (absent when hidden),
//!   `video_count`, `country`.
//! - comments: `video_id`, `channel_url` (of the commenter), `updated_at` (when edited).

pub mod data_api;
pub mod rss;

use crate::item::Item;

pub const PLATFORM: &str = "video";

pub fn watch_url(video_id: &str) -> String {
    format!("https://www.youtube.com/watch?v={video_id}")
}

pub fn channel_url(channel_id: &str) -> String {
    format!("https://www.youtube.com/channel/{channel_id}")
}

/// A `video` item with its id and watch URL.
pub fn video_item(video_id: &str) -> Item {
    let mut item = Item::new(PLATFORM, "video", video_id);
    item.url = Some(watch_url(video_id));
    item
}

/// Sets the channel as the item's author (`author` = channel id, `author_name` = its title) and
/// `extra.channel_url`.
pub fn set_channel(item: &mut Item, channel_id: Option<String>, channel_title: Option<String>) {
    item.extra("channel_url", channel_id.as_deref().map(channel_url));
    item.author = channel_id;
    item.author_name = channel_title;
}
