//! HTML from upstreams: character references decoded with the full HTML5 table (2,231 names),
//! fragments turned into plain text, and pages read with an HTML5 parser (html5ever, through
//! `scraper`) so that sources select elements and read the JSON that pages embed in `<script>`
//! tags the way a browser would, unclosed tags and all.

use scraper::{ElementRef, Html, Selector};

/// Decodes named, decimal and hex character references; unknown ones are left as written, and
/// one pass decodes one level (`&amp;amp;` is `&amp;`).
pub fn unescape(s: &str) -> String {
    html_escape::decode_html_entities(s).into_owned()
}

/// Elements whose start and end are line breaks in the text.
const BLOCKS: [&str; 24] = [
    "p",
    "br",
    "div",
    "li",
    "pre",
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "dt",
    "dd",
    "tr",
    "hr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "figcaption",
];

/// Elements whose content is never text a reader sees.
const HIDDEN: [&str; 6] = ["script", "style", "template", "noscript", "head", "iframe"];

/// Plain text of an HTML fragment: block elements (`<p>`, `<br>`, `<li>`, headings, ...) become
/// line breaks, other tags vanish, scripts and styles are dropped, and entities are decoded once
/// by the parser (so `&lt;b&gt;` stays visible text).
pub fn to_text(html: &str) -> String {
    if !html.contains(['<', '&']) {
        return tidy(html);
    }
    text_of(Html::parse_fragment(html).root_element())
}

/// `to_text`, with empty results as `None`.
pub fn text_or_none(html: Option<&str>) -> Option<String> {
    html.map(to_text).filter(|t| !t.is_empty())
}

/// Line ends trimmed, leading and trailing blank space removed.
fn tidy(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim().to_string()
}

/// The text of an element under the rules of `to_text`. The walk keeps its own stack, so a page
/// nested thousands of levels deep cannot exhaust the thread's stack.
fn text_of(root: ElementRef<'_>) -> String {
    enum Step<'a> {
        Enter(ElementRef<'a>),
        Text(&'a str),
        Leave,
    }
    fn line_break(out: &mut String) {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
    }
    let mut out = String::new();
    let mut stack = vec![Step::Enter(root)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Text(t) => out.push_str(t),
            Step::Leave => line_break(&mut out),
            Step::Enter(e) => {
                let name = e.value().name();
                if HIDDEN.contains(&name) {
                    continue;
                }
                let block = BLOCKS.contains(&name);
                if block {
                    line_break(&mut out);
                    stack.push(Step::Leave);
                }
                let first = stack.len();
                for child in e.children() {
                    if let Some(el) = ElementRef::wrap(child) {
                        stack.push(Step::Enter(el));
                    } else if let Some(t) = child.value().as_text() {
                        stack.push(Step::Text(t));
                    }
                }
                // Children were pushed in document order; the stack pops the last first.
                stack[first..].reverse();
            }
        }
    }
    tidy(&out)
}

/// A selector that does not parse: a mistake in the source's code, reported rather than panicking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadSelector(pub String);

impl std::fmt::Display for BadSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad CSS selector: {}", self.0)
    }
}

fn selector(css: &str) -> Result<Selector, BadSelector> {
    Selector::parse(css).map_err(|e| BadSelector(format!("`{css}`: {e}")))
}

/// A whole HTML page (a result page, a profile page) parsed as a browser would.
pub struct Page {
    html: Html,
}

impl Page {
    pub fn parse(html: &str) -> Self {
        Page {
            html: Html::parse_document(html),
        }
    }

    /// The elements matching a CSS selector, in document order.
    pub fn select(&self, css: &str) -> Result<Vec<Element<'_>>, BadSelector> {
        let sel = selector(css)?;
        Ok(self.html.select(&sel).map(Element).collect())
    }

    /// The first element matching a CSS selector.
    pub fn first(&self, css: &str) -> Result<Option<Element<'_>>, BadSelector> {
        let sel = selector(css)?;
        Ok(self.html.select(&sel).next().map(Element))
    }

    /// The JSON inside `<script type="application/json" id="...">` (the state a server-rendered
    /// page hands its scripts, e.g. `__NEXT_DATA__`); `None` when there is no such script or its
    /// content is not JSON.
    pub fn script_json(&self, id: &str) -> Option<serde_json::Value> {
        self.html
            .select(&selector("script").ok()?)
            .filter(|s| s.value().id() == Some(id) && is_json_script(*s))
            .find_map(|s| serde_json::from_str(&script_body(s)).ok())
    }

    /// Every `<script type="application/ld+json">` block that parses, in document order; a block
    /// holding an array gives its members. Pages often carry a broken block beside good ones, so
    /// one that does not parse is skipped, not an error.
    pub fn ld_json(&self) -> Vec<serde_json::Value> {
        let Ok(sel) = selector("script") else {
            return Vec::new();
        };
        self.html
            .select(&sel)
            .filter(|s| script_type(*s).as_deref() == Some("application/ld+json"))
            .filter_map(|s| serde_json::from_str(&script_body(s)).ok())
            .flat_map(|v| match v {
                serde_json::Value::Array(items) => items,
                other => vec![other],
            })
            .collect()
    }
}

/// The `type` of a script, lower-cased and without parameters (`application/json; charset=utf-8`).
fn script_type(s: ElementRef<'_>) -> Option<String> {
    let t = s.value().attr("type")?;
    Some(t.split(';').next()?.trim().to_ascii_lowercase())
}

fn is_json_script(s: ElementRef<'_>) -> bool {
    matches!(
        script_type(s).as_deref(),
        Some("application/json" | "application/ld+json")
    )
}

/// Script content is raw text in HTML5: no entity is decoded and no tag is read inside it.
fn script_body(s: ElementRef<'_>) -> String {
    s.text().collect()
}

/// One element of a `Page`.
#[derive(Clone, Copy)]
pub struct Element<'a>(ElementRef<'a>);

impl<'a> Element<'a> {
    /// The tag name, lower-case.
    pub fn name(&self) -> &'a str {
        self.0.value().name()
    }

    /// An attribute's value, entities decoded.
    pub fn attr(&self, name: &str) -> Option<&'a str> {
        self.0.value().attr(name)
    }

    /// The element's text under the rules of `to_text`.
    pub fn text(&self) -> String {
        text_of(self.0)
    }

    /// The element's content as HTML (for a source that keeps markup).
    pub fn inner_html(&self) -> String {
        self.0.inner_html()
    }

    /// Descendants matching a CSS selector, in document order.
    pub fn select(&self, css: &str) -> Result<Vec<Element<'a>>, BadSelector> {
        let sel = selector(css)?;
        Ok(self.0.select(&sel).map(Element).collect())
    }

    /// The first descendant matching a CSS selector.
    pub fn first(&self, css: &str) -> Result<Option<Element<'a>>, BadSelector> {
        let sel = selector(css)?;
        Ok(self.0.select(&sel).next().map(Element))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities() {
        assert_eq!(
            unescape("a &amp; b &#39;c&#x27; &eacute;x &"),
            "a & b 'c' éx &"
        );
        assert_eq!(unescape("&#0;"), "&#0;");
    }

    #[test]
    fn tags_and_breaks() {
        assert_eq!(
            to_text("Hi<p>there &lt;b&gt; <a href=\"x\">link</a><br/>end"),
            "Hi\nthere <b> link\nend"
        );
        assert_eq!(text_or_none(Some("<p></p>")), None);
        assert_eq!(to_text("a < b"), "a < b");
    }

    #[test]
    fn entities_of_many_languages() {
        for (input, want) in [
            // French, German, Spanish, Polish, Greek, Czech and Nordic names from the HTML5 table.
            (
                "Fran&ccedil;ais &agrave; l&rsquo;&eacute;t&eacute; &oelig;uvre",
                "Français à l’été œuvre",
            ),
            (
                "Stra&szlig;e &uuml;ber &Auml;rger &ouml;",
                "Straße über Ärger ö",
            ),
            ("&iquest;Ma&ntilde;ana? &iexcl;S&iacute;!", "¿Mañana? ¡Sí!"),
            (
                "&Lstrok;&oacute;d&zacute; &zdot;&oacute;&lstrok;w &eogon;&aogon;",
                "Łódź żółw ęą",
            ),
            (
                "&Alpha;&theta;&eta;&nu;&alpha; &lambda;&omega;&sigmaf;",
                "Αθηνα λως",
            ),
            (
                "&Scaron;koda &Rcaron;&iacute;jen &aring;&oslash;&aelig;",
                "Škoda Říjen åøæ",
            ),
            // Numeric and hex references, upper-case X, astral code points.
            ("&#233;&#xe9;&#XE9;&#x1F600;&#128512;", "ééé😀😀"),
            // One pass, one level: double-escaped text keeps one escape.
            ("&amp;amp; &amp;lt;", "&amp; &lt;"),
            // Unknown names and bare ampersands stay as written.
            ("&foo; AT&T &", "&foo; AT&T &"),
            // Names the HTML5 table has beyond the old 22, several of two code points.
            ("&hearts;&rarr;&NotEqualTilde;&fjlig;", "♥→≂̸fj"),
        ] {
            assert_eq!(unescape(input), want, "{input}");
            // The parser behind `to_text` decodes the same references in text.
            assert_eq!(to_text(input), want.trim(), "{input}");
        }
        // A legacy name without `;` (`&copy`) stays as written in API text, where it is most likely
        // a URL's query; the HTML5 parser decodes it in page text, as a browser shows it.
        assert_eq!(unescape("a=1&copy=2"), "a=1&copy=2");
        assert_eq!(to_text("a=1&copy=2"), "a=1©=2");
        // No NUL comes out of a reference (it would end strings in C-based clients).
        assert!(!unescape("&#0;").contains('\0'));
    }

    #[test]
    fn text_of_messy_fragments() {
        // Unclosed paragraphs and list items, a stray end tag, a comment and a script.
        let html = "<p>Caf&eacute; <b>cr&egrave;me<p>Second</i> line<ul><li>one<li>two</ul>\
                    <!-- note --><script>var s = '</p>';</script><style>p{}</style>end";
        assert_eq!(to_text(html), "Café crème\nSecond line\none\ntwo\nend");
        // Headings and table rows are lines too; `&nbsp;` is a no-break space, not a break.
        assert_eq!(
            to_text("<h2>Title</h2>x&nbsp;y<table><tr><td>a</td><td>b</td></tr><tr><td>c</table>"),
            "Title\nx\u{a0}y\nab\nc"
        );
        // Deep nesting, as broken generators produce, is walked without recursion.
        let deep = format!("{}deep{}", "<div>".repeat(3_000), "</div>".repeat(3_000));
        assert_eq!(to_text(&deep), "deep");
        assert_eq!(text_or_none(Some("<script>x</script> ")), None);
    }
}
