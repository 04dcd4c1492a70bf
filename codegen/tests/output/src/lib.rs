//! The generator's committed output for its small test catalogue (`codegen/tests/fixtures/mini.yaml`),
//! compiled as a crate of its own and exercised, as progenitor does with its `tests/output` crate.
//! `codegen/tests/golden.rs` keeps the committed files equal to what the generator emits; this
//! crate shows they compile and behave, without the production crates building the mini API.
//!
//! The generated code names its surroundings by path, so this crate provides them:
//! - the adapters emitter's output (`api`) calls `crate::request` and `crate::slot`, the runtime
//!   in the `adapters` crate, re-exported here;
//! - the server emitter's output (`server_api`) calls `adapters::api` and `adapters::request`
//!   (this crate, through `extern crate self as adapters`) and the server's own modules
//!   `crate::AppState`, `crate::platform::serve`, `crate::http::{operation, RawInput}`,
//!   `crate::error::ApiError::validation`, `crate::auth::Scheme` and `crate::ops::<handler>`,
//!   stood in for by [`stand_ins`].

// The generated server code names the generated requests `adapters::api`: here that is this crate.
extern crate self as adapters;

pub use adapters_runtime::{request, slot};
pub use stand_ins::{AppState, auth, error, http, ops, platform};

pub mod stand_ins;

/// The adapters emitter's output: typed requests, parsers, the endpoint table, handler tables.
#[allow(clippy::all, clippy::pedantic, unused_mut, dead_code)]
pub mod api {
    include!("../../golden/mini_api.rs");
}

/// The server emitter's output: error codes, typed operation inputs, the router, OpenAPI documents.
#[allow(clippy::all, clippy::pedantic, unused_mut, dead_code)]
pub mod server_api {
    include!("../../golden/mini_server.rs");
}

#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod requests_tests;
#[cfg(test)]
mod router_tests;
