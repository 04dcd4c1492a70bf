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

/// A credential header as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// No such header, or an empty one.
    Absent,
    /// Bytes no credential is made of (not visible ASCII): treated like an unknown credential.
    Unreadable,
    Given(String),
}

/// The one `name` header of a request; two or more are refused rather than one picked silently.
pub fn credential(headers: &HeaderMap, name: &str) -> ApiResult<Credential> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(Credential::Absent);
    };
    if values.next().is_some() {
        return Err(ApiError::bad_request(format!(
            "the request has more than one {name} header; send exactly one"
        )));
    }
    Ok(match value.to_str().map(str::trim) {
        Ok("") => Credential::Absent,
        Ok(v) => Credential::Given(v.to_string()),
        Err(_) => Credential::Unreadable,
    })
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, message)
}

async fn by_key(state: &AppState, headers: &HeaderMap) -> ApiResult<Caller> {
    let unknown = || unauthorized("the API key is unknown, rotated away or revoked");
    let raw = match credential(headers, "x-api-key")? {
        Credential::Absent => {
            return Err(unauthorized(
                "this operation needs an API key in the x-api-key header",
            ));
        }
        Credential::Unreadable => return Err(unknown()),
        Credential::Given(raw) => raw,
    };
    let Some(key) = state.accounts.key(&raw).await? else {
        return Err(unknown());
    };
    if let Err(secs) = state.accounts.limits.check_rate(&key.id) {
        return Err(crate::platform::rate_limited(secs));
    }
    Ok(Caller::Key(key))
}

async fn by_session(state: &AppState, headers: &HeaderMap) -> ApiResult<Caller> {
    let unknown = || unauthorized("the session is unknown, expired or signed out");
    let raw = match credential(headers, "x-session")? {
        Credential::Absent => {
            let why = if credential(headers, "x-api-key")? != Credential::Absent {
                "this operation needs a browser session (x-session); it never accepts x-api-key"
            } else {
                "this operation needs a browser session in the x-session header"
            };
            return Err(unauthorized(why).with_fix(
                "sign in: POST /v1/auth/request-code, POST /v1/auth/verify, then POST /v1/auth/session with the link token",
            ));
        }
        Credential::Unreadable => return Err(unknown()),
        Credential::Given(raw) => raw,
    };
    match state.accounts.session(&raw).await? {
        Some(s) => Ok(Caller::Session(s)),
        None => Err(unknown()),
    }
}

/// The id the operator's requests are rate-limited under (no key id has a colon).
const OWNER_LIMIT_ID: &str = "operator:owner-key";

/// The operator (`x-owner-key`). The operator's own requests count against the operator's rate;
/// a wrong key counts against the rate of the client network that sent it, so the key cannot be
/// guessed fast, and a stranger's guesses cannot use up the operator's rate.
fn by_owner_key(state: &AppState, headers: &HeaderMap) -> ApiResult<Caller> {
    let refused =
        || unauthorized("this operation needs the operator's key in the x-owner-key header");
    let got = match credential(headers, "x-owner-key")? {
        Credential::Absent => return Err(refused()),
        Credential::Unreadable => None,
        Credential::Given(raw) => Some(raw),
    };
    let expected = state.config.owner_key.as_deref().filter(|k| !k.is_empty());
    let right = match (expected, &got) {
        (Some(want), Some(got)) => crate::accounts::secrets::same_hash(
            &crate::accounts::secrets::token_hash(want),
            &crate::accounts::secrets::token_hash(got),
        ),
        _ => false,
    };
    let bucket = if right {
        OWNER_LIMIT_ID.to_string()
    } else {
        let client = crate::http::current().map(|c| c.client).unwrap_or_default();
        format!(
            "operator-guess:{}",
            crate::accounts::caps::client_network(&client)
        )
    };
    if let Err(secs) = state.accounts.limits.check_rate(&bucket) {
        return Err(crate::platform::rate_limited(secs));
    }
    if right {
        Ok(Caller::Owner)
    } else {
        Err(refused())
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
            if credential(headers, "x-session")? != Credential::Absent {
                by_session(state, headers).await
            } else {
                by_key(state, headers).await
            }
        }
        Scheme::OwnerKey => by_owner_key(state, headers),
    }
}
