//! End-to-end tests: the real `socialsearch` binary on a loopback port.

#[path = "../support/fake_upstream.rs"]
mod fake_upstream;

mod accounts;
mod accounts_support;
mod credits;
