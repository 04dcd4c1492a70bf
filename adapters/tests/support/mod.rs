//! What every platform's fixture tests share: the fake upstream, the item schema check, sources
//! configured against the fake upstream, and small readers for pages and recorded requests.
//! Each test file takes it with `mod support;` (as `tests/support/mod.rs` it is not a test crate of
//! its own).
//!
//! ```ignore
//! let up = FakeUpstream::start().await;
//! let sources = sources(&[at("forum.reddit_json", up.url("/rd")).timeout_ms(300)]);
//! let page = call(&sources, EndpointId::ForumSearch, "query=wasm").await.expect("page");
//! assert_items_valid(&page.items);
//! assert_eq!(item(&page, 0)["type"], "post");
//! ```

#![allow(dead_code)]

#[path = "../../../tests/support/fake_upstream.rs"]
pub mod fake_upstream;
pub mod item_schema;

use adapters::api::EndpointId;
use adapters::item::Page;
use adapters::sources::{CallError, Sources, SourcesConfig};
use serde_json::Value;

pub use fake_upstream::{FakeUpstream, Route, Seen};
pub use item_schema::assert_items_valid;

/// One `[source."<id>"]` table of the sources configuration.
pub struct SourceAt {
    id: String,
    lines: Vec<String>,
}

/// The source `id` pointed at `base_url` (usually `up.url("/prefix")`).
pub fn at(id: &str, base_url: String) -> SourceAt {
    SourceAt {
        id: id.into(),
        lines: vec![format!("base_url = \"{base_url}\"")],
    }
}

/// The source `id` switched off.
pub fn disabled(id: &str) -> SourceAt {
    SourceAt {
        id: id.into(),
        lines: vec!["enabled = false".into()],
    }
}

impl SourceAt {
    pub fn timeout_ms(self, ms: u64) -> Self {
        self.with(&format!("timeout_ms = {ms}"))
    }

    /// The credential when there is one; `None` leaves the source without.
    pub fn credential(self, credential: Option<&str>) -> Self {
        match credential {
            Some(c) => self.with(&format!("credential = \"{c}\"")),
            None => self,
        }
    }

    /// Any other line of TOML for this source's table.
    pub fn with(mut self, line: &str) -> Self {
        self.lines.push(line.into());
        self
    }
}

/// The sources as configured by these tables (sources not named keep their defaults).
pub fn sources(tables: &[SourceAt]) -> Sources {
    sources_with("", tables)
}

/// As [`sources`], with `top` TOML at the top of the configuration (keys of the sources table
/// itself, such as `allow_private_hosts`, or tables such as `[host_overrides]`).
pub fn sources_with(top: &str, tables: &[SourceAt]) -> Sources {
    let mut toml = format!("{top}\n");
    for t in tables {
        toml.push_str(&format!("[source.\"{}\"]\n", t.id));
        for line in &t.lines {
            toml.push_str(line);
            toml.push('\n');
        }
    }
    let config: SourcesConfig = toml::from_str(&toml).expect("config");
    Sources::new(&config).expect("sources")
}

/// Parses `query` as a request to `endpoint` (it must be valid) and serves it.
pub async fn call(sources: &Sources, endpoint: EndpointId, query: &str) -> Result<Page, CallError> {
    let request = endpoint.parse(query).expect("valid request");
    sources.call(&request).await
}

/// Item `i` of the page as the JSON the API returns.
pub fn item(page: &Page, i: usize) -> Value {
    serde_json::to_value(&page.items[i]).unwrap()
}

/// Whether the upstream request carried the query pair `key=value`.
pub fn has_query(seen: &Seen, key: &str, value: &str) -> bool {
    seen.query.contains(&(key.into(), value.into()))
}

/// A header of the upstream request, when present and readable.
pub fn header(seen: &Seen, name: &str) -> Option<String> {
    seen.headers
        .get(name)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
}

/// The query of the first request the upstream received on `path`.
pub fn query_of(up: &FakeUpstream, path: &str) -> Vec<(String, String)> {
    up.seen()
        .into_iter()
        .find(|s| s.path == path)
        .unwrap_or_else(|| panic!("{path} not asked"))
        .query
}
