//! What can go wrong in the account functions, as domain values. The HTTP layer (`crate::error`)
//! turns each into the spec's error code and message, once.

use std::fmt;

/// The daily caps a request can hit (the counters of `caps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapReached {
    /// Sign-in codes per address or per client network.
    SigninCodes,
    /// Dashboard links per account (browser-link).
    DashboardLinks,
}

#[derive(Debug)]
pub enum AccountsError {
    /// The account already holds the maximum number of keys.
    KeyLimit {
        max: i64,
    },
    /// No active key with this id on the account.
    NoSuchKey {
        key_id: String,
    },
    /// A wrong code; `attempts_left` guesses remain for it.
    InvalidCode {
        attempts_left: u32,
    },
    /// The code is older than its lifetime.
    CodeExpired {
        lifetime_minutes: i64,
    },
    /// The code's wrong guesses are used up (or it is locked).
    TooManyAttempts,
    /// No code is pending for the address.
    NoPendingCode,
    /// A code was sent to the address less than `cooldown_seconds` ago; asking again is possible in
    /// `retry_after` seconds.
    Cooldown {
        retry_after: u64,
        cooldown_seconds: i64,
    },
    DailyCap(CapReached),
    /// The address is of a disposable e-mail domain.
    EmailNotAccepted,
    /// The dashboard link is unknown, already used or expired.
    UnknownLink,
    /// The sign-in e-mail could not be sent.
    Mail(String),
    Db(sqlx::Error),
}

impl From<sqlx::Error> for AccountsError {
    fn from(e: sqlx::Error) -> Self {
        AccountsError::Db(e)
    }
}

/// For operators and logs (the `admin` commands print it); API clients get the envelope instead.
impl fmt::Display for AccountsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountsError::KeyLimit { max } => write!(f, "the account already holds {max} keys"),
            AccountsError::NoSuchKey { key_id } => write!(f, "no active key {key_id}"),
            AccountsError::InvalidCode { attempts_left } => {
                write!(f, "wrong sign-in code ({attempts_left} guesses left)")
            }
            AccountsError::CodeExpired { .. } => write!(f, "the sign-in code expired"),
            AccountsError::TooManyAttempts => write!(f, "too many wrong guesses"),
            AccountsError::NoPendingCode => write!(f, "no sign-in code is pending"),
            AccountsError::Cooldown { retry_after, .. } => {
                write!(f, "a code was sent recently; retry in {retry_after} s")
            }
            AccountsError::DailyCap(cap) => write!(f, "daily cap reached: {cap:?}"),
            AccountsError::EmailNotAccepted => write!(f, "disposable address"),
            AccountsError::UnknownLink => write!(f, "unknown dashboard link"),
            AccountsError::Mail(e) => write!(f, "sign-in e-mail not sent: {e}"),
            AccountsError::Db(e) => write!(f, "database error: {e}"),
        }
    }
}

impl std::error::Error for AccountsError {}

/// `Result` of the account functions.
pub type AccountsResult<T> = Result<T, AccountsError>;
