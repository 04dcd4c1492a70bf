//! Per-key request rate (GCRA: `rate_per_second` sustained, `burst` at once) and calls in flight.
//! Both are checked in one step per key under a short mutex, so concurrent requests cannot slip past.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::Limits;

struct KeyState {
    /// Theoretical arrival time of the next request, in nanoseconds since `KeyLimits::epoch`.
    tat: Mutex<u64>,
    in_flight: AtomicU32,
}

pub struct KeyLimits {
    epoch: Instant,
    /// Nanoseconds between two requests at the sustained rate.
    interval: u64,
    /// How far ahead of now the arrival time may run: `interval * (burst - 1)`.
    tolerance: u64,
    max_in_flight: u32,
    keys: Mutex<HashMap<String, Arc<KeyState>>>,
}

/// A call in flight; the count drops when this does.
pub struct InFlight(Arc<KeyState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl KeyLimits {
    pub fn new(limits: &Limits) -> Self {
        let rate = if limits.rate_per_second > 0.0 {
            limits.rate_per_second
        } else {
            1e9
        };
        let interval = (1e9 / rate) as u64;
        KeyLimits {
            epoch: Instant::now(),
            interval,
            tolerance: interval.saturating_mul(u64::from(limits.burst.max(1) - 1)),
            max_in_flight: limits.in_flight.max(1),
            keys: Mutex::new(HashMap::new()),
        }
    }

    fn state(&self, key_id: &str) -> Arc<KeyState> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        keys.entry(key_id.to_string())
            .or_insert_with(|| {
                Arc::new(KeyState {
                    tat: Mutex::new(0),
                    in_flight: AtomicU32::new(0),
                })
            })
            .clone()
    }

    /// Counts one request against the key's rate; `Err(seconds)` to wait when over it.
    pub fn check_rate(&self, key_id: &str) -> Result<(), u64> {
        self.rate(&self.state(key_id))
    }

    fn rate(&self, state: &KeyState) -> Result<(), u64> {
        let now = self.epoch.elapsed().as_nanos() as u64;
        let mut tat = state.tat.lock().unwrap_or_else(|p| p.into_inner());
        let start = (*tat).max(now);
        if start - now > self.tolerance {
            let wait = start - now - self.tolerance;
            return Err(wait.div_ceil(1_000_000_000).max(1));
        }
        *tat = start + self.interval;
        Ok(())
    }

    /// A platform call: the rate, then a place among the calls in flight; `Err(seconds)` when over either.
    pub fn enter(&self, key_id: &str) -> Result<InFlight, u64> {
        let state = self.state(key_id);
        self.rate(&state)?;
        let before = state.in_flight.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(state);
        if before >= self.max_in_flight {
            return Err(1);
        }
        Ok(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rate: f64, burst: u32, in_flight: u32) -> KeyLimits {
        KeyLimits::new(&Limits {
            rate_per_second: rate,
            burst,
            in_flight,
            ..Limits::default()
        })
    }

    #[test]
    fn the_eleventh_request_of_a_burst_waits() {
        let l = limits(0.5, 10, 100);
        for i in 0..10 {
            assert!(l.check_rate("k").is_ok(), "request {i}");
        }
        let wait = l.check_rate("k").expect_err("over the burst");
        assert!((1..=2).contains(&wait), "{wait}");
        assert!(l.check_rate("other").is_ok(), "keys are limited separately");
    }

    #[test]
    fn the_eleventh_call_in_flight_is_refused_until_one_ends() {
        let l = limits(1000.0, 1000, 10);
        let held: Vec<_> = (0..10).map(|_| l.enter("k").expect("in flight")).collect();
        assert!(l.enter("k").is_err());
        drop(held);
        assert!(l.enter("k").is_ok());
    }
}
