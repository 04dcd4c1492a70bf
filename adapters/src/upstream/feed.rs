//! Feeds read into plain entries, for any source that reads a feed: RSS 0.9x, RSS 1.0 (RDF),
//! RSS 2.0 and Atom on quick-xml, JSON Feed 1.0 and 1.1 on serde_json. Dates are normalised
//! (RFC 2822 `pubDate`, ISO `updated`/`published`/`dc:date`, JSON Feed's `date_published`, in
//! whatever form the feed actually wrote them); HTML fields are kept as sent so the source decides
//! how to turn them into text. Why not a feed crate: see docs/decisions.md ("Feeds").

use std::collections::BTreeMap;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// One `<item>` (RSS) or `<entry>` (Atom).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedEntry {
    pub title: Option<String>,
    pub link: Option<String>,
    /// RSS `guid` or Atom `id`.
    pub guid: Option<String>,
    /// `YYYY-MM-DDTHH:MM:SSZ`: `pubDate`, `published`, `dc:date` or else `updated`.
    pub published: Option<String>,
    /// `description`, `summary` or `content` as written (often HTML).
    pub summary: Option<String>,
    /// RSS `author`/`dc:creator`, Atom `author/name`.
    pub author: Option<String>,
    /// RSS `<source url="...">Name</source>` (aggregators name the publisher there).
    pub source_name: Option<String>,
    pub source_url: Option<String>,
    pub categories: Vec<String>,
    /// Namespaced extension elements of the entry (`yt:videoId`, `media:description`), by their
    /// qualified name as written; attributes as `name@attribute` (`media:statistics@views`). The
    /// first value of a name wins; nesting is not kept (`media:group/media:title` is `media:title`).
    pub extensions: BTreeMap<String, String>,
}

/// The entries of an RSS 0.9x, RSS 1.0 (RDF), RSS 2.0, Atom or JSON Feed document, in document
/// order.
pub fn parse(xml: &str) -> Result<Vec<FeedEntry>, String> {
    let body = xml.trim_start_matches('\u{feff}').trim_start();
    if body.starts_with('{') {
        return parse_json_feed(body);
    }
    parse_xml(body)
}

/// JSON Feed (<https://jsonfeed.org/version/1.1>), also 1.0's single `author` and numeric ids.
fn parse_json_feed(body: &str) -> Result<Vec<FeedEntry>, String> {
    use super::json;
    use serde_json::Value;
    let doc: Value =
        serde_json::from_str(body).map_err(|e| format!("not well-formed JSON: {e}"))?;
    let version = json::str(&doc, "version").unwrap_or_default();
    if !version.starts_with("https://jsonfeed.org/version/") {
        return Err("not a JSON Feed (no `version` of https://jsonfeed.org)".into());
    }
    let items = match doc.get("items") {
        Some(Value::Array(items)) => items,
        _ => return Err("a JSON Feed without an `items` array".into()),
    };
    let date = |item: &Value, key: &str| json::str(item, key).and_then(super::dates::parse_text);
    Ok(items
        .iter()
        .map(|item| {
            let author = item
                .get("authors")
                .and_then(|a| a.get(0))
                .or_else(|| item.get("author"));
            FeedEntry {
                title: json::string(item, "title"),
                link: json::string(item, "url").or_else(|| json::string(item, "external_url")),
                guid: json::id(item, "id"),
                published: date(item, "date_published").or_else(|| date(item, "date_modified")),
                summary: json::string(item, "summary")
                    .or_else(|| json::string(item, "content_html"))
                    .or_else(|| json::string(item, "content_text")),
                author: author.and_then(|a| json::string(a, "name")),
                categories: item
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|tags| {
                        tags.iter()
                            .filter_map(|t| t.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                ..FeedEntry::default()
            }
        })
        .collect())
}

fn parse_xml(xml: &str) -> Result<Vec<FeedEntry>, String> {
    let mut reader = Reader::from_str(xml);
    let mut entries = Vec::new();
    let mut current: Option<FeedEntry> = None;
    // Local names of the open elements, and the text collected for the innermost one.
    let mut path: Vec<String> = Vec::new();
    // Qualified names (`prefix:local`) of the same elements, for extension elements.
    let mut qualified: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut updated: Option<String> = None;
    let mut root_seen = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("not well-formed XML: {e}"))?;
        match event {
            Event::Start(e) => {
                let name = local(&e);
                if !root_seen {
                    root_seen = true;
                    if !matches!(name.as_str(), "rss" | "feed" | "RDF") {
                        return Err(format!("not an RSS or Atom feed (root element `{name}`)"));
                    }
                }
                if matches!(name.as_str(), "item" | "entry") && current.is_none() {
                    // An RSS 1.0 item is named by its `rdf:about` (the format has no guid).
                    current = Some(FeedEntry {
                        guid: attr(&e, "rdf:about"),
                        ..FeedEntry::default()
                    });
                    updated = None;
                } else if let Some(entry) = current.as_mut() {
                    start_attrs(entry, &name, &e);
                    extension_attrs(entry, &e);
                }
                path.push(name);
                qualified.push(qname(&e));
                text.clear();
            }
            Event::Empty(e) => {
                let name = local(&e);
                if let Some(entry) = current.as_mut() {
                    start_attrs(entry, &name, &e);
                    extension_attrs(entry, &e);
                }
            }
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::CData(t) => text.push_str(&t.into_inner()),
            Event::GeneralRef(r) => match r.resolve_char_ref() {
                Ok(Some(c)) => text.push(c),
                _ => {
                    let name = r.into_inner();
                    match quick_xml::escape::resolve_predefined_entity(&name) {
                        Some(v) => text.push_str(v),
                        None => {
                            text.push_str(&crate::upstream::html::unescape(&format!("&{name};")))
                        }
                    }
                }
            },
            Event::End(_) => {
                let Some(name) = path.pop() else { continue };
                let qualified_name = qualified.pop().unwrap_or_default();
                let value = std::mem::take(&mut text);
                let value = value.trim();
                if matches!(name.as_str(), "item" | "entry") {
                    if let Some(mut entry) = current.take() {
                        if entry.published.is_none() {
                            entry.published = updated.take();
                        }
                        entries.push(entry);
                    }
                    continue;
                }
                let Some(entry) = current.as_mut() else {
                    continue;
                };
                let parent = path.last().map(String::as_str).unwrap_or("");
                let value = (!value.is_empty()).then(|| value.to_string());
                if let (true, Some(v)) = (qualified_name.contains(':'), &value) {
                    entry
                        .extensions
                        .entry(qualified_name)
                        .or_insert_with(|| v.clone());
                }
                let set = |slot: &mut Option<String>, v: Option<String>| {
                    if slot.is_none() {
                        *slot = v;
                    }
                };
                match (parent, name.as_str()) {
                    ("author", "name") => set(&mut entry.author, value),
                    ("source", "title") => set(&mut entry.source_name, value),
                    ("item" | "entry", "title") => set(&mut entry.title, value),
                    ("item", "link") => set(&mut entry.link, value),
                    ("item", "guid") | ("entry", "id") => set(&mut entry.guid, value),
                    ("item" | "entry", "pubDate" | "published" | "date" | "issued") => set(
                        &mut entry.published,
                        value.as_deref().and_then(super::dates::parse_text),
                    ),
                    ("entry" | "item", "updated" | "modified") => set(
                        &mut updated,
                        value.as_deref().and_then(super::dates::parse_text),
                    ),
                    ("item" | "entry", "description" | "summary" | "content" | "encoded") => {
                        set(&mut entry.summary, value)
                    }
                    ("item", "author" | "creator") => set(&mut entry.author, value),
                    ("item", "source") => set(&mut entry.source_name, value),
                    ("item" | "entry", "category") | ("item", "subject") => {
                        entry.categories.extend(value)
                    }
                    _ => {}
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !root_seen {
        return Err("empty document".into());
    }
    Ok(entries)
}

fn local(e: &BytesStart<'_>) -> String {
    e.local_name().as_ref().to_string()
}

fn qname(e: &BytesStart<'_>) -> String {
    e.name().as_ref().to_string()
}

/// Attributes of a namespaced element, as `name@attribute`.
fn extension_attrs(entry: &mut FeedEntry, e: &BytesStart<'_>) {
    let name = qname(e);
    if !name.contains(':') {
        return;
    }
    for a in e.attributes().flatten() {
        let key = a.key.as_ref().to_string();
        if key.starts_with("xmlns") {
            continue;
        }
        if let Some(v) = attr(e, &key) {
            entry.extensions.entry(format!("{name}@{key}")).or_insert(v);
        }
    }
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let a = e.try_get_attribute(name).ok().flatten()?;
    let v = a
        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
        .ok()?
        .trim()
        .to_string();
    (!v.is_empty()).then_some(v)
}

/// Values carried in attributes: Atom `<link href rel>`, RSS `<source url>`, Atom `<category term>`.
fn start_attrs(entry: &mut FeedEntry, name: &str, e: &BytesStart<'_>) {
    match name {
        "link" => {
            let rel = attr(e, "rel");
            if matches!(rel.as_deref(), None | Some("alternate")) && entry.link.is_none() {
                entry.link = attr(e, "href");
            }
        }
        "source" if entry.source_url.is_none() => entry.source_url = attr(e, "url"),
        "category" => entry.categories.extend(attr(e, "term")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rss_items() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>t</title>
<item><title>Rust &amp; Go &#8211; news - Example</title><link>https://e.com/a</link>
<guid isPermaLink="false">abc</guid><pubDate>Tue, 10 Mar 2026 14:05:00 GMT</pubDate>
<description><![CDATA[<a href="x">Rust</a>&nbsp;<font>Example</font>]]></description>
<source url="https://www.example.com">Example</source><dc:creator>Ann</dc:creator></item>
<item><title></title></item>
</channel></rss>"#;
        let entries = parse(xml).unwrap();
        assert_eq!(entries.len(), 2);
        let e = &entries[0];
        assert_eq!(e.title.as_deref(), Some("Rust & Go – news - Example"));
        assert_eq!(e.link.as_deref(), Some("https://e.com/a"));
        assert_eq!(e.guid.as_deref(), Some("abc"));
        assert_eq!(e.published.as_deref(), Some("2026-03-10T14:05:00Z"));
        assert_eq!(
            e.summary.as_deref(),
            Some(r#"<a href="x">Rust</a>&nbsp;<font>Example</font>"#)
        );
        assert_eq!(e.source_name.as_deref(), Some("Example"));
        assert_eq!(e.source_url.as_deref(), Some("https://www.example.com"));
        assert_eq!(e.author.as_deref(), Some("Ann"));
        assert_eq!(entries[1], FeedEntry::default());
    }

    #[test]
    fn atom_entries() {
        let xml = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>f</title>
<entry><id>t3_abc</id><title type="html">A &lt;b&gt;</title>
<link rel="alternate" href="https://e.com/x"/><link rel="enclosure" href="https://e.com/y"/>
<updated>2026-03-10T15:05:00+01:00</updated><author><name>/u/bob</name></author>
<content type="html">&lt;p&gt;hi&lt;/p&gt;</content><category term="rust" label="r/rust"/></entry></feed>"#;
        let e = &parse(xml).unwrap()[0];
        assert_eq!(e.guid.as_deref(), Some("t3_abc"));
        assert_eq!(e.title.as_deref(), Some("A <b>"));
        assert_eq!(e.link.as_deref(), Some("https://e.com/x"));
        assert_eq!(e.published.as_deref(), Some("2026-03-10T14:05:00Z"));
        assert_eq!(e.author.as_deref(), Some("/u/bob"));
        assert_eq!(e.summary.as_deref(), Some("<p>hi</p>"));
        assert_eq!(e.categories, ["rust"]);
    }

    #[test]
    fn extension_elements() {
        let xml = r#"<feed xmlns="http://www.w3.org/2005/Atom" xmlns:yt="http://www.youtube.com/xml/schemas/2015" xmlns:media="http://search.yahoo.com/mrss/">
<entry><yt:videoId>abc</yt:videoId><title>T</title><media:group><media:title>T</media:title>
<media:thumbnail url="https://i.ytimg.com/vi/abc/hqdefault.jpg" width="480"/>
<media:community><media:starRating count="5" average="4.80"/><media:statistics views="12"/></media:community>
</media:group></entry></feed>"#;
        let e = &parse(xml).unwrap()[0];
        assert_eq!(e.extensions["yt:videoId"], "abc");
        assert_eq!(e.extensions["media:title"], "T");
        assert_eq!(e.extensions["media:starRating@count"], "5");
        assert_eq!(e.extensions["media:statistics@views"], "12");
        assert_eq!(
            e.extensions["media:thumbnail@url"],
            "https://i.ytimg.com/vi/abc/hqdefault.jpg"
        );
    }

    #[test]
    fn refuses_other_documents() {
        assert!(parse("<html><body>blocked</body></html>").is_err());
        assert!(parse("{\"json\": true}").is_err());
        assert!(parse("<rss><channel><item><title>x</item></rss>").is_err());
    }
}
