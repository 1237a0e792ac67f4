#![allow(dead_code)] // each test binary uses a different part of these helpers

pub mod cli;
pub mod matrices;
pub mod outcomes;

/// Two vectors of `n` values spread over about `[-0.5, 0.6]`, with no pattern a reduction order
/// could hide (the operands of the dot-product reproducibility tests).
pub fn dot_operands(n: usize) -> (Vec<f64>, Vec<f64>) {
    let x = (0..n)
        .map(|i| ((i * 7919) % 1000) as f64 / 997.0 - 0.5)
        .collect();
    let y = (0..n)
        .map(|i| ((i * 104729) % 1000) as f64 / 991.0 - 0.4)
        .collect();
    (x, y)
}
