//! A panic inside a handler answers 500 INTERNAL in the error envelope, with the request id.
//! The panicking route exists only here: it is wrapped in the same layers as `server::app`.

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use axum::routing::get;
use tower::ServiceExt;

async fn boom() -> &'static str {
    panic!("deliberate test panic")
}

#[tokio::test]
async fn a_panicking_handler_answers_500_internal() {
    let app = server::with_service_layers(Router::new().route("/boom", get(boom)));
    let res = app
        .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
        .await
        .expect("the service answers");
    assert_eq!(res.status(), 500);
    let id = res.headers()["x-request-id"].to_str().unwrap().to_string();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&bytes).expect("an envelope");
    assert_eq!(body["success"], false);
    assert_eq!(body["error"]["type"], "INTERNAL");
    assert_eq!(body["error"]["status"], 500);
    assert_eq!(body["endpoint"], "/boom");
    assert_eq!(body["credits_used"], 0);
    assert!(id.starts_with("req-"));
    assert_eq!(body["request_id"], id.as_str());
    // The panic text is logged, never shown to the client.
    assert!(!String::from_utf8_lossy(&bytes).contains("deliberate"));
}
