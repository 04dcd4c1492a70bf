//! End-to-end tests: the real `socialsearch` binary on a loopback port.
//!
//! One module per area; `support` starts the binary and holds the shared HTTP helpers.

mod support;

mod bodies;
mod routes;
mod validation;
