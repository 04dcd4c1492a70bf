//! End-to-end tests: the real `socialsearch` binary on a loopback port.
//!
//! One module per area; `support` starts the binary and holds the shared HTTP helpers;
//! `accounts_support` starts it with a database and a fake upstream for the paid-call tests.

#[path = "../support/fake_upstream.rs"]
mod fake_upstream;
mod support;

mod accounts;
mod accounts_support;
mod bodies;
mod credits;
mod cursors;
mod races;
mod refusals;
mod routes;
mod sources;
mod validation;
