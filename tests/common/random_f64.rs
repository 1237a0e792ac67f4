//! Seeded random doubles for the exact-arithmetic tests (`dd_exact`, `qd_exact`): the shapes
//! where carries and exact cancellations happen, and the bit-level helpers around them.
#![allow(dead_code)] // each test binary uses a different part

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The seed from the environment variable `var` (a `u64`), else `default`.
pub fn seed_from_env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Independent stream per test, so adding cases to one test does not change the others.
pub fn rng_for(seed: u64, test: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(test);
    rng
}

pub fn exponent(x: f64) -> i32 {
    ((x.to_bits() >> 52) & 0x7ff) as i32 - 1023
}

/// `2^k`, subnormal powers included.
pub fn pow2(k: i32) -> f64 {
    assert!((-1074..=1023).contains(&k), "2^{k} is not a double");
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// A normal double with exponent in `[emin, emax]`, random sign, and a mantissa that is mostly
/// uniform but sometimes zero, all ones, short (few bits), or nearly all ones: the shapes where
/// carries and exact cancellations happen.
pub fn rand_f64(rng: &mut ChaCha8Rng, emin: i32, emax: i32) -> f64 {
    let e = rng.random_range(emin..=emax);
    let frac_mask = (1u64 << 52) - 1;
    let frac = match rng.random_range(0..16) {
        0 => 0,
        1 => frac_mask,
        2 => (rng.random::<u64>() & frac_mask) & !((1u64 << rng.random_range(20..52)) - 1),
        3 => frac_mask ^ (rng.random::<u64>() & 0xff),
        _ => rng.random::<u64>() & frac_mask,
    };
    let x = f64::from_bits(((e + 1023) as u64) << 52 | frac);
    if rng.random_bool(0.5) { -x } else { x }
}

/// `x != 0` moved by `k` units in the last place away from zero (toward zero for k < 0).
pub fn nudge(x: f64, k: i64) -> f64 {
    assert!(x != 0.0 && x.is_finite(), "nudge({x:e})");
    f64::from_bits((x.to_bits() as i64 + k) as u64)
}
