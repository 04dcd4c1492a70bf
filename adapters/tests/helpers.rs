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
