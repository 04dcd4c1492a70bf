//! Sign-in: e-mailed codes, one-time dashboard links, sessions.

use axum::Json;
use axum::response::IntoResponse;
use serde_json::json;

use crate::AppState;
use crate::accounts::iso;
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};

pub async fn auth_request_code(
    state: AppState,
    _: Caller,
    input: AuthRequestCodeInput,
) -> ApiResult {
    let client = crate::http::current()
        .map(|c| c.client)
        .unwrap_or_else(|| "unknown".into());
    state.accounts.request_code(&input.email, &client).await?;
    let ttl = state.accounts.signin.code_ttl_seconds;
    Ok(Json(json!({
        "ok": true,
        "message": "if the address can receive e-mail, a 6-digit sign-in code is on its way to it",
        "expires_in_seconds": ttl,
    }))
    .into_response())
}

pub async fn auth_verify(state: AppState, _: Caller, input: AuthVerifyInput) -> ApiResult {
    let token = state.accounts.verify(&input.email, &input.otp).await?;
    Ok(Json(json!({
        "ok": true,
        "dashboard_url": state.accounts.dashboard_url(&token),
        "expires_in_seconds": state.accounts.signin.link_ttl_seconds,
    }))
    .into_response())
}

pub async fn auth_browser_link(
    state: AppState,
    caller: Caller,
    _: AuthBrowserLinkInput,
) -> ApiResult {
    let Caller::Key(key) = caller else {
        return Err(ApiError::internal());
    };
    let token = state
        .accounts
        .browser_link(&key.account_id, &key.id)
        .await?;
    Ok(Json(json!({
        "ok": true,
        "dashboard_url": state.accounts.dashboard_url(&token),
        "expires_in_seconds": state.accounts.signin.link_ttl_seconds,
    }))
    .into_response())
}

pub async fn auth_session(state: AppState, _: Caller, input: AuthSessionInput) -> ApiResult {
    let (session, kind, expires_at) = state.accounts.open_session(&input.link).await?;
    Ok(Json(json!({
        "ok": true,
        "session": session,
        "kind": kind.as_str(),
        "expires_at": iso(expires_at),
    }))
    .into_response())
}

pub async fn auth_signout(state: AppState, caller: Caller, _: AuthSignoutInput) -> ApiResult {
    let Caller::Session(session) = caller else {
        return Err(ApiError::internal());
    };
    state.accounts.sign_out(&session.token_hash).await?;
    Ok(Json(json!({ "ok": true })).into_response())
}
