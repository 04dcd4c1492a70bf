//! Turns `spec/catalogue.yaml` into typed requests, validators, routes and the OpenAPI documents.
//!
//! Pure: `load` parses and checks, the emitters return text. `build.rs` scripts call [`build_adapters`]
//! and [`build_server`], which write into `OUT_DIR` only when the content changed.

pub mod check;
pub mod model;
pub mod names;
pub mod openapi;
pub mod rules;
pub mod rust;

use std::path::Path;

pub use check::Api;

/// Parses and checks a catalogue. Every problem is reported, each naming the endpoint and field.
pub fn load_str(yaml: &str) -> Result<Api, Vec<String>> {
    let cat: model::Catalogue = yaml_serde::from_str(yaml).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!(" (line {}, column {})", l.line(), l.column()))
            .unwrap_or_default();
        vec![format!("catalogue does not parse{at}: {e}")]
    })?;
    check::check(cat)
}

pub fn load(path: &Path) -> Result<Api, Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![format!("cannot read {}: {e}", path.display())])?;
    load_str(&text)
}

/// The typed-request module included by `adapters`.
pub fn adapters_source(api: &Api) -> Result<String, String> {
    rust::render(rust::typed_requests(api))
}

/// The violation rules' enum, included by `adapters::request` (see [`rules`]).
pub fn rule_source() -> Result<String, String> {
    rust::render_from(
        rules::rust(),
        "codegen/src/rules.rs. Do not edit: change the list there",
    )
}

/// The OpenAPI 3.1.0 document, pretty-printed with a trailing newline (the committed form).
pub fn openapi_json(api: &Api) -> String {
    let mut s =
        serde_json::to_string_pretty(&openapi::document(api)).expect("a JSON value serialises");
    s.push('\n');
    s
}

pub fn openapi_30_json(api: &Api) -> Result<String, String> {
    let doc = openapi::document_30(&openapi::document(api))?;
    Ok(serde_json::to_string(&doc).expect("a JSON value serialises"))
}

/// The routes-and-inputs module included by `server`.
pub fn server_source(api: &Api) -> Result<String, String> {
    let doc31 = openapi_json(api);
    let doc30 = openapi_30_json(api)?;
    rust::render(rust::server(api, &doc31, &doc30))
}

fn write_if_changed(path: &Path, content: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(content) {
        std::fs::write(path, content)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

fn load_or_exit(catalogue: &Path) -> Api {
    println!("cargo:rerun-if-changed={}", catalogue.display());
    match load(catalogue) {
        Ok(api) => api,
        Err(problems) => {
            for p in &problems {
                println!("cargo:warning={}: {p}", catalogue.display());
            }
            eprintln!(
                "\n{} has {} problem(s):",
                catalogue.display(),
                problems.len()
            );
            for p in &problems {
                eprintln!("  - {p}");
            }
            std::process::exit(1);
        }
    }
}

fn out_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"))
}

/// For `adapters/build.rs`: writes `$OUT_DIR/<name>.rs` for each catalogue given, and
/// `$OUT_DIR/rule.rs` (the violation rules, which no catalogue changes).
pub fn build_adapters(catalogues: &[(&Path, &str)]) {
    let rules = rule_source().unwrap_or_else(|e| panic!("{e}"));
    write_if_changed(&out_dir().join("rule.rs"), &rules);
    for (path, name) in catalogues {
        let api = load_or_exit(path);
        let src = adapters_source(&api).unwrap_or_else(|e| panic!("{e}"));
        write_if_changed(&out_dir().join(format!("{name}.rs")), &src);
    }
}

/// For `server/build.rs`: writes `$OUT_DIR/server_api.rs` (which embeds both OpenAPI documents).
pub fn build_server(catalogue: &Path) {
    let api = load_or_exit(catalogue);
    let src = server_source(&api).unwrap_or_else(|e| panic!("{e}"));
    write_if_changed(&out_dir().join("server_api.rs"), &src);
}
