//! The generated OpenAPI documents: the committed copy is current, the document lists exactly the
//! routes the router serves, and each version stays within its own dialect.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use server::api::{OPENAPI_30_JSON, OPENAPI_JSON, ROUTES};

fn doc31() -> Value {
    serde_json::from_str(OPENAPI_JSON).expect("3.1 document is JSON")
}

fn doc30() -> Value {
    serde_json::from_str(OPENAPI_30_JSON).expect("3.0 document is JSON")
}

#[test]
fn committed_document_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/openapi.json");
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, OPENAPI_JSON).expect("write docs/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == OPENAPI_JSON,
        "docs/openapi.json differs from what the catalogue generates. Regenerate it with\n  \
         cargo run -p server --bin socialsearch -- openapi > docs/openapi.json\n\
         or UPDATE_OPENAPI=1 cargo test -p server --test openapi"
    );
}

fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            out.insert((method.to_uppercase(), path.clone()));
        }
    }
    out
}

#[test]
fn document_lists_exactly_the_routes() {
    let routes: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(routes.len(), ROUTES.len(), "a route is listed twice");
    assert_eq!(operations(&doc31()), routes);
    assert_eq!(operations(&doc30()), routes);
    // Every endpoint of the parser table is a GET route.
    for e in &adapters::api::ENDPOINTS {
        assert!(
            routes.contains(&("GET".into(), e.path.into())),
            "{}",
            e.path
        );
    }
}

#[test]
fn the_31_document_never_says_nullable() {
    assert!(!OPENAPI_JSON.contains("nullable"));
    assert_eq!(doc31()["openapi"], "3.1.0");
    assert_eq!(doc31()["info"]["version"], "2.0.0");
}

/// Every key of every object in `v`, recursively.
fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.insert(k.clone());
                keys(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

fn type_arrays(v: &Value) -> usize {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| usize::from(k == "type" && v.is_array()) + type_arrays(v))
            .sum(),
        Value::Array(a) => a.iter().map(type_arrays).sum(),
        _ => 0,
    }
}

#[test]
fn the_30_document_is_openapi_303() {
    let doc = doc30();
    assert_eq!(doc["openapi"], "3.0.3");
    let parsed: openapiv3::OpenAPI =
        serde_json::from_value(doc.clone()).expect("fits the 3.0 model");
    assert_eq!(parsed.openapi, "3.0.3");
    let mut all = BTreeSet::new();
    keys(&doc, &mut all);
    for only_31 in [
        "const",
        "jsonSchemaDialect",
        "webhooks",
        "$schema",
        "prefixItems",
    ] {
        assert!(!all.contains(only_31), "3.0 document uses `{only_31}`");
    }
    assert_eq!(type_arrays(&doc), 0, "3.0 has no type arrays");
    assert!(
        OPENAPI_30_JSON.contains("\"nullable\":true"),
        "nullable fields are rendered for 3.0"
    );
}

#[test]
fn every_platform_operation_states_its_price_and_errors() {
    let doc = doc31();
    for e in &adapters::api::ENDPOINTS {
        let op = &doc["paths"][e.path]["get"];
        assert_eq!(op["x-credits"], e.credits, "{}", e.path);
        for status in [
            "200", "401", "402", "403", "422", "424", "429", "500", "501",
        ] {
            assert!(
                op["responses"][status].is_object(),
                "{} lacks {status}",
                e.path
            );
        }
    }
}

#[test]
fn every_operation_documents_422_and_500() {
    // Unknown or repeated query parameters are refused on every route, inputs or not.
    let doc = doc31();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for status in ["422", "500"] {
                assert!(
                    op["responses"][status].is_object(),
                    "{method} {path} lacks {status}"
                );
            }
        }
    }
}

#[test]
fn only_used_security_schemes_are_defined() {
    let doc = doc31();
    let text = doc["paths"].to_string();
    for name in doc["components"]["securitySchemes"]
        .as_object()
        .unwrap()
        .keys()
    {
        assert!(
            text.contains(&format!("\"{name}\"")),
            "scheme {name} is unused"
        );
    }
}
