//! Small decoders upstream answers need: standard base64 (GitHub's file contents, wrapped in
//! lines) and the host of a URL (a publisher name when nothing better is given).

/// Standard or URL-safe base64, padding optional, whitespace ignored; `None` on any other byte.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    // GitHub wraps the content in lines and some upstreams drop the padding or use the URL-safe
    // alphabet: one lenient engine reads them all once the text is on one line in one alphabet.
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let compact: String = s
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    LENIENT.decode(compact).ok()
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
        // Unpadded, URL-safe, and padded with CRLF line wrapping as mail and GitHub send it.
        assert_eq!(base64_decode("-_8").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(base64_decode("+/8=").as_deref(), Some(&[0xfb, 0xff][..]));
        assert_eq!(
            base64_decode("w6lw\r\nw6k=\r\n").as_deref(),
            Some("épé".as_bytes())
        );
        assert_eq!(base64_decode("").as_deref(), Some(&[][..]));
        // Padding in the middle or a lone sixth bit group is not base64.
        assert_eq!(base64_decode("QQ==QQ=="), None);
        assert_eq!(base64_decode("QUJDR"), None);
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
