//! Plumbing shared by every source: the HTTP client, status-to-error mapping, and the helpers for
//! dates, HTML and cursors. Sources never build their own client.

pub mod cursor;
pub mod dates;
pub mod encoding;
pub mod feed;
pub mod guard;
pub mod html;
pub mod path;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use reqwest::{RequestBuilder, StatusCode};
use serde_json::Value;

use crate::error::SourceError;
use crate::item::{Item, Page};

/// A boxed future a source hands to the framework (handlers, bounded fan-out).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The page of a lookup: the item, or `NotFound` when the upstream's answer holds none.
pub fn found(item: Option<Item>) -> Result<Page, SourceError> {
    item.map(Page::single).ok_or(SourceError::NotFound)
}

/// Largest upstream body read; bigger answers count as malformed rather than exhausting memory.
const BODY_MAX: usize = 8 * 1024 * 1024;

const REDIRECT_REFUSED: &str = "redirected somewhere this service does not follow";

/// Most redirects followed for one request.
const MAX_REDIRECTS: usize = 3;

/// The one HTTP client (connection pooling, compression, an honest User-Agent, guarded redirects).
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
}

impl Http {
    fn builder() -> reqwest::ClientBuilder {
        // reqwest is built without a default TLS provider (ring instead of aws-lc keeps builds short).
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .user_agent(concat!(
                "socialsearch/",
                env!("CARGO_PKG_VERSION"),
                " (+https://socialsearch.dev/bot)"
            ))
            .connect_timeout(Duration::from_secs(3))
            .pool_idle_timeout(Duration::from_secs(60))
    }

    /// The client for operator-configured upstreams. The configured hosts (`trusted`) are reached
    /// as configured; a redirect is followed only over http(s), at most [`MAX_REDIRECTS`] hops, and
    /// only to a host the SSRF guard accepts (an address literal is judged by the policy, a name
    /// by the resolver, which vets every name but the configured ones). No proxy from the
    /// environment: a proxy would resolve redirect targets itself, past the guard.
    pub fn new(guard: Arc<guard::HostGuard>, trusted: Vec<String>) -> Result<Self, String> {
        let policy_guard = guard.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            match redirect_refusal(&policy_guard, attempt.url(), attempt.previous().len()) {
                Some(why) => attempt.error(why),
                None => attempt.follow(),
            }
        });
        let client = Http::builder()
            .redirect(policy)
            .no_proxy()
            .dns_resolver(guard::TrustingResolver::new(guard, trusted))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Http { client })
    }

    /// The client for hosts a client named: it resolves only through `guard` (so it connects only
    /// to vetted, pinned addresses), follows no redirect and ignores proxy settings.
    pub fn guarded(guard: Arc<guard::HostGuard>) -> Result<Self, String> {
        let client = Http::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(guard::GuardResolver(guard))
            .build()
            .map_err(|e| format!("cannot build the guarded HTTP client: {e}"))?;
        Ok(Http { client })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }
}

/// Why a redirect to `url` (after `hops` earlier URLs) is not followed, if it is not.
fn redirect_refusal(guard: &guard::HostGuard, url: &reqwest::Url, hops: usize) -> Option<String> {
    let why = if hops > MAX_REDIRECTS {
        format!("more than {MAX_REDIRECTS} redirects")
    } else if !matches!(url.scheme(), "http" | "https") {
        format!("a {} URL", url.scheme())
    } else {
        let Some(host) = url.host_str() else {
            return Some("redirect refused: the URL has no host".into());
        };
        // An address literal never reaches a resolver, so it is judged here; names are vetted
        // when they are resolved (`TrustingResolver`).
        let ip = host.trim_matches(['[', ']']).parse().ok()?;
        format!("{host} is a {} address", guard.refuses_address(ip)?)
    };
    Some(format!("redirect refused: {why}"))
}

/// What a source needs for one call: the client, its configured base URL and credential, the
/// upstream cursor of the page asked for, and the time left.
pub struct Ctx<'a> {
    /// The source's id, for log lines.
    pub source: &'static str,
    pub http: &'a Http,
    pub base_url: &'a str,
    pub credential: Option<&'a str>,
    /// The upstream's own cursor (already decoded from the client's cursor).
    pub cursor: Option<&'a str>,
    pub deadline: Instant,
}

impl Ctx<'_> {
    /// `base_url` (which may carry a path prefix) joined with `path`.
    pub fn url(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.base_url.trim_end_matches('/'),
            path.trim_start_matches('/')
        )
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.http.client.get(self.url(path))
    }

    /// The host of `base_url` (`mastodon.social` of `https://mastodon.social/api`).
    pub fn base_host(&self) -> Option<&str> {
        host_of(self.base_url)
    }

    fn remaining(&self) -> Result<Duration, SourceError> {
        self.deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| SourceError::Unavailable("the call's deadline passed".into()))
    }

    /// Sends a request and returns the body, mapping transport failures and statuses to
    /// `SourceError` (which decides between falling back and giving up).
    pub async fn send(&self, req: RequestBuilder) -> Result<(StatusCode, Vec<u8>), SourceError> {
        let raw = self.send_raw(req).await?;
        match status_error(raw.status) {
            None => Ok((raw.status, raw.body)),
            Some(e) => Err(e),
        }
    }

    /// Sends a request and returns status, headers and body whatever the status, for sources that
    /// read an upstream's own error signals (rate-limit headers, error messages); only transport
    /// failures are errors here. `status_error` gives the usual reading of the status.
    pub async fn send_raw(&self, req: RequestBuilder) -> Result<RawResponse, SourceError> {
        let mut res = req
            .timeout(self.remaining()?)
            .send()
            .await
            .map_err(|e| self.transport_error(&e, None))?;
        let status = res.status();
        let headers = res.headers().clone();
        if status.is_redirection() {
            tracing::warn!(
                source = self.source,
                status = status.as_u16(),
                "upstream redirect not followed (not an http(s) target)"
            );
        }
        let mut body = Vec::new();
        while let Some(chunk) = res
            .chunk()
            .await
            .map_err(|e| self.transport_error(&e, Some("the answer was cut off")))?
        {
            if body.len() + chunk.len() > BODY_MAX {
                return Err(SourceError::Malformed(format!(
                    "the answer is larger than {BODY_MAX} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(RawResponse {
            status,
            headers,
            body,
        })
    }

    /// A transport failure as the error the client may see (what went wrong, never where), with
    /// the operator's detail logged: the URL without its query string or user info (either may
    /// hold a credential) and the error chain, credential scrubbed.
    fn transport_error(&self, e: &reqwest::Error, what: Option<&'static str>) -> SourceError {
        let what = what.unwrap_or_else(|| transport_kind(e));
        let url = e.url().map(|u| {
            let mut u = u.clone();
            u.set_query(None);
            u.set_fragment(None);
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        });
        let mut chain = Vec::new();
        let mut cause = std::error::Error::source(e);
        while let Some(c) = cause {
            chain.push(c.to_string());
            cause = c.source();
        }
        let mut detail = chain.join(": ");
        if let Some(secret) = self.credential.filter(|s| !s.is_empty()) {
            detail = detail.replace(secret, "<redacted>");
        }
        tracing::warn!(
            source = self.source,
            url = url.as_deref().unwrap_or(""),
            error = %detail,
            "upstream request failed: {what}"
        );
        SourceError::Unavailable(what.into())
    }

    pub async fn json(&self, req: RequestBuilder) -> Result<Value, SourceError> {
        let (_, body) = self.send(req).await?;
        parse_json(&body)
    }

    pub async fn text(&self, req: RequestBuilder) -> Result<String, SourceError> {
        let (_, body) = self.send(req).await?;
        String::from_utf8(body).map_err(|_| SourceError::Malformed("not UTF-8 text".into()))
    }
}

/// What went wrong in a transport failure, in words that name no URL or host.
fn transport_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        return "timed out";
    }
    if e.is_redirect() {
        return REDIRECT_REFUSED;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return "connection refused",
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                    return "connection reset";
                }
                std::io::ErrorKind::TimedOut => return "timed out",
                _ => {}
            }
        }
        cause = c.source();
    }
    if e.is_connect() {
        "could not connect"
    } else if e.is_body() || e.is_decode() {
        "the answer was cut off"
    } else {
        "the request failed"
    }
}

/// An upstream's answer as received (see `Ctx::send_raw`).
pub struct RawResponse {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The usual reading of an upstream status: `None` for success, else how the source failed.
pub fn status_error(status: StatusCode) -> Option<SourceError> {
    Some(match status {
        s if s.is_success() => return None,
        StatusCode::TOO_MANY_REQUESTS => SourceError::RateLimited,
        StatusCode::NOT_FOUND | StatusCode::GONE => SourceError::NotFound,
        // A redirect the client would not follow (another scheme): another source may do better.
        s if s.is_redirection() => SourceError::Unavailable(REDIRECT_REFUSED.into()),
        s if s.is_server_error() => SourceError::Unavailable(format!("answered {s}")),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            SourceError::Unavailable(format!("refused access ({status})"))
        }
        s => SourceError::Rejected(format!("answered {s}")),
    })
}

pub fn parse_json(body: &[u8]) -> Result<Value, SourceError> {
    serde_json::from_slice(body).map_err(|e| SourceError::Malformed(format!("not JSON: {e}")))
}

/// The host part of an absolute URL, without port or brackets.
pub fn host_of(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then_some(host)
}

/// Runs futures with at most `limit` in flight and returns their outputs in input order (for
/// fan-out such as one request per comment).
pub async fn bounded<'a, T>(futures: Vec<BoxFuture<'a, T>>, limit: usize) -> Vec<T> {
    let limit = limit.max(1);
    let total = futures.len();
    let mut pending = futures.into_iter().enumerate();
    let mut running: Vec<(usize, BoxFuture<'a, T>)> = Vec::new();
    let mut done: Vec<Option<T>> = (0..total).map(|_| None).collect();
    let mut finished = 0;
    std::future::poll_fn(|cx| {
        loop {
            while running.len() < limit {
                match pending.next() {
                    Some(f) => running.push(f),
                    None => break,
                }
            }
            let mut progressed = false;
            let mut i = 0;
            while i < running.len() {
                if let Poll::Ready(v) = running[i].1.as_mut().poll(cx) {
                    let (at, _) = running.swap_remove(i);
                    done[at] = Some(v);
                    finished += 1;
                    progressed = true;
                } else {
                    i += 1;
                }
            }
            if finished == total {
                return Poll::Ready(());
            }
            if !progressed {
                return Poll::Pending;
            }
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// An error with every occurrence of a secret (an API key sent in a query string, which transport
/// errors quote with the URL) replaced, so a credential never reaches logs or clients.
pub fn redact(e: SourceError, secret: Option<&str>) -> SourceError {
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        return e;
    };
    let clean = |s: String| s.replace(secret, "<redacted>");
    match e {
        SourceError::Unavailable(s) => SourceError::Unavailable(clean(s)),
        SourceError::Malformed(s) => SourceError::Malformed(clean(s)),
        SourceError::Rejected(s) => SourceError::Rejected(clean(s)),
        other => other,
    }
}

/// Small readers for `serde_json::Value` trees that never panic on a missing or odd field.
pub mod json {
    use serde_json::Value;

    pub fn str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
        v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
    }

    pub fn string(v: &Value, key: &str) -> Option<String> {
        str(v, key).map(str::to_string)
    }

    /// A number, also when the upstream sends it as a string (`"184233"`).
    pub fn number(v: &Value, key: &str) -> Option<f64> {
        match v.get(key)? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().replace(',', "").parse().ok(),
            _ => None,
        }
    }

    pub fn int(v: &Value, key: &str) -> Option<i64> {
        number(v, key).filter(|n| n.is_finite()).map(|n| n as i64)
    }

    /// An id that may come as a number or a string.
    pub fn id(v: &Value, key: &str) -> Option<String> {
        match v.get(key)? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    }

    pub fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
        v.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_refusals_say_why() {
        let strict = guard::HostGuard::new(false, Default::default());
        let why = |url: &str, hops| redirect_refusal(&strict, &url.parse().unwrap(), hops);
        assert_eq!(
            why("https://example.com/x", 1),
            None,
            "names are vetted on resolve"
        );
        assert_eq!(why("https://93.184.215.14/x", 3), None);
        assert_eq!(
            why("https://93.184.215.14/x", 4).as_deref(),
            Some("redirect refused: more than 3 redirects")
        );
        assert_eq!(
            why("http://169.254.169.254/latest", 1).as_deref(),
            Some("redirect refused: 169.254.169.254 is a link-local or metadata address")
        );
        assert_eq!(
            why("http://[::1]:8080/", 1).as_deref(),
            Some("redirect refused: [::1] is a loopback address")
        );
        assert_eq!(
            why("file:///etc/passwd", 1).as_deref(),
            Some("redirect refused: a file URL")
        );
        let lenient = guard::HostGuard::new(true, Default::default());
        assert_eq!(
            redirect_refusal(&lenient, &"http://127.0.0.1/".parse().unwrap(), 1),
            None
        );
    }
}
