//! The path of a platform call: parameters through the generated parser, then the sources, then
//! the success envelope (spec section 2.1).

use adapters::api::{EndpointId, Request};
use adapters::item::Page;
use adapters::request::{Location, Violation, Violations};
use adapters::sources::CallError;
use axum::Json;
use axum::extract::Request as HttpRequest;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::AppState;
use crate::error::{ApiError, ErrorCode};

pub async fn serve(_state: AppState, endpoint: EndpointId, req: HttpRequest) -> Response {
    let meta = endpoint.meta();
    match endpoint.parse(req.uri().query().unwrap_or("")) {
        Err(violations) => ApiError::validation(violations, meta.example).into_response(),
        // Platform calls need an API key; until keys exist on this deployment, none can be served.
        Ok(_request) => ApiError::not_configured("API keys are not configured on this deployment")
            .into_response(),
    }
}

/// The sources part of a call, with failures mapped to the API's error codes.
pub async fn fetch(state: &AppState, request: &Request) -> Result<Page, ApiError> {
    state.sources.call(request).await.map_err(|e| match e {
        CallError::NotConfigured(why) => ApiError::not_configured(why),
        CallError::AllSourcesFailed(why) => ApiError::new(
            ErrorCode::AllSourcesFailed,
            format!("every source for this platform failed; nothing was charged ({why})"),
        )
        .with_fix("retry in a minute"),
        CallError::Upstream(why) => ApiError::new(ErrorCode::UpstreamError, why),
        CallError::BadCursor => {
            let meta = request.endpoint().meta();
            ApiError::validation(
                Violations(vec![Violation {
                    parameter: "cursor".into(),
                    location: Location::Query,
                    rule: "format",
                    message: "`cursor` is not a cursor this service issued; pass `data.next_cursor` of the previous page unchanged".into(),
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
                    rule: "refused",
                }]),
                meta.example,
            )
        }
    })
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
        let state = AppState::new(config).expect("state");
        let request = EndpointId::FediverseTag
            .parse("query=rust&instance=evil.test")
            .expect("valid by the grammar");
        let err = fetch(&state, &request).await.expect_err("refused");
        assert_eq!(err.code, ErrorCode::ValidationError);
        assert_eq!(err.violations[0].parameter, "instance");
    }
}
