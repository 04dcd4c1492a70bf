//! The routes the binary serves are exactly the routes the OpenAPI document lists, and whatever
//! is not a route answers 404 UNKNOWN_ENDPOINT in the error envelope.

use reqwest::Method;
use serde_json::Value;

use crate::support::server;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn document() -> Value {
    serde_json::from_str(server::api::OPENAPI_JSON).expect("the document is JSON")
}

/// Every (method, concrete path) of the document, path parameters filled with their examples.
fn documented() -> Vec<(Method, String)> {
    let doc = document();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let mut concrete = path.clone();
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "path" {
                    let name = p["name"].as_str().unwrap();
                    let example = p["example"]
                        .as_str()
                        .expect("path parameters have examples");
                    concrete = concrete.replace(&format!("{{{name}}}"), example);
                }
            }
            out.push((method.to_uppercase().parse().unwrap(), concrete));
        }
    }
    out
}

#[tokio::test]
async fn every_documented_route_is_served() {
    let s = server();
    let routes = documented();
    assert_eq!(routes.len(), server::api::ROUTES.len());
    for (method, path) in routes {
        let mut req = s.client().request(method.clone(), s.url(&path));
        if method == Method::POST {
            req = req.header("content-type", "application/json").body("{}");
        }
        let r = s.send(req).await;
        assert!(
            !(r.status == 404 && r.error_type() == "UNKNOWN_ENDPOINT"),
            "{method} {path} is documented but not served: {}",
            r.text
        );
    }
}

#[tokio::test]
async fn undocumented_methods_are_unknown_endpoints() {
    let s = server();
    let doc = document();
    for (method, path) in documented() {
        let template = doc["paths"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, item)| item.get(method.as_str().to_lowercase()).is_some())
            .map(|(t, _)| t.clone());
        assert!(template.is_some());
        for other in METHODS {
            let served = doc["paths"]
                .as_object()
                .unwrap()
                .iter()
                .any(|(t, item)| item.get(other).is_some() && matches_template(t, &path));
            if served {
                continue;
            }
            let r = s
                .send(
                    s.client()
                        .request(other.to_uppercase().parse().unwrap(), s.url(&path)),
                )
                .await;
            r.assert_error(404, "UNKNOWN_ENDPOINT");
        }
    }
}

fn matches_template(template: &str, path: &str) -> bool {
    let (t, p): (Vec<_>, Vec<_>) = (template.split('/').collect(), path.split('/').collect());
    t.len() == p.len() && t.iter().zip(&p).all(|(a, b)| a.starts_with('{') || a == b)
}

#[tokio::test]
async fn unknown_routes() {
    let s = server();
    for path in [
        "/",
        "/v1",
        "/v1/",
        "/v2/forum/search",
        "/v1/forum/nope",
        "/v1/forum/search/",
        "/favicon.ico",
    ] {
        let r = s.get(path).await;
        r.assert_error(404, "UNKNOWN_ENDPOINT");
        assert_eq!(r.body["endpoint"], path);
    }
}

#[tokio::test]
async fn openapi_documents_are_served() {
    let s = server();
    let r = s.get("/v1/openapi.json").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(r.body, document());
    assert_eq!(r.body["openapi"], "3.1.0");

    let r = s.get("/v1/openapi-3.0.json").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["openapi"], "3.0.3");
    let parsed: openapiv3::OpenAPI = serde_json::from_value(r.body.clone()).expect("parses as 3.0");
    assert_eq!(
        parsed.paths.paths.len(),
        document()["paths"].as_object().unwrap().len()
    );
}

#[tokio::test]
async fn status_is_served_without_credentials() {
    let r = server().get("/v1/status").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["endpoint_count"], adapters::api::ENDPOINTS.len());
}

#[tokio::test]
async fn operations_without_inputs_refuse_unknown_parameters() {
    for path in [
        "/v1/status?verbose=1",
        "/v1/plans?x=1",
        "/v1/openapi.json?v=3",
    ] {
        let r = server().get(path).await;
        let name = path.split_once('?').unwrap().1.split('=').next().unwrap();
        r.assert_names(name);
    }
}
