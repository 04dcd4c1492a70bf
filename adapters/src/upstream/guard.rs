//! The guard for hosts a client names (the fediverse `instance`): only public addresses are ever
//! connected to. A name is resolved once, every answer is classified, and the whole name is refused
//! when any answer is not public (a filtered subset could still let happy-eyeballs reach a blocked
//! address). The vetted addresses are pinned: the guarded HTTP client resolves through this guard,
//! which serves the vetted answer from its cache, so the connection goes to exactly the addresses
//! that were checked (no second lookup, no DNS-rebinding window). The guarded client follows no
//! redirects and uses no proxy.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a vetted answer stays pinned.
const PIN_TTL: Duration = Duration::from_secs(60);
/// Largest number of pinned names kept.
const PIN_MAX: usize = 4096;
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// Why an address is not public, or `None` when it is.
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(net)) & mask
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([0, 0, 0, 0], 8, "unspecified"),
        ([10, 0, 0, 0], 8, "private"),
        ([100, 64, 0, 0], 10, "shared (CGNAT)"),
        ([127, 0, 0, 0], 8, "loopback"),
        ([169, 254, 0, 0], 16, "link-local or metadata"),
        ([172, 16, 0, 0], 12, "private"),
        ([192, 0, 0, 0], 24, "protocol-assignment"),
        ([192, 0, 2, 0], 24, "documentation"),
        ([192, 88, 99, 0], 24, "6to4 relay"),
        ([192, 168, 0, 0], 16, "private"),
        ([198, 18, 0, 0], 15, "benchmarking"),
        ([198, 51, 100, 0], 24, "documentation"),
        ([203, 0, 113, 0], 24, "documentation"),
        ([224, 0, 0, 0], 4, "multicast"),
        ([240, 0, 0, 0], 4, "reserved or broadcast"),
    ];
    RANGES
        .iter()
        .find(|(net, prefix, _)| in_v4(ip, *net, *prefix))
        .map(|(_, _, why)| *why)
}

fn in_v6(ip: Ipv6Addr, net: [u16; 8], prefix: u32) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - prefix)
    };
    u128::from(ip) & mask == u128::from(Ipv6Addr::from(net)) & mask
}

/// The IPv4 address in the low 32 bits.
fn low_v4(ip: Ipv6Addr) -> Ipv4Addr {
    Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    // IPv4-mapped (::ffff:a.b.c.d): judged as the IPv4 address it carries.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    // NAT64 well-known prefix (64:ff9b::/96): reaches the embedded IPv4 address.
    if in_v6(ip, [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96) {
        return blocked_v4(low_v4(ip));
    }
    // 6to4 (2002::/16): the IPv4 address sits in bits 16..48.
    if in_v6(ip, [0x2002, 0, 0, 0, 0, 0, 0, 0], 16) {
        let v4 = Ipv4Addr::from(((u128::from(ip) >> 80) & 0xffff_ffff) as u32);
        return blocked_v4(v4);
    }
    const RANGES: &[([u16; 8], u32, &str)] = &[
        // IPv4-compatible (::a.b.c.d, deprecated) and the rest of ::/96.
        ([0, 0, 0, 0, 0, 0, 0, 0], 96, "IPv4-compatible"),
        ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
        ([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
        // Teredo, benchmarking, ORCHID and other protocol assignments.
        (
            [0x2001, 0, 0, 0, 0, 0, 0, 0],
            23,
            "protocol-assignment or Teredo",
        ),
        ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
        ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation"),
        ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique-local (private)"),
        ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
        ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local"),
        ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
    ];
    if let Some((_, _, why)) = RANGES
        .iter()
        .find(|(net, prefix, _)| in_v6(ip, *net, *prefix))
    {
        return Some(why);
    }
    // Everything public lives in global unicast (2000::/3).
    (!in_v6(ip, [0x2000, 0, 0, 0, 0, 0, 0, 0], 3)).then_some("reserved")
}

/// Resolves, vets and pins client-named hosts.
pub struct HostGuard {
    /// Test-only: accept every address (the fake upstream runs on 127.0.0.1).
    allow_private: bool,
    /// Test-only: fixed answers for names, consulted before DNS (and vetted like DNS answers).
    overrides: BTreeMap<String, Vec<IpAddr>>,
    pinned: Mutex<HashMap<String, (Instant, Vec<IpAddr>)>>,
}

impl HostGuard {
    pub fn new(allow_private: bool, overrides: BTreeMap<String, Vec<IpAddr>>) -> Self {
        HostGuard {
            allow_private,
            overrides: overrides
                .into_iter()
                .map(|(k, v)| (normalize(&k), v))
                .collect(),
            pinned: Mutex::new(HashMap::new()),
        }
    }

    /// The public addresses of `host`, or why it is refused. The answer is pinned for the
    /// connection that follows.
    pub async fn vet(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        let name = normalize(host);
        if let Some(addrs) = self.pinned_addrs(&name) {
            return Ok(addrs);
        }
        let addrs = self.resolve(&name).await?;
        if !self.allow_private {
            for ip in &addrs {
                if let Some(why) = blocked_reason(*ip) {
                    return Err(format!(
                        "`{host}` is not a public host: it resolves to a {why} address"
                    ));
                }
            }
        }
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.len() >= PIN_MAX {
            pinned.retain(|_, (at, _)| at.elapsed() < PIN_TTL);
            if pinned.len() >= PIN_MAX {
                pinned.clear();
            }
        }
        pinned.insert(name, (Instant::now(), addrs.clone()));
        Ok(addrs)
    }

    /// Why the guard refuses to connect to `ip`, or `None` when it may (always, in test mode).
    pub fn refuses_address(&self, ip: IpAddr) -> Option<&'static str> {
        if self.allow_private {
            return None;
        }
        blocked_reason(ip)
    }

    fn pinned_addrs(&self, name: &str) -> Option<Vec<IpAddr>> {
        let pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        pinned
            .get(name)
            .filter(|(at, _)| at.elapsed() < PIN_TTL)
            .map(|(_, a)| a.clone())
    }

    async fn resolve(&self, name: &str) -> Result<Vec<IpAddr>, String> {
        if name.is_empty() {
            return Err("the host name is empty".into());
        }
        if let Ok(ip) = name.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        if !self.allow_private && (name == "localhost" || name.ends_with(".localhost")) {
            return Err(format!(
                "`{name}` is not a public host: it names this machine"
            ));
        }
        if let Some(addrs) = self.overrides.get(name) {
            return Ok(addrs.clone());
        }
        let lookup = tokio::net::lookup_host((name, 0));
        let found = tokio::time::timeout(LOOKUP_TIMEOUT, lookup)
            .await
            .map_err(|_| format!("`{name}` could not be resolved in time"))?
            .map_err(|_| format!("`{name}` does not resolve to an address"))?;
        let mut addrs: Vec<IpAddr> = found.map(|a| a.ip()).collect();
        addrs.dedup();
        if addrs.is_empty() {
            return Err(format!("`{name}` does not resolve to an address"));
        }
        Ok(addrs)
    }
}

/// Lower case, without a trailing dot (`Example.COM.` and `example.com` are one name).
fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The resolver of the guarded client: every name goes through `HostGuard::vet`.
pub(crate) struct GuardResolver(pub Arc<HostGuard>);

impl reqwest::dns::Resolve for GuardResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = guard
                .vet(&host)
                .await
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The resolver of the client for configured upstreams: the operator's configured hosts resolve as
/// the system resolves them (an operator may run an upstream on a private address on purpose);
/// every other name, which only a redirect can bring, goes through `HostGuard::vet`.
pub(crate) struct TrustingResolver {
    guard: Arc<HostGuard>,
    trusted: Arc<HashSet<String>>,
}

impl TrustingResolver {
    pub(crate) fn new(guard: Arc<HostGuard>, trusted: Vec<String>) -> Arc<Self> {
        Arc::new(TrustingResolver {
            guard,
            trusted: Arc::new(trusted.iter().map(|h| normalize(h)).collect()),
        })
    }
}

impl reqwest::dns::Resolve for TrustingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.guard.clone();
        let trusted = self.trusted.contains(&normalize(name.as_str()));
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<IpAddr> = if trusted {
                tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect()
            } else {
                guard
                    .vet(&host)
                    .await
                    .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?
            };
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect(s)
    }

    #[test]
    fn refuses_every_non_public_range() {
        for bad in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "100.100.100.200",
            "127.0.0.1",
            "127.255.0.1",
            "169.254.169.254",
            "169.254.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.192",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:101::1",
            "2001::1",
            "2001:0:4136:e378::1",
            "2001:db8::1",
            "3fff::1",
            "100::1",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "4000::1",
        ] {
            assert!(blocked_reason(ip(bad)).is_some(), "{bad} must be refused");
        }
    }

    #[test]
    fn accepts_public_addresses() {
        for good in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(blocked_reason(ip(good)), None, "{good} is public");
        }
    }

    #[tokio::test]
    async fn names_resolving_to_private_addresses_are_refused() {
        let mut overrides = BTreeMap::new();
        overrides.insert("Evil.Example".to_string(), vec![ip("127.0.0.1")]);
        overrides.insert(
            "mixed.example".to_string(),
            vec![ip("8.8.8.8"), ip("10.0.0.1")],
        );
        overrides.insert("ok.example".to_string(), vec![ip("8.8.8.8")]);
        let guard = HostGuard::new(false, overrides.clone());
        for bad in [
            "localhost",
            "localhost.",
            "LOCALHOST",
            "a.localhost",
            "127.0.0.1",
            "[::1]",
            "::ffff:127.0.0.1",
            "169.254.169.254",
            "evil.example",
            "evil.example.",
            "mixed.example",
            "",
        ] {
            assert!(guard.vet(bad).await.is_err(), "{bad} must be refused");
        }
        assert_eq!(guard.vet("ok.example").await, Ok(vec![ip("8.8.8.8")]));

        let lenient = HostGuard::new(true, overrides);
        assert_eq!(lenient.vet("evil.example").await, Ok(vec![ip("127.0.0.1")]));
    }

    /// `localhost` through the system resolver (no special-casing): found in /etc/hosts.
    #[tokio::test]
    async fn system_resolved_loopback_is_refused() {
        let guard = HostGuard::new(false, BTreeMap::new());
        let addrs = guard.resolve("localhost").await;
        assert!(addrs.is_err(), "localhost is refused by name");
        if let Ok(found) = tokio::net::lookup_host(("localhost", 0)).await {
            for a in found {
                assert!(blocked_reason(a.ip()).is_some(), "{a}");
            }
        }
    }
}
