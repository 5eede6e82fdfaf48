//! The statistics the benchmark reports share, so one word means one thing in all of them.

/// The median of some samples: the middle one of an odd count, the mean of the middle two of
/// an even count (the textbook definition, so an even number of rounds is not biased upwards);
/// NaN when there are none.
pub(crate) fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The `q`-quantile (0 ≤ q ≤ 1) of some samples by the nearest-rank method: the smallest
/// sample with at least a fraction `q` of all samples at or below it (`q = 0.9` is the p90);
/// NaN when there are none.
pub(crate) fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
