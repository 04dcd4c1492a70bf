//! The one error type of the API and its one mapping to the error envelope (spec section 2.3).

use adapters::request::{Violation, Violations};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tracing::Level;

pub use crate::api::ErrorCode;
use crate::http::RequestContext;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// A specific step to take: a working example, a top-up link, a retry delay.
    pub fix: Option<String>,
    pub violations: Vec<Violation>,
    /// Seconds, sent as `Retry-After` (per-key rate limit only).
    pub retry_after: Option<u64>,
    pub credits_remaining: Option<i64>,
    pub attempts_left: Option<u32>,
}

pub type ApiResult<T = Response> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            fix: None,
            violations: Vec::new(),
            retry_after: None,
            credits_remaining: None,
            attempts_left: None,
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// 422 listing every violation; `example` is a working request for the same operation.
    pub fn validation(v: Violations, example: &str) -> Self {
        let mut e = ApiError::new(ErrorCode::ValidationError, v.summary())
            .with_fix(format!("a valid request: {example}"));
        e.violations = v.0;
        e
    }

    pub fn internal() -> Self {
        ApiError::new(
            ErrorCode::Internal,
            "unexpected error on the service side; it has been logged",
        )
    }

    pub fn not_configured(what: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::NotConfigured, what)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    fn body(&self, ctx: Option<&RequestContext>) -> Value {
        let mut error = Map::new();
        error.insert("type".into(), json!(self.code.as_str()));
        error.insert("message".into(), json!(self.message));
        error.insert("status".into(), json!(self.code.status()));
        error.insert(
            "docs_url".into(),
            json!(format!("{}#{}", crate::api::DOCS_URL, self.code.as_str())),
        );
        if let Some(fix) = &self.fix {
            error.insert("fix".into(), json!(fix));
        }
        if !self.violations.is_empty() {
            error.insert("violations".into(), json!(self.violations));
        }
        if let Some(n) = self.attempts_left {
            error.insert("attempts_left".into(), json!(n));
        }
        let mut body = Map::new();
        body.insert("success".into(), json!(false));
        body.insert(
            "endpoint".into(),
            json!(ctx.map(|c| c.endpoint.as_str()).unwrap_or("")),
        );
        body.insert("error".into(), Value::Object(error));
        body.insert("credits_used".into(), json!(0));
        if let Some(n) = self.credits_remaining {
            body.insert("credits_remaining".into(), json!(n));
        }
        if let Some(n) = self.attempts_left {
            body.insert("attempts_left".into(), json!(n));
        }
        body.insert(
            "request_id".into(),
            json!(ctx.map(|c| c.request_id.as_str()).unwrap_or("req-unknown")),
        );
        Value::Object(body)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

/// How an answered error is logged: client mistakes (4xx) not at all, expected states of the
/// deployment as INFO (a source without a credential) or WARN (the payment provider is down), and
/// every other 5xx as ERROR.
pub fn log_level(code: ErrorCode) -> Option<Level> {
    match code {
        ErrorCode::NotConfigured => Some(Level::INFO),
        ErrorCode::CheckoutUnavailable => Some(Level::WARN),
        _ if code.status() >= 500 => Some(Level::ERROR),
        _ => None,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let ctx = crate::http::current();
        let status =
            StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        match log_level(self.code) {
            Some(Level::ERROR) => {
                tracing::error!(code = self.code.as_str(), message = %self.message, "request failed")
            }
            Some(Level::WARN) => {
                tracing::warn!(code = self.code.as_str(), message = %self.message, "request refused")
            }
            Some(_) => {
                tracing::info!(code = self.code.as_str(), message = %self.message, "request refused")
            }
            None => {}
        }
        let mut res = (status, axum::Json(self.body(ctx.as_ref()))).into_response();
        if let Some(secs) = self.retry_after {
            res.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_states_are_not_logged_as_errors() {
        assert_eq!(log_level(ErrorCode::NotConfigured), Some(Level::INFO));
        assert_eq!(log_level(ErrorCode::CheckoutUnavailable), Some(Level::WARN));
        assert_eq!(log_level(ErrorCode::Internal), Some(Level::ERROR));
        assert_eq!(log_level(ErrorCode::ValidationError), None);
        for code in ErrorCode::ALL {
            let logged = log_level(*code).is_some();
            assert_eq!(logged, code.status() >= 500, "{code:?}");
        }
    }
}
