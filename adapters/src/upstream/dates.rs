//! Dates from upstreams, normalised to `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds).

use crate::request::parse::days_from_civil;

/// Civil date of a day count since 1970-01-01 (inverse of `days_from_civil`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Unix seconds to the item format. Years outside 1970..=9999 are refused as nonsense.
pub fn from_unix(secs: i64) -> Option<String> {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(1970..=9999).contains(&y) {
        return None;
    }
    Some(format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Unix seconds of a civil UTC time.
pub fn to_unix(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
    days_from_civil(y, mo, d) * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s)
}

/// Unix seconds, or milliseconds when the number is too large to be seconds (after year 5138).
pub fn from_unix_number(n: f64) -> Option<String> {
    if !n.is_finite() {
        return None;
    }
    let secs = if n.abs() >= 1.0e11 { n / 1000.0 } else { n };
    from_unix(secs.floor() as i64)
}

fn digits(s: &str, r: std::ops::Range<usize>) -> Option<u32> {
    let part = s.get(r)?;
    part.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| part.parse().ok())
        .flatten()
}

/// ISO-8601 / RFC 3339 in the forms upstreams send: `2024-01-31`, `2024-01-31T10:20:30Z`,
/// fractional seconds, `+02:00`/`+0200` offsets, a space instead of `T`, no zone (taken as UTC).
pub fn parse_iso(s: &str) -> Option<String> {
    let s = s.trim();
    let (y, mo, d) = (digits(s, 0..4)?, digits(s, 5..7)?, digits(s, 8..10)?);
    if s.as_bytes().get(4) != Some(&b'-') || s.as_bytes().get(7) != Some(&b'-') {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let rest = &s[10..];
    if rest.is_empty() {
        return from_unix(to_unix(y as i32, mo, d, 0, 0, 0));
    }
    if !rest.starts_with(['T', 't', ' ']) {
        return None;
    }
    let (h, mi) = (digits(rest, 1..3)?, digits(rest, 4..6)?);
    let (sec, mut tail) = match rest.as_bytes().get(6) {
        Some(b':') => (digits(rest, 7..9)?, &rest[9..]),
        _ => (0, &rest[6..]),
    };
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    if let Some(frac) = tail.strip_prefix(['.', ',']) {
        tail = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match tail {
        "" | "Z" | "z" => 0,
        t if t.starts_with(['+', '-']) => {
            let sign = if t.starts_with('-') { -1 } else { 1 };
            let t = t[1..].replace(':', "");
            let (oh, om) = (
                digits(&t, 0..2)?,
                if t.len() >= 4 { digits(&t, 2..4)? } else { 0 },
            );
            sign * (i64::from(oh) * 3600 + i64::from(om) * 60)
        }
        _ => return None,
    };
    from_unix(to_unix(y as i32, mo, d, h, mi, sec.min(59)) - offset)
}

/// Whatever an upstream put in a date field: a unix number (seconds or milliseconds), digits in a
/// string, or an ISO text. Anything else is `None`.
pub fn normalize(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Number(n) => from_unix_number(n.as_f64()?),
        serde_json::Value::String(s)
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
        {
            from_unix_number(s.parse().ok()?)
        }
        serde_json::Value::String(s) => parse_iso(s),
        _ => None,
    }
}

/// RFC 2822 / RFC 822 dates of RSS feeds and mail headers: `Tue, 10 Mar 2026 14:05:00 GMT`,
/// numeric zones (`+0100`), the US zone names, an optional weekday, optional seconds and
/// two-digit years.
pub fn parse_rfc2822(s: &str) -> Option<String> {
    let s = s.trim();
    let s = match s.split_once(',') {
        Some((_, rest)) => rest,
        None => s,
    };
    let mut parts = s.split_whitespace();
    let day: u32 = parts.next()?.parse().ok()?;
    let month = parts.next()?.get(0..3)?.to_ascii_lowercase();
    let month = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .position(|m| *m == month)? as u32
        + 1;
    let year: i32 = parts.next()?.parse().ok()?;
    let year = match year {
        0..=49 => year + 2000,
        50..=99 => year + 1900,
        _ => year,
    };
    let time = parts.next()?;
    let mut hms = time.split(':');
    let h: u32 = hms.next()?.parse().ok()?;
    let mi: u32 = hms.next()?.parse().ok()?;
    let sec: u32 = match hms.next() {
        Some(v) => v.parse().ok()?,
        None => 0,
    };
    if !(1..=31).contains(&day) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let offset = match parts.next().unwrap_or("GMT") {
        "GMT" | "UT" | "UTC" | "Z" | "z" => 0,
        "EST" => -5 * 3600,
        "EDT" => -4 * 3600,
        "CST" => -6 * 3600,
        "CDT" => -5 * 3600,
        "MST" => -7 * 3600,
        "MDT" => -6 * 3600,
        "PST" => -8 * 3600,
        "PDT" => -7 * 3600,
        z if z.len() == 5 && z.starts_with(['+', '-']) => {
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let (oh, om) = (digits(z, 1..3)?, digits(z, 3..5)?);
            sign * (i64::from(oh) * 3600 + i64::from(om) * 60)
        }
        _ => 0,
    };
    from_unix(to_unix(year, month, day, h, mi, sec.min(59)) - offset)
}

/// The compact form `YYYYMMDDTHHMMSSZ` (GDELT's `seendate`), or `YYYYMMDDHHMMSS`.
pub fn parse_compact(s: &str) -> Option<String> {
    let s = s
        .trim()
        .trim_end_matches(['Z', 'z'])
        .replace(['T', 't'], "");
    if s.len() != 14 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (y, mo, d) = (digits(&s, 0..4)?, digits(&s, 4..6)?, digits(&s, 6..8)?);
    let (h, mi, sec) = (digits(&s, 8..10)?, digits(&s, 10..12)?, digits(&s, 12..14)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    from_unix(to_unix(y as i32, mo, d, h, mi, sec.min(59)))
}

/// The classic microblog form `Wed Mar 11 16:42:05 +0000 2026` (weekday, month, day, time, zone,
/// year), as the network's v1.1 objects and FxTwitter send it.
pub fn parse_classic(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_weekday, month, day, time, zone, year] = parts.as_slice() else {
        return None;
    };
    // The same fields in RFC 2822 order: `11 Mar 2026 16:42:05 +0000`.
    parse_rfc2822(&format!("{day} {month} {year} {time} {zone}"))
}

/// A date written as text in any of the forms above: ISO-8601, RFC 2822, compact or classic.
pub fn parse_text(s: &str) -> Option<String> {
    parse_iso(s)
        .or_else(|| parse_rfc2822(s))
        .or_else(|| parse_compact(s))
        .or_else(|| parse_classic(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_variants() {
        for (input, want) in [
            ("2024-01-31T10:20:30Z", "2024-01-31T10:20:30Z"),
            ("2024-01-31T10:20:30.123456Z", "2024-01-31T10:20:30Z"),
            ("2024-01-31T12:20:30+02:00", "2024-01-31T10:20:30Z"),
            ("2024-01-31T05:20:30-0500", "2024-01-31T10:20:30Z"),
            ("2024-01-31 10:20:30", "2024-01-31T10:20:30Z"),
            ("2024-01-31", "2024-01-31T00:00:00Z"),
            ("2024-01-01T00:30:00+01:00", "2023-12-31T23:30:00Z"),
        ] {
            assert_eq!(parse_iso(input).as_deref(), Some(want), "{input}");
        }
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2024-01-31T25:00:00Z",
            "2024-01-31Tnoon",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn numbers_and_strings() {
        use serde_json::json;
        assert_eq!(
            normalize(&json!(1_175_714_200)).as_deref(),
            Some("2007-04-04T19:16:40Z")
        );
        assert_eq!(
            normalize(&json!(1_175_714_200_123_i64)).as_deref(),
            Some("2007-04-04T19:16:40Z")
        );
        assert_eq!(
            normalize(&json!(1_175_714_200.9)).as_deref(),
            Some("2007-04-04T19:16:40Z")
        );
        assert_eq!(
            normalize(&json!("1175714200")).as_deref(),
            Some("2007-04-04T19:16:40Z")
        );
        assert_eq!(normalize(&json!(null)), None);
        assert_eq!(normalize(&json!(true)), None);
    }

    #[test]
    fn unix_round_trip() {
        assert_eq!(from_unix(0).as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(
            from_unix(1_175_714_200).as_deref(),
            Some("2007-04-04T19:16:40Z")
        );
        assert_eq!(to_unix(2007, 4, 4, 19, 16, 40), 1_175_714_200);
        assert_eq!(from_unix(-1), None);
    }

    #[test]
    fn rfc2822_and_compact() {
        for (input, want) in [
            ("Tue, 10 Mar 2026 14:05:00 GMT", "2026-03-10T14:05:00Z"),
            ("10 Mar 2026 14:05:00 +0100", "2026-03-10T13:05:00Z"),
            ("Wed, 02 Oct 02 08:00:00 EST", "2002-10-02T13:00:00Z"),
            ("Sun, 1 Jan 2023 00:30 -0030", "2023-01-01T01:00:00Z"),
            (
                "Mon, 31 December 2029 23:59:59 +0000",
                "2029-12-31T23:59:59Z",
            ),
        ] {
            assert_eq!(parse_rfc2822(input).as_deref(), Some(want), "{input}");
        }
        for bad in [
            "",
            "yesterday",
            "Tue, 10 Foo 2026 14:05:00 GMT",
            "10 Mar 2026",
        ] {
            assert_eq!(parse_rfc2822(bad), None, "{bad}");
        }
        assert_eq!(
            parse_compact("20260311T181500Z").as_deref(),
            Some("2026-03-11T18:15:00Z")
        );
        assert_eq!(parse_compact("2026031118"), None);
        assert_eq!(
            parse_text("Tue, 10 Mar 2026 14:05:00 GMT").as_deref(),
            Some("2026-03-10T14:05:00Z")
        );
        assert_eq!(
            parse_text("2026-03-10T15:05:00+01:00").as_deref(),
            Some("2026-03-10T14:05:00Z")
        );
    }

    #[test]
    fn classic_form() {
        for (input, want) in [
            ("Wed Mar 11 16:42:05 +0000 2026", "2026-03-11T16:42:05Z"),
            ("Thu Jan 01 00:30:00 +0100 2026", "2025-12-31T23:30:00Z"),
        ] {
            assert_eq!(parse_classic(input).as_deref(), Some(want), "{input}");
            assert_eq!(parse_text(input).as_deref(), Some(want), "{input}");
        }
        for bad in [
            "",
            "Wed Mar 11 16:42:05 +0000",
            "Wed Foo 11 16:42:05 +0000 2026",
        ] {
            assert_eq!(parse_classic(bad), None, "{bad}");
        }
    }
}
