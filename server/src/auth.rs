//! Who is calling: the credential schemes of the catalogue's `auth` field.

use axum::http::HeaderMap;

use crate::AppState;
use crate::error::{ApiError, ApiResult};

/// The `auth` of a catalogue operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    None,
    ApiKey,
    Session,
    ApiKeyOrSession,
    OwnerKey,
}

/// The authenticated caller handed to an operation.
#[derive(Debug, Clone)]
pub enum Caller {
    Anonymous,
}

pub async fn authenticate(
    _state: &AppState,
    _headers: &HeaderMap,
    scheme: Scheme,
) -> ApiResult<Caller> {
    match scheme {
        Scheme::None => Ok(Caller::Anonymous),
        _ => Err(ApiError::not_configured(
            "accounts are not configured on this deployment",
        )),
    }
}
