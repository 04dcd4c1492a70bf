//! Configuration: embedded defaults, then a TOML file (`--config` or `SOCIALSEARCH_CONFIG`).

use std::net::SocketAddr;
use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address `serve` listens on; `--listen` overrides it.
    pub listen: SocketAddr,
    /// Public base URL of this deployment, used to build dashboard and pay links.
    pub public_url: String,
    pub limits: Limits,
    /// Upstream sources: base URLs, credentials, enablement and chain order.
    pub sources: adapters::sources::SourcesConfig,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Largest accepted JSON body; larger ones get 413 PAYLOAD_TOO_LARGE.
    pub body_max_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: "http://127.0.0.1:8080".into(),
            limits: Limits::default(),
            sources: Default::default(),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_max_bytes: 16 * 1024,
        }
    }
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("config {}: {e}", path.display()))
    }

    /// The file named by `explicit`, else by `SOCIALSEARCH_CONFIG`, else the embedded defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Self, String> {
        let from_env = std::env::var_os("SOCIALSEARCH_CONFIG").filter(|v| !v.is_empty());
        match explicit.map(Path::to_path_buf).or(from_env.map(Into::into)) {
            Some(path) => Config::from_file(&path),
            None => Ok(Config::default()),
        }
    }
}
