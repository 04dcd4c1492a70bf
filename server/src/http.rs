//! Request plumbing shared by every route: the request id and its context, body reading with the
//! spec's 411/413/400 rules, the generic operation wrapper the generated routes call, and the
//! fallbacks for unknown routes and panics.

use std::future::Future;

use axum::extract::{FromRequestParts, RawPathParams, Request};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::AppState;
use crate::auth::{self, Caller, Scheme};
use crate::error::{ApiError, ApiResult, ErrorCode};

/// What every response of one request shares.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub request_id: String,
    /// The path called, as the error envelope's `endpoint`.
    pub endpoint: String,
    /// The client's address (the TCP peer), for the per-client daily caps.
    pub client: String,
}

tokio::task_local! {
    static CONTEXT: RequestContext;
}

/// The context of the request being served, if any.
pub fn current() -> Option<RequestContext> {
    CONTEXT.try_with(Clone::clone).ok()
}

/// Runs `f` inside a request context (for work spawned off the request's task).
pub fn in_context<F: Future>(ctx: RequestContext, f: F) -> impl Future<Output = F::Output> {
    CONTEXT.scope(ctx, f)
}

/// `req-` and 24 hex digits: 48 bits of milliseconds since 1970, then 48 random bits. Ids made later
/// sort later, so the ledger and the call log, keyed by request id, grow at the end of their indexes.
pub fn new_request_id() -> String {
    let mut random = [0u8; 6];
    // The OS generator does not fail on Linux once booted; a zero part is still unique enough to log.
    let _ = getrandom::fill(&mut random);
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut id = String::with_capacity(28);
    id.push_str("req-");
    id.push_str(&format!("{:012x}", millis & 0xffff_ffff_ffff));
    for b in random {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Outermost middleware: gives the request its id and runs the rest inside that context, so that
/// any error rendered below carries the id and the endpoint. Sets `x-request-id` on every response.
pub async fn request_context(req: Request, next: Next) -> Response {
    let ctx = RequestContext {
        request_id: new_request_id(),
        endpoint: req.uri().path().to_string(),
        client: req
            .extensions()
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip().to_string())
            .unwrap_or_else(|| "unknown".into()),
    };
    let id = ctx.request_id.clone();
    // HEAD is no method of any route (spec: "Method is GET"), so it is a wrong method like any
    // other; axum would otherwise run the GET handler, and with it a paid call, for a bodiless answer.
    let mut res = if req.method() == Method::HEAD {
        CONTEXT
            .scope(ctx, async { unknown_endpoint(req).await.into_response() })
            .await
    } else {
        CONTEXT.scope(ctx, next.run(req)).await
    };
    set_request_id(&mut res, &id);
    res
}

fn set_request_id(res: &mut Response, id: &str) {
    if let Ok(v) = HeaderValue::from_str(id) {
        res.headers_mut().insert("x-request-id", v);
    }
}

/// An error answered by the listener itself (a refused request head), in the same envelope and
/// with a request id of its own like any routed request.
pub fn respond_outside_router(endpoint: String, client: String, error: ApiError) -> Response {
    let ctx = RequestContext {
        request_id: new_request_id(),
        endpoint,
        client,
    };
    let id = ctx.request_id.clone();
    let mut res = CONTEXT.sync_scope(ctx, || error.into_response());
    set_request_id(&mut res, &id);
    res
}

/// 404 UNKNOWN_ENDPOINT for unknown paths and for known paths with another method.
pub async fn unknown_endpoint(req: Request) -> ApiError {
    ApiError::new(
        ErrorCode::UnknownEndpoint,
        format!("no route {} {}", req.method(), req.uri().path()),
    )
    .with_fix("see GET /v1/openapi.json for every route")
}

/// Turns a caught panic into 500 INTERNAL in the envelope (the context is still in scope).
pub fn panic_response(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::error!(panic = %what, "handler panicked");
    ApiError::internal().into_response()
}

/// The raw parts of an operation's input, before the generated `extract` types them.
#[derive(Debug, Default)]
pub struct RawInput {
    pub path_params: Vec<(String, String)>,
    pub query: String,
    /// The parsed JSON body; `None` when the operation takes none or none was sent.
    pub body: Option<Value>,
}

/// Reads a JSON body under the spec's rules: a chunked body or one without `Content-Length` is
/// 411, one over the limit 413, malformed JSON 400.
async fn read_json_body(req: Request, limit: usize) -> ApiResult<Option<Value>> {
    let headers = req.headers();
    let chunked = headers
        .get(header::TRANSFER_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        return Err(ApiError::new(
            ErrorCode::LengthRequired,
            "chunked request bodies are refused; send the body with a Content-Length header",
        ));
    }
    let length = match headers.get(header::CONTENT_LENGTH) {
        None => {
            return Err(
                ApiError::new(ErrorCode::LengthRequired, "the request has no Content-Length header")
                    .with_fix("send the JSON body with a Content-Length header (an empty object is `{}`, 2 bytes)"),
            );
        }
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .ok_or_else(|| ApiError::bad_request("the Content-Length header is not a number"))?,
    };
    if length > limit {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("the body is {length} bytes; the limit is {limit} bytes"),
        ));
    }
    let bytes = axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| {
            ApiError::bad_request(
                "the body could not be read, or is longer than its Content-Length",
            )
        })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice::<Value>(&bytes)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))
}

/// Runs one account, billing or status operation: authenticate, read path, query and body, then
/// the typed handler `f` (which the generated route gives the typed input).
pub async fn operation<F, Fut>(
    state: AppState,
    req: Request,
    scheme: Scheme,
    has_body: bool,
    f: F,
) -> Response
where
    F: FnOnce(AppState, Caller, RawInput) -> Fut,
    Fut: Future<Output = ApiResult>,
{
    let result = async {
        let caller = auth::authenticate(&state, req.headers(), scheme).await?;
        let (mut parts, body) = req.into_parts();
        let path_params = RawPathParams::from_request_parts(&mut parts, &())
            .await
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            })
            .map_err(|_| ApiError::bad_request("a path segment is not valid UTF-8"))?;
        let query = parts.uri.query().unwrap_or("").to_string();
        let body = if has_body && parts.method != Method::GET {
            read_json_body(
                Request::from_parts(parts, body),
                state.config.limits.body_max_bytes,
            )
            .await?
        } else {
            drop(body);
            None
        };
        f(
            state,
            caller,
            RawInput {
                path_params,
                query,
                body,
            },
        )
        .await
    }
    .await;
    result.unwrap_or_else(IntoResponse::into_response)
}
