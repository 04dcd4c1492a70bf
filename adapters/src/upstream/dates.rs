//! Dates from upstreams, normalised to `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds). The calendar
//! work (RFC 3339, RFC 2822, offsets, leap years) is chrono's; this module only knows which forms
//! upstreams send and tries them in turn.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, Utc};

/// The item format of a UTC instant. Years outside 1970..=9999 are refused as nonsense.
fn format(t: DateTime<Utc>) -> Option<String> {
    use chrono::Datelike;
    // `timestamp` folds a leap second (`:60`) into the second before it.
    let t = DateTime::<Utc>::from_timestamp(t.timestamp(), 0)?;
    (1970..=9999)
        .contains(&t.year())
        .then(|| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// Unix seconds to the item format. Years outside 1970..=9999 are refused as nonsense.
pub fn from_unix(secs: i64) -> Option<String> {
    format(DateTime::<Utc>::from_timestamp(secs, 0)?)
}

/// Unix seconds of a civil UTC time; `None` when the fields name no such time (`2023-02-29`).
pub fn to_unix(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<i64> {
    let t = NaiveDate::from_ymd_opt(y, mo, d)?.and_hms_opt(h, mi, s)?;
    Some(t.and_utc().timestamp())
}

/// Unix seconds, or milliseconds when the number is too large to be seconds (after year 5138).
pub fn from_unix_number(n: f64) -> Option<String> {
    if !n.is_finite() {
        return None;
    }
    let secs = if n.abs() >= 1.0e11 { n / 1000.0 } else { n };
    from_unix(secs.floor() as i64)
}

fn utc(t: DateTime<FixedOffset>) -> Option<String> {
    format(t.with_timezone(&Utc))
}

/// ISO-8601 / RFC 3339 in the forms upstreams send: `2024-01-31`, `2024-01-31T10:20:30Z`,
/// fractional seconds, `+02:00`/`+0200` offsets, a space instead of `T`, no zone (taken as UTC).
pub fn parse_iso(s: &str) -> Option<String> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return utc(t);
    }
    // chrono's format strings match `T` exactly, where RFC 3339 allows `t` too, and read
    // fractions after `.` only, where ISO 8601 allows `,` too.
    let mut s = s.to_string();
    if s.get(10..11) == Some("t") {
        s.replace_range(10..11, "T");
    }
    if s.get(19..20) == Some(",") {
        s.replace_range(19..20, ".");
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%#z",
        "%Y-%m-%d %H:%M:%S%.f%#z",
        "%Y-%m-%dT%H:%M%#z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(&s, f) {
            return utc(t);
        }
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(&s, f) {
            return format(t.and_utc());
        }
    }
    let day = NaiveDate::parse_from_str(&s, "%Y-%m-%d").ok()?;
    format(day.and_hms_opt(0, 0, 0)?.and_utc())
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
/// numeric zones (`+0100`), the obsolete zone names (`UT`, `EST`, ...), an optional weekday,
/// optional seconds and two-digit years, read by chrono. Feed quirks are smoothed first:
/// the weekday is dropped (feeds get it wrong, and the date says the same), month names written in
/// full (`December`) are shortened, and an unknown zone name (`CET`) or none at all counts
/// as `+0000`, as RFC 2822 section 4.3 says of zone names it does not list.
pub fn parse_rfc2822(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.split_once(',').map_or(s, |(_, rest)| rest);
    let mut words: Vec<&str> = s.split_whitespace().collect();
    if let Some(m) = words.get_mut(1)
        && m.len() > 3
        && m.bytes().all(|b| b.is_ascii_alphabetic())
        && is_month(&m[..3])
    {
        *m = &m[..3];
    }
    if let Some(zone) = words.last_mut()
        && zone.bytes().all(|b| b.is_ascii_alphabetic())
        && !KNOWN_ZONES.contains(&zone.to_ascii_uppercase().as_str())
    {
        *zone = "+0000";
    }
    // A date without a zone is read as UTC, as the old hand-written parser did.
    if words.last().is_some_and(|w| w.contains(':')) {
        words.push("+0000");
    }
    utc(DateTime::parse_from_rfc2822(&words.join(" ")).ok()?)
}

/// The zone names chrono reads in RFC 2822 dates (section 4.3 of the RFC).
const KNOWN_ZONES: [&str; 11] = [
    "UT", "GMT", "Z", "EST", "EDT", "CST", "CDT", "MST", "MDT", "PST", "PDT",
];

fn is_month(m: &str) -> bool {
    [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .contains(&m.to_ascii_lowercase().as_str())
}

/// The compact form `YYYYMMDDTHHMMSSZ` (GDELT's `seendate`), or `YYYYMMDDHHMMSS`.
pub fn parse_compact(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s.strip_suffix(['Z', 'z']).unwrap_or(s);
    // chrono reads up to 4 digits for `%Y`; the length check keeps `2026031118` from passing.
    let t = match s.len() {
        15 => NaiveDateTime::parse_from_str(&s.replacen('t', "T", 1), "%Y%m%dT%H%M%S"),
        14 => NaiveDateTime::parse_from_str(s, "%Y%m%d%H%M%S"),
        _ => return None,
    };
    format(t.ok()?.and_utc())
}

/// The classic microblog form `Wed Mar 11 16:42:05 +0000 2026` (weekday, month, day, time, zone,
/// year), as the network's v1.1 objects and FxTwitter send it.
pub fn parse_classic(s: &str) -> Option<String> {
    utc(DateTime::parse_from_str(s.trim(), "%a %b %d %H:%M:%S %z %Y").ok()?)
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
        assert_eq!(to_unix(2007, 4, 4, 19, 16, 40), Some(1_175_714_200));
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
    fn odd_offsets_and_fractions() {
        for (input, want) in [
            // Nepal and Newfoundland: offsets that are not whole hours.
            ("2026-03-10T20:50:00+05:45", "2026-03-10T15:05:00Z"),
            ("2026-03-10T11:35:00-03:30", "2026-03-10T15:05:00Z"),
            ("2026-03-10t15:05:00z", "2026-03-10T15:05:00Z"),
            ("2026-03-10T15:05:00.999999999Z", "2026-03-10T15:05:00Z"),
            ("2026-03-10T15:05:00,5+00:00", "2026-03-10T15:05:00Z"),
            ("2024-02-29T23:30:00-01:00", "2024-03-01T00:30:00Z"),
            ("2024-03-01T00:30:00+01:00", "2024-02-29T23:30:00Z"),
            ("2026-03-10T15:05", "2026-03-10T15:05:00Z"),
            // An hour-only offset and a compact one with fractions, as some APIs write them.
            ("2026-03-10T20:05:00+05", "2026-03-10T15:05:00Z"),
            ("2026-03-10T20:50:00.000+0545", "2026-03-10T15:05:00Z"),
            ("2026-03-10 15:05:00Z", "2026-03-10T15:05:00Z"),
            // A leap second is the second before it.
            ("2016-12-31T23:59:60Z", "2016-12-31T23:59:59Z"),
        ] {
            assert_eq!(parse_iso(input).as_deref(), Some(want), "{input}");
        }
        for bad in [
            "2023-02-29",
            "2023-02-29T10:00:00Z",
            "2024-01-31T10:20:30+25:00",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
        // Before 1970 or after 9999 is nonsense for an item date.
        assert_eq!(parse_iso("1969-12-31T23:59:59Z"), None);
        assert_eq!(from_unix_number(253_402_300_800.0 * 1000.0), None);
        assert_eq!(
            from_unix_number(1_709_251_200_000.0).as_deref(),
            Some("2024-03-01T00:00:00Z")
        );
        assert_eq!(to_unix(2023, 2, 29, 0, 0, 0), None);
    }

    #[test]
    fn rfc2822_zones_and_quirks() {
        for (input, want) in [
            ("Thu, 29 Feb 2024 12:00:00 UT", "2024-02-29T12:00:00Z"),
            ("Sat, 29 Feb 2024 12:00:00 GMT", "2024-02-29T12:00:00Z"),
            ("29 Feb 2024 07:00:00 EST", "2024-02-29T12:00:00Z"),
            ("29 Feb 2024 08:00:00 EDT", "2024-02-29T12:00:00Z"),
            ("29 Feb 2024 04:00:00 PST", "2024-02-29T12:00:00Z"),
            ("Thu, 1 Feb 2024 17:45:00 +0545", "2024-02-01T12:00:00Z"),
            ("Thu, 1 Feb 2024 08:30:00 -0330", "2024-02-01T12:00:00Z"),
            ("Thu, 01 Feb 2024 12:00:00 +0000", "2024-02-01T12:00:00Z"),
            ("Thu,  1 Feb 2024 12:00 +0000", "2024-02-01T12:00:00Z"),
            ("1 February 2024 12:00:00 GMT", "2024-02-01T12:00:00Z"),
            // A wrong weekday (the 29th was a Thursday) does not lose the date.
            ("Sat, 29 Feb 2024 12:00:00 GMT", "2024-02-29T12:00:00Z"),
            ("Thu, 29 Feb 2024 12:00:00 CET", "2024-02-29T12:00:00Z"),
            ("thu, 29 feb 24 12:00:00 gmt", "2024-02-29T12:00:00Z"),
            ("Thu, 29 Feb 2024 12:00:00", "2024-02-29T12:00:00Z"),
        ] {
            assert_eq!(parse_rfc2822(input).as_deref(), Some(want), "{input}");
            assert_eq!(parse_text(input).as_deref(), Some(want), "{input}");
        }
        for bad in ["30 Feb 2024 12:00:00 GMT", "Thu, 1 Feb 2024 25:00:00 GMT"] {
            assert_eq!(parse_rfc2822(bad), None, "{bad}");
        }
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
