//! Per-source health: a circuit breaker over consecutive fall-back failures and a token bucket for
//! upstreams that publish a rate limit. State is kept per source and, for sources that connect to a
//! host the client names, per host, so one dead instance cannot open the breaker for the others.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Largest number of per-host states kept for one source.
const HOSTS_MAX: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls skip the source until the cool-down ends.
    Open,
    /// The cool-down ended: the next call is a probe that closes or re-opens the breaker.
    HalfOpen,
}

#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Consecutive fall-back failures that open the breaker; 0 never opens it.
    pub failures: u32,
    pub cooldown: Duration,
    /// `(requests per second, burst)`; `None` means no local limit.
    pub rate: Option<(f64, u32)>,
}

#[derive(Debug)]
struct State {
    failures: u32,
    open_until: Option<Instant>,
    /// When the running half-open probe started; a probe older than the cool-down is presumed lost.
    probe_started: Option<Instant>,
    tokens: f64,
    refilled: Instant,
}

impl State {
    fn new(policy: &Policy, now: Instant) -> Self {
        State {
            failures: 0,
            open_until: None,
            probe_started: None,
            tokens: policy
                .rate
                .map_or(0.0, |(_, burst)| f64::from(burst.max(1))),
            refilled: now,
        }
    }

    fn state(&self, now: Instant) -> BreakerState {
        match self.open_until {
            None => BreakerState::Closed,
            Some(t) if now < t => BreakerState::Open,
            Some(_) => BreakerState::HalfOpen,
        }
    }
}

/// Why a source is skipped without being called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    BreakerOpen,
    RateLimited,
}

/// What a call attempt came to, for the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The upstream answered (with a page, or a definite "no such thing").
    Answered,
    /// A failure that made the call fall back (unreachable, 5xx, 429, garbage).
    Failed,
    /// Neither (for example no credential for the host): leaves the breaker alone.
    Neutral,
}

pub struct Health {
    policy: Policy,
    states: Mutex<HashMap<String, State>>,
}

impl Health {
    pub fn new(policy: Policy) -> Self {
        Health {
            policy,
            states: Mutex::new(HashMap::new()),
        }
    }

    fn with<R>(&self, key: &str, f: impl FnOnce(&mut State, Instant, &Policy) -> R) -> R {
        let now = Instant::now();
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        if !states.contains_key(key) && states.len() >= HOSTS_MAX {
            states.retain(|k, s| k.is_empty() || s.open_until.is_some() || s.failures > 0);
            if states.len() >= HOSTS_MAX {
                states.retain(|k, _| k.is_empty());
            }
        }
        let state = states
            .entry(key.to_string())
            .or_insert_with(|| State::new(&self.policy, now));
        f(state, now, &self.policy)
    }

    /// Whether a call may go to the upstream now; takes a rate-limit token when it may.
    pub fn admit(&self, key: &str) -> Result<(), Skip> {
        self.with(key, |s, now, policy| {
            match s.state(now) {
                BreakerState::Closed => {}
                BreakerState::Open => return Err(Skip::BreakerOpen),
                BreakerState::HalfOpen => {
                    if s.probe_started
                        .is_some_and(|t| now.duration_since(t) < policy.cooldown)
                    {
                        return Err(Skip::BreakerOpen);
                    }
                }
            }
            if let Some((per_sec, burst)) = policy.rate {
                let burst = f64::from(burst.max(1));
                let elapsed = now.duration_since(s.refilled).as_secs_f64();
                s.tokens = (s.tokens + elapsed * per_sec).min(burst);
                s.refilled = now;
                if s.tokens < 1.0 {
                    return Err(Skip::RateLimited);
                }
                s.tokens -= 1.0;
            }
            if s.state(now) == BreakerState::HalfOpen {
                s.probe_started = Some(now);
            }
            Ok(())
        })
    }

    pub fn record(&self, key: &str, outcome: Outcome) {
        self.with(key, |s, now, policy| match outcome {
            Outcome::Answered => {
                s.failures = 0;
                s.open_until = None;
                s.probe_started = None;
            }
            Outcome::Neutral => {
                s.probe_started = None;
            }
            Outcome::Failed => {
                s.failures = s.failures.saturating_add(1);
                let probing = s.probe_started.take().is_some();
                if probing || (policy.failures > 0 && s.failures >= policy.failures) {
                    s.open_until = Some(now + policy.cooldown);
                }
            }
        })
    }

    /// `(state, consecutive failures)` of one key.
    pub fn snapshot(&self, key: &str) -> (BreakerState, u32) {
        self.with(key, |s, now, _| (s.state(now), s.failures))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(failures: u32, cooldown_ms: u64, rate: Option<(f64, u32)>) -> Policy {
        Policy {
            failures,
            cooldown: Duration::from_millis(cooldown_ms),
            rate,
        }
    }

    #[test]
    fn breaker_opens_half_opens_and_closes() {
        let h = Health::new(policy(3, 50, None));
        for _ in 0..2 {
            assert_eq!(h.admit(""), Ok(()));
            h.record("", Outcome::Failed);
        }
        assert_eq!(h.snapshot(""), (BreakerState::Closed, 2));
        h.record("", Outcome::Failed);
        assert_eq!(h.snapshot(""), (BreakerState::Open, 3));
        assert_eq!(h.admit(""), Err(Skip::BreakerOpen));
        assert_eq!(h.admit("other.host"), Ok(()), "hosts are independent");

        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(h.snapshot("").0, BreakerState::HalfOpen);
        assert_eq!(h.admit(""), Ok(()), "one probe");
        assert_eq!(h.admit(""), Err(Skip::BreakerOpen), "only one probe");
        h.record("", Outcome::Failed);
        assert_eq!(
            h.snapshot("").0,
            BreakerState::Open,
            "a failed probe re-opens"
        );

        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(h.admit(""), Ok(()));
        h.record("", Outcome::Answered);
        assert_eq!(h.snapshot(""), (BreakerState::Closed, 0));
    }

    #[test]
    fn zero_failures_never_opens() {
        let h = Health::new(policy(0, 50, None));
        for _ in 0..20 {
            h.record("", Outcome::Failed);
        }
        assert_eq!(h.admit(""), Ok(()));
    }

    #[test]
    fn token_bucket_limits_and_refills() {
        let h = Health::new(policy(5, 1000, Some((50.0, 2))));
        assert_eq!(h.admit(""), Ok(()));
        assert_eq!(h.admit(""), Ok(()));
        assert_eq!(h.admit(""), Err(Skip::RateLimited));
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(h.admit(""), Ok(()), "refilled at 50/s");
    }
}
