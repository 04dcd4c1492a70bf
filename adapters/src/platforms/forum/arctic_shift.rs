//! A public historical archive of the forum (`https://arctic-shift.photon-reddit.com/api`), for
//! date-ordered listings and date bounds: community posts and community search with sort=new,
//! profile posts and comments within `after`/`before`, and comment search. No credential.
//!
//! The archive orders by creation time only and needs a community or an author for full-text
//! search, so its slots take only those requests (`Slot::only_when`) and they go to the live source. It
//! returns `{"data": [...]}` without a cursor: the next page is asked with `before` set to the
//! creation time of the last item, which is the cursor this source issues.

use serde_json::Value;

use super::{comment_item, now_unix, post_item};
use crate::api::Handlers;
use crate::api::forum::{
    self, CommentsSearch, CommunityPosts, CommunityPostsSort, CommunitySearch, CommunitySearchSort,
    ProfileComments, ProfilePosts,
};
use crate::item::{Item, Page};
use crate::request::DateBound;
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, json, status_error};

pub static SOURCE: Source = Source {
    id: "forum.arctic_shift",
    default_base_url: "https://arctic-shift.photon-reddit.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Forum(forum::Handlers {
        community_search: Some(
            serve!(community_search).only_when(|r| r.sort == CommunitySearchSort::New),
        ),
        community_posts: Some(
            serve!(community_posts).only_when(|r| r.sort == CommunityPostsSort::New),
        ),
        profile_posts: Some(
            serve!(profile_posts).only_when(|r| r.after.is_some() || r.before.is_some()),
        ),
        profile_comments: Some(
            serve!(profile_comments).only_when(|r| r.after.is_some() || r.before.is_some()),
        ),
        comments_search: Some(serve!(comments_search)),
        ..forum::Handlers::NONE
    }),
};

async fn community_posts(ctx: &Ctx<'_>, r: &CommunityPosts) -> Result<Page, SourceError> {
    let params = vec![("subreddit", r.community.clone())];
    listing(ctx, Kind::Posts, params, r.limit, r.after, r.before).await
}

async fn community_search(ctx: &Ctx<'_>, r: &CommunitySearch) -> Result<Page, SourceError> {
    let params = vec![
        ("subreddit", r.community.clone()),
        ("query", r.query.clone()),
    ];
    listing(ctx, Kind::Posts, params, r.limit, r.after, r.before).await
}

async fn profile_posts(ctx: &Ctx<'_>, r: &ProfilePosts) -> Result<Page, SourceError> {
    let params = vec![("author", r.handle.clone())];
    listing(ctx, Kind::Posts, params, r.limit, r.after, r.before).await
}

async fn profile_comments(ctx: &Ctx<'_>, r: &ProfileComments) -> Result<Page, SourceError> {
    let params = vec![("author", r.handle.clone())];
    listing(ctx, Kind::Comments, params, r.limit, r.after, r.before).await
}

async fn comments_search(ctx: &Ctx<'_>, r: &CommentsSearch) -> Result<Page, SourceError> {
    let mut params = vec![("body", r.query.clone())];
    params.extend(r.community.clone().map(|c| ("subreddit", c)));
    params.extend(r.handle.clone().map(|h| ("author", h)));
    listing(
        ctx,
        Kind::Comments,
        params,
        r.limit,
        Some(r.after),
        r.before,
    )
    .await
}

/// One date-ordered listing, its bounds resolved against the current time.
async fn listing(
    ctx: &Ctx<'_>,
    kind: Kind,
    params: Vec<(&'static str, String)>,
    limit: u32,
    after: Option<DateBound>,
    before: Option<DateBound>,
) -> Result<Page, SourceError> {
    let now = now_unix();
    search(
        ctx,
        kind,
        params,
        limit,
        bound(after, now),
        bound(before, now),
    )
    .await
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Posts,
    Comments,
}

fn bound(b: Option<DateBound>, now: i64) -> Option<i64> {
    b.map(|b| b.to_unix(now))
}

async fn search(
    ctx: &Ctx<'_>,
    kind: Kind,
    mut params: Vec<(&str, String)>,
    limit: u32,
    after: Option<i64>,
    before: Option<i64>,
) -> Result<Page, SourceError> {
    // A follow-up page continues before the last item of the previous one.
    let before = match ctx.cursor {
        Some(c) => Some(
            c.parse::<i64>()
                .map_err(|_| SourceError::Rejected("unreadable archive cursor".into()))?,
        ),
        None => before,
    };
    params.extend(after.map(|a| ("after", a.to_string())));
    params.extend(before.map(|b| ("before", b.to_string())));
    params.push(("limit", limit.to_string()));
    params.push(("sort", "desc".into()));
    let path = match kind {
        Kind::Posts => "api/posts/search",
        Kind::Comments => "api/comments/search",
    };
    let raw = ctx.send_raw(ctx.get(path).query(&params)).await?;
    let body: Option<Value> = serde_json::from_slice(&raw.body).ok();
    let error = body.as_ref().and_then(|b| json::string(b, "error"));
    if let Some(error) = &error {
        // The archive sheds load with "Timeout. Maybe slow down a bit".
        let lower = error.to_lowercase();
        if lower.contains("timeout") || lower.contains("slow down") {
            return Err(SourceError::RateLimited);
        }
        if raw.status.is_client_error() && raw.status.as_u16() != 429 {
            return Err(SourceError::Rejected(format!(
                "the archive refused: {error}"
            )));
        }
    }
    if let Some(e) = status_error(raw.status) {
        return Err(e);
    }
    let data = body
        .as_ref()
        .and_then(|b| b.get("data"))
        .and_then(Value::as_array)
        .ok_or_else(|| SourceError::Malformed(error.unwrap_or_else(|| "no `data` array".into())))?;
    let mut last_created: Option<i64> = None;
    let items: Vec<Item> = data
        .iter()
        .filter_map(|d| {
            last_created = json::number(d, "created_utc")
                .map(|c| c as i64)
                .or(last_created);
            let mut item = match kind {
                Kind::Posts => post_item(d),
                Kind::Comments => comment_item(d, None),
            }?;
            item.extra("from_archive", true);
            Some(item)
        })
        .collect();
    let full = data.len() >= limit as usize;
    Ok(Page {
        items,
        total: None,
        next_cursor: last_created.filter(|_| full).map(|c| c.to_string()),
    })
}
