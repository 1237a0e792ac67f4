//! Timing shared by the reduction-cost examples.

use std::time::Instant;

/// Seconds a call of `f`: the median of 9 rounds of 200 calls.
pub fn median_seconds(mut f: impl FnMut()) -> f64 {
    const ROUNDS: usize = 9;
    const CALLS: usize = 200;
    let mut times: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            (0..CALLS).for_each(|_| f());
            start.elapsed().as_secs_f64() / CALLS as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[ROUNDS / 2]
}
