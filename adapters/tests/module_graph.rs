//! The modules of `adapters` depend one way only: each names (`crate::x`) only modules of its own
//! or a lower layer. A circle (the chains reaching up to the platforms that plug into them, the
//! upstream plumbing borrowing an error type from the chains) fails here.

use std::fs;
use std::path::{Path, PathBuf};

/// Lowest first; a module may use its own layer and those before it.
const LAYERS: &[&[&str]] = &[
    &["error", "item"],
    &["request"],
    &["upstream"],
    &["slot"],
    &["api"],
    &["sources"],
    &["platforms"],
    &["registry"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level modules a file names through `crate::` (or `$crate::` in a macro), outside
/// comments and its unit tests (a test may build its requests with the generated parsers).
fn named_modules(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or("");
    let mut found = Vec::new();
    for line in code.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                // `crate::{a::X, b}`: every module of the group.
                let group = group.split('}').next().unwrap_or("");
                for part in group.split(',') {
                    let name = part.trim().split("::").next().unwrap_or("");
                    found.push(name.trim().to_string());
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push(name);
            }
            rest = after;
        }
    }
    found.retain(|n| !n.is_empty());
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every use that goes up a layer or to a module outside the layers, as `file: module`.
fn violations(files: &[(String, String, String)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (file, module, text) in files {
        let own = layer(module).unwrap_or_else(|| panic!("{file}: module `{module}` has no layer"));
        for used in named_modules(text) {
            match layer(&used) {
                Some(l) if l <= own => {}
                _ => bad.push(format!("{file}: {module} uses crate::{used}")),
            }
        }
    }
    bad
}

#[test]
fn modules_depend_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let mut files = Vec::new();
    for path in paths {
        let relative = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let module = relative
            .split(['/', '.'])
            .next()
            .unwrap_or_default()
            .to_string();
        // The crate root declares the modules; the generator's test catalogue is test-only.
        if module == "lib" || module == "mini_tests" {
            continue;
        }
        let text = fs::read_to_string(&path).expect("read source");
        files.push((relative, module, text));
    }
    // The generated code is a module too (`api`): it may use the request and slot runtimes only.
    let generated = Path::new(env!("OUT_DIR")).join("api.rs");
    files.push((
        "OUT_DIR/api.rs".into(),
        "api".into(),
        fs::read_to_string(generated).expect("generated api.rs"),
    ));
    assert!(
        files.iter().any(|(_, m, _)| m == "sources")
            && files.iter().any(|(_, m, _)| m == "upstream"),
        "the walk found the modules"
    );
    let bad = violations(&files);
    assert!(
        bad.is_empty(),
        "modules reaching up a layer:\n{}",
        bad.join("\n")
    );
}

/// The check itself catches the circles it exists for.
#[test]
fn upward_uses_are_caught() {
    let file = |module: &str, text: &str| {
        (
            format!("{module}/x.rs"),
            module.to_string(),
            text.to_string(),
        )
    };
    let bad = violations(&[
        file("sources", "pub fn all() { crate::platforms::all() }"),
        file("upstream", "use crate::sources::{BoxFuture, SourceError};"),
        file("slot", "use crate::{item::Page, sources::SourceError};"),
        file(
            "request",
            "// see `crate::api`, a comment\nuse crate::item::Item;",
        ),
        file("api", "$crate::sources::slot::Slot::new"),
        file(
            "item",
            "#[cfg(test)]\nmod tests { use crate::api::Request; }",
        ),
    ]);
    assert_eq!(
        bad,
        [
            "sources/x.rs: sources uses crate::platforms",
            "upstream/x.rs: upstream uses crate::sources",
            "slot/x.rs: slot uses crate::sources",
            "api/x.rs: api uses crate::sources",
        ]
    );
}
