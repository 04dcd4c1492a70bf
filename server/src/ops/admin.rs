//! Operator routes, behind the owner key of the configuration.

use axum::Json;
use axum::response::IntoResponse;
use serde_json::json;

use crate::AppState;
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};

fn no_account(email: &str) -> ApiError {
    ApiError::new(ErrorCode::NotFound, format!("no account for {email}"))
}

pub async fn admin_grant(state: AppState, _: Caller, input: AdminGrantInput) -> ApiResult {
    let a = &state.accounts;
    let (id, _) = a
        .account_by_email(&input.email)
        .await?
        .ok_or_else(|| no_account(&input.email))?;
    let credits = input.credits as i64;
    let reference = crate::accounts::secrets::new_id("admin:");
    let balance = a.grant(&id, credits, "grant", &reference).await?;
    Ok(Json(json!({ "ok": true, "email": crate::accounts::normalize_email(&input.email), "granted": credits, "balance": balance })).into_response())
}

pub async fn admin_account(state: AppState, _: Caller, input: AdminAccountInput) -> ApiResult {
    let view = state
        .accounts
        .admin_view(&input.email)
        .await?
        .ok_or_else(|| no_account(&input.email))?;
    Ok(Json(view).into_response())
}
