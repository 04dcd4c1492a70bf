//! Daily caps (sign-in codes, dashboard links, later checkouts) and the client network they count by.

use std::net::{IpAddr, Ipv6Addr};

use sqlx::{Any, Executor};

use crate::db::DbResult;

/// What a daily counter counts; its name is the `what` column of `daily_counters`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DailyCap {
    /// Sign-in codes sent to one e-mail address.
    CodesPerAddress,
    /// Sign-in codes asked for from one client network (`client_network`).
    CodesPerClient,
    /// Dashboard links made for one account (browser-link).
    LinksPerAccount,
    /// Checkouts started by one account.
    CheckoutsPerAccount,
}

impl DailyCap {
    pub fn as_str(self) -> &'static str {
        match self {
            DailyCap::CodesPerAddress => "code_address",
            DailyCap::CodesPerClient => "code_client",
            DailyCap::LinksPerAccount => "link_account",
            DailyCap::CheckoutsPerAccount => "checkout_account",
        }
    }
}

/// The UTC day of unix seconds.
pub fn day(t: i64) -> i64 {
    t.div_euclid(86_400)
}

/// Counts one event of `subject` against a daily cap, in one statement: the counter goes up only while
/// it is below `cap`, so concurrent requests, on SQLite and PostgreSQL alike, never count past it
/// (PostgreSQL evaluates the `WHERE` of `ON CONFLICT DO UPDATE` on the row it has locked). `false`,
/// with nothing counted, when the cap is reached. Inside a transaction the count is undone with it.
pub async fn bump_daily<'e, E>(
    ex: E,
    cap: DailyCap,
    subject: &str,
    limit: i64,
    at: i64,
) -> DbResult<bool>
where
    E: Executor<'e, Database = Any>,
{
    if limit <= 0 {
        return Ok(false);
    }
    let counted: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO daily_counters (what, subject, day, n) VALUES ($1, $2, $3, 1) \
         ON CONFLICT (what, subject, day) DO UPDATE SET n = daily_counters.n + 1 \
         WHERE daily_counters.n < $4 RETURNING n",
    )
    .bind(cap.as_str())
    .bind(subject)
    .bind(day(at))
    .bind(limit)
    .fetch_optional(ex)
    .await?;
    Ok(counted.is_some())
}

/// The network a client address is counted by: an IPv4 address itself (also when written as an
/// IPv4-mapped IPv6 address), an IPv6 address's /64, the prefix one household or office usually gets
/// and can change addresses within at will. Anything else (no address known) is counted as it is.
pub fn client_network(client: &str) -> String {
    match client.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.to_string(),
        Ok(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                let net = Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                format!("{net}/64")
            }
        },
        Err(_) => client.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_are_counted_by_their_64() {
        let a = client_network("2001:db8:1:2:aaaa:bbbb:cccc:dddd");
        assert_eq!(a, "2001:db8:1:2::/64");
        assert_eq!(client_network("2001:db8:1:2::1"), a);
        assert_eq!(client_network("2001:0db8:0001:0002:ffff:0:0:9"), a);
        assert_ne!(client_network("2001:db8:1:3::1"), a, "another /64");
        assert_eq!(client_network("::1"), "::/64");
    }

    #[test]
    fn ipv4_clients_are_counted_by_their_address() {
        assert_eq!(client_network("192.0.2.7"), "192.0.2.7");
        assert_ne!(client_network("192.0.2.8"), client_network("192.0.2.7"));
        assert_eq!(
            client_network("::ffff:192.0.2.7"),
            "192.0.2.7",
            "an IPv4-mapped address is the IPv4 address"
        );
        assert_eq!(client_network("unknown"), "unknown");
    }
}
