//! API keys: listed, created, rotated and revoked with a browser session only.

use axum::Json;
use axum::response::IntoResponse;
use serde_json::json;

use crate::AppState;
use crate::accounts::{SessionInfo, SessionKind};
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};

fn session(caller: Caller) -> ApiResult<SessionInfo> {
    match caller {
        Caller::Session(s) => Ok(s),
        _ => Err(ApiError::internal()),
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
    Ok(Json(state.accounts.list_keys(&s.account_id).await?).into_response())
}

pub async fn keys_create(state: AppState, caller: Caller, input: KeysCreateInput) -> ApiResult {
    let s = otp_session(caller)?;
    let body = state
        .accounts
        .create_key(&s.account_id, input.name.as_deref())
        .await?;
    Ok(Json(body).into_response())
}

pub async fn keys_revoke(state: AppState, caller: Caller, input: KeysRevokeInput) -> ApiResult {
    let s = otp_session(caller)?;
    state
        .accounts
        .revoke_key(&s.account_id, input.kid.as_deref().unwrap_or(""))
        .await?;
    Ok(
        Json(json!({ "ok": true, "id": input.kid.as_deref().unwrap_or(""), "revoked": true }))
            .into_response(),
    )
}

pub async fn keys_rotate(state: AppState, caller: Caller, input: KeysRotateInput) -> ApiResult {
    let s = otp_session(caller)?;
    Ok(Json(
        state
            .accounts
            .rotate_key(&s.account_id, input.kid.as_deref().unwrap_or(""))
            .await?,
    )
    .into_response())
}
