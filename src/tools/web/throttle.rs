//! The per-provider throttle: at most one request every `min_interval_ms`. A call that comes
//! too soon waits its turn (queues) instead of failing, so a burst of parallel searches is
//! spread out rather than answered with the provider's 429 or bot page.
//!
//! Built on `governor` (GCRA, no background task); the wait uses its own timer, so it works
//! the same under any runtime. Waiting is cancel-safe: the caller's cancellation drops it.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

/// One provider's throttle.
pub struct Throttle {
    limiter: Option<DefaultDirectRateLimiter>,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("enabled", &self.limiter.is_some())
            .finish()
    }
}

impl Throttle {
    /// One request per `interval`, no bursts; a zero interval never waits.
    pub fn new(interval: Duration) -> Self {
        let limiter = Quota::with_period(interval)
            .map(|q| q.allow_burst(NonZeroU32::MIN))
            .map(RateLimiter::direct);
        Self { limiter }
    }

    /// Wait until a request may be sent.
    pub async fn wait(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.until_ready().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn calls_in_a_burst_are_spaced_out_not_refused() {
        let throttle = Throttle::new(Duration::from_millis(50));
        let started = Instant::now();
        for _ in 0..3 {
            throttle.wait().await;
        }
        // The first goes at once, the next two each wait one interval.
        assert!(
            started.elapsed() >= Duration::from_millis(95),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_zero_interval_never_waits() {
        let throttle = Throttle::new(Duration::ZERO);
        let started = Instant::now();
        for _ in 0..100 {
            throttle.wait().await;
        }
        assert!(started.elapsed() < Duration::from_millis(50));
    }
}
