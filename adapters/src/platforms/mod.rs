//! One module per platform, one file per upstream source (SearXNG-style). The list below is the
//! built-in chain order; the configuration can reorder, disable or re-point any source.

pub mod code;
pub mod decentral;
pub mod fediverse;
pub mod forum;
pub mod microblog;
pub mod news;
pub mod techforum;
pub mod video;
pub mod web;

use crate::sources::Source;

/// Every source this build knows, in default chain order per platform (`registry` builds the
/// chains from it).
pub fn all() -> Vec<&'static Source> {
    vec![
        // techforum, decentral, fediverse
        &techforum::algolia::SOURCE,
        &techforum::firebase::SOURCE,
        &decentral::appview::SOURCE,
        &fediverse::mastodon::SOURCE,
        // code
        &code::github::SOURCE,
        // news
        &news::google_news::SOURCE,
        &news::gdelt::SOURCE,
        // forum: the archive first, as it only takes date-ordered requests (its `only_when` slots)
        &forum::arctic_shift::SOURCE,
        &forum::reddit_json::SOURCE,
        // video: the keyed API, then the channel feed (channel uploads only)
        &video::data_api::SOURCE,
        &video::rss::SOURCE,
        // web: the operator's own metasearch instance, then the keyed API
        &web::searxng::SOURCE,
        &web::brave::SOURCE,
        // microblog: logged-out post reads first, the keyed official API last
        &microblog::syndication::SOURCE,
        &microblog::fxtwitter::SOURCE,
        &microblog::x_api::SOURCE,
    ]
}
