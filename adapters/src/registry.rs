//! The built-in registry: every source in `platforms`, assembled into chains. It sits above both
//! `platforms` (each source plugs into `sources`) and `sources` (which runs whatever list it is
//! handed), so that neither names the other.

use crate::platforms;
use crate::sources::{Sources, SourcesConfig, table};

impl Sources {
    /// The chains of every built-in source as `config` sets them up (see
    /// [`Sources::with_registry`]).
    pub fn new(config: &SourcesConfig) -> Result<Self, String> {
        Sources::with_registry(config, platforms::all())
    }
}

/// The source table of `docs/platforms.md`, for the built-in sources in chain order.
pub fn table() -> String {
    table::markdown(&platforms::all())
}
