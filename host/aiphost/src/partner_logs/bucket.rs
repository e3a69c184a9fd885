//! A partner's log rate: a token bucket of lines a second with a burst, which also counts the
//! lines it refused since the last one it let through (the gap a marker record then tells of).

use crate::quota::RateLimiter;

/// What [`LineBucket::admit`] decided of one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// The line passes; `dropped` lines were refused since the last line that passed.
    Pass {
        /// Lines refused just before this one.
        dropped: u64,
    },
    /// The line is over the rate: dropped.
    Drop,
}

/// The token bucket of one partner's log lines.
#[derive(Debug)]
pub struct LineBucket {
    limiter: RateLimiter,
    dropped: u64,
}

impl LineBucket {
    /// A full bucket at `now_ms`: `burst` lines at once, refilled at `rate` lines a second.
    pub fn new(rate: u32, burst: u32, now_ms: i64) -> Self {
        LineBucket {
            limiter: RateLimiter::new(rate, burst, now_ms),
            dropped: 0,
        }
    }

    /// Whether a line logged at `now_ms` passes.
    pub fn admit(&mut self, now_ms: i64) -> Admit {
        match self.limiter.take(now_ms) {
            Ok(()) => Admit::Pass {
                dropped: std::mem::take(&mut self.dropped),
            },
            Err(_) => {
                self.dropped += 1;
                Admit::Drop
            }
        }
    }

    /// The lines refused since the last one that passed, now told of (the count starts again).
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_and_the_gap_is_counted_once() {
        let mut bucket = LineBucket::new(100, 500, 0);
        let passed = (0..600)
            .filter(|_| matches!(bucket.admit(0), Admit::Pass { .. }))
            .count();
        assert_eq!(passed, 500, "the burst, at one instant");
        // 100 ms later: 10 more lines' worth, and the first says 100 were refused before it.
        assert_eq!(bucket.admit(100), Admit::Pass { dropped: 100 });
        for _ in 0..9 {
            assert_eq!(bucket.admit(100), Admit::Pass { dropped: 0 });
        }
        assert_eq!(bucket.admit(100), Admit::Drop);
        assert_eq!(bucket.take_dropped(), 1);
        assert_eq!(bucket.take_dropped(), 0);
        // A long quiet spell refills no more than the burst.
        let passed = (0..1000)
            .filter(|_| matches!(bucket.admit(3_600_000), Admit::Pass { .. }))
            .count();
        assert_eq!(passed, 500);
    }
}
