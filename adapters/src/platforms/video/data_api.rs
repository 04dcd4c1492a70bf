//! The video site's Data API v3 (`https://www.googleapis.com/youtube/v3`). The credential is an API
//! key sent as the `key=` query parameter (required). Search and channel uploads list ids first and
//! then read `videos.list` for statistics and durations (statistics come as strings; a hidden count is
//! absent). Channel uploads read the uploads playlist (`UU…` for channel `UC…`). Comments are the
//! top-level comment threads; the cursor is the upstream's `nextPageToken`.
//!
//! The upstream's error reasons decide the failure: quota and rate reasons are rate limiting, a
//! refused key is "unavailable" (the next source may still answer), `commentsDisabled` is an empty
//! page, and the not-found reasons end the chain. The key is scrubbed from every error text.

use serde_json::Value;

use super::{PLATFORM, channel_url, set_channel, video_item, watch_url};
use crate::api::Handlers;
use crate::api::video::{self, Channel, ChannelVideos, Search, Video, VideoComments};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, dates, found, html, json, redact, status_error};

/// The largest page the upstream gives for search, playlists and `videos.list` ids.
const PAGE_MAX: u32 = 50;

pub static SOURCE: Source = Source {
    id: "video.data_api",
    default_base_url: "https://www.googleapis.com/youtube/v3",
    needs_credential: true,
    rate_limit: None,
    handlers: Handlers::Video(video::Handlers {
        search: Some(serve!(serve_search)),
        video: Some(serve!(serve_video)),
        channel: Some(serve!(serve_channel)),
        channel_videos: Some(serve!(serve_channel_videos)),
        video_comments: Some(serve!(serve_video_comments)),
        // No source reads transcripts yet: the endpoint answers 501 NOT_CONFIGURED.
        ..video::Handlers::NONE
    }),
};

// Each handler scrubs the key from its error texts (the upstream may echo the request URL).
async fn serve_search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    scrubbed(ctx, search(ctx, &r.query, r.limit).await)
}

async fn serve_video(ctx: &Ctx<'_>, r: &Video) -> Result<Page, SourceError> {
    let items = videos(ctx, std::slice::from_ref(&r.id)).await;
    scrubbed(ctx, items.and_then(|items| found(items.into_iter().next())))
}

async fn serve_channel(ctx: &Ctx<'_>, r: &Channel) -> Result<Page, SourceError> {
    scrubbed(ctx, channel(ctx, &r.id).await)
}

async fn serve_channel_videos(ctx: &Ctx<'_>, r: &ChannelVideos) -> Result<Page, SourceError> {
    scrubbed(ctx, uploads(ctx, &r.id).await)
}

async fn serve_video_comments(ctx: &Ctx<'_>, r: &VideoComments) -> Result<Page, SourceError> {
    scrubbed(ctx, comments(ctx, &r.id).await)
}

fn scrubbed(ctx: &Ctx<'_>, result: Result<Page, SourceError>) -> Result<Page, SourceError> {
    result.map_err(|e| redact(e, ctx.credential))
}

/// One call: the key goes in the query string; the upstream's error reasons are read.
async fn get(ctx: &Ctx<'_>, path: &str, query: &[(&str, &str)]) -> Result<Value, SourceError> {
    let mut req = ctx.get(path).query(query);
    if let Some(key) = ctx.credential {
        req = req.query(&[("key", key)]);
    }
    let raw = ctx.send_raw(req).await?;
    let body: Option<Value> = serde_json::from_slice(&raw.body).ok();
    if raw.status.is_success() {
        return body
            .filter(Value::is_object)
            .ok_or_else(|| SourceError::Malformed("not a JSON object".into()));
    }
    let reason = body
        .as_ref()
        .and_then(|b| b.get("error"))
        .and_then(|e| json::array(e, "errors").first())
        .and_then(|e| json::string(e, "reason"))
        .unwrap_or_default();
    Err(match reason.as_str() {
        "quotaExceeded" | "rateLimitExceeded" | "dailyLimitExceeded" | "userRateLimitExceeded" => {
            SourceError::RateLimited
        }
        "keyInvalid" | "keyExpired" | "accessNotConfigured" | "forbidden" => {
            SourceError::Unavailable(format!("the upstream refused the API key ({reason})"))
        }
        "commentsDisabled" => return Ok(Value::Null),
        "videoNotFound" | "channelNotFound" | "playlistNotFound" => SourceError::NotFound,
        _ => match status_error(raw.status) {
            Some(SourceError::Rejected(_)) if !reason.is_empty() => {
                SourceError::Rejected(format!("answered {} ({reason})", raw.status))
            }
            Some(e) => e,
            None => SourceError::Unavailable(format!("answered {}", raw.status)),
        },
    })
}

/// `videos.list` for up to 50 ids, in the order asked; ids the upstream does not return (private,
/// deleted) are left out.
async fn videos(ctx: &Ctx<'_>, ids: &[String]) -> Result<Vec<Item>, SourceError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let joined = ids.join(",");
    let body = get(
        ctx,
        "videos",
        &[
            ("part", "snippet,statistics,contentDetails"),
            ("id", &joined),
            ("maxResults", &PAGE_MAX.to_string()),
        ],
    )
    .await?;
    let found: Vec<Item> = json::array(&body, "items")
        .iter()
        .filter_map(video_resource)
        .collect();
    Ok(ids
        .iter()
        .filter_map(|id| found.iter().find(|i| &i.id == id).cloned())
        .collect())
}

/// A `videos.list` resource (`id` is the video id).
fn video_resource(v: &Value) -> Option<Item> {
    let id = json::string(v, "id")?;
    let mut item = video_item(&id);
    let snippet = v.get("snippet").unwrap_or(&Value::Null);
    fill_snippet(&mut item, snippet);
    if let Some(stats) = v.get("statistics") {
        item.metrics.views = json::number(stats, "viewCount");
        item.metrics.likes = json::number(stats, "likeCount");
        item.metrics.comments = json::number(stats, "commentCount");
    }
    item.extra(
        "duration",
        v.get("contentDetails")
            .and_then(|c| json::string(c, "duration")),
    );
    Some(item)
}

/// Title, description, channel, date, thumbnail and live state of a video snippet.
fn fill_snippet(item: &mut Item, snippet: &Value) {
    item.title = json::str(snippet, "title").map(html::unescape);
    item.text = json::str(snippet, "description")
        .map(html::unescape)
        .filter(|t| !t.trim().is_empty());
    set_channel(
        item,
        json::string(snippet, "channelId"),
        json::str(snippet, "channelTitle").map(html::unescape),
    );
    item.created_at = snippet.get("publishedAt").and_then(dates::normalize);
    item.extra("thumbnail", thumbnail(snippet));
    item.extra(
        "live",
        json::string(snippet, "liveBroadcastContent").filter(|l| l != "none"),
    );
}

/// The best thumbnail URL of a snippet.
fn thumbnail(snippet: &Value) -> Option<String> {
    let thumbs = snippet.get("thumbnails")?;
    ["maxres", "standard", "high", "medium", "default"]
        .iter()
        .find_map(|size| thumbs.get(*size).and_then(|t| json::string(t, "url")))
}

async fn search(ctx: &Ctx<'_>, query: &str, limit: u32) -> Result<Page, SourceError> {
    let max = limit.clamp(1, PAGE_MAX).to_string();
    let body = get(
        ctx,
        "search",
        &[
            ("part", "snippet"),
            ("type", "video"),
            ("q", query),
            ("maxResults", &max),
        ],
    )
    .await?;
    let ids: Vec<String> = json::array(&body, "items")
        .iter()
        .filter_map(|i| i.get("id").and_then(|id| json::string(id, "videoId")))
        .take(limit as usize)
        .collect();
    let items = videos(ctx, &ids).await?;
    let total = body
        .get("pageInfo")
        .and_then(|p| json::int(p, "totalResults"))
        .and_then(|n| u64::try_from(n).ok());
    Ok(Page {
        items,
        total,
        next_cursor: None,
    })
}

async fn channel(ctx: &Ctx<'_>, id: &str) -> Result<Page, SourceError> {
    let by = if id.starts_with('@') {
        "forHandle"
    } else {
        "id"
    };
    let body = get(ctx, "channels", &[("part", "snippet,statistics"), (by, id)]).await?;
    found(
        json::array(&body, "items")
            .iter()
            .find_map(channel_resource),
    )
}

fn channel_resource(v: &Value) -> Option<Item> {
    let id = json::string(v, "id")?;
    let mut item = Item::new(PLATFORM, "channel", id.clone());
    let snippet = v.get("snippet").unwrap_or(&Value::Null);
    item.title = json::str(snippet, "title").map(html::unescape);
    item.text = json::str(snippet, "description")
        .map(html::unescape)
        .filter(|t| !t.trim().is_empty());
    item.url = Some(channel_url(&id));
    let title = item.title.clone();
    set_channel(&mut item, Some(id), title);
    item.created_at = snippet.get("publishedAt").and_then(dates::normalize);
    item.extra("thumbnail", thumbnail(snippet));
    item.extra("handle", json::string(snippet, "customUrl"));
    item.extra("country", json::string(snippet, "country"));
    if let Some(stats) = v.get("statistics") {
        item.metrics.views = json::number(stats, "viewCount");
        let hidden = stats.get("hiddenSubscriberCount").and_then(Value::as_bool) == Some(true);
        if !hidden {
            item.extra("subscribers", json::int(stats, "subscriberCount"));
        }
        item.extra("video_count", json::int(stats, "videoCount"));
    }
    Some(item)
}

/// The newest uploads: the channel's uploads playlist (`UC…` -> `UU…`), then `videos.list`.
async fn uploads(ctx: &Ctx<'_>, channel_id: &str) -> Result<Page, SourceError> {
    let playlist = format!("UU{}", channel_id.get(2..).unwrap_or_default());
    let body = get(
        ctx,
        "playlistItems",
        &[
            ("part", "contentDetails"),
            ("playlistId", &playlist),
            ("maxResults", &PAGE_MAX.to_string()),
        ],
    )
    .await?;
    let ids: Vec<String> = json::array(&body, "items")
        .iter()
        .filter_map(|i| {
            i.get("contentDetails")
                .and_then(|c| json::string(c, "videoId"))
        })
        .collect();
    let items = videos(ctx, &ids).await?;
    Ok(Page {
        items,
        total: None,
        next_cursor: None,
    })
}

async fn comments(ctx: &Ctx<'_>, video_id: &str) -> Result<Page, SourceError> {
    let mut query = vec![
        ("part", "snippet"),
        ("videoId", video_id),
        ("maxResults", "100"),
        ("textFormat", "plainText"),
    ];
    if let Some(token) = ctx.cursor {
        query.push(("pageToken", token));
    }
    let body = get(ctx, "commentThreads", &query).await?;
    // `commentsDisabled`: the video shows no comments.
    let items = json::array(&body, "items")
        .iter()
        .filter_map(|t| thread_item(t, video_id))
        .collect();
    Ok(Page {
        items,
        total: None,
        next_cursor: json::string(&body, "nextPageToken"),
    })
}

fn thread_item(thread: &Value, video_id: &str) -> Option<Item> {
    let snippet = thread.get("snippet")?;
    let top = snippet.get("topLevelComment")?;
    let id = json::string(top, "id").or_else(|| json::string(thread, "id"))?;
    let c = top.get("snippet").unwrap_or(&Value::Null);
    let mut item = Item::new(PLATFORM, "comment", id.clone());
    item.text = json::str(c, "textOriginal")
        .map(str::to_string)
        .or_else(|| html::text_or_none(json::str(c, "textDisplay")));
    item.url = Some(format!("{}&lc={id}", watch_url(video_id)));
    let author_id = c
        .get("authorChannelId")
        .and_then(|a| json::string(a, "value"));
    set_channel(&mut item, author_id, json::string(c, "authorDisplayName"));
    item.created_at = c.get("publishedAt").and_then(dates::normalize);
    item.metrics.likes = json::number(c, "likeCount");
    item.metrics.comments = json::number(snippet, "totalReplyCount");
    item.extra("video_id", video_id);
    let updated = c.get("updatedAt").and_then(dates::normalize);
    if updated.is_some() && updated != item.created_at {
        item.extra("updated_at", updated);
    }
    Some(item)
}
