//! The network's embed backend (`https://cdn.syndication.twimg.com/tweet-result`), which serves one
//! public post per call without login or key. A post lookup asks once per id with the token the
//! embed widget computes (`token`). 404 is a missing post; a `TweetTombstone` answer (withheld or
//! deleted) becomes an item marked `extra.unavailable`. No repost or view counts are given.

use serde_json::Value;

use super::{PostParts, lookup_each, post_item, unavailable_item};
use crate::api::Handlers;
use crate::api::microblog::{self, Post};
use crate::item::{Item, Page};
use crate::sources::slot::serve;
use crate::sources::{Source, SourceError};
use crate::upstream::{Ctx, dates, json};

pub static SOURCE: Source = Source {
    id: "microblog.syndication",
    default_base_url: "https://cdn.syndication.twimg.com",
    needs_credential: false,
    rate_limit: None,
    handlers: Handlers::Microblog(microblog::Handlers {
        post: Some(serve!(post)),
        ..microblog::Handlers::NONE
    }),
};

async fn post(ctx: &Ctx<'_>, r: &Post) -> Result<Page, SourceError> {
    lookup_each(&r.id, |id| async move {
        let req = ctx.get("tweet-result").query(&[
            ("id", id.as_str()),
            ("lang", "en"),
            ("token", &token(&id)),
        ]);
        let (_, body) = ctx.send(req).await?;
        // An unknown id is sometimes a 200 with an empty body or `{}`.
        if body.iter().all(u8::is_ascii_whitespace) {
            return Err(SourceError::NotFound);
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| SourceError::Malformed(format!("not JSON: {e}")))?;
        tweet_item(&v, &id)
    })
    .await
}

fn tweet_item(v: &Value, asked: &str) -> Result<Item, SourceError> {
    if !v.is_object() {
        return Err(SourceError::Malformed("not a JSON object".into()));
    }
    if json::str(v, "__typename") == Some("TweetTombstone") {
        let reason = v
            .get("tombstone")
            .and_then(|t| t.get("text"))
            .and_then(|t| json::string(t, "text"));
        return Ok(unavailable_item(asked, reason));
    }
    let Some(id) = json::id(v, "id_str") else {
        return Err(SourceError::NotFound);
    };
    let user = v.get("user").unwrap_or(&Value::Null);
    let in_reply_to = json::string(v, "in_reply_to_status_id_str");
    let mut item = post_item(PostParts {
        id: &id,
        text: json::str(v, "text"),
        screen_name: json::str(user, "screen_name"),
        name: json::str(user, "name"),
        created_at: v.get("created_at").and_then(dates::normalize),
        is_reply: in_reply_to.is_some(),
        in_reply_to,
        lang: json::str(v, "lang"),
    });
    item.metrics.likes = json::number(v, "favorite_count");
    item.metrics.comments = json::number(v, "conversation_count");
    Ok(item)
}

/// The embed widget's token: `((id / 1e15) * π).toString(36)` with every `0` and the `.` removed.
pub fn token(id: &str) -> String {
    let n: f64 = id.parse().unwrap_or(0.0);
    to_radix_36(n / 1e15 * std::f64::consts::PI)
        .chars()
        .filter(|c| *c != '0' && *c != '.')
        .collect()
}

const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// `Number.prototype.toString(36)` of a finite non-negative number, digit for digit as JavaScript
/// engines write it: fraction digits only up to the precision of the double (half the distance to
/// the next double), rounded half to even, with carries back into earlier digits.
pub fn to_radix_36(value: f64) -> String {
    if !value.is_finite() || value < 0.0 {
        return String::new();
    }
    let radix = 36.0;
    let mut integer = value.floor();
    let mut fraction = value - integer;
    let next_up = f64::from_bits(value.to_bits() + 1);
    let mut delta = (0.5 * (next_up - value)).max(f64::from_bits(1));
    let mut frac_digits: Vec<u8> = Vec::new();
    if fraction >= delta {
        loop {
            fraction *= radix;
            delta *= radix;
            let digit = fraction as usize;
            frac_digits.push(digit as u8);
            fraction -= digit as f64;
            if (fraction > 0.5 || (fraction == 0.5 && digit & 1 == 1)) && fraction + delta > 1.0 {
                // Round up, carrying into earlier digits (and into the integer part).
                loop {
                    match frac_digits.pop() {
                        None => {
                            integer += 1.0;
                            break;
                        }
                        Some(d) if usize::from(d) + 1 < 36 => {
                            frac_digits.push(d + 1);
                            break;
                        }
                        Some(_) => {}
                    }
                }
                break;
            }
            if fraction < delta {
                break;
            }
        }
    }
    // Integer digits, with the unrepresentable low digits of huge numbers written as 0.
    let mut int_digits: Vec<u8> = Vec::new();
    while integer / radix >= 9_007_199_254_740_992.0 {
        integer /= radix;
        int_digits.push(b'0');
    }
    loop {
        let remainder = integer % radix;
        int_digits.push(DIGITS[remainder as usize]);
        integer = (integer - remainder) / radix;
        if integer <= 0.0 {
            break;
        }
    }
    int_digits.reverse();
    let mut out = String::from_utf8_lossy(&int_digits).into_owned();
    if !frac_digits.is_empty() {
        out.push('.');
        out.extend(frac_digits.iter().map(|d| DIGITS[usize::from(*d)] as char));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values written by Node.js (V8) for
    /// `((Number(id)/1e15)*Math.PI).toString(36)` and the token derived from it.
    #[test]
    fn tokens_match_javascript() {
        for (id, radix, tok) in [
            ("1628832338187636740", "3y5.4libozsy", "3y54libozsy"),
            ("20", "0.000000006dq1a2xwd93", "6dq1a2xwd93"),
            ("1", "0.000000000bhi2ay3f28n", "bhi2ay3f28n"),
            ("1899123456789012345", "4lq.9swfma32", "4lq9swfma32"),
            ("463440424141459456", "14f.xvks611f", "14fxvks611f"),
            ("1234567890", "0.0006iio5bzbwyw", "6iio5bzbwyw"),
            ("999999999999999999", "2f9.lc2ug9mm", "2f9lc2ug9mm"),
            ("1110302988", "0.0005uwvl2mzbpr", "5uwvl2mzbpr"),
        ] {
            let n: f64 = id.parse().unwrap();
            assert_eq!(to_radix_36(n / 1e15 * std::f64::consts::PI), radix, "{id}");
            assert_eq!(token(id), tok, "{id}");
        }
        assert_eq!(to_radix_36(0.0), "0");
        assert_eq!(to_radix_36(35.5), "z.i");
        assert_eq!(to_radix_36(1296.0), "100");
    }
}
