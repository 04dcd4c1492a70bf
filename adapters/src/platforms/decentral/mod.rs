//! decentral: a decentralised microblogging network (AT Protocol), read through its public
//! AppView's XRPC methods.
//!
//! `extra` keys of posts: `cid`, `author_did`, `lang` (first language), `langs`, `reply_parent`
//! and `reply_root` (at-uris of the post replied to and of the thread's first post), `indexed_at`
//! (when the AppView saw the post; `created_at` is the author's claimed time), `reposted_by` (in a
//! profile's feed, the handle that reposted it), and on `/post` `thread_parents_returned` and
//! `thread_replies_returned` (thread nodes returned around the post). Profiles:
//! `followers_count`, `follows_count`, `posts_count`, `avatar`, `indexed_at`.

pub mod appview;

pub const PLATFORM: &str = "decentral";

/// The web page of a post: `at://AUTHOR/app.bsky.feed.post/RKEY` by a handle or DID.
pub fn post_url(actor: &str, at_uri: &str) -> Option<String> {
    let rkey = at_uri.rsplit('/').next().filter(|r| !r.is_empty())?;
    Some(format!("https://bsky.app/profile/{actor}/post/{rkey}"))
}

pub fn profile_url(actor: &str) -> String {
    format!("https://bsky.app/profile/{actor}")
}

/// The at-uri of a post given as a web URL or an at-uri. The web URL's author (handle or DID,
/// possibly with `%3A`) goes into the at-uri as is; the AppView resolves handles itself.
pub fn post_at_uri(url: &str) -> Option<String> {
    if url.starts_with("at://") {
        return Some(url.to_string());
    }
    let rest = url.strip_prefix("https://bsky.app/profile/")?;
    let (actor, rkey) = rest.split_once("/post/")?;
    let rkey = rkey.trim_end_matches('/');
    let actor = actor.replace("%3A", ":").replace("%3a", ":");
    (!actor.is_empty() && !rkey.is_empty() && !rkey.contains('/'))
        .then(|| format!("at://{actor}/app.bsky.feed.post/{rkey}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_urls_become_at_uris() {
        assert_eq!(
            post_at_uri("https://bsky.app/profile/bsky.app/post/3l6oveex3ii2l/").as_deref(),
            Some("at://bsky.app/app.bsky.feed.post/3l6oveex3ii2l")
        );
        assert_eq!(
            post_at_uri("https://bsky.app/profile/did%3Aplc%3Aabc/post/3l6").as_deref(),
            Some("at://did:plc:abc/app.bsky.feed.post/3l6")
        );
        let at = "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3l6oveex3ii2l";
        assert_eq!(post_at_uri(at).as_deref(), Some(at));
        assert_eq!(post_at_uri("https://example.com/x"), None);
        assert_eq!(
            post_url("bsky.app", at).as_deref(),
            Some("https://bsky.app/profile/bsky.app/post/3l6oveex3ii2l")
        );
    }
}
