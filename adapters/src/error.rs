//! How one upstream source fails. It sits below every module that reports or reads a failure
//! (the upstream plumbing, the handler slots, the chains), so none of them depends on another
//! to name it.

/// How one source failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// Connection error, timeout, 5xx or refused access: the next source may do better.
    Unavailable(String),
    /// The upstream said 429.
    RateLimited,
    /// The answer could not be understood.
    Malformed(String),
    /// The thing asked for does not exist upstream.
    NotFound,
    /// The upstream refused the request itself (a 4xx other than 404/429).
    Rejected(String),
    /// This source cannot serve this request on this deployment (for example no credential for
    /// the host asked for); the next source may.
    NotConfigured(String),
}

impl SourceError {
    /// Whether the next source in the chain should be tried.
    pub fn falls_back(&self) -> bool {
        matches!(
            self,
            SourceError::Unavailable(_)
                | SourceError::RateLimited
                | SourceError::Malformed(_)
                | SourceError::NotConfigured(_)
        )
    }
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Unavailable(why) => write!(f, "unavailable: {why}"),
            SourceError::RateLimited => f.write_str("rate-limited by the upstream"),
            SourceError::Malformed(why) => write!(f, "unreadable answer: {why}"),
            SourceError::NotFound => f.write_str("not found upstream"),
            SourceError::Rejected(why) => write!(f, "request refused: {why}"),
            SourceError::NotConfigured(why) => write!(f, "not configured: {why}"),
        }
    }
}
