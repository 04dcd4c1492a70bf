//! End-to-end tests: the real `socialsearch` binary on a loopback port.
