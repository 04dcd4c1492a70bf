//! Minimal stand-ins for the server modules the server emitter's output names by path. Each does
//! only what a test needs to see the generated code reach it: the platform stand-in parses with
//! the generated parser, the operation stand-in reads the body and hands the generated `extract`
//! its input. Which calls arrived is recorded in [`AppState`] for the tests to read.

use std::sync::{Arc, Mutex};

/// The router's state; records each call a stand-in received, in order.
#[derive(Clone, Default)]
pub struct AppState {
    pub calls: Arc<Mutex<Vec<String>>>,
}

impl AppState {
    fn record(&self, call: String) {
        self.calls.lock().expect("not poisoned").push(call);
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().expect("not poisoned").clone()
    }
}

/// Stands in for `server::auth`: the schemes the router hands to `http::operation`.
pub mod auth {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Scheme {
        None,
        ApiKey,
        Session,
        ApiKeyOrSession,
        OwnerKey,
    }

    /// The caller handed to an operation (no one authenticates here).
    #[derive(Debug, Clone)]
    pub struct Caller;
}

/// Stands in for `server::error`: the one constructor the generated router calls.
pub mod error {
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use serde_json::json;

    use crate::request::Violations;

    pub type ApiResult<T = Response> = Result<T, ApiError>;

    #[derive(Debug)]
    pub struct ApiError {
        pub violations: Violations,
        pub example: String,
    }

    impl ApiError {
        pub fn validation(v: Violations, example: &str) -> Self {
            ApiError {
                violations: v,
                example: example.to_string(),
            }
        }
    }

    impl IntoResponse for ApiError {
        fn into_response(self) -> Response {
            let violations: Vec<_> = self
                .violations
                .0
                .iter()
                .map(|v| json!({"parameter": v.parameter, "rule": v.rule.as_str()}))
                .collect();
            let body = json!({"violations": violations, "fix": self.example});
            (StatusCode::UNPROCESSABLE_ENTITY, axum::Json(body)).into_response()
        }
    }
}

/// Stands in for `server::http`: the raw input of an operation and the function running one.
pub mod http {
    use std::future::Future;

    use axum::extract::Request;
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use serde_json::Value;

    use crate::AppState;
    use crate::auth::{Caller, Scheme};
    use crate::error::ApiResult;

    pub struct RawInput {
        pub path_params: Vec<(String, String)>,
        pub query: String,
        pub body: Option<Value>,
    }

    /// Reads the query and (when the operation takes one) the JSON body, then runs `f`.
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
        state.record(format!("operation {scheme:?} body={has_body}"));
        let query = req.uri().query().unwrap_or("").to_string();
        let body = if has_body {
            let Ok(bytes) = axum::body::to_bytes(req.into_body(), 1 << 16).await else {
                return StatusCode::PAYLOAD_TOO_LARGE.into_response();
            };
            match serde_json::from_slice(&bytes) {
                Ok(v) => Some(v),
                Err(_) => return StatusCode::BAD_REQUEST.into_response(),
            }
        } else {
            None
        };
        let raw = RawInput {
            path_params: Vec::new(),
            query,
            body,
        };
        match f(state, Caller, raw).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        }
    }
}

/// Stands in for `server::platform`: parses the call with the generated parser and answers with
/// what it parsed, where the server would run the endpoint's chain of sources.
pub mod platform {
    use axum::extract::Request;
    use axum::response::{IntoResponse, Response};
    use serde_json::json;

    use crate::AppState;
    use crate::api::EndpointId;
    use crate::error::ApiError;

    pub async fn serve(state: AppState, endpoint: EndpointId, req: Request) -> Response {
        let meta = endpoint.meta();
        state.record(format!("platform {}", meta.path));
        match endpoint.parse(req.uri().query().unwrap_or("")) {
            Ok(request) => axum::Json(json!({
                "endpoint": request.endpoint().meta().path,
                "credits": meta.credits,
                "instance": request.instance(),
            }))
            .into_response(),
            Err(v) => ApiError::validation(v, meta.example).into_response(),
        }
    }
}

/// Stands in for `server::ops`: one function per catalogue operation, named by its `handler`.
pub mod ops {
    use axum::response::{IntoResponse, Response};
    use serde_json::json;

    use crate::AppState;
    use crate::auth::Caller;
    use crate::error::ApiResult;
    use crate::server_api::inputs::PingInput;

    pub async fn ping(state: AppState, _: Caller, input: PingInput) -> ApiResult<Response> {
        state.record(format!("ping {}", input.word));
        Ok(axum::Json(json!({"ok": true, "word": input.word})).into_response())
    }
}
