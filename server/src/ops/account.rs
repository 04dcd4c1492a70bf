//! Account reads with an API key: free, never showing a key.

use axum::Json;
use axum::response::IntoResponse;
use serde_json::json;

use crate::AppState;
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};

pub async fn me(state: AppState, caller: Caller, _: MeInput) -> ApiResult {
    let account = caller.account_id().ok_or_else(ApiError::internal)?;
    // Read your own writes: the call log and holds are written in batches.
    state.accounts.ledger.flush(account).await;
    Ok(Json(state.accounts.me(account).await?).into_response())
}

pub async fn credits_balance(state: AppState, caller: Caller, _: CreditsBalanceInput) -> ApiResult {
    let account = caller.account_id().ok_or_else(ApiError::internal)?;
    state.accounts.ledger.flush(account).await;
    let balance = state.accounts.balance(account).await?;
    Ok(Json(json!({ "ok": true, "balance": balance })).into_response())
}
