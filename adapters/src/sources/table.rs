//! The table of which source serves which endpoint, derived from the sources' registrations: the
//! source of the table in `docs/platforms.md` (a test keeps the two equal).

use crate::api::{EndpointId, PLATFORMS};

use super::Source;

/// One Markdown table per platform: its endpoints down, its sources across in the order given
/// (the built-in chain order, see `registry::table`). A cell says whether the source serves the
/// endpoint, and on what condition.
pub fn markdown(sources: &[&'static Source]) -> String {
    let mut out = String::from(
        "`yes`: served; `with credential`: served once the source has its credential;\n\
         `some requests`: served for the requests the source takes, the others go down the chain;\n\
         `-`: not served by this source.\n",
    );
    for (platform, _) in PLATFORMS {
        let chain: Vec<&Source> = sources
            .iter()
            .copied()
            .filter(|s| s.platform() == platform)
            .collect();
        out.push_str(&format!("\n### {platform}\n\n"));
        if chain.is_empty() {
            out.push_str("No source yet: every endpoint answers 501 NOT_CONFIGURED.\n");
            continue;
        }
        out.push_str("| endpoint |");
        for s in &chain {
            out.push_str(&format!(" `{}` |", s.id));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(chain.len()));
        out.push('\n');
        for id in EndpointId::ALL
            .into_iter()
            .filter(|id| id.meta().platform == platform)
        {
            out.push_str(&format!("| `{}` |", id.meta().path));
            for s in &chain {
                out.push_str(&format!(" {} |", cell(s, id)));
            }
            out.push('\n');
        }
    }
    out
}

fn cell(source: &Source, endpoint: EndpointId) -> &'static str {
    match source.handlers.slot(endpoint) {
        None => "-",
        Some(slot) if slot.conditional => "some requests",
        Some(_) if source.needs_credential_for(endpoint) => "with credential",
        Some(_) => "yes",
    }
}
