//! One module per platform, one file per upstream source (SearXNG-style). The list below is the
//! built-in chain order; the configuration can reorder, disable or re-point any source.

pub mod techforum;

use std::sync::Arc;

use crate::sources::Source;

pub fn sources() -> Vec<Arc<dyn Source>> {
    vec![Arc::new(techforum::algolia::Algolia)]
}
