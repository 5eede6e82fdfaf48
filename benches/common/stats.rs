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
