//! The path of a platform call: parameters through the generated parser, then the sources, then
//! the success envelope (spec section 2.1).

use adapters::api::{EndpointId, Request};
use adapters::item::Page;
use adapters::request::{Location, Rule, Violation, Violations};
use adapters::sources::{CallError, Sources};
use axum::Json;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::sync::oneshot::error::TryRecvError;

use crate::AppState;
use crate::accounts::ledger::{CallRecord, Reservation};
use crate::auth::Credential;
use crate::error::{ApiError, ErrorCode};

/// One platform call, in the order of checks of the spec: key present (401 MISSING_API_KEY), key valid
/// (403 INVALID_API_KEY), the key's rate and calls in flight (429), parameters and cross-parameter
/// rules (422), then `Sources::prepare` (cursor and client-named host 422, 501), credits reserved
/// (402), sources, then the reservation settled (success) or released (any failure).
///
/// The work runs in a task of its own, so a client that hangs up cannot leave a reservation held;
/// the task is told when this request is dropped (hyper drops it when the client goes away), and
/// then releases the reservation instead of settling it: an answer nobody receives is not charged.
pub async fn serve(state: AppState, endpoint: EndpointId, req: HttpRequest) -> Response {
    let Some(ctx) = crate::http::current() else {
        return ApiError::internal().into_response();
    };
    let key = match crate::auth::credential(req.headers(), "x-api-key") {
        Ok(key) => key,
        Err(e) => return e.into_response(),
    };
    let query = req.uri().query().unwrap_or("").to_string();
    drop(req);
    // Never sent on: the receiver learns the client is gone when this sender is dropped with
    // the request's future.
    let (_client_waits, client_gone) = tokio::sync::oneshot::channel::<Infallible>();
    let running = Running::start();
    // Every log line of the call (an upstream's failure in detail) carries the request id.
    let span = tracing::info_span!("call", request_id = %ctx.request_id);
    let task = tokio::spawn(tracing::Instrument::instrument(
        crate::http::in_context(ctx.clone(), async move {
            let _running = running;
            call(
                state,
                endpoint,
                key,
                query,
                ctx.request_id.clone(),
                client_gone,
            )
            .await
        }),
        span,
    ));
    // This runs inside the request's context, so the error carries its request id.
    task.await
        .unwrap_or_else(|_| ApiError::internal().into_response())
}

/// Paid calls still running (their tasks outlive the request), so shutdown can wait until each
/// has settled or released its reservation before the ledger's writers stop.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static ALL_ENDED: Notify = Notify::const_new();

struct Running;

impl Running {
    fn start() -> Running {
        RUNNING.fetch_add(1, Ordering::AcqRel);
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if RUNNING.fetch_sub(1, Ordering::AcqRel) == 1 {
            ALL_ENDED.notify_waiters();
        }
    }
}

/// Waits until no paid call is running, for at most `within`; `false` if some still are.
pub async fn calls_ended(within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let ended = ALL_ENDED.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if RUNNING.load(Ordering::Acquire) == 0 {
            return true;
        }
        if tokio::time::timeout_at(deadline, ended).await.is_err() {
            return RUNNING.load(Ordering::Acquire) == 0;
        }
    }
}

/// The status a call is recorded with when its client hung up before the answer (nginx's
/// "client closed request"; nothing was sent).
pub const CLIENT_GONE: u16 = 499;

/// 429 RATE_LIMITED with `Retry-After`.
pub fn rate_limited(retry_after: u64) -> ApiError {
    let mut e = ApiError::new(
        ErrorCode::RateLimited,
        "over the per-key rate limit or the number of calls in flight; nothing was charged",
    )
    .with_fix(format!("retry in {retry_after} seconds"));
    e.retry_after = Some(retry_after);
    e
}

async fn call(
    state: AppState,
    endpoint: EndpointId,
    key_header: Credential,
    query: String,
    request_id: String,
    mut client_gone: tokio::sync::oneshot::Receiver<Infallible>,
) -> Response {
    let meta = endpoint.meta();
    let unknown = || {
        ApiError::new(
            ErrorCode::InvalidApiKey,
            "the API key is unknown, rotated away or revoked",
        )
        .into_response()
    };
    let raw = match key_header {
        Credential::Absent => {
            return ApiError::new(ErrorCode::MissingApiKey, "this endpoint needs an API key in the x-api-key header")
                .with_fix("create a key in the dashboard (sign in with POST /v1/auth/request-code) and send it as x-api-key")
                .into_response();
        }
        // Bytes no key is made of: an unknown key, not a missing one.
        Credential::Unreadable => return unknown(),
        Credential::Given(raw) => raw,
    };
    let key = match state.accounts.key(&raw).await {
        Ok(Some(k)) => k,
        Ok(None) => {
            return unknown();
        }
        Err(e) => return ApiError::from(e).into_response(),
    };
    let ledger = &state.accounts.ledger;
    let record = |status: u16, credits: i64| CallRecord {
        request_id: request_id.clone(),
        account_id: key.account_id.clone(),
        key_id: key.id.clone(),
        key_prefix: key.prefix.clone(),
        endpoint: meta.path.to_string(),
        status,
        credits,
    };
    let refuse = |e: ApiError| async {
        ledger.log(record(e.code.status(), 0)).await;
        e.into_response()
    };
    let _in_flight = match state.accounts.limits.enter(&key.id) {
        Ok(g) => g,
        // Not recorded: a key flooding the service must not flood the call log too.
        Err(secs) => return rate_limited(secs).into_response(),
    };
    let request = match endpoint.parse(&query) {
        Ok(r) => r,
        Err(violations) => return refuse(ApiError::validation(violations, meta.example)).await,
    };
    // Every refusal that depends only on the request (and the deployment) comes here, before
    // any credit is touched: refused combinations, the cursor, client-named hosts, 501.
    let prepared = match state.sources.prepare(&request).await {
        Ok(p) => p,
        Err(e) => return refuse(call_error(&request, e)).await,
    };
    let price = i64::from(meta.credits);
    let remaining = match ledger.reserve(&key.account_id, &request_id, price).await {
        Ok(Reservation::Held { remaining }) => remaining,
        Ok(Reservation::Insufficient { balance }) => {
            let mut e = ApiError::new(
                ErrorCode::NoCredits,
                format!("this call costs {price} credits and the balance is {balance}; nothing was charged"),
            )
            .with_fix(
                "top up: POST /v1/checkout with {\"plan\": \"starter\"} and open the pay_url, or POST /v1/auth/browser-link \
                 for a dashboard link; the same key works as soon as the credits land",
            );
            e.credits_remaining = Some(balance);
            return refuse(e).await;
        }
        Err(e) => return ApiError::fault(format!("reservation failed: {e}")).into_response(),
    };
    let served = tokio::select! {
        biased;
        served = state.sources.serve(prepared) => Some(served),
        // The client is gone: the upstream's answer would go nowhere.
        _ = &mut client_gone => None,
    };
    let gone = || async {
        if let Err(e) = ledger.release(record(CLIENT_GONE, 0)).await {
            tracing::error!(error = %e, "release failed; the hold is released by the janitor");
        }
        tracing::info!("the client hung up before its answer; nothing was charged");
        // Nobody reads it: the request it would answer is gone.
        axum::http::StatusCode::NO_CONTENT.into_response()
    };
    let Some(served) = served else {
        return gone().await;
    };
    match served.map_err(|e| call_error(&request, e)) {
        Ok(_) if matches!(client_gone.try_recv(), Err(TryRecvError::Closed)) => gone().await,
        Ok(page) => match ledger.settle(record(200, price)).await {
            Ok(true) => success(meta.platform, page, price as u32, remaining, &request_id),
            Ok(false) => {
                // The hold expired and was released before the call ended: the call is free.
                let balance = state
                    .accounts
                    .balance(&key.account_id)
                    .await
                    .unwrap_or(remaining);
                success(meta.platform, page, 0, balance, &request_id)
            }
            Err(e) => ApiError::fault(format!(
                "settlement failed; the hold is released by the janitor: {e}"
            ))
            .into_response(),
        },
        Err(err) => {
            if let Err(e) = ledger.release(record(err.code.status(), 0)).await {
                tracing::error!(error = %e, "release failed; the hold is released by the janitor");
            }
            err.into_response()
        }
    }
}

/// The sources part of a call, with failures mapped to the API's error codes.
pub async fn fetch(sources: &Sources, request: &Request) -> Result<Page, ApiError> {
    sources
        .call(request)
        .await
        .map_err(|e| call_error(request, e))
}

/// A failed call (or a refused one) as the API's error.
fn call_error(request: &Request, e: CallError) -> ApiError {
    match e {
        CallError::NotConfigured(why) => ApiError::not_configured(why),
        CallError::AllSourcesFailed(why) => ApiError::new(
            ErrorCode::AllSourcesFailed,
            format!("every source for this platform failed; nothing was charged ({why})"),
        )
        .with_fix("retry in a minute"),
        CallError::Upstream(why) => ApiError::new(ErrorCode::UpstreamError, why),
        CallError::BadCursor(refusal) => {
            let meta = request.endpoint().meta();
            ApiError::validation(
                Violations(vec![Violation {
                    parameter: "cursor".into(),
                    location: Location::Query,
                    rule: Rule::Format,
                    message: format!("`cursor` {}", refusal.message()),
                }]),
                meta.example,
            )
        }
        CallError::Refused { parameter, message } => {
            let meta = request.endpoint().meta();
            ApiError::validation(
                Violations(vec![Violation {
                    message: format!("`{parameter}` is refused: {message}"),
                    parameter,
                    location: Location::Query,
                    rule: Rule::Refused,
                }]),
                meta.example,
            )
        }
    }
}

/// The success envelope of one call.
pub fn success(
    platform: &str,
    page: Page,
    credits_used: u32,
    credits_remaining: i64,
    request_id: &str,
) -> Response {
    Json(json!({
        "success": true,
        "platform": platform,
        "data": { "total": page.total.unwrap_or(page.items.len() as u64), "items": page.items, "next_cursor": page.next_cursor },
        "credits_used": credits_used,
        "credits_remaining": credits_remaining,
        "request_id": request_id,
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused `instance` (a name resolving to loopback) is a 422 naming the parameter.
    #[tokio::test]
    async fn refused_instance_is_a_validation_error() {
        let mut config = crate::Config::default();
        config
            .sources
            .host_overrides
            .insert("evil.test".into(), vec!["127.0.0.1".parse().unwrap()]);
        let sources = Sources::new(&config.sources).expect("sources");
        let request = EndpointId::FediverseTag
            .parse("query=rust&instance=evil.test")
            .expect("valid by the grammar");
        let err = fetch(&sources, &request).await.expect_err("refused");
        assert_eq!(err.code, ErrorCode::ValidationError);
        assert_eq!(err.violations[0].parameter, "instance");
    }
}
