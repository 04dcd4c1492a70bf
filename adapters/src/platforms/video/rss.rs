//! The video site's channel feed (`https://www.youtube.com/feeds/videos.xml?channel_id=UC…`): the 15
//! newest uploads of a channel, no key. Atom with the site's extensions (`yt:videoId`,
//! `yt:channelId`, `media:group` with description, thumbnail, star rating and view count), read by
//! the shared feed parser. The fallback after the Data API for channel uploads, and the only source
//! of them on a deployment without a key.

use super::{set_channel, video_item};
use crate::api::Handlers;
use crate::api::video::{self, ChannelVideos};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::Ctx;
use crate::upstream::feed::{self, FeedEntry};

pub static SOURCE: Source = Source {
    id: "video.rss",
    default_base_url: "https://www.youtube.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Video(video::Handlers {
        channel_videos: Some(serve!(channel_videos)),
        ..video::Handlers::NONE
    }),
};

async fn channel_videos(ctx: &Ctx<'_>, r: &ChannelVideos) -> Result<Page, SourceError> {
    let req = ctx
        .get("feeds/videos.xml")
        .query(&[("channel_id", r.id.as_str())]);
    let body = ctx.text(req).await?;
    let entries = feed::parse(&body).map_err(SourceError::Malformed)?;
    Ok(Page {
        items: entries.iter().filter_map(entry_item).collect(),
        total: None,
        next_cursor: None,
    })
}

fn entry_item(e: &FeedEntry) -> Option<Item> {
    let ext = |k: &str| e.extensions.get(k).cloned();
    let number = |k: &str| {
        e.extensions
            .get(k)
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let id = ext("yt:videoId")?;
    let mut item = video_item(&id);
    item.title = e.title.clone().or_else(|| ext("media:title"));
    item.text = ext("media:description").filter(|t| !t.trim().is_empty());
    set_channel(&mut item, ext("yt:channelId"), e.author.clone());
    item.created_at = e.published.clone();
    item.metrics.views = number("media:statistics@views");
    // Without any rating the feed says count="0" average="0.00"; that is no rating, not a 0 rating.
    if let Some(count) = number("media:starRating@count").filter(|c| *c > 0.0) {
        item.metrics.rating_count = Some(count);
        item.metrics.rating = number("media:starRating@average");
    }
    item.extra("thumbnail", ext("media:thumbnail@url"));
    Some(item)
}
