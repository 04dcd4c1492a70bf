//! API keys: listed, created, rotated and revoked with a browser session only.

use axum::Json;
use axum::response::IntoResponse;
use serde::Serialize;

use super::iso;
use crate::AppState;
use crate::accounts::{KeyView, NewKey, SessionInfo, SessionKind};
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};

/// A key as listed (never its plaintext).
#[derive(Serialize)]
pub(crate) struct KeyBody {
    id: String,
    name: Option<String>,
    prefix: String,
    created_at: String,
    last_used_at: Option<String>,
}

impl From<KeyView> for KeyBody {
    fn from(k: KeyView) -> Self {
        KeyBody {
            id: k.id,
            name: k.name,
            prefix: k.prefix,
            created_at: iso(k.created_at),
            last_used_at: k.last_used_at.map(iso),
        }
    }
}

#[derive(Serialize)]
struct KeysBody {
    ok: bool,
    keys: Vec<KeyBody>,
}

/// A new key: the plaintext, shown this once.
#[derive(Serialize)]
struct NewKeyBody {
    ok: bool,
    key: String,
    id: String,
    name: Option<String>,
    prefix: String,
    created_at: String,
}

impl From<NewKey> for NewKeyBody {
    fn from(k: NewKey) -> Self {
        NewKeyBody {
            ok: true,
            key: k.key,
            id: k.view.id,
            name: k.view.name,
            prefix: k.view.prefix,
            created_at: iso(k.view.created_at),
        }
    }
}

#[derive(Serialize)]
struct RevokedBody<'a> {
    ok: bool,
    id: &'a str,
    revoked: bool,
}

fn session(caller: Caller) -> ApiResult<SessionInfo> {
    match caller {
        Caller::Session(s) => Ok(s),
        _ => Err(ApiError::fault("a key operation ran without a session")),
    }
}

/// Creating, rotating and revoking keys needs a session signed in with an e-mailed code.
fn otp_session(caller: Caller) -> ApiResult<SessionInfo> {
    let s = session(caller)?;
    if s.kind != SessionKind::Otp {
        return Err(ApiError::new(
            ErrorCode::OtpSigninRequired,
            "a session opened by browser-link cannot create, rotate or revoke keys",
        )
        .with_fix(
            "sign in with an e-mailed code: POST /v1/auth/request-code, then POST /v1/auth/verify",
        ));
    }
    Ok(s)
}

pub async fn keys_list(state: AppState, caller: Caller, _: KeysListInput) -> ApiResult {
    let s = session(caller)?;
    let keys = state.accounts.list_keys(&s.account_id).await?;
    Ok(Json(KeysBody {
        ok: true,
        keys: keys.into_iter().map(KeyBody::from).collect(),
    })
    .into_response())
}

pub async fn keys_create(state: AppState, caller: Caller, input: KeysCreateInput) -> ApiResult {
    let s = otp_session(caller)?;
    let key = state
        .accounts
        .create_key(&s.account_id, input.name.as_deref())
        .await?;
    Ok(Json(NewKeyBody::from(key)).into_response())
}

pub async fn keys_revoke(state: AppState, caller: Caller, input: KeysRevokeInput) -> ApiResult {
    let s = otp_session(caller)?;
    state.accounts.revoke_key(&s.account_id, &input.kid).await?;
    Ok(Json(RevokedBody {
        ok: true,
        id: &input.kid,
        revoked: true,
    })
    .into_response())
}

pub async fn keys_rotate(state: AppState, caller: Caller, input: KeysRotateInput) -> ApiResult {
    let s = otp_session(caller)?;
    let key = state.accounts.rotate_key(&s.account_id, &input.kid).await?;
    Ok(Json(NewKeyBody::from(key)).into_response())
}
