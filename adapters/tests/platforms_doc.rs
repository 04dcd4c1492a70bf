//! `docs/platforms.md` shows which source serves which endpoint; the table between its markers is
//! derived from the sources' registrations and must not drift from them.
//!
//! Regenerate after a change: `UPDATE_DOCS=1 cargo test -p adapters --test platforms_doc`.

use std::path::Path;

const BEGIN: &str = "<!-- source table: generated from the registrations; UPDATE_DOCS=1 cargo test -p adapters --test platforms_doc -->\n";
const END: &str = "<!-- end of the source table -->\n";

#[test]
fn the_committed_source_table_matches_the_registrations() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/platforms.md");
    let doc = std::fs::read_to_string(&path).expect("docs/platforms.md is readable");
    let start = doc
        .find(BEGIN)
        .expect("docs/platforms.md has the table's start marker")
        + BEGIN.len();
    let end = start
        + doc[start..]
            .find(END)
            .expect("docs/platforms.md has the table's end marker");
    let derived = adapters::registry::table();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{derived}{}", &doc[..start], &doc[end..]);
        std::fs::write(&path, updated).expect("docs/platforms.md is writable");
        return;
    }
    assert!(
        doc[start..end] == derived,
        "the source table in docs/platforms.md differs from what the sources register.\n\
         Regenerate it with: UPDATE_DOCS=1 cargo test -p adapters --test platforms_doc\n\
         derived:\n{derived}"
    );
}

#[test]
fn a_source_without_a_function_shows_as_not_served() {
    // No source has a function for the video transcript: the table says so, and the endpoint is
    // served by nobody (501 NOT_CONFIGURED at run time, not a failed call).
    let table = adapters::registry::table();
    let row = table
        .lines()
        .find(|l| l.starts_with("| `/v1/video/video/transcript` |"))
        .expect("a row per endpoint");
    assert_eq!(row, "| `/v1/video/video/transcript` | - | - |");
    assert!(adapters::platforms::all().iter().all(|s| {
        !s.endpoints()
            .any(|e| e.meta().path == "/v1/video/video/transcript")
    }));
}
