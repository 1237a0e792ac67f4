//! Test vectors shared by the CPU benchmarks and the timing examples (included with
//! `#[path]`, as benches and examples are separate crates).

use precsolve::Precision;
use precsolve::backend::cpu::CpuVector;
use rayon::prelude::*;

/// Deterministic values with a full double-double mantissa: `(i % 1000 + shift) / 7` in `P`.
pub fn test_vector<P: Precision>(n: usize, shift: f64) -> CpuVector<P> {
    let seven = P::from_f64(7.0);
    let values: Vec<P> = (0..n)
        .into_par_iter()
        .map(|i| P::from_f64((i % 1000) as f64 + shift).div(&seven))
        .collect();
    CpuVector::from(values)
}
