//! TwoProd with the hardware FMA and with Dekker's split (the fallback for CPUs without FMA) must
//! give bitwise the same results, so a run's bits do not depend on the CPU.
//!
//! A separate test binary with a single test: the switch (`set_fma_fallback_for_tests`) is a
//! process-global flag, and tests of one binary run in parallel threads.
//!
//! Inputs stay where Dekker's product is exact: every product formed by TwoProd within about
//! [2^-968, 2^1022] (the operands themselves may exceed 2^996, QD's split rescales them).

use precsolve::precision::{fma_available, set_fma_fallback_for_tests, two_prod};
use precsolve::{Dd, Precision};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const N: usize = 200_000;
const SEED: u64 = 0xfa11_bac4;

/// A normal double `m * 2^e` with random sign and 52 random fraction bits (or none, sometimes).
fn rand_f64(rng: &mut ChaCha8Rng, e: i32) -> f64 {
    let frac = if rng.random_range(0..8) == 0 {
        0
    } else {
        rng.random::<u64>() >> 12
    };
    let x = f64::from_bits(((e + 1023) as u64) << 52 | frac);
    if rng.random_bool(0.5) { -x } else { x }
}

/// A normalised double-double with exponent `e` and a `lo` up to ulp(hi)/2 (or zero).
fn rand_dd(rng: &mut ChaCha8Rng, e: i32) -> Dd {
    let hi = rand_f64(rng, e);
    if rng.random_range(0..8) == 0 {
        return Dd::from_f64(hi);
    }
    let drop = rng.random_range(0..=(e - 54 + 1022).clamp(0, 40));
    Dd::new(hi, rand_f64(rng, e - 54 - drop))
}

struct Case {
    a: Dd,
    b: Dd,
    /// dividend for the division and radicand for the square root
    c: Dd,
    d: Dd,
}

fn cases() -> Vec<Case> {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    (0..N)
        .map(|_| {
            // product exponent in [-900, 1000]; a factor may be up to 2^1020 (Dekker's split
            // overflows above 2^996 without QD's rescaling)
            let ea = rng.random_range(-950..=1020);
            let eb = (rng.random_range(-900..=1000) - ea).clamp(-950, 1020);
            let a = rand_dd(&mut rng, ea);
            let b = rand_dd(&mut rng, eb);
            // quotient exponent in [-850, 1000]; its second residual ~2^-53 |c| stays >= 2^-968
            let ed = rng.random_range(-850..=1020);
            let ec = (rng.random_range(-850..=1000) + ed).clamp(-850, 1020);
            Case {
                a,
                b,
                c: rand_dd(&mut rng, ec),
                d: rand_dd(&mut rng, ed),
            }
        })
        .collect()
}

/// Every operation that goes through TwoProd, as bits.
fn run(cases: &[Case]) -> Vec<[u64; 12]> {
    let bits = |x: Dd| [x.hi.to_bits(), x.lo.to_bits()];
    cases
        .iter()
        .map(|k| {
            let (p, e) = two_prod(k.a.hi, k.b.hi);
            let mul = k.a * k.b;
            let mul_f64 = k.a * k.b.hi;
            let div = k.c / k.d;
            let sqrt = k.c.abs().sqrt();
            let axpy = k.c.add_mul_f64(k.a.hi, &k.b);
            let mut out = [0u64; 12];
            out[0] = p.to_bits();
            out[1] = e.to_bits();
            for (i, x) in [mul, mul_f64, div, sqrt, axpy].into_iter().enumerate() {
                out[2 + 2 * i..4 + 2 * i].copy_from_slice(&bits(x));
            }
            out
        })
        .collect()
}

#[cfg_attr(
    not(host_fma),
    ignore = "this CPU has no FMA: both runs would use Dekker's split, comparing nothing"
)]
#[test]
fn dekker_fallback_matches_fma_bitwise() {
    const OPS: [&str; 6] = ["two_prod", "mul", "mul_f64", "div", "sqrt", "add_mul_f64"];
    let cases = cases();
    set_fma_fallback_for_tests(false);
    assert!(
        fma_available(),
        "build.rs found FMA on this CPU, the library did not"
    );
    let with_fma = run(&cases);
    set_fma_fallback_for_tests(true);
    assert!(!fma_available());
    let fallback = run(&cases);
    set_fma_fallback_for_tests(false);

    let mut big_factor = 0;
    for (i, (x, y)) in with_fma.iter().zip(&fallback).enumerate() {
        let k = &cases[i];
        if k.a.hi.abs() > 2f64.powi(996) {
            big_factor += 1;
        }
        for (j, op) in OPS.iter().enumerate() {
            let (fx, fy) = (&x[2 * j..2 * j + 2], &y[2 * j..2 * j + 2]);
            assert!(
                fx.iter().all(|b| f64::from_bits(*b).is_finite()),
                "seed {SEED:#x} case {i}: {op} not finite"
            );
            assert_eq!(
                fx,
                fy,
                "seed {SEED:#x} case {i}: {op} differs, FMA ({:e}, {:e}) vs Dekker ({:e}, {:e}); \
                 a = {:?}, b = {:?}, c = {:?}, d = {:?}",
                f64::from_bits(fx[0]),
                f64::from_bits(fx[1]),
                f64::from_bits(fy[0]),
                f64::from_bits(fy[1]),
                k.a,
                k.b,
                k.c,
                k.d
            );
        }
    }
    println!(
        "{N} cases x {} ops bitwise equal with and without FMA ({big_factor} with a factor above \
         2^996)",
        OPS.len()
    );
}
