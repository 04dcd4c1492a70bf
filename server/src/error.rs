//! The one error type of the API and its one mapping to the error envelope (spec section 2.3).

use adapters::request::{Violation, Violations};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tracing::Level;

use crate::accounts::{AccountsError, CapReached};
pub use crate::api::ErrorCode;
use crate::http::RequestContext;

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// A step for the client (sent) or a fault's cause (logged only): one slot, since a fault has
    /// no step to offer, which keeps every `Result<_, ApiError>` small.
    note: Option<String>,
    /// Whether `note` is a fault's cause, logged only and never sent (else it is sent as `fix`).
    note_is_cause: bool,
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
            note: None,
            note_is_cause: false,
            violations: Vec::new(),
            retry_after: None,
            credits_remaining: None,
            attempts_left: None,
        }
    }

    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.note = Some(fix.into());
        self.note_is_cause = false;
        self
    }

    /// 422 listing every violation; `example` is a working request for the same operation.
    pub fn validation(v: Violations, example: &str) -> Self {
        let mut e = ApiError::new(ErrorCode::ValidationError, v.summary())
            .with_fix(format!("a valid request: {example}"));
        e.violations = v.0;
        e
    }

    /// 500 INTERNAL with no cause to log (the caller has logged it, e.g. a caught panic).
    pub fn internal() -> Self {
        ApiError::new(
            ErrorCode::Internal,
            "unexpected error on the service side; it has been logged",
        )
    }

    /// 500 INTERNAL for a fault: `cause` is logged once, with the answer, and never sent.
    pub fn fault(cause: impl std::fmt::Display) -> Self {
        let mut e = ApiError::internal();
        e.note = Some(cause.to_string());
        e.note_is_cause = true;
        e
    }

    /// The step offered to the client, if any.
    pub fn fix(&self) -> Option<&str> {
        self.note.as_deref().filter(|_| !self.note_is_cause)
    }

    /// The internal cause of a fault, for the log.
    pub fn cause(&self) -> Option<&str> {
        self.note.as_deref().filter(|_| self.note_is_cause)
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
        if let Some(fix) = self.fix() {
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

/// The one mapping of the account functions' errors to the spec's codes, messages and fixes.
impl From<AccountsError> for ApiError {
    fn from(e: AccountsError) -> Self {
        let new_code = "POST /v1/auth/request-code to get a new code";
        match e {
            AccountsError::KeyLimit { max } => ApiError::new(
                ErrorCode::KeyLimit,
                format!("the account already holds {max} keys, the maximum"),
            )
            .with_fix("revoke a key you no longer use (DELETE /v1/keys/{kid}), then create one"),
            AccountsError::NoSuchKey { key_id } => ApiError::new(
                ErrorCode::NotFound,
                format!("no active key {key_id} on this account"),
            )
            .with_fix("GET /v1/keys lists the account's keys"),
            AccountsError::InvalidCode { attempts_left } => {
                let mut e = ApiError::new(
                    ErrorCode::InvalidCode,
                    if attempts_left == 0 {
                        "wrong sign-in code; no guesses are left for this code, request a new one"
                            .to_string()
                    } else {
                        format!("wrong sign-in code; {attempts_left} guesses left for this code")
                    },
                );
                e.attempts_left = Some(attempts_left);
                e
            }
            AccountsError::CodeExpired { lifetime_minutes } => ApiError::new(
                ErrorCode::CodeExpired,
                format!(
                    "the sign-in code is older than its lifetime of {lifetime_minutes} minutes"
                ),
            )
            .with_fix(new_code),
            AccountsError::TooManyAttempts => ApiError::new(
                ErrorCode::TooManyAttempts,
                "too many wrong guesses for this code; request a new code after the cooldown",
            )
            .with_fix(new_code),
            AccountsError::NoPendingCode => ApiError::new(
                ErrorCode::NoPendingCode,
                "no sign-in code is pending for this address (none was requested, or it was used)",
            )
            .with_fix("POST /v1/auth/request-code with the address to get a code"),
            AccountsError::Cooldown {
                retry_after,
                cooldown_seconds,
            } => {
                let mut e = ApiError::new(
                    ErrorCode::RateLimited,
                    format!(
                        "a code was sent to this address less than {cooldown_seconds} seconds ago; wait before asking again"
                    ),
                );
                e.retry_after = Some(retry_after);
                e
            }
            AccountsError::DailyCap(CapReached::SigninCodes) => ApiError::new(
                ErrorCode::RateLimited,
                "the daily cap on sign-in codes is reached; it resets at 00:00 UTC",
            ),
            AccountsError::DailyCap(CapReached::DashboardLinks) => ApiError::new(
                ErrorCode::RateLimited,
                "the daily cap on dashboard links is reached; it resets at 00:00 UTC",
            ),
            AccountsError::EmailNotAccepted => ApiError::new(
                ErrorCode::EmailNotAccepted,
                "addresses of disposable e-mail domains are not accepted; use a permanent address",
            ),
            AccountsError::UnknownLink => ApiError::new(
                ErrorCode::Unauthorized,
                "the dashboard link is unknown, already used or expired",
            ),
            fault @ (AccountsError::Mail(_) | AccountsError::Db(_)) => ApiError::fault(fault),
        }
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
            Some(Level::ERROR) => tracing::error!(
                code = self.code.as_str(),
                message = %self.message,
                cause = self.cause().unwrap_or(""),
                "request failed"
            ),
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

#[cfg(test)]
mod mapping_tests {
    use super::*;

    #[test]
    fn account_errors_map_to_the_spec_codes() {
        let cases = [
            (AccountsError::KeyLimit { max: 10 }, ErrorCode::KeyLimit),
            (
                AccountsError::NoSuchKey {
                    key_id: "key_x".into(),
                },
                ErrorCode::NotFound,
            ),
            (
                AccountsError::InvalidCode { attempts_left: 2 },
                ErrorCode::InvalidCode,
            ),
            (
                AccountsError::CodeExpired {
                    lifetime_minutes: 10,
                },
                ErrorCode::CodeExpired,
            ),
            (AccountsError::TooManyAttempts, ErrorCode::TooManyAttempts),
            (AccountsError::NoPendingCode, ErrorCode::NoPendingCode),
            (
                AccountsError::Cooldown {
                    retry_after: 42,
                    cooldown_seconds: 60,
                },
                ErrorCode::RateLimited,
            ),
            (
                AccountsError::DailyCap(CapReached::DashboardLinks),
                ErrorCode::RateLimited,
            ),
            (AccountsError::EmailNotAccepted, ErrorCode::EmailNotAccepted),
            (AccountsError::UnknownLink, ErrorCode::Unauthorized),
            (
                AccountsError::Db(sqlx::Error::PoolClosed),
                ErrorCode::Internal,
            ),
        ];
        for (domain, code) in cases {
            assert_eq!(ApiError::from(domain).code, code);
        }
        let e = ApiError::from(AccountsError::InvalidCode { attempts_left: 2 });
        assert_eq!(e.attempts_left, Some(2));
        assert!(e.message.contains("2 guesses left"), "{}", e.message);
        let e = ApiError::from(AccountsError::Cooldown {
            retry_after: 42,
            cooldown_seconds: 60,
        });
        assert_eq!(e.retry_after, Some(42));
    }

    #[test]
    fn a_fault_keeps_its_cause_for_the_log_only() {
        let e = ApiError::from(AccountsError::Db(sqlx::Error::Protocol(
            "secret-detail-1234".into(),
        )));
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(e.cause().unwrap_or("").contains("secret-detail-1234"));
        let body = e.body(None).to_string();
        assert!(!body.contains("secret-detail-1234"), "{body}");
        assert!(body.contains("INTERNAL"), "{body}");
        assert_eq!(e.fix(), None);
        let refused = ApiError::bad_request("x").with_fix("do y");
        assert_eq!((refused.fix(), refused.cause()), (Some("do y"), None));
    }
}
