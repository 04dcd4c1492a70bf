//! One source, two enforcers: for every parameter of every operation, boundary values get the same
//! verdict from the generated validator and from the `jsonschema` crate run on the parameter's
//! schema in the emitted OpenAPI 3.1 document.
//!
//! Query values are strings on the wire; an integer or boolean parameter's value is coerced to a
//! JSON number or boolean before the schema sees it, as a client generator would. Values a
//! grammar lists under `invalid_by_parser` are refused only by the typed parser (JSON Schema cannot
//! express calendar dates); they are checked for exactly that and left out of the agreement.

use std::collections::BTreeSet;

use adapters::api::{ENDPOINTS, EndpointId, grammar};
use adapters::request::{Grammar, Needed, Rule, Violations};
use serde_json::{Value, json};
use server::http::RawInput;

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The grammars whose pattern is `pattern` (several grammars may share one).
fn grammars_with(pattern: &str) -> Vec<&'static Grammar> {
    grammar::ALL
        .iter()
        .copied()
        .filter(|g| g.pattern == pattern)
        .collect()
}

/// Boundary and example values for one parameter schema.
fn probe_values(schema: &Value) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    match schema["type"].as_str() {
        Some("integer") => {
            let (min, max) = (
                schema["minimum"].as_i64().unwrap(),
                schema["maximum"].as_i64().unwrap(),
            );
            for n in [min - 1, min, max, max + 1] {
                v.push(n.to_string());
            }
            v.extend(["ten".into(), "1.5".into(), String::new()]);
        }
        Some("boolean") => v.extend(["true", "false", "yes", "1", ""].map(String::from)),
        _ => {
            if let Some(values) = schema["enum"].as_array() {
                v.extend(values.iter().map(|x| x.as_str().unwrap().to_string()));
                v.extend(["bogus".into(), String::new()]);
            }
            if let Some(max) = schema["maxLength"].as_u64() {
                let max = max as usize;
                v.push("a".repeat(max));
                v.push("a".repeat(max + 1));
                if let Some(min) = schema["minLength"].as_u64() {
                    v.push("a".repeat(min as usize));
                    v.push("a".repeat((min as usize).saturating_sub(1)));
                }
            }
            if let Some(p) = schema["pattern"].as_str() {
                for g in grammars_with(p) {
                    v.extend(
                        g.valid
                            .iter()
                            .chain(g.invalid)
                            .chain(g.invalid_by_parser)
                            .map(|s| s.to_string()),
                    );
                }
            }
        }
    }
    if let Some(d) = schema.get("default") {
        v.push(d.as_str().map_or_else(|| d.to_string(), String::from));
    }
    v
}

/// The query string value as the schema sees it.
fn coerce(schema: &Value, raw: &str) -> Value {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    match schema["type"].as_str() {
        Some("integer") if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            raw.parse::<i64>().map_or_else(|_| json!(raw), Value::from)
        }
        Some("boolean") if raw == "true" || raw == "false" => json!(raw == "true"),
        _ => json!(raw),
    }
}

fn by_parser_only(schema: &Value, value: &str) -> bool {
    schema["pattern"].as_str().is_some_and(|p| {
        grammars_with(p)
            .iter()
            .any(|g| g.invalid_by_parser.contains(&value))
    })
}

fn names(v: &Violations, parameter: &str) -> bool {
    v.0.iter().any(|x| x.parameter == parameter)
}

struct Tally {
    checked: usize,
    disagreements: Vec<String>,
}

impl Tally {
    fn record(&mut self, what: String, by_schema: bool, by_validator: bool) {
        self.checked += 1;
        if by_schema != by_validator {
            self.disagreements.push(format!(
                "{what}: schema {} but the generated validator {}",
                verdict(by_schema),
                verdict(by_validator)
            ));
        }
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok { "accepts" } else { "refuses" }
}

fn shown(v: &str) -> String {
    if v.chars().count() > 40 {
        format!(
            "{:?}… ({} chars)",
            v.chars().take(20).collect::<String>(),
            v.chars().count()
        )
    } else {
        format!("{v:?}")
    }
}

/// The validator's verdict on query parameter `name` = `value` of a platform endpoint, all other
/// parameters valid.
fn platform_verdict(path: &str, name: &str, value: &str) -> bool {
    let id = EndpointId::ALL
        .into_iter()
        .find(|e| e.meta().path == path)
        .expect("a platform path of the document is in the endpoint table");
    let meta = id.meta();
    // Cross-parameter rules are judged across parameters, which a parameter's schema cannot see:
    // like one-of groups (stated in the description and `x-one-of`), they are stated in the
    // description, `x-requires` and `x-exclusive`, and the base request keeps them satisfied.
    let mates: Vec<&str> = meta
        .exclusive
        .iter()
        .filter(|g| g.contains(&name))
        .flat_map(|g| g.iter().copied())
        .filter(|m| *m != name)
        .collect();
    let mut pairs: Vec<(String, String)> = meta
        .params
        .iter()
        .filter(|p| p.name != name && !mates.contains(&p.name))
        .filter(|p| p.required || meta.one_of.iter().any(|g| g.first() == Some(&p.name)))
        .map(|p| (p.name.to_string(), p.example.to_string()))
        .collect();
    for rule in meta.requires.iter().filter(|r| r.when.contains(&name)) {
        for (then, needed) in rule.then {
            let value = match needed {
                Needed::Present => {
                    meta.params
                        .iter()
                        .find(|p| p.name == *then)
                        .unwrap()
                        .example
                }
                Needed::OneOf(values) => values[0],
            };
            pairs.retain(|(k, _)| k != then);
            pairs.push((then.to_string(), value.to_string()));
        }
    }
    pairs.push((name.to_string(), value.to_string()));
    let raw = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&");
    match id.parse(&raw) {
        Ok(_) => true,
        Err(v) => !names(&v, name),
    }
}

/// The base input of an account operation, taken from its generated working example.
fn example_input(template: &str, example: &str) -> RawInput {
    let mut parts = example.splitn(3, ' ');
    let (_method, path, body) = (parts.next(), parts.next().unwrap_or(""), parts.next());
    let path_params = template
        .split('/')
        .zip(path.split('/'))
        .filter_map(|(t, p)| {
            let name = t.strip_prefix('{')?.strip_suffix('}')?;
            Some((name.to_string(), p.to_string()))
        })
        .collect();
    RawInput {
        path_params,
        query: String::new(),
        body: body.map(|b| serde_json::from_str(b).expect("example body is JSON")),
    }
}

#[test]
fn validator_and_schema_agree_on_every_parameter() {
    let doc: Value = serde_json::from_str(server::api::OPENAPI_JSON).unwrap();
    let mut tally = Tally {
        checked: 0,
        disagreements: Vec::new(),
    };
    let mut parser_only = 0;
    let mut seen_ops = BTreeSet::new();

    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let op_id = op["operationId"].as_str().unwrap();
            seen_ops.insert(op_id.to_string());
            let platform = ENDPOINTS.iter().any(|e| e.path == path) && method == "get";
            let account = server::api::operation_input(op_id);
            assert!(
                platform || account.is_some(),
                "operation `{op_id}` is neither a platform endpoint nor a generated operation input"
            );

            // (location, name, schema) of every input of the operation.
            let mut inputs: Vec<(&str, String, Value)> = Vec::new();
            for p in op["parameters"].as_array().into_iter().flatten() {
                let loc = p["in"].as_str().unwrap();
                inputs.push((loc, p["name"].as_str().unwrap().into(), p["schema"].clone()));
            }
            let body = &op["requestBody"]["content"]["application/json"]["schema"];
            for (name, s) in body["properties"].as_object().into_iter().flatten() {
                inputs.push(("body", name.clone(), s.clone()));
            }

            for (loc, name, schema) in inputs {
                let validator = jsonschema::validator_for(&schema)
                    .unwrap_or_else(|e| panic!("{op_id} `{name}`: schema does not compile: {e}"));
                for value in probe_values(&schema) {
                    let by_schema = validator.is_valid(&coerce(&schema, &value));
                    let by_validator = if platform {
                        platform_verdict(path, &name, &value)
                    } else {
                        let (example, extract) = account.unwrap();
                        let mut raw = example_input(path, example);
                        match loc {
                            "path" => {
                                raw.path_params.retain(|(k, _)| *k != name);
                                raw.path_params.push((name.clone(), value.clone()));
                            }
                            "body" => {
                                let obj = raw.body.get_or_insert_with(|| json!({}));
                                obj[&name] = json!(value);
                            }
                            _ => raw.query = format!("{}={}", enc(&name), enc(&value)),
                        }
                        extract(&raw).map_or_else(|v| !names(&v, &name), |()| true)
                    };
                    if by_parser_only(&schema, &value) {
                        // JSON Schema cannot see these; only the typed parser refuses them.
                        assert!(by_schema && !by_validator, "{op_id} `{name}` = {value:?}");
                        parser_only += 1;
                        continue;
                    }
                    tally.record(
                        format!("{method} {path} `{name}` ({loc}) = {}", shown(&value)),
                        by_schema,
                        by_validator,
                    );
                }
            }
        }
    }
    assert!(
        tally.disagreements.is_empty(),
        "{} of {} verdicts differ:\n{}",
        tally.disagreements.len(),
        tally.checked,
        tally.disagreements.join("\n")
    );
    assert!(
        tally.checked > 1_000,
        "only {} verdicts compared",
        tally.checked
    );
    assert!(
        parser_only > 0,
        "the invalid_by_parser examples were not reached"
    );
    assert_eq!(seen_ops.len(), server::api::ROUTES.len());
}

/// `error.violations[].rule` as the document states it is exactly what the runtime sends.
#[test]
fn violation_rules_agree_with_the_document() {
    let doc: Value = serde_json::from_str(server::api::OPENAPI_JSON).unwrap();
    let documented: Vec<&str> =
        doc["components"]["schemas"]["Violation"]["properties"]["rule"]["enum"]
            .as_array()
            .expect("the document lists the violation rules")
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
    let sent: Vec<Value> = Rule::ALL
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
    assert_eq!(
        sent,
        documented.iter().map(|r| json!(r)).collect::<Vec<_>>()
    );
}
