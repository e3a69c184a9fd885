//! A duration histogram's bucket counts, kept beside the exporter's (which cannot be read
//! back) so the admin API can say a partner's p50 and p99: estimated from the buckets the way
//! PromQL's `histogram_quantile` does, over the same [`BUCKETS`].

use super::BUCKETS;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Counts per bucket ([`BUCKETS`], then `+Inf`), not cumulative.
#[derive(Default)]
pub struct Buckets {
    counts: [AtomicU64; BUCKETS.len() + 1],
}

impl Buckets {
    /// Count one observation of `took`.
    pub fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let at = BUCKETS
            .iter()
            .position(|upper| seconds <= *upper)
            .unwrap_or(BUCKETS.len());
        self.counts[at].fetch_add(1, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// The `q` quantile (0 to 1) in seconds, `None` with no observation. As
    /// `histogram_quantile`: linear within the bucket the rank falls in (the first bucket
    /// starts at 0); a rank in `+Inf` gives the highest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut below = 0u64;
        for (i, &n) in counts.iter().enumerate() {
            let upto = below + n;
            if (upto as f64) >= rank && n > 0 {
                let Some(&upper) = BUCKETS.get(i) else {
                    return BUCKETS.last().copied();
                };
                let lower = if i == 0 { 0.0 } else { BUCKETS[i - 1] };
                return Some(lower + (upper - lower) * (rank - below as f64) / n as f64);
            }
            below = upto;
        }
        BUCKETS.last().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn quantiles_interpolate_within_the_bucket_like_promql() {
        let b = Buckets::default();
        assert_eq!(b.quantile(0.5), None, "nothing observed");
        // 100 observations in (0.01, 0.025]: the median is halfway through that bucket.
        for _ in 0..100 {
            b.observe(ms(20));
        }
        let p50 = b.quantile(0.5).unwrap();
        assert!((p50 - 0.0175).abs() < 1e-9, "{p50}");
        // One slow one over 30 s: p99 stays in the bucket of the 100, p100 is the last bound.
        b.observe(Duration::from_secs(40));
        assert!(b.quantile(0.99).unwrap() <= 0.025);
        assert_eq!(b.quantile(1.0), Some(30.0));
        assert_eq!(b.count(), 101);
    }

    #[test]
    fn the_first_bucket_starts_at_zero() {
        let b = Buckets::default();
        for _ in 0..4 {
            b.observe(Duration::from_micros(100));
        }
        let p50 = b.quantile(0.5).unwrap();
        assert!((p50 - 0.00025).abs() < 1e-12, "{p50}");
    }
}
