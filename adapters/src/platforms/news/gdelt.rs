//! GDELT DOC 2.0 article search (`https://api.gdeltproject.org/api/v2/doc/doc?mode=artlist`), the
//! fallback. No credential. The language filter is GDELT's `sourcelang:` query operator (it takes
//! language names); the country is not filtered, as GDELT's country operator uses FIPS codes that do
//! not match the ISO codes clients send. Dates are when GDELT saw the article.

use serde_json::Value;

use super::{PLATFORM, language_prefix};
use crate::api::Handlers;
use crate::api::news::{self, Search};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, dates, html, json};

/// GDELT's names of the languages it translates, by ISO 639-1 code.
const LANGUAGES: &[(&str, &str)] = &[
    ("ar", "arabic"),
    ("de", "german"),
    ("en", "english"),
    ("es", "spanish"),
    ("fr", "french"),
    ("hi", "hindi"),
    ("it", "italian"),
    ("ja", "japanese"),
    ("ko", "korean"),
    ("nl", "dutch"),
    ("pl", "polish"),
    ("pt", "portuguese"),
    ("ru", "russian"),
    ("sv", "swedish"),
    ("tr", "turkish"),
    ("uk", "ukrainian"),
    ("zh", "chinese"),
];

pub static SOURCE: Source = Source {
    id: "news.gdelt",
    default_base_url: "https://api.gdeltproject.org",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::News(news::Handlers {
        search: Some(serve!(search)),
    }),
};

async fn search(ctx: &Ctx<'_>, r: &Search) -> Result<Page, SourceError> {
    let lang = language_prefix(&r.lang);
    let query = match LANGUAGES.iter().find(|(code, _)| *code == lang) {
        Some((_, name)) => format!("{} sourcelang:{name}", r.query),
        None => r.query.clone(),
    };
    let req = ctx.get("api/v2/doc/doc").query(&[
        ("query", query.as_str()),
        ("mode", "artlist"),
        ("format", "json"),
        ("maxrecords", &r.limit.to_string()),
        ("sort", "hybridrel"),
    ]);
    // GDELT answers refusals (a too short or malformed query) with a plain-text 200.
    let body = ctx.text(req).await?;
    let body: Value = serde_json::from_str(body.trim()).map_err(|_| {
        SourceError::Malformed(format!(
            "not JSON: {}",
            body.chars().take(120).collect::<String>()
        ))
    })?;
    if !body.is_object() {
        return Err(SourceError::Malformed("expected a JSON object".into()));
    }
    // No match is an empty object, without `articles`.
    let mut items: Vec<Item> = json::array(&body, "articles")
        .iter()
        .filter_map(article_item)
        .collect();
    items.truncate(r.limit as usize);
    Ok(Page {
        items,
        total: None,
        next_cursor: None,
    })
}

/// GDELT titles sometimes carry a space before punctuation (`Hello , world !`).
fn tidy_title(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in html::unescape(t).trim().chars() {
        if matches!(c, ',' | ':' | ';' | '.' | '!' | '?') {
            while out.ends_with(' ') {
                out.pop();
            }
        }
        out.push(c);
    }
    out
}

fn article_item(a: &Value) -> Option<Item> {
    let url = json::string(a, "url")?;
    let mut item = Item::new(PLATFORM, "article", url.clone());
    item.title = json::str(a, "title").map(tidy_title);
    item.url = Some(url);
    item.author = json::string(a, "domain");
    item.created_at = json::str(a, "seendate").and_then(dates::parse_text);
    item.extra("language", json::string(a, "language"));
    item.extra("source_country", json::string(a, "sourcecountry"));
    item.extra("image", json::string(a, "socialimage"));
    item.extra(
        "source_url",
        json::str(a, "domain").map(|d| format!("https://{d}")),
    );
    Some(item)
}

#[cfg(test)]
mod tests {
    #[test]
    fn titles() {
        assert_eq!(
            super::tidy_title("Hello , world ! Q &amp; A"),
            "Hello, world! Q & A"
        );
    }
}
