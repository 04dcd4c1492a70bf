//! The path of a platform call: parameters through the generated parser, then the sources.

use adapters::api::EndpointId;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;

pub async fn serve(_state: AppState, endpoint: EndpointId, req: Request) -> Response {
    let meta = endpoint.meta();
    match endpoint.parse(req.uri().query().unwrap_or("")) {
        Err(violations) => ApiError::validation(violations, meta.example).into_response(),
        Ok(_request) => ApiError::not_configured(format!(
            "no source for the {} platform is configured on this deployment",
            meta.platform
        ))
        .into_response(),
    }
}
