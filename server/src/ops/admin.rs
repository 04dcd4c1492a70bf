//! Operator routes, behind the owner key of the configuration.

use axum::Json;
use axum::response::IntoResponse;
use serde::Serialize;

use super::keys::KeyBody;
use crate::AppState;
use crate::accounts::{AdminView, normalize_email, secrets};
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorCode};

/// An operator's view of an account (also printed by `socialsearch admin account`).
#[derive(Serialize)]
pub struct AccountBody {
    ok: bool,
    email: String,
    account_id: String,
    balance: i64,
    keys: Vec<KeyBody>,
}

impl From<AdminView> for AccountBody {
    fn from(v: AdminView) -> Self {
        AccountBody {
            ok: true,
            email: v.email,
            account_id: v.account_id,
            balance: v.balance,
            keys: v.keys.into_iter().map(KeyBody::from).collect(),
        }
    }
}

/// Credits granted by an operator (also printed by `socialsearch admin grant`).
#[derive(Serialize)]
pub struct GrantBody {
    pub ok: bool,
    pub email: String,
    pub granted: i64,
    pub balance: i64,
}

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
    let reference = secrets::new_id("admin:");
    let balance = a.grant(&id, credits, "grant", &reference).await?;
    Ok(Json(GrantBody {
        ok: true,
        email: normalize_email(&input.email),
        granted: credits,
        balance,
    })
    .into_response())
}

pub async fn admin_account(state: AppState, _: Caller, input: AdminAccountInput) -> ApiResult {
    let view = state
        .accounts
        .admin_view(&input.email)
        .await?
        .ok_or_else(|| no_account(&input.email))?;
    Ok(Json(AccountBody::from(view)).into_response())
}
