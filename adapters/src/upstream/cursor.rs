//! Cursors handed to clients. A cursor carries the upstream's own cursor (the source's state), so a
//! client could otherwise forge one and steer what is sent upstream with the operator's
//! credential; every cursor is therefore sealed with HMAC-SHA256 under a server secret and opened
//! (verified in constant time) before anything else is done with it.
//!
//! Layout, base64url without padding: `payload || tag`, where
//! `payload = "1\n" kid "\n" expiry "\n" source id "\n" endpoint "\n" state` (the state is last and
//! may hold any byte), `expiry` is unix seconds and `tag = HMAC-SHA256(secret of kid, payload)`.
//! The key id picks the secret, so a rotated-away secret can stay accepted for a while.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Format version; a cursor of another version is refused.
const VERSION: &str = "1";
const TAG_LEN: usize = 32;
/// How long an issued cursor is accepted (docs/decisions.md, "Cursors").
pub const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Longest cursor issued: the spec's limit on the `cursor` parameter. A longer one could never be
/// sent back, so none is issued.
pub const MAX_LEN: usize = 4096;

/// One secret with its id. `Debug` never shows the secret.
#[derive(Clone)]
pub struct CursorKey {
    id: String,
    secret: Vec<u8>,
}

impl CursorKey {
    /// `id` is stored in every cursor in the clear; it must be short and hold no newline.
    pub fn new(id: &str, secret: Vec<u8>) -> Result<Self, String> {
        if id.is_empty() || id.len() > 32 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!(
                "cursor key id {id:?} is not 1-32 letters or digits"
            ));
        }
        if secret.len() < 16 {
            return Err("a cursor secret needs at least 16 bytes".into());
        }
        Ok(CursorKey {
            id: id.to_string(),
            secret,
        })
    }

    /// A key that lives only as long as this process (for tools and tests that keep no database).
    pub fn ephemeral() -> Self {
        let mut secret = vec![0u8; 32];
        let mut id = [0u8; 4];
        // Without OS randomness the cursors would be forgeable; there is no sane fallback.
        getrandom::fill(&mut secret).expect("OS randomness");
        getrandom::fill(&mut id).expect("OS randomness");
        CursorKey {
            id: id.iter().map(|b| format!("{b:02x}")).collect(),
            secret,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key length")
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorKey")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The secrets in force: the current one seals and opens; the previous one (after a rotation)
/// only opens, until `accepted_until` (unix seconds).
#[derive(Clone, Debug)]
pub struct CursorKeys {
    pub current: CursorKey,
    pub previous: Option<(CursorKey, u64)>,
}

impl CursorKeys {
    pub fn new(current: CursorKey) -> Self {
        CursorKeys {
            current,
            previous: None,
        }
    }

    fn for_id(&self, id: &[u8], now: u64) -> Option<&CursorKey> {
        if id == self.current.id.as_bytes() {
            return Some(&self.current);
        }
        self.previous
            .as_ref()
            .filter(|(k, until)| k.id.as_bytes() == id && now <= *until)
            .map(|(k, _)| k)
    }
}

/// Why a cursor was refused; the client can act on each (ask for page one again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Not a cursor this service issued, or altered, or sealed with a secret no longer accepted.
    NotIssued,
    /// Issued for another endpoint.
    OtherEndpoint,
    /// Older than [`LIFETIME`].
    Expired,
    /// Issued by a source that no longer serves this endpoint on this deployment.
    SourceGone,
}

impl Refusal {
    pub fn message(self) -> &'static str {
        match self {
            Refusal::NotIssued => {
                "is not a cursor this service issued (or was altered); pass `data.next_cursor` of the previous page unchanged"
            }
            Refusal::OtherEndpoint => {
                "was issued for another endpoint; a cursor continues only the listing that returned it"
            }
            Refusal::Expired => {
                "has expired (cursors are valid for 24 hours); start again from the first page"
            }
            Refusal::SourceGone => {
                "was issued by a source that no longer serves this endpoint; start again from the first page"
            }
        }
    }
}

/// Unix seconds now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The cursor for `state` of `source_id` on `endpoint` (its path), or `None` when it would be
/// longer than [`MAX_LEN`].
pub fn seal(
    keys: &CursorKeys,
    source_id: &str,
    endpoint: &str,
    state: &str,
    now: u64,
) -> Option<String> {
    let key = &keys.current;
    let expiry = now + LIFETIME.as_secs();
    let mut bytes = format!(
        "{VERSION}\n{}\n{expiry}\n{source_id}\n{endpoint}\n{state}",
        key.id
    )
    .into_bytes();
    let mut mac = key.mac();
    mac.update(&bytes);
    bytes.extend_from_slice(&mac.finalize().into_bytes());
    let cursor = URL_SAFE_NO_PAD.encode(&bytes);
    (cursor.len() <= MAX_LEN).then_some(cursor)
}

/// `(source id, state)` of a cursor sealed by `keys` for `endpoint` that has not expired.
pub fn open(
    keys: &CursorKeys,
    cursor: &str,
    endpoint: &str,
    now: u64,
) -> Result<(String, String), Refusal> {
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| Refusal::NotIssued)?;
    if bytes.len() <= TAG_LEN {
        return Err(Refusal::NotIssued);
    }
    let (payload, tag) = bytes.split_at(bytes.len() - TAG_LEN);
    let mut fields = payload.splitn(6, |b| *b == b'\n');
    let (Some(version), Some(kid)) = (fields.next(), fields.next()) else {
        return Err(Refusal::NotIssued);
    };
    if version != VERSION.as_bytes() {
        return Err(Refusal::NotIssued);
    }
    let key = keys.for_id(kid, now).ok_or(Refusal::NotIssued)?;
    let mut mac = key.mac();
    mac.update(payload);
    // Constant-time comparison of the tag.
    mac.verify_slice(tag).map_err(|_| Refusal::NotIssued)?;
    // Authentic from here on: what follows was written by `seal`.
    fn text(field: Option<&[u8]>) -> Result<&str, Refusal> {
        field
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or(Refusal::NotIssued)
    }
    let expiry: u64 = text(fields.next())?
        .parse()
        .map_err(|_| Refusal::NotIssued)?;
    let source = text(fields.next())?;
    let sealed_for = text(fields.next())?;
    let state = text(fields.next())?;
    if sealed_for != endpoint {
        return Err(Refusal::OtherEndpoint);
    }
    if now > expiry {
        return Err(Refusal::Expired);
    }
    if source.is_empty() || state.is_empty() {
        return Err(Refusal::NotIssued);
    }
    Ok((source.to_string(), state.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EP: &str = "/v1/microblog/profile/posts";
    const T: u64 = 1_800_000_000;

    fn key(id: &str, fill: u8) -> CursorKey {
        CursorKey::new(id, vec![fill; 32]).unwrap()
    }

    fn keys() -> CursorKeys {
        CursorKeys::new(key("k1", 1))
    }

    #[test]
    fn round_trip() {
        for up in [
            "2",
            "t3_abc",
            "eyJ4IjoxfQ==",
            "ünïcode & more\nwith a newline",
        ] {
            let c = seal(&keys(), "forum.reddit_json", EP, up, T).unwrap();
            assert!(
                c.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{c}"
            );
            assert_eq!(
                open(&keys(), &c, EP, T + 1),
                Ok(("forum.reddit_json".into(), up.into()))
            );
        }
    }

    #[test]
    fn forged_altered_and_foreign_cursors_are_refused() {
        let k = keys();
        let c = seal(&k, "microblog.x_api", EP, "12:tok", T).unwrap();
        // The old unsigned format: base64url of "source\nstate".
        let forged = URL_SAFE_NO_PAD.encode("microblog.x_api\n..%2F..%2Fadmin:x");
        for bad in ["", "not a cursor", "c2FtcGxl", forged.as_str()] {
            assert_eq!(open(&k, bad, EP, T), Err(Refusal::NotIssued), "{bad}");
        }
        // Every single-character change is caught.
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        for i in 0..c.len() {
            let mut bytes = c.clone().into_bytes();
            bytes[i] = *alphabet.iter().find(|a| **a != bytes[i]).unwrap();
            let altered = String::from_utf8(bytes).unwrap();
            assert!(open(&k, &altered, EP, T).is_err(), "position {i}");
        }
        // A payload re-sealed under another secret with the same key id.
        let other = CursorKeys::new(key("k1", 2));
        let c2 = seal(&other, "microblog.x_api", EP, "12:tok", T).unwrap();
        assert_eq!(open(&k, &c2, EP, T), Err(Refusal::NotIssued));
        assert_eq!(
            open(&k, &c, "/v1/microblog/search", T),
            Err(Refusal::OtherEndpoint)
        );
        assert_eq!(
            open(&k, &c, EP, T + LIFETIME.as_secs() + 1),
            Err(Refusal::Expired)
        );
        assert!(open(&k, &c, EP, T + LIFETIME.as_secs()).is_ok());
    }

    #[test]
    fn the_previous_secret_opens_until_its_window_ends() {
        let old = keys();
        let c = seal(&old, "s.x", EP, "state", T).unwrap();
        let rotated = CursorKeys {
            current: key("k2", 2),
            previous: Some((key("k1", 1), T + 3600)),
        };
        assert!(open(&rotated, &c, EP, T + 3600).is_ok());
        assert_eq!(open(&rotated, &c, EP, T + 3601), Err(Refusal::NotIssued));
        // New cursors are sealed with the current secret.
        let fresh = seal(&rotated, "s.x", EP, "state", T).unwrap();
        assert_eq!(open(&old, &fresh, EP, T), Err(Refusal::NotIssued));
    }

    #[test]
    fn too_long_a_state_is_not_issued() {
        assert!(seal(&keys(), "s.x", EP, &"x".repeat(2900), T).is_some());
        assert_eq!(seal(&keys(), "s.x", EP, &"x".repeat(3100), T), None);
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let shown = format!(
            "{:?}",
            CursorKey::new("k1", b"sixteen-byte-secret!".to_vec())
        );
        assert!(!shown.contains("sixteen"), "{shown}");
        assert!(!format!("{:?}", CursorKey::ephemeral()).contains("secret: ["));
    }
}
