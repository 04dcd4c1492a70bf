//! Source configuration: built-in defaults, then the `[sources]` part of the TOML file, then
//! environment variables `SOCIALSEARCH_SOURCE_<ID>_<FIELD>` (id upper-cased, `.` as `_`), for example
//! `SOCIALSEARCH_SOURCE_TECHFORUM_ALGOLIA_BASE_URL`.

use std::collections::BTreeMap;

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
}

impl Default for SourcesConfig {
    fn default() -> Self {
        SourcesConfig {
            call_deadline_ms: 20_000,
            timeout_ms: 8_000,
            source: BTreeMap::new(),
            order: BTreeMap::new(),
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
}

impl std::fmt::Debug for SourceOverride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceOverride")
            .field("base_url", &self.base_url)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .field("enabled", &self.enabled)
            .field("timeout_ms", &self.timeout_ms)
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
}

impl std::fmt::Debug for SourceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceSettings")
            .field("base_url", &self.base_url)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "<redacted>"),
            )
            .field("enabled", &self.enabled)
            .finish()
    }
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
    pub fn settings_for(&self, source: &dyn Source) -> SourceSettings {
        let id = source.id();
        let o = self.source.get(id).cloned().unwrap_or_default();
        SourceSettings {
            base_url: env(id, "BASE_URL")
                .or(o.base_url)
                .unwrap_or_else(|| source.default_base_url().to_string()),
            credential: env(id, "CREDENTIAL").or(o.credential),
            enabled: env(id, "ENABLED")
                .map(|v| v == "true" || v == "1")
                .or(o.enabled)
                .unwrap_or(true),
            timeout_ms: env(id, "TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .or(o.timeout_ms)
                .unwrap_or(self.timeout_ms),
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
