//! Sources and the fallback between them. Each platform has an ordered chain of sources; a call
//! goes to the first enabled source that serves the endpoint and falls back on failures that
//! another source may not share (unreachable, rate-limited, garbled). An answer no source can work
//! around (the thing does not exist) ends the chain.

pub mod config;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api::{EndpointId, Request};
use crate::item::Page;
use crate::upstream::{Ctx, Http, cursor};
pub use config::{SourceSettings, SourcesConfig};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How one source failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// Connection error, timeout, 5xx or refused access: the next source may do better.
    Unavailable(String),
    /// The upstream said 429.
    RateLimited,
    /// The answer could not be understood.
    Malformed(String),
    /// The thing asked for does not exist upstream.
    NotFound,
    /// The upstream refused the request itself (a 4xx other than 404/429).
    Rejected(String),
}

impl SourceError {
    /// Whether the next source in the chain should be tried.
    pub fn falls_back(&self) -> bool {
        matches!(
            self,
            SourceError::Unavailable(_) | SourceError::RateLimited | SourceError::Malformed(_)
        )
    }
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Unavailable(why) => write!(f, "unavailable: {why}"),
            SourceError::RateLimited => f.write_str("rate-limited by the upstream"),
            SourceError::Malformed(why) => write!(f, "unreadable answer: {why}"),
            SourceError::NotFound => f.write_str("not found upstream"),
            SourceError::Rejected(why) => write!(f, "request refused: {why}"),
        }
    }
}

/// How a whole call failed, as the server maps it to the spec's codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No enabled source serves this endpoint (501 NOT_CONFIGURED).
    NotConfigured(String),
    /// Every source failed (424 ALL_SOURCES_FAILED).
    AllSourcesFailed(String),
    /// A source answered with an error nothing can work around (424 UPSTREAM_ERROR).
    Upstream(String),
    /// The client's cursor was not issued by this service (422 on `cursor`).
    BadCursor,
    /// The parameters are each valid but cannot be served together (422 on `parameter`).
    Refused { parameter: String, message: String },
}

/// One upstream source: a file under `platforms/<platform>/`.
pub trait Source: Send + Sync + 'static {
    /// Stable id, `<platform>.<name>`.
    fn id(&self) -> &'static str;
    fn platform(&self) -> &'static str;
    fn default_base_url(&self) -> &'static str;
    /// The endpoints this source can serve.
    fn endpoints(&self) -> &'static [EndpointId];
    fn needs_credential(&self) -> bool {
        false
    }
    /// Whether this source takes this particular request (for example an archive that serves only
    /// date-ordered listings); a source that declines is skipped, not counted as failed.
    fn serves(&self, _request: &Request) -> bool {
        true
    }
    /// Serves one request; only called for endpoints in `endpoints()`.
    fn fetch<'a>(
        &'a self,
        ctx: &'a Ctx<'a>,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Page, SourceError>>;
}

/// Every source this build knows, in default chain order per platform.
pub fn all() -> Vec<Arc<dyn Source>> {
    crate::platforms::sources()
}

struct Entry {
    source: Arc<dyn Source>,
    settings: SourceSettings,
}

impl Entry {
    /// Enabled, with its credential when it needs one, and with a base URL (a self-hosted upstream
    /// has an empty default base URL until the operator configures one).
    fn usable(&self) -> bool {
        self.settings.enabled
            && !self.settings.base_url.trim().is_empty()
            && (!self.source.needs_credential() || self.settings.credential.is_some())
    }
}

/// The configured chains.
pub struct Sources {
    http: Http,
    entries: Vec<Entry>,
    call_deadline: Duration,
}

/// One line of `socialsearch sources`.
#[derive(Debug, Serialize)]
pub struct SourceInfo {
    pub id: &'static str,
    pub platform: &'static str,
    pub base_url: String,
    pub endpoints: Vec<&'static str>,
    pub needs_credential: bool,
    pub has_credential: bool,
    pub enabled: bool,
}

impl Sources {
    pub fn new(config: &SourcesConfig) -> Result<Self, String> {
        let http = Http::new()?;
        let mut entries: Vec<Entry> = Vec::new();
        for source in all() {
            let settings = config.settings_for(source.as_ref());
            entries.push(Entry { source, settings });
        }
        config.check_known(entries.iter().map(|e| e.source.id()))?;
        // Chain order: the configured order of each platform first, then the built-in order.
        entries.sort_by_key(|e| config.position(e.source.platform(), e.source.id()));
        Ok(Sources {
            http,
            entries,
            call_deadline: Duration::from_millis(config.call_deadline_ms),
        })
    }

    pub fn list(&self) -> Vec<SourceInfo> {
        self.entries
            .iter()
            .map(|e| SourceInfo {
                id: e.source.id(),
                platform: e.source.platform(),
                base_url: e.settings.base_url.clone(),
                endpoints: e
                    .source
                    .endpoints()
                    .iter()
                    .map(|id| id.meta().path)
                    .collect(),
                needs_credential: e.source.needs_credential(),
                has_credential: e.settings.credential.is_some(),
                enabled: e.usable(),
            })
            .collect()
    }

    /// `ok` when an enabled source serves every endpoint of the platform, `degraded` when it serves
    /// some, `not_configured` when none.
    pub fn platform_status(&self, platform: &str) -> &'static str {
        let endpoints: Vec<EndpointId> = EndpointId::ALL
            .into_iter()
            .filter(|id| id.meta().platform == platform)
            .collect();
        let served = endpoints
            .iter()
            .filter(|id| self.chain(**id).next().is_some())
            .count();
        match served {
            0 => "not_configured",
            n if n == endpoints.len() => "ok",
            _ => "degraded",
        }
    }

    fn chain(&self, endpoint: EndpointId) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(move |e| e.usable() && e.source.endpoints().contains(&endpoint))
    }

    /// Serves a request through the platform's chain. The page's `next_cursor` comes back encoded
    /// with the id of the source that made it.
    pub async fn call(&self, request: &Request) -> Result<Page, CallError> {
        let endpoint = request.endpoint();
        let meta = endpoint.meta();
        let resume = match request.cursor() {
            Some(c) => Some(cursor::decode(c).ok_or(CallError::BadCursor)?),
            None => None,
        };
        if let Some((parameter, message)) = crate::platforms::refusal(request) {
            return Err(CallError::Refused { parameter, message });
        }
        let mut chain: Vec<&Entry> = self.chain(endpoint).collect();
        if chain.is_empty() {
            return Err(CallError::NotConfigured(format!(
                "no source for {} is configured on this deployment",
                meta.path
            )));
        }
        // A follow-up page goes to the source that made the cursor, and only to it: another
        // source cannot read its cursor.
        if let Some((source_id, _)) = &resume {
            chain.retain(|e| e.source.id() == source_id);
            if chain.is_empty() {
                return Err(CallError::BadCursor);
            }
        } else {
            chain.retain(|e| e.source.serves(request));
            if chain.is_empty() {
                return Err(CallError::NotConfigured(format!(
                    "no configured source of {} serves this combination of parameters",
                    meta.path
                )));
            }
        }
        let deadline = Instant::now() + self.call_deadline;
        let mut failures = Vec::new();
        for entry in chain {
            let ctx = Ctx {
                http: &self.http,
                base_url: &entry.settings.base_url,
                credential: entry.settings.credential.as_deref(),
                cursor: resume.as_ref().map(|(_, c)| c.as_str()),
                deadline: deadline
                    .min(Instant::now() + Duration::from_millis(entry.settings.timeout_ms)),
            };
            match entry.source.fetch(&ctx, request).await {
                Ok(mut page) => {
                    // An endpoint without a `cursor` parameter cannot take a next page.
                    let pages = meta.params.iter().any(|p| p.name == "cursor");
                    page.next_cursor = page
                        .next_cursor
                        .filter(|_| pages)
                        .map(|c| cursor::encode(entry.source.id(), &c));
                    if page.total.is_none() {
                        page.total = Some(page.items.len() as u64);
                    }
                    return Ok(page);
                }
                Err(e) if e.falls_back() => {
                    tracing::warn!(source = entry.source.id(), error = %e, "source failed; trying the next");
                    failures.push(format!("{}: {e}", entry.source.id()));
                }
                Err(SourceError::NotFound) => {
                    return Err(CallError::Upstream(format!(
                        "{} found nothing for this request",
                        entry.source.id()
                    )));
                }
                Err(e) => return Err(CallError::Upstream(format!("{}: {e}", entry.source.id()))),
            }
        }
        Err(CallError::AllSourcesFailed(failures.join("; ")))
    }
}
