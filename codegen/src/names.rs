//! How catalogue names become Rust names, in one place.

use crate::model::Method;

pub fn is_snake(s: &str) -> bool {
    !s.is_empty()
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub fn is_screaming(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `full_name` -> `FullName`, `pull-request` -> `PullRequest`, `3d` -> `V3d`.
pub fn camel(s: &str) -> String {
    let mut out = String::new();
    for part in s
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
    {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'V');
    }
    out
}

pub fn screaming(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The unique snake_case name of an operation: the handler when given, else the path after `/v1/`.
pub fn op_ident(path: &str, method: Method, handler: Option<&str>) -> String {
    if let Some(h) = handler {
        return h.to_string();
    }
    let base = path
        .trim_start_matches("/v1/")
        .split('/')
        .map(|seg| {
            seg.trim_start_matches('{')
                .trim_end_matches('}')
                .replace(['-', '.'], "_")
        })
        .collect::<Vec<_>>()
        .join("_");
    match method {
        Method::Get => base,
        Method::Post => format!("post_{base}"),
        Method::Delete => format!("delete_{base}"),
    }
}

/// The request struct of a platform endpoint inside its platform module: `/v1/forum/community/search`
/// -> `CommunitySearch`.
pub fn platform_struct(path: &str, platform: &str) -> String {
    let rest = path.trim_start_matches(&format!("/v1/{platform}/"));
    camel(&rest.replace('/', "_"))
}

/// The handler slot of a platform endpoint in its platform's `Handlers` table:
/// `/v1/forum/community/search` -> `community_search`.
pub fn slot_field(path: &str, platform: &str) -> String {
    let rest = path.trim_start_matches(&format!("/v1/{platform}/"));
    field(&rest.replace(['/', '-', '.'], "_"))
}

/// Field names that are Rust keywords get a raw identifier.
pub fn field(name: &str) -> String {
    match name {
        "type" | "ref" | "match" | "use" | "mod" | "move" | "loop" | "fn" | "impl" | "in"
        | "as" => format!("r#{name}"),
        _ => name.to_string(),
    }
}
