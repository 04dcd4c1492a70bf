//! Small decoders upstream answers need: standard base64 (GitHub's file contents, wrapped in
//! lines) and the host of a URL (a publisher name when nothing better is given).

/// Standard or URL-safe base64, padding optional, whitespace ignored; `None` on any other byte.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            c if c.is_ascii_whitespace() => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits & 0xff) as u8);
        }
    }
    Some(out)
}

/// `https://www.example.com:8080/a?b` -> `example.com`: the publisher-style host, lower-cased and
/// without a leading `www.` (built on `upstream::host_of`).
pub fn url_host(url: &str) -> Option<String> {
    let host = super::host_of(url)?.to_ascii_lowercase();
    Some(
        host.strip_prefix("www.")
            .map(str::to_string)
            .unwrap_or(host),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64() {
        assert_eq!(
            base64_decode("IyBIZWxsbwrDvG5pY8O2\nZGU=\n").as_deref(),
            Some("# Hello\nünicöde".as_bytes())
        );
        assert_eq!(base64_decode("a*b"), None);
    }

    #[test]
    fn hosts() {
        assert_eq!(
            url_host("https://www.Example.com:8080/a?b").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            url_host("http://news.bbc.co.uk").as_deref(),
            Some("news.bbc.co.uk")
        );
        assert_eq!(url_host("not a url"), None);
    }
}
