//! Who is calling: the credential schemes of the catalogue's `auth` field (spec section 5).

use axum::http::HeaderMap;

use crate::AppState;
use crate::accounts::{KeyInfo, SessionInfo};
use crate::error::{ApiError, ApiResult, ErrorCode};

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
    /// An API key (`x-api-key`).
    Key(KeyInfo),
    /// A browser session (`x-session`).
    Session(SessionInfo),
    /// The operator (`x-owner-key`).
    Owner,
}

impl Caller {
    /// The account behind a key or session.
    pub fn account_id(&self) -> Option<&str> {
        match self {
            Caller::Key(k) => Some(&k.account_id),
            Caller::Session(s) => Some(&s.account_id),
            Caller::Anonymous | Caller::Owner => None,
        }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, message)
}

async fn by_key(state: &AppState, headers: &HeaderMap) -> ApiResult<Caller> {
    let Some(raw) = header(headers, "x-api-key") else {
        return Err(unauthorized(
            "this operation needs an API key in the x-api-key header",
        ));
    };
    let Some(key) = state.accounts.key(raw).await? else {
        return Err(unauthorized(
            "the API key is unknown, rotated away or revoked",
        ));
    };
    if let Err(secs) = state.accounts.limits.check_rate(&key.id) {
        return Err(crate::platform::rate_limited(secs));
    }
    Ok(Caller::Key(key))
}

async fn by_session(state: &AppState, headers: &HeaderMap) -> ApiResult<Caller> {
    let Some(raw) = header(headers, "x-session") else {
        let why = if header(headers, "x-api-key").is_some() {
            "this operation needs a browser session (x-session); it never accepts x-api-key"
        } else {
            "this operation needs a browser session in the x-session header"
        };
        return Err(unauthorized(why).with_fix(
            "sign in: POST /v1/auth/request-code, POST /v1/auth/verify, then POST /v1/auth/session with the link token",
        ));
    };
    match state.accounts.session(raw).await? {
        Some(s) => Ok(Caller::Session(s)),
        None => Err(unauthorized(
            "the session is unknown, expired or signed out",
        )),
    }
}

pub async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    scheme: Scheme,
) -> ApiResult<Caller> {
    match scheme {
        Scheme::None => Ok(Caller::Anonymous),
        Scheme::ApiKey => by_key(state, headers).await,
        Scheme::Session => by_session(state, headers).await,
        Scheme::ApiKeyOrSession => {
            if header(headers, "x-session").is_some() {
                by_session(state, headers).await
            } else {
                by_key(state, headers).await
            }
        }
        Scheme::OwnerKey => {
            let expected = state.config.owner_key.as_deref().filter(|k| !k.is_empty());
            match (expected, header(headers, "x-owner-key")) {
                (Some(want), Some(got))
                    if crate::accounts::secrets::same_hash(
                        &crate::accounts::secrets::token_hash(want),
                        &crate::accounts::secrets::token_hash(got),
                    ) =>
                {
                    Ok(Caller::Owner)
                }
                _ => Err(unauthorized(
                    "this operation needs the operator's key in the x-owner-key header",
                )),
            }
        }
    }
}
