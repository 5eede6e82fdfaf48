//! The per-provider throttle: at most one request every `min_interval`. A call that comes
//! too soon waits its turn (queues) instead of failing, so a burst of parallel searches is
//! spread out rather than answered with the provider's 429 or bot page.
//!
//! A 429's `Retry-After` pauses the whole provider ([`Throttle::pause_for`]): every call
//! queued for it waits the pause out, not just the call that was told.
//!
//! Built on `governor` (GCRA, no background task). Waiting is cancel-safe: the caller's
//! cancellation drops it.

use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::time::Instant;

/// One provider's throttle.
pub(crate) struct Throttle {
    limiter: Option<DefaultDirectRateLimiter>,
    paused_until: Mutex<Option<Instant>>,
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
    pub(crate) fn new(interval: Duration) -> Self {
        let limiter = Quota::with_period(interval)
            .map(|q| q.allow_burst(NonZeroU32::MIN))
            .map(RateLimiter::direct);
        Self {
            limiter,
            paused_until: Mutex::new(None),
        }
    }

    /// Hold every request to this provider for `wait` (a 429's `Retry-After`); a longer pause
    /// already in force stays.
    pub(crate) fn pause_for(&self, wait: Duration) {
        let until = Instant::now() + wait;
        if let Ok(mut paused) = self.paused_until.lock()
            && paused.is_none_or(|current| current < until)
        {
            *paused = Some(until);
        }
    }

    /// Wait until a request may be sent: past any pause, then the rate limit.
    pub(crate) async fn wait(&self) {
        let paused = self.paused_until.lock().ok().and_then(|p| *p);
        if let Some(until) = paused {
            tokio::time::sleep_until(until).await;
        }
        if let Some(limiter) = &self.limiter {
            limiter.until_ready().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_every_caller_and_a_shorter_one_does_not_cut_it() {
        let throttle = Throttle::new(Duration::ZERO);
        let started = Instant::now();
        throttle.pause_for(Duration::from_secs(3));
        throttle.pause_for(Duration::from_secs(1));
        tokio::join!(throttle.wait(), throttle.wait());
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        throttle.wait().await;
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(3),
            "the pause is over"
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
