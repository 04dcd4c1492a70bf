//! The shared upstream helpers on real-world input: an HTML result page written the way such pages
//! are (unclosed tags, entities in attributes, scripts holding `</` in strings, JSON in script
//! tags), and feeds of every family (RSS 0.91, RSS 1.0, RSS 2.0, Atom, JSON Feed).

use adapters::upstream::html::{Page, to_text};

const RESULTS: &str = include_str!("../../tests/fixtures/html/results.html");

fn texts(page: &Page, css: &str) -> Vec<String> {
    page.select(css).unwrap().iter().map(|e| e.text()).collect()
}

#[test]
fn a_result_page_is_read_as_a_browser_reads_it() {
    let page = Page::parse(RESULTS);
    assert_eq!(
        texts(&page, "title"),
        ["Suche: München & Umgebung – Ergebnisse"]
    );
    // Three results although none of their paragraphs and two of their links are closed. As in a
    // browser, the unclosed `<i>` of the second result adopts the third (so it is a descendant of
    // `#results`, not a child): sources select by descendant, not by exact nesting.
    assert_eq!(page.select("#results > .result").unwrap().len(), 2);
    let results = page.select("#results .result").unwrap();
    let ids: Vec<_> = results.iter().filter_map(|r| r.attr("data-id")).collect();
    assert_eq!(ids, ["101", "102", "103"]);

    let first = &results[0];
    let link = first.first("h3 a").unwrap().unwrap();
    // Entities in attributes are decoded; a legacy name followed by `=` in an attribute is not
    // (HTML5's rule, so `&copy=1` in the second link stays a query parameter).
    assert_eq!(
        link.attr("href"),
        Some("https://news.example.de/artikel?id=101&ref=suche&lang=de")
    );
    assert_eq!(link.attr("title"), Some("Straßenbahn fährt wieder"));
    assert_eq!(link.text(), "Straßenbahn fährt wieder");
    let snippet = first.first("p.snippet").unwrap().unwrap();
    assert_eq!(
        snippet.text(),
        "Die Tram zwischen München und Grünwald fährt ab Montag – sagt die MVG.\n    vor 2 Std."
    );
    assert_eq!(
        first.first(".date").unwrap().unwrap().attr("datetime"),
        Some("2026-03-10T15:05:00+01:00")
    );
    assert_eq!(
        results[1].first("a").unwrap().unwrap().attr("href"),
        Some("/artikel?id=102&copy=1")
    );
    assert_eq!(
        texts(&page, ".result:nth-child(2) p.snippet"),
        ["Erster Absatz", "Zweiter Absatz"]
    );
    assert_eq!(results[2].text(), "Ohne Schluss");
    assert_eq!(results[1].name(), "div");
    assert!(results[0].inner_html().contains("<b>München</b>"));

    // The script's `</p>` and `<div>` in strings neither end it nor become elements or text.
    assert_eq!(page.select(".result").unwrap().len(), 3);
    let body = page.first("body").unwrap().unwrap().text();
    assert!(!body.contains("document.write"), "{body}");
    assert!(!body.contains("color: red"), "{body}");
}

#[test]
fn json_embedded_in_script_tags() {
    let page = Page::parse(RESULTS);
    let data = page.script_json("__NEXT_DATA__").unwrap();
    // Script content is raw text: `</div>` inside a JSON string does not end the script, and
    // nothing in it is read as an entity.
    assert_eq!(data["props"]["pageProps"]["query"], "München");
    assert_eq!(data["props"]["pageProps"]["html"], "<p>x</p></div>");
    assert_eq!(
        data["props"]["pageProps"]["next"],
        "/suche?q=M%C3%BCnchen&page=2"
    );
    // An empty JSON script, a script that is not JSON, and an absent id give nothing.
    assert_eq!(page.script_json("empty"), None);
    assert_eq!(page.script_json("tpl"), None);
    assert_eq!(page.script_json("missing"), None);

    // Linked data: the broken block is skipped, an array gives its members, `&amp;` stays as
    // written (it is JSON, not HTML).
    let ld = page.ld_json();
    let types: Vec<_> = ld.iter().map(|v| v["@type"].as_str().unwrap()).collect();
    assert_eq!(types, ["WebSite", "NewsArticle", "NewsArticle"]);
    assert_eq!(ld[0]["name"], "Nachrichten &amp; mehr");
    assert_eq!(ld[2]["headline"], "Zweite");
}

#[test]
fn bad_selectors_are_errors_not_panics() {
    let page = Page::parse(RESULTS);
    let err = page.select("div[").err().unwrap();
    assert!(err.to_string().contains("div["), "{err}");
    assert!(page.first("::nonsense(").is_err());
    assert!(page.select("p.nothing-here").unwrap().is_empty());
}

#[test]
fn fragment_text_and_page_text_agree() {
    let page = Page::parse("<p>Caf&eacute; <i>cr&egrave;me</i><br>Stra&szlig;e</p>");
    assert_eq!(
        page.first("p").unwrap().unwrap().text(),
        "Café crème\nStraße"
    );
    assert_eq!(
        to_text("<p>Caf&eacute; <i>cr&egrave;me</i><br>Stra&szlig;e</p>"),
        "Café crème\nStraße"
    );
}

mod feeds {
    use adapters::upstream::feed::{FeedEntry, parse};
    use adapters::upstream::html::to_text;

    const RSS_091: &str = include_str!("../../tests/fixtures/feeds/rss091.xml");
    const RSS_10: &str = include_str!("../../tests/fixtures/feeds/rss10.rdf");
    const JSON_FEED: &str = include_str!("../../tests/fixtures/feeds/jsonfeed.json");

    #[test]
    fn rss_091_with_html_entities_of_its_dtd() {
        let entries = parse(RSS_091).unwrap();
        assert_eq!(entries.len(), 2);
        let e = &entries[0];
        // RSS 0.91's DTD declares the HTML entities; they arrive decoded.
        assert_eq!(e.title.as_deref(), Some("L’été à Montréal & Québec"));
        assert_eq!(
            e.link.as_deref(),
            Some("https://journal.example.fr/ete?id=1&src=rss")
        );
        assert_eq!(
            e.summary.as_deref(),
            Some("Chaleur record – 35°C «\u{a0}du jamais vu\u{a0}».")
        );
        assert_eq!(e.published, None);
        assert_eq!(entries[1].title.as_deref(), Some("München: Straßenbahn"));
        // A Nepal offset (+05:45) on a leap day.
        assert_eq!(
            entries[1].published.as_deref(),
            Some("2024-02-29T12:00:00Z")
        );
    }

    #[test]
    fn rss_10_rdf() {
        let entries = parse(RSS_10).unwrap();
        assert_eq!(entries.len(), 2, "the channel is not an entry");
        let e = &entries[0];
        assert_eq!(e.title.as_deref(), Some("Łódź: nowy żółw w zoo"));
        assert_eq!(e.guid.as_deref(), Some("https://wiadomosci.example.pl/a/1"));
        assert_eq!(e.link.as_deref(), Some("https://wiadomosci.example.pl/a/1"));
        assert_eq!(e.author.as_deref(), Some("Zofia Żak"));
        assert_eq!(e.categories, ["zoo"]);
        // -03:30 past 23:30 on 29 February is 1 March in UTC.
        assert_eq!(e.published.as_deref(), Some("2024-03-01T03:00:00Z"));
        assert_eq!(
            to_text(e.summary.as_deref().unwrap()),
            "Zoo w Łodzi & okolice"
        );
        let g = &entries[1];
        assert_eq!(g.title.as_deref(), Some("Κατάσταση στην Αθήνα"));
        assert_eq!(g.published.as_deref(), Some("2024-03-01T06:00:00Z"));
        assert_eq!(to_text(g.summary.as_deref().unwrap()), "Η Αθήνα σήμερα");
    }

    #[test]
    fn json_feed_11_and_10() {
        let entries = parse(JSON_FEED).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(
            entries[0],
            FeedEntry {
                title: Some("¿Mañana? ¡Sí!".into()),
                link: Some("https://ana.example.es/2024/manana".into()),
                guid: Some("https://ana.example.es/2024/manana".into()),
                published: Some("2024-02-29T15:00:00Z".into()),
                summary: Some("Un resumen".into()),
                author: Some("Ana Núñez".into()),
                categories: vec!["vida".into(), "español".into()],
                ..FeedEntry::default()
            }
        );
        // JSON Feed 1.0: a numeric id, a single `author`, only `external_url`, only a modified
        // date (written in RFC 2822 by a sloppy generator).
        let e = &entries[1];
        assert_eq!(e.guid.as_deref(), Some("2"));
        assert_eq!(e.link.as_deref(), Some("https://elsewhere.example.com/x"));
        assert_eq!(e.author.as_deref(), Some("Ana (JSON Feed 1.0)"));
        assert_eq!(e.summary.as_deref(), Some("Solo texto"));
        assert_eq!(e.published.as_deref(), Some("2024-03-01T10:00:00Z"));
        // A date that is no date is left out, not guessed.
        assert_eq!(entries[2].published, None);
    }

    #[test]
    fn json_that_is_not_a_feed_is_refused() {
        assert!(parse(r#"{"version": "1", "items": []}"#).is_err());
        assert!(parse(r#"{"version": "https://jsonfeed.org/version/1.1"}"#).is_err());
        assert!(parse(r#"{"version": "https://jsonfeed.org/version/1.1", "items": [}"#).is_err());
        assert_eq!(
            parse("\u{feff} {\"version\": \"https://jsonfeed.org/version/1\", \"items\": []}"),
            Ok(vec![])
        );
    }
}
