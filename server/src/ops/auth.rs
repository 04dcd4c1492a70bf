//! Sign-in: e-mailed codes, one-time dashboard links, sessions.

use axum::Json;
use axum::response::IntoResponse;
use serde::Serialize;

use super::{OkBody, iso};
use crate::AppState;
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};

#[derive(Serialize)]
struct CodeSentBody {
    ok: bool,
    message: &'static str,
    expires_in_seconds: i64,
}

/// A one-time dashboard link.
#[derive(Serialize)]
struct LinkBody {
    ok: bool,
    dashboard_url: String,
    expires_in_seconds: i64,
}

#[derive(Serialize)]
struct SessionBody {
    ok: bool,
    session: String,
    kind: &'static str,
    expires_at: String,
}

fn link_body(state: &AppState, token: &str) -> LinkBody {
    LinkBody {
        ok: true,
        dashboard_url: state.accounts.dashboard_url(token),
        expires_in_seconds: state.accounts.signin.link_ttl_seconds,
    }
}

pub async fn auth_request_code(
    state: AppState,
    _: Caller,
    input: AuthRequestCodeInput,
) -> ApiResult {
    let client = crate::http::current()
        .map(|c| c.client)
        .unwrap_or_else(|| "unknown".into());
    state.accounts.request_code(&input.email, &client).await?;
    Ok(Json(CodeSentBody {
        ok: true,
        message: "if the address can receive e-mail, a 6-digit sign-in code is on its way to it",
        expires_in_seconds: state.accounts.signin.code_ttl_seconds,
    })
    .into_response())
}

pub async fn auth_verify(state: AppState, _: Caller, input: AuthVerifyInput) -> ApiResult {
    let token = state.accounts.verify(&input.email, &input.otp).await?;
    Ok(Json(link_body(&state, &token)).into_response())
}

pub async fn auth_browser_link(
    state: AppState,
    caller: Caller,
    _: AuthBrowserLinkInput,
) -> ApiResult {
    let Caller::Key(key) = caller else {
        return Err(ApiError::fault("browser-link ran without a key"));
    };
    let token = state
        .accounts
        .browser_link(&key.account_id, &key.id)
        .await?;
    Ok(Json(link_body(&state, &token)).into_response())
}

pub async fn auth_session(state: AppState, _: Caller, input: AuthSessionInput) -> ApiResult {
    let opened = state.accounts.open_session(&input.link).await?;
    Ok(Json(SessionBody {
        ok: true,
        session: opened.token,
        kind: opened.kind.as_str(),
        expires_at: iso(opened.expires_at),
    })
    .into_response())
}

pub async fn auth_signout(state: AppState, caller: Caller, _: AuthSignoutInput) -> ApiResult {
    let Caller::Session(session) = caller else {
        return Err(ApiError::fault("sign-out ran without a session"));
    };
    state.accounts.sign_out(&session.token_hash).await?;
    Ok(Json(OkBody { ok: true }).into_response())
}
