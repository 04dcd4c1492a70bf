//! One module per platform, one file per upstream source (SearXNG-style). The list below is the
//! built-in chain order; the configuration can reorder, disable or re-point any source.

pub mod decentral;
pub mod fediverse;
pub mod techforum;

use std::sync::Arc;

use crate::sources::Source;

pub fn sources() -> Vec<Arc<dyn Source>> {
    vec![
        // techforum, decentral, fediverse
        Arc::new(techforum::algolia::Algolia),
        Arc::new(techforum::firebase::Firebase),
        Arc::new(decentral::appview::AppView),
        Arc::new(fediverse::mastodon::Mastodon),
    ]
}
