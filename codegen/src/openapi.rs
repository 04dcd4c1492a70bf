//! Emits the OpenAPI 3.1.0 document (JSON Schema 2020-12 dialect) and its 3.0.3 rendering.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::check::{Api, Kind, Needed, OpKind, Operation, ParamSpec, method_str};
use crate::model::Auth;
use crate::rules;

const ERROR_ENVELOPE: &str = "#/components/schemas/ErrorEnvelope";

fn param_schema(api: &Api, p: &ParamSpec) -> Value {
    let mut s = Map::new();
    match &p.kind {
        Kind::Text { grammar } => {
            s.insert("type".into(), json!("string"));
            s.insert("minLength".into(), json!(p.min_length));
            s.insert("maxLength".into(), json!(p.max_length));
            if let Some(g) = grammar
                .as_ref()
                .and_then(|g| api.grammars.iter().find(|x| &x.name == g))
            {
                s.insert("pattern".into(), json!(g.pattern));
            }
            if let Some(d) = &p.default {
                s.insert("default".into(), json!(d));
            }
        }
        Kind::Integer { min, max } => {
            s.insert("type".into(), json!("integer"));
            s.insert("minimum".into(), json!(min));
            s.insert("maximum".into(), json!(max));
            if let Some(d) = p.default.as_ref().and_then(|d| d.parse::<i64>().ok()) {
                s.insert("default".into(), json!(d));
            }
        }
        Kind::Boolean => {
            s.insert("type".into(), json!("boolean"));
            if let Some(d) = &p.default {
                s.insert("default".into(), json!(d == "true"));
            }
        }
        Kind::Choice { values, .. } => {
            s.insert("type".into(), json!("string"));
            s.insert("enum".into(), json!(values));
            if let Some(d) = &p.default {
                s.insert("default".into(), json!(d));
            }
        }
    }
    Value::Object(s)
}

fn param_description(api: &Api, p: &ParamSpec) -> String {
    let mut parts = Vec::new();
    if !p.description.is_empty() {
        parts.push(p.description.clone());
    }
    if let Kind::Text { grammar: Some(g) } = &p.kind
        && let Some(g) = api.grammars.iter().find(|x| &x.name == g && !x.inline)
    {
        parts.push(format!("Form: {}.", g.description));
    }
    parts.join(" ")
}

fn parameter(api: &Api, p: &ParamSpec, location: &str) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(p.name));
    o.insert("in".into(), json!(location));
    o.insert("required".into(), json!(p.required || location == "path"));
    let d = param_description(api, p);
    if !d.is_empty() {
        o.insert("description".into(), json!(d));
    }
    o.insert("schema".into(), param_schema(api, p));
    o.insert("example".into(), p.example_json());
    Value::Object(o)
}

fn body_schema(api: &Api, fields: &[ParamSpec]) -> Value {
    let required: Vec<&str> = fields
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name.as_str())
        .collect();
    let mut props = Map::new();
    for p in fields {
        let mut s = param_schema(api, p);
        let d = param_description(api, p);
        if let (Value::Object(m), false) = (&mut s, d.is_empty()) {
            m.insert("description".into(), json!(d));
        }
        props.insert(p.name.clone(), s);
    }
    let mut s = json!({ "type": "object", "additionalProperties": false, "properties": props });
    if !required.is_empty() {
        s["required"] = json!(required);
    }
    if fields.is_empty() {
        s["maxProperties"] = json!(0);
    }
    s
}

fn request_id_header() -> Value {
    json!({ "description": "The request id, also in the body as `request_id`.", "schema": { "type": "string", "pattern": "^req-" } })
}

fn error_responses(api: &Api, op: &Operation) -> Map<String, Value> {
    let mut by_status: BTreeMap<u16, Vec<&crate::check::ErrorCode>> = BTreeMap::new();
    for code in &op.errors {
        if let Some(e) = api.errors.iter().find(|e| &e.name == code) {
            by_status.entry(e.status).or_default().push(e);
        }
    }
    let mut out = Map::new();
    for (status, codes) in by_status {
        let names: Vec<&str> = codes.iter().map(|e| e.name.as_str()).collect();
        let description = codes
            .iter()
            .map(|e| format!("`{}`: {}", e.name, e.description))
            .collect::<Vec<_>>()
            .join(" ");
        let mut headers = Map::new();
        headers.insert("x-request-id".into(), request_id_header());
        if status == 429 {
            headers.insert(
                "Retry-After".into(),
                json!({ "description": "Seconds to wait, on the per-key rate limit only (daily caps carry none).", "schema": { "type": "integer", "minimum": 1 } }),
            );
        }
        out.insert(
            status.to_string(),
            json!({
                "description": description,
                "headers": headers,
                "content": { "application/json": { "schema": {
                    "allOf": [
                        { "$ref": ERROR_ENVELOPE },
                        { "type": "object", "properties": { "error": { "type": "object", "properties": { "type": { "enum": names } } } } }
                    ]
                } } }
            }),
        );
    }
    out
}

fn security(auth: Auth) -> Value {
    match auth {
        Auth::None => json!([]),
        Auth::ApiKey => json!([{ "ApiKey": [] }]),
        Auth::Session => json!([{ "Session": [] }]),
        Auth::ApiKeyOrSession => json!([{ "ApiKey": [] }, { "Session": [] }]),
        Auth::OwnerKey => json!([{ "OwnerKey": [] }]),
    }
}

fn operation(api: &Api, op: &Operation) -> Value {
    let mut o = Map::new();
    o.insert("operationId".into(), json!(op.ident));
    o.insert("summary".into(), json!(op.summary));
    let mut description = op.description.clone().unwrap_or_default();
    for group in &op.one_of {
        let list = group
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ");
        description.push_str(&format!("\n\nAt least one of {list} is required."));
    }
    for rule in &op.requires {
        description.push_str(&format!("\n\n{}", rule.describe()));
    }
    for group in &op.exclusive {
        let list = group
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ");
        description.push_str(&format!("\n\nAt most one of {list} may be given."));
    }
    let mut responses = Map::new();
    let mut headers = Map::new();
    headers.insert("x-request-id".into(), request_id_header());
    match &op.kind {
        OpKind::Platform { platform, credits } => {
            description.push_str(&format!(
                "\n\n**Price: {credits} credit{}** per successful call; a failed call is never charged.",
                if *credits == 1 { "" } else { "s" }
            ));
            o.insert("tags".into(), json!([platform]));
            o.insert("x-credits".into(), json!(credits));
            o.insert("security".into(), security(Auth::ApiKey));
            responses.insert(
                "200".into(),
                json!({
                    "description": "Success envelope with the items of this call.",
                    "headers": headers,
                    "content": { "application/json": { "schema": {
                        "allOf": [
                            { "$ref": "#/components/schemas/SuccessEnvelope" },
                            { "type": "object", "properties": { "platform": { "const": platform } } }
                        ]
                    } } }
                }),
            );
        }
        OpKind::Account { auth, response, .. } => {
            o.insert("tags".into(), json!([tag_of(&op.path)]));
            o.insert("x-credits".into(), json!(0));
            o.insert("security".into(), security(*auth));
            responses.insert(
                "200".into(),
                json!({
                    "description": "Success.",
                    "headers": headers,
                    "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{response}") } } }
                }),
            );
        }
    }
    if !op.one_of.is_empty() {
        o.insert("x-one-of".into(), json!(op.one_of));
    }
    // Cross-parameter rules, which JSON Schema cannot state across separate query parameters, in
    // the catalogue's own form: `{ "if": [..], "then": { name: [values] | "present" } }`.
    if !op.requires.is_empty() {
        let rules: Vec<Value> = op
            .requires
            .iter()
            .map(|r| {
                let then: Map<String, Value> = r
                    .then
                    .iter()
                    .map(|(name, need)| {
                        let v = match need {
                            Needed::Present => json!("present"),
                            Needed::OneOf(values) => json!(values),
                        };
                        (name.clone(), v)
                    })
                    .collect();
                json!({ "if": r.when, "then": then })
            })
            .collect();
        o.insert("x-requires".into(), json!(rules));
    }
    if !op.exclusive.is_empty() {
        o.insert("x-exclusive".into(), json!(op.exclusive));
    }
    // An empty description is noise to readers and linters; leave the key out instead.
    if !description.trim().is_empty() {
        o.insert("description".into(), json!(description.trim()));
    }
    let params: Vec<Value> = op
        .path_params
        .iter()
        .map(|p| parameter(api, p, "path"))
        .chain(op.params.iter().map(|p| parameter(api, p, "query")))
        .collect();
    if !params.is_empty() {
        o.insert("parameters".into(), json!(params));
    }
    if let Some(body) = &op.body {
        o.insert(
            "requestBody".into(),
            json!({ "required": true, "content": { "application/json": { "schema": body_schema(api, body) } } }),
        );
    }
    responses.extend(error_responses(api, op));
    o.insert("responses".into(), Value::Object(responses));
    Value::Object(o)
}

fn tag_of(path: &str) -> &'static str {
    if path.starts_with("/v1/auth/") {
        "auth"
    } else if path.starts_with("/v1/keys") {
        "keys"
    } else if path.starts_with("/v1/checkout")
        || path.starts_with("/v1/orders")
        || path.starts_with("/v1/plans")
    {
        "billing"
    } else if path.starts_with("/v1/me") || path.starts_with("/v1/credits") {
        "account"
    } else if path.starts_with("/v1/admin") {
        "admin"
    } else {
        "service"
    }
}

fn error_envelope(api: &Api) -> Value {
    let codes: Vec<&str> = api.errors.iter().map(|e| e.name.as_str()).collect();
    json!({
        "type": "object",
        "description": "Every error response. No error is ever charged.",
        "required": ["success", "endpoint", "error", "credits_used", "request_id"],
        "properties": {
            "success": { "const": false },
            "endpoint": { "type": "string", "description": "the path called" },
            "error": {
                "type": "object",
                "required": ["type", "message", "status", "docs_url"],
                "properties": {
                    "type": { "type": "string", "enum": codes, "description": "stable machine code" },
                    "message": { "type": "string", "description": "for a person; names the parameter at fault" },
                    "status": { "type": "integer", "description": "the HTTP status" },
                    "docs_url": { "type": "string", "description": "documentation of this error code" },
                    "fix": { "type": "string", "description": "present only when there is a specific step to take: a working example, a top-up link or a retry delay" },
                    "violations": {
                        "type": "array",
                        "description": "on VALIDATION_ERROR: every parameter or field at fault, so a client can fix all at once",
                        "items": { "$ref": "#/components/schemas/Violation" }
                    },
                    "attempts_left": { "type": "integer", "minimum": 0, "description": "on INVALID_CODE: wrong guesses left for this code" }
                }
            },
            "credits_used": { "const": 0 },
            "credits_remaining": { "type": "integer", "minimum": 0, "description": "on NO_CREDITS: the account balance" },
            "attempts_left": { "type": "integer", "minimum": 0, "description": "on INVALID_CODE: wrong guesses left for this code" },
            "request_id": { "type": "string", "pattern": "^req-" }
        }
    })
}

fn violation_schema() -> Value {
    json!({
        "type": "object",
        "required": ["parameter", "in", "rule", "message"],
        "properties": {
            "parameter": { "type": "string", "description": "the parameter or body field at fault" },
            "in": { "type": "string", "enum": ["query", "path", "body"] },
            "rule": {
                "type": "string",
                "enum": rules::names().collect::<Vec<_>>(),
                "description": "the rule that was broken"
            },
            "message": { "type": "string" }
        }
    })
}

pub fn document(api: &Api) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for op in &api.operations {
        let entry = paths.entry(op.path.clone()).or_insert_with(|| json!({}));
        entry[method_str(op.method).to_lowercase()] = operation(api, op);
    }
    let mut schemas = Map::new();
    schemas.insert("ErrorEnvelope".into(), error_envelope(api));
    schemas.insert("Violation".into(), violation_schema());
    for (name, s) in &api.schemas {
        schemas.insert(name.clone(), s.clone());
    }
    let mut tags: Vec<Value> = api
        .platforms
        .iter()
        .map(|(p, kind)| json!({ "name": p, "description": kind }))
        .collect();
    for (name, d) in [
        (
            "auth",
            "Sign-in with an e-mailed code, browser links and sign-out.",
        ),
        ("keys", "API keys, managed from a browser session only."),
        ("account", "Balance and usage."),
        ("billing", "Credit packs, checkout and orders."),
        ("service", "Status and this document."),
        ("admin", "Operator routes."),
    ] {
        if api
            .operations
            .iter()
            .any(|o| o.platform().is_none() && tag_of(&o.path) == name)
        {
            tags.push(json!({ "name": name, "description": d }));
        }
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "info": {
            "title": api.info.title,
            "version": api.info.version,
            "description": api.info.description,
            "x-docs-url": api.info.docs_url,
        },
        "servers": [{ "url": "/", "description": "this deployment" }],
        "tags": tags,
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": security_schemes(api)
        }
    })
}

/// The security schemes some operation uses (an unused one is a dangling definition).
fn security_schemes(api: &Api) -> Value {
    let all = [
        (
            "ApiKey",
            json!({ "type": "apiKey", "in": "header", "name": "x-api-key", "description": "An API key, created in the dashboard." }),
        ),
        (
            "Session",
            json!({ "type": "apiKey", "in": "header", "name": "x-session", "description": "A browser session token from sign-in." }),
        ),
        (
            "OwnerKey",
            json!({ "type": "apiKey", "in": "header", "name": "x-owner-key", "description": "The operator's key from the configuration." }),
        ),
    ];
    let used: Vec<Value> = api
        .operations
        .iter()
        .map(|op| match &op.kind {
            OpKind::Platform { .. } => security(Auth::ApiKey),
            OpKind::Account { auth, .. } => security(*auth),
        })
        .collect();
    let mut out = Map::new();
    for (name, scheme) in all {
        if used
            .iter()
            .flat_map(|s| s.as_array().into_iter().flatten())
            .any(|req| req.get(name).is_some())
        {
            out.insert(name.into(), scheme);
        }
    }
    Value::Object(out)
}

/// Renders a 3.1 schema tree in 3.0 terms: type arrays with null become `nullable`, `const` becomes a
/// one-value `enum`.
fn schema_to_30(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, val) in m {
                match (k.as_str(), val) {
                    ("type", Value::Array(types)) => {
                        let non_null: Vec<&Value> = types
                            .iter()
                            .filter(|t| t.as_str() != Some("null"))
                            .collect();
                        if let [one] = non_null.as_slice() {
                            out.insert("type".into(), (*one).clone());
                        }
                        if non_null.len() != types.len() {
                            out.insert("nullable".into(), json!(true));
                        }
                    }
                    ("const", c) => {
                        out.insert("enum".into(), json!([c]));
                    }
                    ("jsonSchemaDialect", _) => {}
                    _ => {
                        out.insert(k.clone(), schema_to_30(val));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(schema_to_30).collect()),
        other => other.clone(),
    }
}

/// The 3.0.3 rendering, checked by parsing it into the `openapiv3` model.
pub fn document_30(doc31: &Value) -> Result<Value, String> {
    let mut doc = schema_to_30(doc31);
    doc["openapi"] = json!("3.0.3");
    let parsed: openapiv3::OpenAPI = serde_json::from_value(doc.clone())
        .map_err(|e| format!("the OpenAPI 3.0 rendering does not fit the 3.0 model: {e}"))?;
    serde_json::to_value(parsed).map_err(|e| e.to_string())
}
