//! One module per platform, one file per upstream source (SearXNG-style). The list below is the
//! built-in chain order; the configuration can reorder, disable or re-point any source.

pub mod code;
pub mod decentral;
pub mod fediverse;
pub mod forum;
pub mod news;
pub mod techforum;

use std::sync::Arc;

use crate::api::Request;
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
    ]
}

/// A combination of parameters that no source may serve: `(parameter, message)` for a 422.
pub fn refusal(request: &Request) -> Option<(String, String)> {
    forum::refusal(request)
}
