//! HTML from upstreams turned into plain text: tags dropped, block breaks kept, entities decoded.

/// Decodes named, decimal and hex character references; unknown ones are left as written.
pub fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..]
            .find(|c: char| c == ';' || c == '&' || c.is_whitespace())
            .map(|i| i + 1);
        let decoded = end
            .filter(|e| rest.as_bytes().get(*e) == Some(&b';'))
            .and_then(|e| decode_entity(&rest[1..e]).map(|c| (c, e)));
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "hellip" => '…',
        "mdash" => '—',
        "ndash" => '–',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "euro" => '€',
        "pound" => '£',
        "middot" => '·',
        "bull" => '•',
        "laquo" => '«',
        "raquo" => '»',
        _ => return None,
    })
}

/// Plain text of an HTML fragment: `<p>` and `<br>` become line breaks, other tags vanish, and
/// entities are decoded after the tags are gone (so `&lt;b&gt;` stays visible text).
pub fn to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('>') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let tag = rest[open + 1..open + close]
            .trim_start_matches('/')
            .to_ascii_lowercase();
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or("");
        if matches!(name, "p" | "br" | "div" | "li" | "pre" | "blockquote")
            && !out.is_empty()
            && !out.ends_with('\n')
        {
            out.push('\n');
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    let text = unescape(&out);
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    lines.join("\n").trim().to_string()
}

/// `to_text`, with empty results as `None`.
pub fn text_or_none(html: Option<&str>) -> Option<String> {
    html.map(to_text).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities() {
        assert_eq!(
            unescape("a &amp; b &#39;c&#x27; &eacute;x &"),
            "a & b 'c' &eacute;x &"
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
}
