//! Hand-written handlers of the account, billing and status operations. The generated router calls
//! each with its typed input (`crate::api::inputs`) after authentication and validation.

use axum::Json;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::api::inputs::*;
use crate::auth::Caller;
use crate::billing::{CURRENCY, PACKS, Pricing, list_price_per_credit};
use crate::error::{ApiError, ApiResult};

mod account;
pub mod admin;
mod auth;
mod keys;

pub use account::{credits_balance, me};
pub use admin::{admin_account, admin_grant};
pub use auth::{auth_browser_link, auth_request_code, auth_session, auth_signout, auth_verify};
pub use keys::{keys_create, keys_list, keys_revoke, keys_rotate};

/// `{"ok": true}`: a change done, with nothing more to say.
#[derive(serde::Serialize)]
struct OkBody {
    ok: bool,
}

/// ISO-8601 UTC of unix seconds, as every time in a body is written.
pub fn iso(secs: i64) -> String {
    adapters::upstream::dates::from_unix(secs).unwrap_or_default()
}

fn json_document(text: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

pub async fn openapi_json(_: AppState, _: Caller, _: OpenapiJsonInput) -> ApiResult {
    Ok(json_document(crate::api::OPENAPI_JSON))
}

pub async fn openapi_30_json(_: AppState, _: Caller, _: Openapi30JsonInput) -> ApiResult {
    Ok(json_document(crate::api::OPENAPI_30_JSON))
}

#[derive(serde::Serialize)]
struct PlanBody {
    id: &'static str,
    credits: u64,
    price: String,
    price_per_credit: String,
    discount_percent: u64,
}

#[derive(serde::Serialize)]
struct CheckoutExample {
    plan: &'static str,
}

#[derive(serde::Serialize)]
struct CheckoutHowTo {
    method: &'static str,
    path: &'static str,
    body: CheckoutExample,
    instructions: &'static str,
}

#[derive(serde::Serialize)]
struct PlansBody {
    ok: bool,
    currency: &'static str,
    list_price_per_credit: String,
    plans: Vec<PlanBody>,
    checkout: CheckoutHowTo,
}

pub async fn plans(_: AppState, _: Caller, _: PlansInput) -> ApiResult {
    Ok(Json(plans_body()).into_response())
}

fn plans_body() -> PlansBody {
    let plans = PACKS
        .iter()
        .map(|p| PlanBody {
            id: p.id,
            credits: p.credits,
            price: p.price(),
            price_per_credit: p.price_per_credit(),
            discount_percent: p.discount_percent(),
        })
        .collect();
    PlansBody {
        ok: true,
        currency: CURRENCY,
        list_price_per_credit: list_price_per_credit(),
        plans,
        checkout: CheckoutHowTo {
            method: "POST",
            path: "/v1/checkout",
            body: CheckoutExample { plan: PACKS[0].id },
            instructions: "POST /v1/checkout with your API key (x-api-key) or dashboard session and the plan id; \
                open the returned pay_url in a browser to pay. Credits land within seconds of payment: watch \
                credits_remaining or GET /v1/credits/balance. All sales are final; unused credits never expire.",
        },
    }
}

pub async fn status(state: AppState, _: Caller, _: StatusInput) -> ApiResult {
    Ok(Json(state.status()).into_response())
}

/// Billing arrives with its own issue: until then the billing operations answer 503 CHECKOUT_UNAVAILABLE.
fn checkout_unavailable() -> ApiError {
    ApiError::new(
        crate::error::ErrorCode::CheckoutUnavailable,
        "payments are not configured on this deployment",
    )
}

pub async fn checkout(_: AppState, _: Caller, _: CheckoutInput) -> ApiResult {
    Err(checkout_unavailable())
}

pub async fn checkout_confirm(_: AppState, _: Caller, _: CheckoutConfirmInput) -> ApiResult {
    Err(checkout_unavailable())
}

pub async fn order_checkout(_: AppState, _: Caller, _: OrderCheckoutInput) -> ApiResult {
    Err(checkout_unavailable())
}

pub async fn order_get(_: AppState, _: Caller, _: OrderGetInput) -> ApiResult {
    Err(checkout_unavailable())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The typed body is the one the handler built with `json!` before, key for key.
    #[test]
    fn plans_body_is_unchanged() {
        let plans: Vec<_> = PACKS
            .iter()
            .map(|p| {
                json!({
                    "id": p.id, "credits": p.credits, "price": p.price(),
                    "price_per_credit": p.price_per_credit(), "discount_percent": p.discount_percent(),
                })
            })
            .collect();
        let before = json!({
            "ok": true,
            "currency": "USD",
            "list_price_per_credit": "0.004",
            "plans": plans,
            "checkout": {
                "method": "POST",
                "path": "/v1/checkout",
                "body": { "plan": "starter" },
                "instructions": "POST /v1/checkout with your API key (x-api-key) or dashboard session and the plan id; \
                    open the returned pay_url in a browser to pay. Credits land within seconds of payment: watch \
                    credits_remaining or GET /v1/credits/balance. All sales are final; unused credits never expire."
            }
        });
        let after = serde_json::to_value(plans_body()).expect("serialize");
        assert_eq!(after, before);
        assert_eq!(after.to_string(), before.to_string(), "same key order");
    }

    /// Every `enum` in `v` that names a pack, wherever it sits in the document.
    fn plan_enums(v: &serde_json::Value, out: &mut Vec<Vec<String>>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Array(values)) = m.get("enum")
                    && values.iter().any(|x| x == PACKS[0].id)
                {
                    out.push(
                        values
                            .iter()
                            .filter_map(|x| x.as_str().map(str::to_string))
                            .collect(),
                    );
                }
                m.values().for_each(|x| plan_enums(x, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| plan_enums(x, out)),
            _ => {}
        }
    }

    /// The OpenAPI document shows the numbers the server uses: every plan enum is the pack ids the
    /// plans body lists, and the key list states the keys-per-account limit the accounts code
    /// enforces.
    #[test]
    fn openapi_document_agrees_with_the_server() {
        let doc: serde_json::Value =
            serde_json::from_str(crate::api::OPENAPI_JSON).expect("document parses");
        let body = serde_json::to_value(plans_body()).expect("serialize");
        let ids: Vec<String> = body["plans"]
            .as_array()
            .expect("plans")
            .iter()
            .map(|p| p["id"].as_str().expect("id").to_string())
            .collect();
        assert_eq!(ids.len(), 3);
        let mut enums = Vec::new();
        plan_enums(&doc, &mut enums);
        // Plan.id, the checkout body and two order schemas at least.
        assert!(enums.len() >= 4, "plan enums found: {enums:?}");
        for e in &enums {
            assert_eq!(e, &ids);
        }
        let key_list = doc["components"]["schemas"]["KeyList"]["description"]
            .as_str()
            .expect("KeyList description");
        let max = crate::accounts::MAX_KEYS;
        assert!(
            key_list.contains(&format!("at most {max})")),
            "{key_list:?} does not state {max}"
        );
    }
}
