//! Platform requests and the sources that serve them.
//!
//! `api` is generated from `spec/catalogue.yaml` at build time: one typed request per platform
//! endpoint, its parser, the endpoint table with prices and one handler table per platform.
//! `request` is the runtime those parsers call, `slot` the runtime of the handler tables.
//!
//! Modules depend one way only, lower to higher (kept so by `tests/module_graph.rs`):
//! `error`, `item` <- `request` <- `upstream` <- `slot` <- `api` <- `sources` <- `platforms` <-
//! `registry`.

pub mod error;
pub mod item;
pub mod platforms;
pub mod registry;
pub mod request;
pub mod slot;
pub mod sources;
pub mod upstream;

/// Generated from the catalogue (see `codegen`); never edited by hand.
#[allow(clippy::all, clippy::pedantic, unused_mut)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/api.rs"));
}
