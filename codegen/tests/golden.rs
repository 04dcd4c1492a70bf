//! Golden output of the generator on the small fixture catalogue. A change in what the generator
//! emits shows up here as a reviewable diff of the committed files.
//!
//! Regenerate after an intended change: `UPDATE_GOLDEN=1 cargo test -p codegen --test golden`.

use std::path::{Path, PathBuf};

fn api() -> codegen::Api {
    codegen::load(&fixture()).expect("the fixture catalogue is valid")
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mini.yaml")
}

fn check_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if let Some(problem) = difference(&path, &expected, actual) {
        panic!("{problem}");
    }
}

/// Why `actual` is not the committed `expected`, with the command that regenerates it.
fn difference(path: &Path, expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(actual.lines().count()));
    Some(format!(
        "{} differs from the generator's output (first difference at line {}).\n\
         If the change is intended, regenerate with:\n  \
         UPDATE_GOLDEN=1 cargo test -p codegen --test golden\n\
         expected: {:?}\n  actual: {:?}",
        path.display(),
        first + 1,
        expected.lines().nth(first),
        actual.lines().nth(first)
    ))
}

#[test]
fn a_difference_names_the_line_and_the_regenerate_command() {
    let path = Path::new("tests/golden/x.rs");
    assert_eq!(difference(path, "a\nb\n", "a\nb\n"), None);
    let message = difference(path, "a\nb\nc\n", "a\nB\nc\n").expect("differs");
    assert!(message.contains("x.rs differs"), "{message}");
    assert!(message.contains("first difference at line 2"), "{message}");
    assert!(
        message.contains("UPDATE_GOLDEN=1 cargo test -p codegen --test golden"),
        "{message}"
    );
    assert!(message.contains(r#"expected: Some("b")"#), "{message}");
    // Output that only grew is reported at the first line past the shorter one.
    let message = difference(path, "a\n", "a\nb\n").expect("differs");
    assert!(message.contains("at line 2"), "{message}");
}

/// Every committed Rust golden is compiled: the generated modules by the `golden-output` crate
/// (`codegen/tests/output`), the violation rules by `adapters` (from the same emitter).
#[test]
fn every_rust_golden_is_compiled() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let lib = std::fs::read_to_string(dir.join("output/src/lib.rs")).expect("the golden crate");
    let mut goldens: Vec<String> = std::fs::read_dir(dir.join("golden"))
        .expect("the golden directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".rs"))
        .collect();
    goldens.sort();
    assert_eq!(goldens, ["mini_api.rs", "mini_server.rs", "rule.rs"]);
    for name in ["mini_api.rs", "mini_server.rs"] {
        let include = format!("include!(\"../../golden/{name}\")");
        assert!(
            lib.contains(&include),
            "{name} is not compiled: no `{include}` in the golden crate"
        );
    }
}

#[test]
fn openapi_31_document() {
    check_golden("mini.openapi.json", &codegen::openapi_json(&api()));
}

#[test]
fn openapi_30_document() {
    let compact = codegen::openapi_30_json(&api()).expect("renders as 3.0");
    let value: serde_json::Value = serde_json::from_str(&compact).expect("is JSON");
    let mut pretty = serde_json::to_string_pretty(&value).expect("serialises");
    pretty.push('\n');
    check_golden("mini.openapi-3.0.json", &pretty);
}

#[test]
fn typed_requests_source() {
    // Compiled and exercised by the `golden-output` crate (`codegen/tests/output`).
    check_golden(
        "mini_api.rs",
        &codegen::adapters_source(&api()).expect("renders"),
    );
}

/// The server's routes, typed operation inputs and embedded OpenAPI documents for the fixture,
/// compiled and exercised by the `golden-output` crate (`codegen/tests/output`).
#[test]
fn server_routes_source() {
    check_golden(
        "mini_server.rs",
        &codegen::server_source(&api()).expect("renders"),
    );
}

/// The violation rules' enum (`adapters::request::Rule`), compiled by `adapters`.
#[test]
fn violation_rules_source() {
    let src = codegen::rule_source().expect("renders");
    check_golden("rule.rs", &src);
}

#[test]
fn generated_source_parses_as_rust() {
    let src = codegen::adapters_source(&api()).expect("renders");
    syn::parse_file(&src).expect("the generated module is valid Rust syntax");
}

#[test]
fn every_platform_endpoint_has_a_handler_slot() {
    // Including the test-only `/v1/demo/echo`: one catalogue entry gives its typed slot, so a
    // source serves it by providing one function.
    let api = api();
    let src = codegen::adapters_source(&api).expect("renders");
    let mut seen = Vec::new();
    for op in &api.operations {
        let Some((platform, _)) = op.platform() else {
            continue;
        };
        let slot = codegen::names::slot_field(&op.path, platform);
        let request = codegen::names::platform_struct(&op.path, platform);
        let field = format!("pub {slot}: Option<crate::slot::Slot<{request}>>,");
        assert!(
            src.contains(&field),
            "no handler slot `{field}` in the output"
        );
        seen.push(slot);
    }
    assert_eq!(seen, ["search", "item", "echo"]);
}
