//! Typed parsers named by `parse:` in the catalogue's grammars. Each runs after the grammar's pattern
//! matched, turns the text into the value adapters want, and refuses what a pattern cannot express
//! (calendar dates, for one).

use std::fmt;

use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeDelta, Utc};

/// `r/rust`, `/r/rust` -> `rust`; `u/spez` -> `spez`.
pub fn strip_slash_prefix(v: &str) -> Result<String, String> {
    Ok(v.rsplit('/').next().unwrap_or(v).to_string())
}

/// `t3_1abc2de` -> `1abc2de`.
pub fn strip_type_prefix(v: &str) -> Result<String, String> {
    Ok(v.strip_prefix("t3_").unwrap_or(v).to_string())
}

/// `@alice.bsky.social` -> `alice.bsky.social`.
pub fn strip_at(v: &str) -> Result<String, String> {
    Ok(v.strip_prefix('@').unwrap_or(v).to_string())
}

/// `1,2,3` -> `["1", "2", "3"]`.
pub fn id_list(v: &str) -> Result<Vec<String>, String> {
    Ok(v.split(',').map(str::to_string).collect())
}

/// The 11-character video id out of an id, a long watch URL (`v` query parameter) or a short link.
/// The URL is read by its parts (host, path, query pairs), so the id returned is the one the
/// grammar validated: a `v=` anywhere in the query, other parameters (`t`, `list`) around it, and
/// no second reading (a `youtu.be/` inside a query, a second `v`) that could pick another value.
pub fn video_id(v: &str) -> Result<String, String> {
    let is_id = |s: &str| {
        s.len() == 11
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    let Some((scheme, rest)) = v.split_once("://") else {
        return if is_id(v) {
            Ok(v.to_string())
        } else {
            Err("not an 11-character video id".into())
        };
    };
    if !matches!(scheme, "http" | "https") {
        return Err("the watch URL is not http(s)".into());
    }
    let rest = rest.split('#').next().unwrap_or("");
    let (host_path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = host_path.split_once('/').unwrap_or((host_path, ""));
    let host = host.to_ascii_lowercase();
    let id = if host == "youtu.be" {
        path.to_string()
    } else if matches!(
        host.as_str(),
        "youtube.com" | "www.youtube.com" | "m.youtube.com" | "music.youtube.com"
    ) && path == "watch"
    {
        let mut ids = query.split('&').filter_map(|pair| pair.strip_prefix("v="));
        match (ids.next(), ids.next()) {
            (Some(id), None) => id.to_string(),
            (None, _) => return Err("the watch URL has no `v` parameter".into()),
            (Some(_), Some(_)) => {
                return Err("the watch URL has more than one `v` parameter".into());
            }
        }
    } else {
        return Err("not a watch URL of the video site".into());
    };
    if is_id(&id) {
        Ok(id)
    } else {
        Err("the watch URL does not carry an 11-character video id".into())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RepoRef {
    pub owner: String,
    pub name: String,
}

impl fmt::Display for RepoRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// `owner/name` (the pattern already refused `.` and `..` parts).
pub fn repo_ref(v: &str) -> Result<RepoRef, String> {
    let (owner, name) = v.split_once('/').ok_or("expected `owner/name`")?;
    Ok(RepoRef {
        owner: owner.to_string(),
        name: name.to_string(),
    })
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IssueRef {
    pub repo: RepoRef,
    pub number: u64,
}

/// `owner/name/number`.
pub fn issue_ref(v: &str) -> Result<IssueRef, String> {
    let (repo, number) = v.rsplit_once('/').ok_or("expected `owner/name/number`")?;
    let number = number
        .parse::<u64>()
        .map_err(|_| "the issue number must be digits".to_string())?;
    Ok(IssueRef {
        repo: repo_ref(repo)?,
        number,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanUnit {
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// A date bound (`after`, `before`): a calendar day in UTC, or a span back from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateBound {
    Day { year: i32, month: u32, day: u32 },
    Ago { amount: u32, unit: SpanUnit },
}

impl Default for DateBound {
    fn default() -> Self {
        DateBound::Ago {
            amount: 0,
            unit: SpanUnit::Day,
        }
    }
}

impl DateBound {
    /// The bound as unix seconds: midnight UTC of the day, or `now` minus the span. Months and
    /// years are calendar months and years (`1mo` back from 31 March is 28 or 29 February, `1y`
    /// back from 29 February 2028 is 28 February 2027); hours, days and weeks are exact lengths.
    pub fn to_unix(self, now: i64) -> i64 {
        match self {
            DateBound::Day { year, month, day } => NaiveDate::from_ymd_opt(year, month, day)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc().timestamp())
                // `date_bound` builds only real days; another value is no bound at all.
                .unwrap_or(i64::MIN),
            DateBound::Ago { amount, unit } => {
                let Some(now) = DateTime::<Utc>::from_timestamp(now, 0) else {
                    return now;
                };
                let back = match unit {
                    SpanUnit::Hour => now.checked_sub_signed(TimeDelta::hours(amount.into())),
                    SpanUnit::Day => now.checked_sub_days(Days::new(amount.into())),
                    SpanUnit::Week => now.checked_sub_days(Days::new(u64::from(amount) * 7)),
                    SpanUnit::Month => now.checked_sub_months(Months::new(amount)),
                    SpanUnit::Year => amount
                        .checked_mul(12)
                        .and_then(|m| now.checked_sub_months(Months::new(m))),
                };
                // Past chrono's range (about 262,000 years back) every date is after the bound.
                back.map_or(i64::MIN, |t| t.timestamp())
            }
        }
    }
}

/// `YYYY-MM-DD` (a real day, 1970 or later) or `<n><unit>` with unit h, d, w, mo, y or their words.
pub fn date_bound(v: &str) -> Result<DateBound, String> {
    if v.len() == 10 && v.as_bytes()[4] == b'-' && v.as_bytes()[7] == b'-' {
        let Ok(date) = NaiveDate::parse_from_str(v, "%Y-%m-%d") else {
            return Err(format!(
                "`{v}` is not a calendar date of the form YYYY-MM-DD"
            ));
        };
        if date.year() < 1970 {
            return Err(format!("`{v}` is before 1970-01-01"));
        }
        return Ok(DateBound::Day {
            year: date.year(),
            month: date.month(),
            day: date.day(),
        });
    }
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (amount, unit) = v.split_at(split);
    let amount = amount
        .parse::<u32>()
        .map_err(|_| format!("`{v}` does not start with a number"))?;
    let unit = match unit {
        "h" | "hour" | "hours" => SpanUnit::Hour,
        "d" | "day" | "days" => SpanUnit::Day,
        "w" | "week" | "weeks" => SpanUnit::Week,
        "mo" | "month" | "months" => SpanUnit::Month,
        "y" | "year" | "years" => SpanUnit::Year,
        other => return Err(format!("unknown span unit `{other}`; use h, d, w, mo or y")),
    };
    Ok(DateBound::Ago { amount, unit })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_days() {
        assert_eq!(date_bound("1970-01-01").unwrap().to_unix(0), 0);
        assert_eq!(
            date_bound("2000-03-01").unwrap().to_unix(0),
            11_017 * 86_400
        );
        assert!(date_bound("2024-02-29").is_ok());
        assert!(date_bound("2023-02-29").is_err());
        assert!(date_bound("2024-04-31").is_err());
        assert!(date_bound("1969-12-31").is_err());
        assert_eq!(date_bound("2024-01-31").unwrap().to_unix(0), 1_706_659_200);
    }

    #[test]
    fn spans() {
        assert_eq!(
            date_bound("7d").unwrap(),
            DateBound::Ago {
                amount: 7,
                unit: SpanUnit::Day
            }
        );
        assert_eq!(
            date_bound("1year").unwrap(),
            DateBound::Ago {
                amount: 1,
                unit: SpanUnit::Year
            }
        );
        assert_eq!(
            date_bound("30d").unwrap().to_unix(100 * 86_400),
            70 * 86_400
        );
    }

    #[test]
    fn calendar_edges() {
        // Leap days: every fourth year, not 1900 or 2100, but 2000.
        for (day, ok) in [
            ("2000-02-29", true),
            ("2100-02-29", false),
            ("2028-02-29", true),
            ("2024-12-31", true),
            ("2024-00-10", false),
            ("2024-06-31", false),
            ("2024-1-310", false),
        ] {
            assert_eq!(date_bound(day).is_ok(), ok, "{day}");
        }
        let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        assert_eq!(
            date_bound("2028-02-29").unwrap().to_unix(0),
            at("2028-02-29T00:00:00Z")
        );
    }

    #[test]
    fn spans_are_calendar_spans() {
        let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp();
        let back = |span: &str, now: &str| date_bound(span).unwrap().to_unix(at(now));
        // A month back from 31 March is the last day of February (leap year or not).
        assert_eq!(
            back("1mo", "2024-03-31T12:00:00Z"),
            at("2024-02-29T12:00:00Z")
        );
        assert_eq!(
            back("1month", "2023-03-31T12:00:00Z"),
            at("2023-02-28T12:00:00Z")
        );
        // A year back from a leap day, and a year that spans one.
        assert_eq!(
            back("1year", "2028-02-29T08:00:00Z"),
            at("2027-02-28T08:00:00Z")
        );
        assert_eq!(
            back("1y", "2024-03-01T00:00:00Z"),
            at("2023-03-01T00:00:00Z")
        );
        assert_eq!(
            back("2w", "2024-03-10T00:00:00Z"),
            at("2024-02-25T00:00:00Z")
        );
        assert_eq!(
            back("36hours", "2024-03-01T12:00:00Z"),
            at("2024-02-29T00:00:00Z")
        );
        // The largest span the grammar lets through stays a number, far in the past.
        assert!(back("9999y", "2024-03-01T00:00:00Z") < at("1970-01-01T00:00:00Z"));
        assert!(date_bound("7m").is_err());
    }

    #[test]
    fn video_ids_from_urls() {
        for v in [
            "dQw4w9WgXcQ",
            "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
            "https://youtube.com/watch?feature=share&v=dQw4w9WgXcQ&t=42",
            "https://youtu.be/dQw4w9WgXcQ?t=1",
            "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
            "https://www.youtube.com/watch?list=PLx_1&index=2&v=dQw4w9WgXcQ&t=42s#c",
            "https://m.youtube.com/watch?ref=youtu.be/AAAAAAAAAAA&v=dQw4w9WgXcQ",
        ] {
            assert_eq!(video_id(v).unwrap(), "dQw4w9WgXcQ", "{v}");
        }
        // Readings where another value than the validated id could be taken are refused.
        for v in [
            "https://www.youtube.com/watch?v=..%2F..%2Fx&v=dQw4w9WgXcQ",
            "https://www.youtube.com/watch?v=short&v=dQw4w9WgXcQ",
            "https://www.youtube.com/watch?x=1#&v=dQw4w9WgXcQ",
            "https://example.com/watch?v=dQw4w9WgXcQ",
            "https://youtu.be/dQw4w9WgXcQ/extra",
        ] {
            assert!(video_id(v).is_err(), "{v}");
        }
    }

    #[test]
    fn repo_and_issue_refs() {
        assert_eq!(
            repo_ref("rust-lang/rust").unwrap().to_string(),
            "rust-lang/rust"
        );
        let i = issue_ref("a/.b/7").unwrap();
        assert_eq!(
            (i.repo.owner.as_str(), i.repo.name.as_str(), i.number),
            ("a", ".b", 7)
        );
    }

    #[test]
    fn prefixes() {
        assert_eq!(strip_slash_prefix("/r/rust").unwrap(), "rust");
        assert_eq!(strip_slash_prefix("rust").unwrap(), "rust");
        assert_eq!(strip_type_prefix("t3_abc").unwrap(), "abc");
        assert_eq!(strip_at("@a.b").unwrap(), "a.b");
        assert_eq!(id_list("1,2").unwrap(), vec!["1", "2"]);
    }
}
