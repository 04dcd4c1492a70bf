//! The generated router sends each catalogue route to the server function it names: platform
//! endpoints to `platform::serve` with their `EndpointId`, operations through `http::operation`
//! and their generated `extract` to `ops::<handler>`.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::AppState;
use crate::server_api::{self, ErrorCode, ROUTES};

async fn call(state: &AppState, method: Method, uri: &str, body: &str) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let response = server_api::catalogue_router()
        .with_state(state.clone())
        .oneshot(req)
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn each_platform_route_reaches_serve_with_its_endpoint() {
    let state = AppState::default();
    let (status, body) = call(
        &state,
        Method::GET,
        "/v1/demo/echo?word=hi&instance=abc",
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"endpoint": "/v1/demo/echo", "credits": 1, "instance": "abc"})
    );
    let (status, body) = call(&state, Method::GET, "/v1/demo/search?query=rust", "").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["endpoint"], "/v1/demo/search");
    assert_eq!(body["credits"], 2);
    let (status, body) = call(&state, Method::GET, "/v1/demo/item?id=A", "").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        body["violations"],
        json!([{"parameter": "id", "rule": "pattern"}])
    );
    assert_eq!(
        state.calls(),
        [
            "platform /v1/demo/echo",
            "platform /v1/demo/search",
            "platform /v1/demo/item"
        ]
    );
}

#[tokio::test]
async fn an_operation_gets_its_typed_input() {
    let state = AppState::default();
    let (status, body) = call(&state, Method::POST, "/v1/ping", r#"{"word":"abc"}"#).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, json!({"ok": true, "word": "abc"}));
    assert_eq!(state.calls(), ["operation None body=true", "ping abc"]);
}

#[tokio::test]
async fn a_bad_operation_input_never_reaches_the_operation() {
    let state = AppState::default();
    let (status, body) = call(&state, Method::POST, "/v1/ping", r#"{"word":"A","x":1}"#).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let mut rules: Vec<_> = body["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["parameter"].as_str().unwrap(),
                v["rule"].as_str().unwrap(),
            )
        })
        .collect();
    rules.sort();
    assert_eq!(rules, [("word", "pattern"), ("x", "unknown_parameter")]);
    assert_eq!(body["fix"], r#"POST /v1/ping {"word":"abc"}"#);
    assert_eq!(state.calls(), ["operation None body=true"]);
}

#[tokio::test]
async fn a_method_or_path_outside_the_catalogue_is_not_routed() {
    let state = AppState::default();
    let (status, _) = call(&state, Method::GET, "/v1/ping", "").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, _) = call(&state, Method::GET, "/v1/demo/nope", "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(state.calls().is_empty());
}

#[test]
fn the_route_list_matches_the_endpoint_table() {
    assert_eq!(
        ROUTES,
        [
            ("GET", "/v1/demo/search"),
            ("GET", "/v1/demo/item"),
            ("GET", "/v1/demo/echo"),
            ("POST", "/v1/ping"),
        ]
    );
    let platform: Vec<_> = crate::api::ENDPOINTS.iter().map(|m| m.path).collect();
    assert_eq!(
        platform,
        ["/v1/demo/search", "/v1/demo/item", "/v1/demo/echo"]
    );
}

#[test]
fn error_codes_carry_their_status() {
    let table: Vec<_> = ErrorCode::ALL
        .iter()
        .map(|c| (c.as_str(), c.status()))
        .collect();
    assert_eq!(
        table,
        [
            ("VALIDATION_ERROR", 422),
            ("INTERNAL", 500),
            ("NOT_CONFIGURED", 501)
        ]
    );
}

#[test]
fn the_embedded_document_is_the_committed_one() {
    let embedded: Value = serde_json::from_str(server_api::OPENAPI_JSON).unwrap();
    let committed: Value =
        serde_json::from_str(include_str!("../../golden/mini.openapi.json")).unwrap();
    assert_eq!(embedded, committed);
}

#[test]
fn operation_input_checks_a_raw_input() {
    let (example, check) = server_api::operation_input("ping").expect("ping is an operation");
    assert_eq!(example, r#"POST /v1/ping {"word":"abc"}"#);
    let raw = |body: Value| crate::http::RawInput {
        path_params: Vec::new(),
        query: String::new(),
        body: Some(body),
    };
    assert!(check(&raw(json!({"word": "abc"}))).is_ok());
    assert!(check(&raw(json!({}))).is_err());
    assert!(server_api::operation_input("demo_search").is_none());
}
