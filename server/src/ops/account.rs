//! Account reads with an API key: free, never showing a key.

use axum::Json;
use axum::response::IntoResponse;
use serde::Serialize;

use super::iso;
use crate::AppState;
use crate::accounts::{CallView, MeView, UsageView};
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};

#[derive(Serialize)]
struct UsageBody {
    endpoint: String,
    calls: i64,
    credits: i64,
    errors: i64,
}

#[derive(Serialize)]
struct CallBody {
    at: String,
    endpoint: String,
    status: i64,
    credits: i64,
    request_id: String,
    key_prefix: String,
}

#[derive(Serialize)]
struct MeBody {
    ok: bool,
    email: String,
    balance: i64,
    usage_7d: Vec<UsageBody>,
    recent_calls: Vec<CallBody>,
}

impl From<MeView> for MeBody {
    fn from(me: MeView) -> Self {
        MeBody {
            ok: true,
            email: me.email,
            balance: me.balance,
            usage_7d: me
                .usage_7d
                .into_iter()
                .map(|u: UsageView| UsageBody {
                    endpoint: u.endpoint,
                    calls: u.calls,
                    credits: u.credits,
                    errors: u.errors,
                })
                .collect(),
            recent_calls: me
                .recent_calls
                .into_iter()
                .map(|c: CallView| CallBody {
                    at: iso(c.at),
                    endpoint: c.endpoint,
                    status: c.status,
                    credits: c.credits,
                    request_id: c.request_id,
                    key_prefix: c.key_prefix,
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct BalanceBody {
    ok: bool,
    balance: i64,
}

fn account_of(caller: &Caller) -> ApiResult<&str> {
    caller
        .account_id()
        .ok_or_else(|| ApiError::fault("an account read ran without a caller's account"))
}

pub async fn me(state: AppState, caller: Caller, _: MeInput) -> ApiResult {
    let account = account_of(&caller)?;
    // Read your own writes: the call log and holds are written in batches.
    state.accounts.ledger.flush(account).await;
    let me = state.accounts.me(account).await?;
    Ok(Json(MeBody::from(me)).into_response())
}

pub async fn credits_balance(state: AppState, caller: Caller, _: CreditsBalanceInput) -> ApiResult {
    let account = account_of(&caller)?;
    state.accounts.ledger.flush(account).await;
    let balance = state.accounts.balance(account).await?;
    Ok(Json(BalanceBody { ok: true, balance }).into_response())
}
