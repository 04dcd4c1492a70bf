//! Cursors handed to clients: `base64url(source id, newline, upstream cursor)`. They record which
//! source made them, so the next page goes to that source first, and they are opaque to clients.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

pub fn encode(source_id: &str, upstream: &str) -> String {
    let raw = format!("{source_id}\n{upstream}");
    let bytes = raw.as_bytes();
    let mut out = String::with_capacity(bytes.len() * 4 / 3 + 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// `(source id, upstream cursor)`, or `None` when the text is not a cursor this service issued.
pub fn decode(cursor: &str) -> Option<(String, String)> {
    let mut bytes = Vec::with_capacity(cursor.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in cursor.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c)? as u32;
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((acc >> bits & 0xff) as u8);
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    let (source, upstream) = text.split_once('\n')?;
    (!source.is_empty() && !upstream.is_empty()).then(|| (source.to_string(), upstream.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for up in ["2", "t3_abc", "eyJ4IjoxfQ==", "ünïcode & more"] {
            let c = encode("forum.reddit_json", up);
            assert!(c.bytes().all(|b| ALPHABET.contains(&b)), "{c}");
            assert_eq!(decode(&c), Some(("forum.reddit_json".into(), up.into())));
        }
        assert_eq!(decode("not a cursor"), None);
        assert_eq!(decode("c2FtcGxl"), None, "valid base64 but no source id");
    }
}
