//! Every secret the service makes, and how each is stored: API keys, session tokens, dashboard-link
//! tokens and sign-in codes. The formats live here and nowhere else.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Prefix of every API key.
pub const KEY_PREFIX: &str = "ss_live_";
/// Base62 characters after the prefix (about 190 bits).
pub const KEY_RANDOM_CHARS: usize = 32;
/// Characters of a key shown in listings: `ss_live_` and four more.
pub const KEY_DISPLAY_CHARS: usize = 12;
/// Prefix of a browser session token (`x-session`).
pub const SESSION_PREFIX: &str = "ss_sess_";
/// Prefix of a one-time dashboard-link token.
pub const LINK_PREFIX: &str = "ss_link_";
/// Base62 characters of session and link tokens (about 256 bits).
pub const TOKEN_RANDOM_CHARS: usize = 43;

fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).expect("the operating system's random generator failed");
    buf
}

/// `n` base62 characters from the OS CSPRNG, without modulo bias (bytes >= 248 are redrawn).
pub fn random_base62(n: usize) -> String {
    let mut out = String::with_capacity(n);
    while out.len() < n {
        for b in random_bytes(n * 2) {
            if b < 248 && out.len() < n {
                out.push(BASE62[(b % 62) as usize] as char);
            }
        }
    }
    out
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// SHA-256 of a machine-made secret (key, session or link token), hex. These carry 190+ bits, so a
/// plain hash is enough and lets the database find them by equality on an index.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// A new API key: `ss_live_` and 32 base62 characters.
pub fn new_api_key() -> String {
    format!("{KEY_PREFIX}{}", random_base62(KEY_RANDOM_CHARS))
}

/// Whether a header value has the shape of a key (checked before any database look-up).
pub fn looks_like_api_key(s: &str) -> bool {
    s.len() == KEY_PREFIX.len() + KEY_RANDOM_CHARS
        && s.starts_with(KEY_PREFIX)
        && s[KEY_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric())
}

/// The part of a key shown in listings.
pub fn key_display_prefix(key: &str) -> String {
    key.chars().take(KEY_DISPLAY_CHARS).collect()
}

pub fn new_session_token() -> String {
    format!("{SESSION_PREFIX}{}", random_base62(TOKEN_RANDOM_CHARS))
}

pub fn new_link_token() -> String {
    format!("{LINK_PREFIX}{}", random_base62(TOKEN_RANDOM_CHARS))
}

/// An id with a readable prefix, such as `key_` or `acc_`, and 16 base62 characters.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", random_base62(16))
}

/// A 6-digit sign-in code from the OS CSPRNG, without modulo bias.
pub fn new_code() -> String {
    const LIMIT: u32 = 4_294_000_000; // the largest multiple of 10^6 below 2^32
    loop {
        let b = random_bytes(4);
        let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        if n < LIMIT {
            return format!("{:06}", n % 1_000_000);
        }
    }
}

/// HMAC-SHA256(server secret, e-mail || ":" || code), hex. A code has only 10^6 values, so a plain
/// hash would be reversed at once from a database copy; the keyed hash also needs the server secret.
pub fn code_hash(secret: &[u8], email: &str, code: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(email.as_bytes());
    mac.update(b":");
    mac.update(code.as_bytes());
    hex(&mac.finalize().into_bytes())
}

/// Constant-time equality of two stored hashes.
pub fn same_hash(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// A new server secret: 32 random bytes, hex.
pub fn new_server_secret() -> String {
    hex(&random_bytes(32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_documented_shape() {
        let k = new_api_key();
        assert!(looks_like_api_key(&k), "{k}");
        assert_eq!(key_display_prefix(&k).len(), 12);
        assert_ne!(new_api_key(), k);
        assert!(!looks_like_api_key("ss_live_short"));
        assert!(!looks_like_api_key(&format!("xx_live_{}", &k[8..])));
    }

    #[test]
    fn codes_are_six_digits_and_hashes_are_keyed() {
        for _ in 0..100 {
            let c = new_code();
            assert_eq!(c.len(), 6);
            assert!(c.bytes().all(|b| b.is_ascii_digit()));
        }
        let a = code_hash(b"one", "a@example.com", "123456");
        assert_ne!(a, code_hash(b"two", "a@example.com", "123456"));
        assert_ne!(a, code_hash(b"one", "b@example.com", "123456"));
        assert!(same_hash(&a, &code_hash(b"one", "a@example.com", "123456")));
        assert!(!same_hash(&a, &token_hash("x")));
    }
}
