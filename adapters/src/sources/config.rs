//! Source configuration: built-in defaults, then the `[sources]` part of the TOML file, then
//! environment variables `SOCIALSEARCH_SOURCE_<ID>_<FIELD>` (id upper-cased, `.` as `_`), for example
//! `SOCIALSEARCH_SOURCE_TECHFORUM_ALGOLIA_BASE_URL`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Deserialize;

use super::Source;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourcesConfig {
    /// One overall deadline per call, across every source tried.
    pub call_deadline_ms: u64,
    /// Default timeout of one source attempt.
    pub timeout_ms: u64,
    /// Per-source settings, keyed by source id (`[sources.source."techforum.algolia"]`).
    pub source: BTreeMap<String, SourceOverride>,
    /// Chain order per platform (`[sources.order] techforum = ["techforum.algolia", ...]`).
    pub order: BTreeMap<String, Vec<String>>,
    /// Consecutive fall-back failures after which a source is skipped for `breaker_cooldown_ms`
    /// (then one probe call decides); 0 turns the breaker off.
    pub breaker_failures: u32,
    pub breaker_cooldown_ms: u64,
    /// TEST ONLY. Lets client-named hosts (the fediverse `instance`) resolve to loopback, private
    /// and other non-public addresses, so tests can reach a fake upstream on 127.0.0.1. Never set
    /// it on a deployment: it turns the SSRF guard off.
    pub allow_private_hosts: bool,
    /// TEST ONLY. Fixed addresses for client-named hosts, consulted before DNS
    /// (`[sources.host_overrides] "mastodon.test" = ["127.0.0.1"]`). The addresses are still vetted.
    pub host_overrides: BTreeMap<String, Vec<IpAddr>>,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        SourcesConfig {
            call_deadline_ms: 20_000,
            timeout_ms: 8_000,
            source: BTreeMap::new(),
            order: BTreeMap::new(),
            breaker_failures: 5,
            breaker_cooldown_ms: 30_000,
            allow_private_hosts: false,
            host_overrides: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceOverride {
    pub base_url: Option<String>,
    pub credential: Option<String>,
    pub enabled: Option<bool>,
    pub timeout_ms: Option<u64>,
    /// Local rate limit in requests per second (0 turns it off); defaults to what the upstream
    /// publishes, when it does.
    pub rate_per_sec: Option<f64>,
    pub burst: Option<u32>,
    /// For sources that connect to a host the client names: the scheme (default `https`) and
    /// port (default that of the scheme) used with it. Only tests set these (`http` and the fake
    /// upstream's port).
    pub instance_scheme: Option<String>,
    pub instance_port: Option<u16>,
}

impl std::fmt::Debug for SourceOverride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceOverride")
            .field("base_url", &self.base_url)
            .field("credential", &redacted(&self.credential))
            .field("enabled", &self.enabled)
            .field("timeout_ms", &self.timeout_ms)
            .field("rate_per_sec", &self.rate_per_sec)
            .field("burst", &self.burst)
            .field("instance_scheme", &self.instance_scheme)
            .field("instance_port", &self.instance_port)
            .finish()
    }
}

/// The settings a source runs with.
#[derive(Clone)]
pub struct SourceSettings {
    pub base_url: String,
    pub credential: Option<String>,
    pub enabled: bool,
    pub timeout_ms: u64,
    /// `(requests per second, burst)`, or `None` for no local limit.
    pub rate: Option<(f64, u32)>,
    pub instance_scheme: String,
    pub instance_port: Option<u16>,
}

impl SourceSettings {
    /// The base URL for a host the client named.
    pub fn instance_url(&self, host: &str) -> String {
        match self.instance_port {
            Some(port) => format!("{}://{host}:{port}", self.instance_scheme),
            None => format!("{}://{host}", self.instance_scheme),
        }
    }
}

impl std::fmt::Debug for SourceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceSettings")
            .field("base_url", &self.base_url)
            .field("credential", &redacted(&self.credential))
            .field("enabled", &self.enabled)
            .field("timeout_ms", &self.timeout_ms)
            .field("rate", &self.rate)
            .field("instance_scheme", &self.instance_scheme)
            .field("instance_port", &self.instance_port)
            .finish()
    }
}

/// A credential as `Debug` output shows it: whether there is one, never its value.
fn redacted(credential: &Option<String>) -> Option<&'static str> {
    credential.as_ref().map(|_| "<redacted>")
}

fn env_key(id: &str, field: &str) -> String {
    format!(
        "SOCIALSEARCH_SOURCE_{}_{}",
        id.to_ascii_uppercase().replace(['.', '-'], "_"),
        field
    )
}

fn env(id: &str, field: &str) -> Option<String> {
    std::env::var(env_key(id, field))
        .ok()
        .filter(|v| !v.is_empty())
}

impl SourcesConfig {
    pub fn settings_for(&self, source: &Source) -> SourceSettings {
        let id = source.id;
        let o = self.source.get(id).cloned().unwrap_or_default();
        SourceSettings {
            base_url: env(id, "BASE_URL")
                .or(o.base_url)
                .unwrap_or_else(|| source.default_base_url.to_string()),
            credential: env(id, "CREDENTIAL").or(o.credential),
            enabled: env(id, "ENABLED")
                .map(|v| v == "true" || v == "1")
                .or(o.enabled)
                .unwrap_or(true),
            timeout_ms: env(id, "TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .or(o.timeout_ms)
                .unwrap_or(self.timeout_ms),
            rate: {
                let published = source.rate_limit;
                let per_sec = env(id, "RATE_PER_SEC")
                    .and_then(|v| v.parse().ok())
                    .or(o.rate_per_sec)
                    .or(published.map(|(r, _)| r));
                let burst = env(id, "BURST")
                    .and_then(|v| v.parse().ok())
                    .or(o.burst)
                    .or(published.map(|(_, b)| b));
                per_sec
                    .filter(|r: &f64| r.is_finite() && *r > 0.0)
                    .map(|r| (r, burst.unwrap_or(1).max(1)))
            },
            instance_scheme: env(id, "INSTANCE_SCHEME")
                .or(o.instance_scheme)
                .unwrap_or_else(|| "https".into()),
            instance_port: env(id, "INSTANCE_PORT")
                .and_then(|v| v.parse().ok())
                .or(o.instance_port),
        }
    }

    /// Refuses settings for sources that do not exist (a typo would silently do nothing).
    pub fn check_known<'a>(&self, known: impl Iterator<Item = &'a str>) -> Result<(), String> {
        let known: Vec<&str> = known.collect();
        let named = self
            .source
            .keys()
            .map(String::as_str)
            .chain(self.order.values().flatten().map(String::as_str));
        for id in named {
            if !known.contains(&id) {
                return Err(format!(
                    "unknown source `{id}` in the configuration; known sources: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// Sort key of a source within its platform's chain.
    pub fn position(&self, platform: &str, id: &str) -> usize {
        self.order
            .get(platform)
            .and_then(|o| o.iter().position(|x| x == id))
            .unwrap_or(usize::MAX)
    }
}
