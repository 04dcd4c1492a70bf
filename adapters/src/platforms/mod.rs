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

use std::sync::Arc;

use crate::sources::Source;

pub fn sources() -> Vec<Arc<dyn Source>> {
    vec![
        // techforum, decentral, fediverse
        Arc::new(techforum::algolia::Algolia),
        Arc::new(techforum::firebase::Firebase),
        Arc::new(decentral::appview::AppView),
        Arc::new(fediverse::mastodon::Mastodon),
        // code
        Arc::new(code::github::GitHub),
        // news
        Arc::new(news::google_news::GoogleNews),
        Arc::new(news::gdelt::Gdelt),
        // forum: the archive first, as it only takes date-ordered requests (see `Source::serves`)
        Arc::new(forum::arctic_shift::ArcticShift),
        Arc::new(forum::reddit_json::RedditJson),
        // video: the keyed API, then the channel feed (channel uploads only)
        Arc::new(video::data_api::DataApi),
        Arc::new(video::rss::Rss),
        // web: the operator's own metasearch instance, then the keyed API
        Arc::new(web::searxng::Searxng),
        Arc::new(web::brave::Brave),
        // microblog: logged-out post reads first, the keyed official API last
        Arc::new(microblog::syndication::Syndication),
        Arc::new(microblog::fxtwitter::FxTwitter),
        Arc::new(microblog::x_api::XApi),
    ]
}
