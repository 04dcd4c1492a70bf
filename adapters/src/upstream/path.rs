//! Values put into an upstream URL path. Every source builds its paths through [`segment`], so a
//! value can never add a segment (`/`), start the query (`?`) or fragment (`#`), or climb out of
//! the path (`..`, which URL parsers resolve even when percent-encoded, so it is refused).
//! Values that come from a cursor or an upstream's answer are also checked against the upstream's
//! own id grammar ([`digits`]) before use.

use crate::error::SourceError;

/// `value` percent-encoded as exactly one path segment (everything but RFC 3986 unreserved
/// characters), or a refusal for a value that cannot be one: empty, `.` or `..`.
pub fn segment(value: &str) -> Result<String, SourceError> {
    if value.is_empty() || value == "." || value == ".." {
        return Err(SourceError::Rejected(format!(
            "`{value}` cannot be sent as a path segment"
        )));
    }
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// `value` when it is a numeric id of 1-25 digits (X user and post ids, tech forum item ids);
/// otherwise a malformed-state error naming `what`.
pub fn digits<'a>(value: &'a str, what: &str) -> Result<&'a str, SourceError> {
    if (1..=25).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_digit()) {
        Ok(value)
    } else {
        Err(SourceError::Malformed(format!(
            "{what} is not a numeric id"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_segment_whatever_the_value() {
        assert_eq!(segment("rust").unwrap(), "rust");
        assert_eq!(segment("a.b-c_d~e").unwrap(), "a.b-c_d~e");
        assert_eq!(segment("a/b").unwrap(), "a%2Fb");
        assert_eq!(segment("x?y").unwrap(), "x%3Fy");
        assert_eq!(segment("x#y").unwrap(), "x%23y");
        assert_eq!(segment("%2e%2e").unwrap(), "%252e%252e");
        assert_eq!(segment("...").unwrap(), "...");
        assert_eq!(segment("日本").unwrap(), "%E6%97%A5%E6%9C%AC");
        for bad in ["", ".", ".."] {
            assert!(segment(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn numeric_ids_only() {
        assert_eq!(digits("2244994945", "user id").unwrap(), "2244994945");
        for bad in ["", "12a", "../1", "1/2", "1?x", &"9".repeat(26)] {
            assert!(digits(bad, "user id").is_err(), "{bad:?}");
        }
    }
}
