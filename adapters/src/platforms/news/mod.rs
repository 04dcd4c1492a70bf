//! news: a news aggregator's search of articles.
//!
//! Item type `article`. `author` is the publisher's host name (`example.com`), `author_name` the
//! publisher's name when the source gives one.
//!
//! `extra` keys: `source` (publisher name), `source_url` (publisher site), `guid` (the feed's id of
//! the entry), `language` and `source_country` (GDELT only), `image` (GDELT's social image).

pub mod gdelt;
pub mod google_news;

pub const PLATFORM: &str = "news";

/// `"Headline - Publisher"` -> `"Headline"` when the suffix is exactly the publisher's name.
pub fn strip_publisher(title: &str, publisher: Option<&str>) -> String {
    match publisher.and_then(|p| title.strip_suffix(p)) {
        Some(rest) => match rest
            .strip_suffix(" - ")
            .or_else(|| rest.strip_suffix(" – "))
        {
            Some(head) if !head.trim().is_empty() => head.trim().to_string(),
            _ => title.to_string(),
        },
        None => title.to_string(),
    }
}

/// The language part of a code: `en-US` -> `en`.
pub fn language_prefix(lang: &str) -> String {
    lang.split(['-', '_'])
        .next()
        .unwrap_or(lang)
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publisher_suffix() {
        assert_eq!(strip_publisher("A - B - Reuters", Some("Reuters")), "A - B");
        assert_eq!(strip_publisher("A - B", Some("Reuters")), "A - B");
        assert_eq!(strip_publisher(" - Reuters", Some("Reuters")), " - Reuters");
        assert_eq!(strip_publisher("A", None), "A");
        assert_eq!(language_prefix("pt-BR"), "pt");
    }
}
