//! The forum's public JSON listings (`https://www.reddit.com/...json?raw_json=1`), as a logged-out
//! visitor reads them. No credential. Listings page with an `after` fullname, which is the cursor.
//!
//! The upstream often blocks datacenter addresses with an HTML 403 page: that (and any non-JSON
//! answer) falls back. A JSON 403 naming a `reason` (private, quarantined, banned community) ends
//! the chain, as no other source may show it either.
//!
//! Date bounds on listings that cannot filter by date upstream (profile listings, community posts
//! when the archive failed, community search ranked by relevance) are applied to the page read.

use reqwest::StatusCode;
use serde_json::Value;

use super::{comment_item, now_unix, post_id_from_url, thing_item};
use crate::api::Handlers;
use crate::api::forum::{
    self, Communities, Community, CommunityPosts, CommunityPostsSort, CommunitySearch,
    CommunitySearchSort, Post, PostComments, PostCommentsSort, Profile, ProfileComments,
    ProfilePosts, Search, SearchSort,
};
use crate::item::{Item, Page};
use crate::request::{Choice, DateBound};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::path::segment;
use crate::upstream::{Ctx, found, json, status_error};

pub static SOURCE: Source = Source {
    id: "forum.reddit_json",
    default_base_url: "https://www.reddit.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Forum(forum::Handlers {
        search: Some(serve!(search)),
        community_search: Some(serve!(community_search)),
        community_posts: Some(serve!(community_posts)),
        community: Some(serve!(community)),
        communities: Some(serve!(communities)),
        profile: Some(serve!(profile)),
        profile_posts: Some(serve!(profile_posts)),
        profile_comments: Some(serve!(profile_comments)),
        post: Some(serve!(post)),
        post_comments: Some(serve!(post_comments)),
        ..forum::Handlers::NONE
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let mut q: Vec<String> = r.query.iter().cloned().collect();
    if let Some(url) = &r.url {
        q.push(format!("url:\"{url}\""));
    }
    let sort = match r.sort {
        SearchSort::Relevance => "relevance",
        SearchSort::New => "new",
        SearchSort::Top => "top",
        SearchSort::Comments => "comments",
    };
    let mut params = vec![
        ("q", q.join(" ")),
        ("sort", sort.into()),
        ("t", r.timeframe.as_str().into()),
        ("type", "link".into()),
    ];
    let mut page = listing(ctx, "search.json", &mut params, r.limit, None).await?;
    if let Some(url) = &r.url {
        let prefix = bare_url(url);
        page.items.retain(|i| {
            i.extra
                .get("link_url")
                .and_then(Value::as_str)
                .is_some_and(|l| bare_url(l).starts_with(&prefix))
        });
    }
    Ok(page)
}

async fn community_search(ctx: &Ctx<'_>, r: &CommunitySearch) -> Result<Page, SourceError> {
    let sort = match r.sort {
        CommunitySearchSort::New => "new",
        CommunitySearchSort::Relevance => "relevance",
        CommunitySearchSort::Top => "top",
        CommunitySearchSort::Comments => "comments",
    };
    let mut params = vec![
        ("q", r.query.clone()),
        ("restrict_sr", "1".into()),
        ("sort", sort.into()),
        ("t", r.timeframe.as_str().into()),
        ("type", "link".into()),
    ];
    let bounds = Bounds::new(r.after, r.before, now_unix());
    let path = format!("r/{}/search.json", segment(&r.community)?);
    listing(ctx, &path, &mut params, r.limit, Some(bounds)).await
}

async fn community_posts(ctx: &Ctx<'_>, r: &CommunityPosts) -> Result<Page, SourceError> {
    let sort = match r.sort {
        CommunityPostsSort::New => "new",
        CommunityPostsSort::Hot => "hot",
        CommunityPostsSort::Top => "top",
        CommunityPostsSort::Rising => "rising",
    };
    let mut params = Vec::new();
    if r.sort == CommunityPostsSort::Top {
        params.push(("t", r.timeframe.as_str().to_string()));
    }
    let bounds = Bounds::new(r.after, r.before, now_unix());
    let path = format!("r/{}/{sort}.json", segment(&r.community)?);
    listing(ctx, &path, &mut params, r.limit, Some(bounds)).await
}

async fn community(ctx: &Ctx<'_>, r: &Community) -> Result<Page, SourceError> {
    let body = get(
        ctx,
        &format!("r/{}/about.json", segment(&r.community)?),
        &[],
    )
    .await?;
    found(thing_item(&body))
}

async fn communities(ctx: &Ctx<'_>, r: &Communities) -> Result<Page, SourceError> {
    let params = [("q", r.query.clone()), ("limit", "100".into())];
    let body = get(ctx, "subreddits/search.json", &params).await?;
    let prefix = r.query.to_lowercase();
    let mut items: Vec<Item> = children(&body)?
        .iter()
        .filter_map(thing_item)
        .filter(|i| i.id.to_lowercase().starts_with(&prefix))
        .filter(|i| {
            let subs = subscribers(i);
            r.min_followers.is_none_or(|m| subs >= f64::from(m))
        })
        .collect();
    items.sort_by(|a, b| subscribers(b).total_cmp(&subscribers(a)));
    let total = items.len() as u64;
    items.truncate(r.limit as usize);
    Ok(Page {
        items,
        total: Some(total),
        next_cursor: None,
    })
}

async fn profile(ctx: &Ctx<'_>, r: &Profile) -> Result<Page, SourceError> {
    let body = get(
        ctx,
        &format!("user/{}/about.json", segment(&r.handle)?),
        &[],
    )
    .await?;
    found(thing_item(&body))
}

async fn profile_posts(ctx: &Ctx<'_>, r: &ProfilePosts) -> Result<Page, SourceError> {
    let mut params = vec![("sort", "new".to_string())];
    let bounds = Bounds::new(r.after, r.before, now_unix());
    let path = format!("user/{}/submitted.json", segment(&r.handle)?);
    listing(ctx, &path, &mut params, r.limit, Some(bounds)).await
}

async fn profile_comments(ctx: &Ctx<'_>, r: &ProfileComments) -> Result<Page, SourceError> {
    let mut params = vec![("sort", "new".to_string())];
    let bounds = Bounds::new(r.after, r.before, now_unix());
    let path = format!("user/{}/comments.json", segment(&r.handle)?);
    listing(ctx, &path, &mut params, r.limit, Some(bounds)).await
}

async fn post(ctx: &Ctx<'_>, r: &Post) -> Result<Page, SourceError> {
    let id = post_id(r.id.as_deref(), r.url.as_deref())?;
    let params = [("limit", "1".to_string())];
    let body = get(ctx, &format!("comments/{}.json", segment(&id)?), &params).await?;
    let post = body
        .get(0)
        .and_then(|l| children(l).ok())
        .and_then(|c| c.first())
        .and_then(thing_item);
    found(post)
}

async fn post_comments(ctx: &Ctx<'_>, r: &PostComments) -> Result<Page, SourceError> {
    let id = post_id(r.id.as_deref(), r.url.as_deref())?;
    let sort = match r.sort {
        PostCommentsSort::Top => "top",
        PostCommentsSort::New => "new",
        PostCommentsSort::Old => "old",
    };
    let params = [("sort", sort.to_string()), ("limit", r.limit.to_string())];
    let body = get(ctx, &format!("comments/{}.json", segment(&id)?), &params).await?;
    let (Some(post), Some(tree)) = (body.get(0), body.get(1)) else {
        return Err(SourceError::Malformed("expected [post, comments]".into()));
    };
    let mut items = Vec::new();
    flatten(children(tree)?, 0, &mut items);
    let total = children(post)
        .ok()
        .and_then(|c| c.first())
        .and_then(|p| p.get("data"))
        .and_then(|d| json::int(d, "num_comments"))
        .map(|n| n.max(0) as u64)
        .unwrap_or(items.len() as u64);
    items.truncate(r.limit as usize);
    Ok(Page {
        items,
        total: Some(total),
        next_cursor: None,
    })
}

fn post_id(id: Option<&str>, url: Option<&str>) -> Result<String, SourceError> {
    id.map(str::to_string)
        .or_else(|| url.and_then(post_id_from_url))
        .ok_or_else(|| SourceError::Rejected("no post id in the request".into()))
}

fn subscribers(item: &Item) -> f64 {
    item.extra
        .get("subscribers")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// A URL without scheme and `www.`, for prefix comparison.
fn bare_url(url: &str) -> String {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    rest.strip_prefix("www.").unwrap_or(rest).to_lowercase()
}

/// Date bounds as unix seconds, applied to listed items.
#[derive(Clone, Copy)]
struct Bounds {
    after: Option<i64>,
    before: Option<i64>,
}

impl Bounds {
    fn new(after: Option<DateBound>, before: Option<DateBound>, now: i64) -> Self {
        Bounds {
            after: after.map(|b| b.to_unix(now)),
            before: before.map(|b| b.to_unix(now)),
        }
    }

    fn keeps(&self, thing: &Value) -> bool {
        let created = thing
            .get("data")
            .and_then(|d| json::number(d, "created_utc"))
            .map(|c| c as i64);
        match created {
            Some(c) => self.after.is_none_or(|a| c > a) && self.before.is_none_or(|b| c < b),
            None => self.after.is_none() && self.before.is_none(),
        }
    }
}

async fn get(ctx: &Ctx<'_>, path: &str, params: &[(&str, String)]) -> Result<Value, SourceError> {
    let req = ctx.get(path).query(params).query(&[("raw_json", "1")]);
    let raw = ctx.send_raw(req).await?;
    let body: Option<Value> = serde_json::from_slice(&raw.body).ok();
    if raw.status == StatusCode::FORBIDDEN
        && let Some(reason) = body.as_ref().and_then(|b| json::string(b, "reason"))
    {
        return Err(SourceError::Rejected(format!(
            "the upstream refuses access: {reason}"
        )));
    }
    if let Some(e) = status_error(raw.status) {
        return Err(e);
    }
    body.ok_or_else(|| {
        SourceError::Malformed("not JSON (the upstream may be blocking this address)".into())
    })
}

fn children(listing: &Value) -> Result<&[Value], SourceError> {
    listing
        .get("data")
        .and_then(|d| d.get("children"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| SourceError::Malformed("not a listing".into()))
}

/// One page of a listing; the cursor is the upstream's `after` fullname.
async fn listing(
    ctx: &Ctx<'_>,
    path: &str,
    params: &mut Vec<(&str, String)>,
    limit: u32,
    bounds: Option<Bounds>,
) -> Result<Page, SourceError> {
    params.push(("limit", limit.to_string()));
    if let Some(after) = ctx.cursor {
        params.push(("after", after.to_string()));
    }
    let body = get(ctx, path, params).await?;
    let things = children(&body)?;
    let items = things
        .iter()
        .filter(|t| bounds.is_none_or(|b| b.keeps(t)))
        .filter_map(thing_item)
        .take(limit as usize)
        .collect();
    let next = body
        .get("data")
        .and_then(|d| json::string(d, "after"))
        .filter(|_| !things.is_empty());
    Ok(Page {
        items,
        total: None,
        next_cursor: next,
    })
}

/// Depth-first, siblings in the upstream's order (which is the sort asked for). `more` stubs are
/// not expanded; the replies they stand for are counted on their parent as `more_replies`.
fn flatten(things: &[Value], depth: u32, out: &mut Vec<Item>) {
    for thing in things {
        let Some(data) = thing.get("data") else {
            continue;
        };
        match json::str(thing, "kind") {
            Some("t1") => {
                if let Some(item) = comment_item(data, Some(depth)) {
                    out.push(item);
                }
                // `replies` is "" when there are none, else a listing.
                if let Ok(replies) = children(data.get("replies").unwrap_or(&Value::Null)) {
                    flatten(replies, depth + 1, out);
                }
            }
            Some("more") => {
                let hidden = json::int(data, "count")
                    .filter(|c| *c > 0)
                    .unwrap_or(json::array(data, "children").len() as i64);
                let parent = json::str(data, "parent_id").map(super::strip_kind);
                if let Some(p) = out
                    .iter_mut()
                    .rev()
                    .find(|i| Some(&i.id) == parent.as_ref())
                {
                    let before = p
                        .extra
                        .get("more_replies")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    p.extra("more_replies", before + hidden);
                }
            }
            _ => {}
        }
    }
}
