//! Sources and the fallback between them. Each platform has an ordered chain of sources; a call
//! goes to the first enabled source that serves the endpoint and falls back on failures that
//! another source may not share (unreachable, rate-limited, garbled). An answer no source can work
//! around (the thing does not exist) ends the chain.

pub mod config;
pub mod health;
pub mod table;

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api::{EndpointId, Handlers, Request};
use crate::item::Page;
use crate::upstream::guard::HostGuard;
use crate::upstream::{Ctx, Http, cursor, host_of};
pub use config::{SourceSettings, SourcesConfig};
pub use health::BreakerState;
use health::{Health, Outcome, Skip};

// Re-exported so that sources keep one import for the framework they plug into.
pub use crate::error::SourceError;
pub use crate::slot;
pub use crate::upstream::BoxFuture;

/// How a whole call failed, as the server maps it to the spec's codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No enabled source serves this endpoint (501 NOT_CONFIGURED).
    NotConfigured(String),
    /// Every source failed (424 ALL_SOURCES_FAILED).
    AllSourcesFailed(String),
    /// A source answered with an error nothing can work around (424 UPSTREAM_ERROR).
    Upstream(String),
    /// The client's cursor was not issued by this service, was altered, belongs to another
    /// endpoint or source, or expired (422 on `cursor`).
    BadCursor(cursor::Refusal),
    /// The parameters cannot be served: each is valid but they cannot go together, or one names
    /// something the service will not contact (a host that is not public). 422 naming
    /// `parameter`; nothing was sent upstream.
    Refused { parameter: String, message: String },
}

/// One upstream source: a file under `platforms/<platform>/` declaring one `pub static SOURCE`.
/// What it serves is its registration table, `handlers`, and nothing else: the endpoint list, the
/// chains, `socialsearch sources`, `/v1/status` and the table in `docs/platforms.md` read it.
pub struct Source {
    /// Stable id, `<platform>.<name>`.
    pub id: &'static str,
    /// Empty for a self-hosted upstream: the source is usable only once the operator configures a
    /// base URL.
    pub default_base_url: &'static str,
    /// Usable only with a credential (a single endpoint can ask for one with
    /// `Slot::with_credential`).
    pub needs_credential: bool,
    /// The rate limit the upstream publishes, `(requests per second, burst)`; enforced locally
    /// (exhausted = skipped like a 429). The configuration can change or disable it.
    pub rate_limit: Option<(f64, u32)>,
    /// One handler per endpoint served (generated from the catalogue, per platform).
    pub handlers: Handlers,
}

/// A source as plain data, derived from its registration (for listings and tests).
#[derive(Debug, Clone)]
pub struct SourceMeta {
    pub id: &'static str,
    pub platform: &'static str,
    pub default_base_url: &'static str,
    /// The endpoints it serves, in catalogue order.
    pub endpoints: Vec<EndpointId>,
    pub needs_credential: bool,
}

impl Source {
    pub fn platform(&self) -> &'static str {
        self.handlers.platform()
    }

    /// The endpoints this source serves, in catalogue order.
    pub fn endpoints(&self) -> impl Iterator<Item = EndpointId> + '_ {
        EndpointId::ALL
            .into_iter()
            .filter(|id| self.handlers.slot(*id).is_some())
    }

    pub fn meta(&self) -> SourceMeta {
        SourceMeta {
            id: self.id,
            platform: self.platform(),
            default_base_url: self.default_base_url,
            endpoints: self.endpoints().collect(),
            needs_credential: self.needs_credential,
        }
    }

    /// Whether serving `endpoint` needs the credential; a source without one is left out of that
    /// endpoint's chain.
    pub fn needs_credential_for(&self, endpoint: EndpointId) -> bool {
        self.needs_credential
            || self
                .handlers
                .slot(endpoint)
                .is_some_and(|slot| slot.needs_credential)
    }

    /// A host the client named that this source connects to instead of its base URL, with the
    /// parameter that named it (the fediverse `instance`). The framework vets it (public addresses
    /// only), pins the answer and connects with the guarded client; the source then sees
    /// `Ctx::base_url` pointing at that host.
    fn user_host<'r>(&self, request: &'r Request) -> Option<(&'static str, &'r str)> {
        request.instance().map(|host| ("instance", host))
    }
}

struct Entry {
    source: &'static Source,
    settings: SourceSettings,
    health: Health,
}

impl Entry {
    /// Enabled, with its credential when it needs one, and with a base URL (a self-hosted upstream
    /// has an empty default base URL until the operator configures one).
    fn usable(&self) -> bool {
        self.settings.enabled
            && !self.settings.base_url.trim().is_empty()
            && (!self.source.needs_credential || self.settings.credential.is_some())
    }

    fn serves(&self, endpoint: EndpointId) -> bool {
        self.usable()
            && self.source.handlers.slot(endpoint).is_some()
            && (!self.source.needs_credential_for(endpoint) || self.settings.credential.is_some())
    }
}

/// The configured chains.
pub struct Sources {
    http: Http,
    /// For hosts clients name: resolves through `guard` only, no redirects.
    guarded_http: Http,
    guard: Arc<HostGuard>,
    entries: Vec<Entry>,
    call_deadline: Duration,
    /// Seal and open client cursors; replaced on a rotation (see `set_cursor_keys`).
    cursor_keys: RwLock<Arc<cursor::CursorKeys>>,
}

/// A call that passed every check that needs no upstream: see [`Sources::prepare`].
pub struct Prepared<'s, 'r> {
    request: &'r Request,
    /// The sources that may serve it, in order.
    chain: Vec<&'s Entry>,
    /// The upstream's own cursor, taken from the client's verified cursor.
    resume: Option<String>,
}

/// Breaker state of one source, as GET /v1/status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceState {
    pub id: &'static str,
    pub state: BreakerState,
    pub consecutive_failures: u32,
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
    /// The chains of `registry` (the sources this build knows, in default chain order) as
    /// `config` sets them up, sealing cursors with a secret of this process only until
    /// [`Sources::set_cursor_keys`] hands over the deployment's shared one. `Sources::new` (in
    /// `crate::registry`) passes every built-in source.
    pub fn with_registry(
        config: &SourcesConfig,
        registry: Vec<&'static Source>,
    ) -> Result<Self, String> {
        let guard = Arc::new(HostGuard::new(
            config.allow_private_hosts,
            config.host_overrides.clone(),
        ));
        if config.allow_private_hosts {
            tracing::warn!("sources.allow_private_hosts is on: the SSRF guard is off (tests only)");
        }
        let guarded_http = Http::guarded(guard.clone())?;
        let mut entries: Vec<Entry> = Vec::new();
        for source in registry {
            let settings = config.settings_for(source);
            let health = Health::new(health::Policy {
                failures: config.breaker_failures,
                cooldown: Duration::from_millis(config.breaker_cooldown_ms),
                rate: settings.rate,
            });
            entries.push(Entry {
                source,
                settings,
                health,
            });
        }
        config.check_known(entries.iter().map(|e| e.source.id))?;
        // The operator's hosts are trusted as configured; redirects elsewhere pass the guard.
        let trusted = entries
            .iter()
            .filter_map(|e| host_of(&e.settings.base_url).map(str::to_string))
            .collect();
        let http = Http::new(guard.clone(), trusted)?;
        // Chain order: the configured order of each platform first, then the built-in order.
        entries.sort_by_key(|e| config.position(e.source.platform(), e.source.id));
        Ok(Sources {
            http,
            guarded_http,
            guard,
            entries,
            call_deadline: Duration::from_millis(config.call_deadline_ms),
            cursor_keys: RwLock::new(Arc::new(cursor::CursorKeys::new(
                cursor::CursorKey::ephemeral(),
            ))),
        })
    }

    /// The secrets cursors are sealed and opened with from now on (at start and after a rotation).
    pub fn set_cursor_keys(&self, keys: cursor::CursorKeys) {
        *self.cursor_keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
    }

    fn cursor_keys(&self) -> Arc<cursor::CursorKeys> {
        self.cursor_keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn list(&self) -> Vec<SourceInfo> {
        self.entries
            .iter()
            .map(|e| SourceInfo {
                id: e.source.id,
                platform: e.source.platform(),
                base_url: e.settings.base_url.clone(),
                endpoints: e.source.endpoints().map(|id| id.meta().path).collect(),
                needs_credential: e.source.needs_credential,
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
        self.entries.iter().filter(move |e| e.serves(endpoint))
    }

    /// Breaker state of each enabled source of a platform, in chain order (for GET /v1/status).
    /// Per-host states of client-named hosts are not listed.
    pub fn source_states(&self, platform: &str) -> Vec<SourceState> {
        self.entries
            .iter()
            .filter(|e| e.source.platform() == platform && e.usable())
            .map(|e| {
                let (state, consecutive_failures) = e.health.snapshot("");
                SourceState {
                    id: e.source.id,
                    state,
                    consecutive_failures,
                }
            })
            .collect()
    }

    /// Serves a request through the platform's chain: [`Sources::prepare`], then
    /// [`Sources::serve`]. The page's `next_cursor` comes back encoded with the id of the source
    /// that made it.
    pub async fn call(&self, request: &Request) -> Result<Page, CallError> {
        let prepared = self.prepare(request).await?;
        self.serve(prepared).await
    }

    /// Everything about a call that depends only on the request and the deployment, decided before
    /// any credit is reserved and before anything is sent upstream: the chain of
    /// sources that may serve it, the client's cursor, and any host the client named.
    pub async fn prepare<'s, 'r>(
        &'s self,
        request: &'r Request,
    ) -> Result<Prepared<'s, 'r>, CallError> {
        let endpoint = request.endpoint();
        let meta = endpoint.meta();
        let mut chain: Vec<&Entry> = self.chain(endpoint).collect();
        if chain.is_empty() {
            return Err(CallError::NotConfigured(format!(
                "no source for {} is configured on this deployment",
                meta.path
            )));
        }
        // Checked after the chain: a deployment without a source says so before judging a cursor.
        // Opening verifies the seal, the endpoint and the expiry, so nothing of a forged cursor
        // is ever used.
        let resume = match request.cursor() {
            Some(c) => Some(
                cursor::open(&self.cursor_keys(), c, meta.path, cursor::now())
                    .map_err(CallError::BadCursor)?,
            ),
            None => None,
        };
        // A follow-up page goes to the source that made the cursor, and only to it: another
        // source cannot read its cursor.
        if let Some((source_id, _)) = &resume {
            chain.retain(|e| e.source.id == source_id);
            if chain.is_empty() {
                return Err(CallError::BadCursor(cursor::Refusal::SourceGone));
            }
        } else {
            chain.retain(|e| e.source.handlers.serves(request));
            if chain.is_empty() {
                return Err(CallError::NotConfigured(format!(
                    "no configured source of {} serves this combination of parameters",
                    meta.path
                )));
            }
        }
        // A host the client named: vetted before anything is sent (and before any credit is
        // reserved), then reached only through the guarded client, which resolves it again
        // through the same guard at connect time.
        for entry in &chain {
            if let Some((parameter, host)) = entry.source.user_host(request) {
                self.guard
                    .vet(host)
                    .await
                    .map_err(|message| CallError::Refused {
                        parameter: parameter.to_string(),
                        message,
                    })?;
            }
        }
        Ok(Prepared {
            request,
            chain,
            resume: resume.map(|(_, upstream)| upstream),
        })
    }

    /// Serves a prepared call: the first source of its chain that answers.
    pub async fn serve(&self, prepared: Prepared<'_, '_>) -> Result<Page, CallError> {
        let Prepared {
            request,
            chain,
            resume,
        } = prepared;
        let meta = request.endpoint().meta();
        let deadline = Instant::now() + self.call_deadline;
        let mut failures = Vec::new();
        let mut all_not_configured = true;
        for entry in chain {
            let id = entry.source.id;
            // A host the client named: vetted before anything is sent, then reached only through
            // the guarded client. The credential belongs to the configured host and goes nowhere else.
            let (http, base_url, credential, key) = match entry.source.user_host(request) {
                Some((_, host)) => {
                    let own_host = host_of(&entry.settings.base_url)
                        .is_some_and(|h| h.eq_ignore_ascii_case(host.trim_end_matches('.')));
                    // Health is kept per host; the configured host shares the source's own state.
                    let key = if own_host {
                        String::new()
                    } else {
                        host.trim_end_matches('.').to_ascii_lowercase()
                    };
                    (
                        &self.guarded_http,
                        entry.settings.instance_url(host),
                        entry.settings.credential.as_deref().filter(|_| own_host),
                        key,
                    )
                }
                None => (
                    &self.http,
                    entry.settings.base_url.clone(),
                    entry.settings.credential.as_deref(),
                    String::new(),
                ),
            };
            if let Err(skip) = entry.health.admit(&key) {
                let why = match skip {
                    Skip::BreakerOpen => "skipped: circuit breaker open after repeated failures",
                    Skip::RateLimited => "skipped: this service's rate limit for it is used up",
                };
                tracing::info!(source = id, why, "source skipped");
                failures.push(format!("{id}: {why}"));
                all_not_configured = false;
                continue;
            }
            let ctx = Ctx {
                source: id,
                http,
                base_url: &base_url,
                credential,
                cursor: resume.as_deref(),
                deadline: deadline
                    .min(Instant::now() + Duration::from_millis(entry.settings.timeout_ms)),
            };
            // The chain holds only sources with a slot for this endpoint (`Entry::serves`).
            let Some(call) = entry.source.handlers.dispatch(&ctx, request) else {
                continue;
            };
            let result = call.await;
            entry.health.record(
                &key,
                match &result {
                    Ok(_) | Err(SourceError::NotFound | SourceError::Rejected(_)) => {
                        Outcome::Answered
                    }
                    Err(SourceError::NotConfigured(_)) => Outcome::Neutral,
                    Err(_) => Outcome::Failed,
                },
            );
            match result {
                Ok(mut page) => {
                    // An endpoint without a `cursor` parameter cannot take a next page.
                    let pages = meta.params.iter().any(|p| p.name == "cursor");
                    page.next_cursor = page.next_cursor.filter(|_| pages).and_then(|state| {
                        let sealed = cursor::seal(
                            &self.cursor_keys(),
                            id,
                            meta.path,
                            &state,
                            cursor::now(),
                        );
                        if sealed.is_none() {
                            tracing::warn!(
                                source = id,
                                state_len = state.len(),
                                "the next page's cursor would exceed the 4096-character limit; none is offered"
                            );
                        }
                        sealed
                    });
                    if page.total.is_none() {
                        page.total = Some(page.items.len() as u64);
                    }
                    return Ok(page);
                }
                Err(e) if e.falls_back() => {
                    tracing::warn!(source = id, error = %e, "source failed; trying the next");
                    all_not_configured &= matches!(e, SourceError::NotConfigured(_));
                    failures.push(format!("{id}: {}", public(&e, &base_url, credential)));
                }
                Err(SourceError::NotFound) => {
                    return Err(CallError::Upstream(format!(
                        "{id} found nothing for this request"
                    )));
                }
                Err(e) => {
                    tracing::warn!(source = id, error = %e, "source refused the request");
                    let why = public(&e, &base_url, credential);
                    return Err(CallError::Upstream(format!("{id}: {why}")));
                }
            }
        }
        if all_not_configured {
            return Err(CallError::NotConfigured(failures.join("; ")));
        }
        Err(CallError::AllSourcesFailed(failures.join("; ")))
    }
}

/// A source's failure as a client may read it: what went wrong, with any URL, the upstream's host
/// and the credential taken out (an upstream's own message may quote them). The log keeps the rest.
fn public(e: &SourceError, base_url: &str, credential: Option<&str>) -> String {
    let mut text = e
        .to_string()
        .split(' ')
        .map(|word| if word.contains("://") { "<link>" } else { word })
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(secret) = credential.filter(|c| !c.is_empty()) {
        text = text.replace(secret, "<redacted>");
    }
    if let Some(host) = host_of(base_url).filter(|h| !h.is_empty()) {
        text = replace_ignoring_case(&text, host, "the upstream");
    }
    text
}

fn replace_ignoring_case(text: &str, needle: &str, with: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let needle = needle.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = lower[at..].find(&needle) {
        out.push_str(&text[at..at + found]);
        out.push_str(with);
        at += found + needle.len();
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_failures_name_no_url_host_or_credential() {
        let e = SourceError::Rejected(
            "answered 400: see https://api.example.com/docs?key=K3Y for API.EXAMPLE.COM; K3Y"
                .into(),
        );
        let text = public(&e, "https://api.example.com/v2", Some("K3Y"));
        assert_eq!(
            text,
            "request refused: answered 400: see <link> for the upstream; <redacted>"
        );
        assert_eq!(
            public(&SourceError::RateLimited, "https://x.test", None),
            "rate-limited by the upstream"
        );
    }
}
