//! Platform requests and the sources that serve them.
//!
//! `api` is generated from `spec/catalogue.yaml` at build time: one typed request per platform
//! endpoint, its parser, and the endpoint table with prices. `request` is the runtime those parsers
//! call.

pub mod item;
pub mod platforms;
pub mod request;
pub mod sources;
pub mod upstream;

/// Generated from the catalogue (see `codegen`); never edited by hand.
#[allow(clippy::all, clippy::pedantic, unused_mut)]
pub mod api {
    include!(concat!(env!("OUT_DIR"), "/api.rs"));
}

/// The generator's small test catalogue, compiled here so that a change in the emitted Rust that
/// does not compile fails `cargo test`.
#[cfg(test)]
#[allow(clippy::all, clippy::pedantic, dead_code)]
mod mini_api {
    include!(concat!(env!("OUT_DIR"), "/mini_api.rs"));
}

#[cfg(test)]
mod mini_tests;
