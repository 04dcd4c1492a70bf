//! forum: a threaded discussion forum organised in communities.
//!
//! Item types: `post` (a submission), `comment`, `community`, `profile`.
//!
//! `extra` keys:
//! - posts: `community` (community name without prefix), `link_url` (the external link of a link
//!   post), `over_18`, `flair`, `is_video`, `domain`, `upvote_ratio`, `locked`, `stickied`.
//! - comments: `community`, `depth` (0 = reply to the post; only in a thread read), `parent_id`
//!   (id of the parent comment or post, without type prefix), `link_id` (id of the post),
//!   `post_title` (in profile comment listings), `more_replies` (replies left out of a thread read
//!   under this comment, from the upstream's "more" stubs), `score_hidden`.
//! - communities: `subscribers`, `active_users`, `over_18`, `community_type`.
//! - profiles: `link_karma`, `comment_karma`, `verified`, `is_employee`.
//! - any item: `author_deleted` (true when the author account is gone; `author` is then null),
//!   `from_archive` (true when served by the historical archive: scores may be stale snapshots).
//!
//! Metrics: `score` (net votes; a profile's total karma), `comments` (a post's comment count).

pub mod arctic_shift;
pub mod reddit_json;

use serde_json::Value;

use crate::item::Item;
use crate::upstream::{dates, html, json};

pub const PLATFORM: &str = "forum";
const SITE: &str = "https://www.reddit.com";

/// `t3_abc` -> `abc`.
pub fn strip_kind(id: &str) -> String {
    match id.split_once('_') {
        Some((k, rest)) if k.len() == 2 && k.starts_with('t') => rest.to_string(),
        _ => id.to_string(),
    }
}

/// The post id of a post URL (`/comments/{id}/...` or a short link `redd.it/{id}`), read from the
/// URL's host and path only, so it is the id the grammar validated (a `/comments/` or `redd.it/`
/// inside the query cannot supply another).
pub fn post_id_from_url(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '#']).next()?;
    let (host, path) = rest.split_once('/')?;
    let mut segments = path.split('/');
    let id = if host.eq_ignore_ascii_case("redd.it") {
        segments.next()?
    } else {
        segments.find(|s| *s == "comments")?;
        segments.next()?
    };
    (!id.is_empty() && id.len() <= 12 && id.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| id.to_string())
}

fn set_author(item: &mut Item, d: &Value) {
    match json::str(d, "author") {
        Some("[deleted]") | Some("[removed]") | None => {
            item.extra("author_deleted", true);
        }
        Some(a) => item.author = Some(a.to_string()),
    }
}

fn permalink(d: &Value) -> Option<String> {
    json::str(d, "permalink").map(|p| {
        if p.starts_with("http") {
            p.to_string()
        } else {
            format!("{SITE}{p}")
        }
    })
}

/// Body texts: `raw_json=1` answers are plain markdown; without it entities are escaped.
fn body_text(d: &Value, key: &str) -> Option<String> {
    json::str(d, key)
        .map(html::unescape)
        .filter(|t| !matches!(t.as_str(), "" | "[deleted]" | "[removed]"))
}

/// A submission (`t3` data, or an archive's post object).
pub fn post_item(d: &Value) -> Option<Item> {
    let id = json::string(d, "id").or_else(|| json::str(d, "name").map(strip_kind))?;
    let mut item = Item::new(PLATFORM, "post", id.clone());
    item.title = json::str(d, "title").map(html::unescape);
    item.text = body_text(d, "selftext");
    item.url = permalink(d).or_else(|| Some(format!("{SITE}/comments/{id}/")));
    set_author(&mut item, d);
    item.created_at = d.get("created_utc").and_then(dates::normalize);
    item.metrics.score = json::number(d, "score");
    item.metrics.comments = json::number(d, "num_comments");
    item.extra("community", json::string(d, "subreddit"));
    let is_self = d.get("is_self").and_then(Value::as_bool).unwrap_or(false);
    if !is_self {
        let link = json::str(d, "url_overridden_by_dest").or_else(|| json::str(d, "url"));
        let own = item.url.as_deref();
        item.extra(
            "link_url",
            link.filter(|l| Some(*l) != own && !l.starts_with('/'))
                .map(html::unescape),
        );
    }
    for flag in ["over_18", "is_video", "locked", "stickied"] {
        item.extra(flag, d.get(flag).and_then(Value::as_bool));
    }
    item.extra("flair", json::str(d, "link_flair_text").map(html::unescape));
    item.extra("domain", json::string(d, "domain"));
    item.extra("upvote_ratio", json::number(d, "upvote_ratio"));
    Some(item)
}

/// A comment (`t1` data, or an archive's comment object). `depth` is set in thread reads.
pub fn comment_item(d: &Value, depth: Option<u32>) -> Option<Item> {
    let id = json::string(d, "id").or_else(|| json::str(d, "name").map(strip_kind))?;
    let mut item = Item::new(PLATFORM, "comment", id.clone());
    item.text = body_text(d, "body");
    let link_id = json::str(d, "link_id").map(strip_kind);
    let community = json::string(d, "subreddit");
    item.url = permalink(d).or_else(|| match (&community, &link_id) {
        (Some(c), Some(l)) => Some(format!("{SITE}/r/{c}/comments/{l}/_/{id}/")),
        _ => None,
    });
    set_author(&mut item, d);
    item.created_at = d.get("created_utc").and_then(dates::normalize);
    if d.get("score_hidden").and_then(Value::as_bool) == Some(true) {
        item.extra("score_hidden", true);
    } else {
        item.metrics.score = json::number(d, "score");
    }
    item.extra("community", community);
    item.extra("depth", depth);
    item.extra("parent_id", json::str(d, "parent_id").map(strip_kind));
    item.extra("link_id", link_id);
    item.extra("post_title", json::str(d, "link_title").map(html::unescape));
    Some(item)
}

/// A community (`t5` data).
pub fn community_item(d: &Value) -> Option<Item> {
    let name = json::string(d, "display_name")?;
    let mut item = Item::new(PLATFORM, "community", name.clone());
    item.title = json::str(d, "title").map(html::unescape);
    item.text = body_text(d, "public_description");
    item.url = Some(format!("{SITE}/r/{name}/"));
    item.created_at = d.get("created_utc").and_then(dates::normalize);
    item.extra("subscribers", json::int(d, "subscribers"));
    item.extra(
        "active_users",
        json::int(d, "active_user_count").or_else(|| json::int(d, "accounts_active")),
    );
    item.extra("over_18", d.get("over18").and_then(Value::as_bool));
    item.extra("community_type", json::string(d, "subreddit_type"));
    Some(item)
}

/// A user profile (`t2` data). Score is the total karma (posts plus comments).
pub fn profile_item(d: &Value) -> Option<Item> {
    let name = json::string(d, "name")?;
    let mut item = Item::new(PLATFORM, "profile", name.clone());
    item.author = Some(name.clone());
    let sub = d.get("subreddit").filter(|s| s.is_object());
    item.author_name = sub.and_then(|s| json::str(s, "title")).map(html::unescape);
    item.text = sub.and_then(|s| body_text(s, "public_description"));
    item.url = Some(format!("{SITE}/user/{name}/"));
    item.created_at = d.get("created_utc").and_then(dates::normalize);
    let (link, comment) = (
        json::number(d, "link_karma"),
        json::number(d, "comment_karma"),
    );
    item.metrics.score = json::number(d, "total_karma").or(match (link, comment) {
        (None, None) => None,
        (l, c) => Some(l.unwrap_or(0.0) + c.unwrap_or(0.0)),
    });
    item.extra("link_karma", link.map(|n| n as i64));
    item.extra("comment_karma", comment.map(|n| n as i64));
    item.extra("verified", d.get("verified").and_then(Value::as_bool));
    item.extra("is_employee", d.get("is_employee").and_then(Value::as_bool));
    Some(item)
}

/// A listing child `{kind, data}`: posts, comments, communities and profiles.
pub fn thing_item(thing: &Value) -> Option<Item> {
    let data = thing.get("data")?;
    match json::str(thing, "kind")? {
        "t3" => post_item(data),
        "t1" => comment_item(data, None),
        "t5" => community_item(data),
        "t2" => profile_item(data),
        _ => None,
    }
}

/// Seconds since the epoch, now.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_urls() {
        assert_eq!(strip_kind("t3_abc"), "abc");
        assert_eq!(strip_kind("abc_d"), "abc_d");
        assert_eq!(
            post_id_from_url("https://www.reddit.com/r/rust/comments/1abc2de/title_here/")
                .as_deref(),
            Some("1abc2de")
        );
        assert_eq!(
            post_id_from_url("https://redd.it/1abc2de").as_deref(),
            Some("1abc2de")
        );
        assert_eq!(post_id_from_url("https://example.com/"), None);
        // Only the path counts: the grammar validated the id there.
        assert_eq!(
            post_id_from_url("https://redd.it/1abc2de?u=/comments/zzz").as_deref(),
            Some("1abc2de")
        );
        assert_eq!(
            post_id_from_url("https://reddit.com/comments/1abc2de#redd.it/zzz").as_deref(),
            Some("1abc2de")
        );
    }
}
