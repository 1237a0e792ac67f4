//! Double-double arithmetic against exact rational arithmetic (`common/exact.rs`), on seeded random
//! cases: the error-free transformations must be exact, every operation must stay within its
//! published relative error bound, and every result must satisfy `|lo| <= ulp(hi)/2`.
//!
//! Bounds are relative, `c2*u^2 + c3*u^3` with u = 2^-53, from Joldes, Muller, Popescu 2017, "Tight
//! and rigorous error bounds for basic building blocks of double-word arithmetic", ACM TOMS 44(2)
//! ("JMP") and Muller, Rideau 2022, "Formalization of double-word arithmetic, and comments on ...",
//! ACM TOMS 48(1) ("MR"). Division and square root have no published bound for QD's algorithms;
//! theirs are derived in `src/precision/dd.rs` and kept with margin over what is observed.
//!
//! Inputs stay where the bounds hold: every result and intermediate normal, including the `lo`
//! parts 2^-106 below the result, i.e. magnitudes within about [2^-960, 2^1021].
//!
//! Seed: `DD_EXACT_SEED=<u64>` (default below); each test prints it with its failing case, and with
//! `--nocapture` the largest error seen per operation.

#[path = "common/exact.rs"]
mod exact;
#[path = "common/random_f64.rs"]
mod random_f64;

use exact::{Decimal, Dyadic};
use precsolve::Dd;
use precsolve::precision::{quick_two_sum, two_prod, two_sum};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use random_f64::{exponent, nudge, pow2, rand_f64, seed_from_env};
use std::cmp::Ordering;

/// Relative error bound `u2 * u^2 + u3 * u^3`.
#[derive(Clone, Copy, Debug)]
struct Bound {
    u2: f64,
    u3: f64,
}

/// QuadAdd = JMP Alg. 6 AccurateDWPlusDW: 3u^2/(1-4u) <= 3u^2 + 13u^3 (JMP; the worst case
/// they report is 2.25u^2, this suite has found 2.5u^2 with a power-of-two `hi`).
const ADD_BOUND_U2: f64 = 3.0;
const ADD_BOUND_U3: f64 = 13.0;
/// DD + double = JMP Alg. 4 DWPlusFP: 2u^2 (JMP, proof corrected in MR; asymptotically optimal).
const ADD_F64_BOUND_U2: f64 = 2.0;
/// DD * double = JMP Alg. 8 DWTimesFP2 (QD's): 3u^2 (JMP; worst case found about 2.5u^2).
const MUL_F64_BOUND_U2: f64 = 3.0;
/// QuadMul = JMP Alg. 10 DWTimesDW1 (QD's grouping): JMP proved 7u^2, MR improved it to 5u^2
/// (worst case JMP found: 4.99u^2).
const MUL_BOUND_U2: f64 = 5.0;
/// QD accurate_div: no published bound. 3u^2 from the residual's DWTimesFP2 plus 2u^2 from the
/// final DWPlusFP (see `Dd::div`), with a generous u^3 term for the remaining second-order terms.
const DIV_BOUND_U2: f64 = 5.0;
const DIV_BOUND_U3: f64 = 64.0;
/// QD sqrt (one Newton step): no published bound. `Dd::sqrt` derives 18.375u^2 to first order
/// (the double root's error squared plus its product with the correction's roundings); random
/// cases reach about 7u^2. 20u^2 leaves room for the second-order terms.
const SQRT_BOUND_U2: f64 = 20.0;
const SQRT_BOUND_U3: f64 = 0.0;

/// Decimal output (`Display`, digit loop in double-double): error of the printed digits beyond
/// the rounding to the last printed digit. Not published: composing the QuadMul bounds over the
/// binary powering of 10^k (k <= 300: three rounded squarings, up to four products) and the
/// scaling gives roughly 80u^2 at worst; random cases reach about 17u^2. 128u^2 = 1.6e-30
/// relative: about 30 correct significant digits.
const FMT_BOUND_U2: f64 = 128.0;
/// Decimal input (`FromStr`): relative error of the parsed value; same construction as above
/// (the mantissa's accumulation adds a few u^2, dropping digits past the 36th < 0.001u^2).
const PARSE_BOUND_U2: f64 = 128.0;

/// Cases per operation; the sum is the >= 10^6 the issue asks for (checked at compile time).
const N_EFT: usize = 20_000; // per error-free transformation
const N_ADD: usize = 250_000;
const N_ADD_F64: usize = 60_000;
const N_MUL: usize = 250_000;
const N_MUL_F64: usize = 100_000;
const N_DIV: usize = 150_000;
const N_SQRT: usize = 120_000;
const N_SLOPPY: usize = 20_000;
const N_DISPLAY: usize = 10_000;
const N_PARSE: usize = 20_000;
const _: () = assert!(
    3 * N_EFT
        + N_ADD
        + N_ADD_F64
        + N_MUL
        + N_MUL_F64
        + N_DIV
        + N_SQRT
        + N_SLOPPY
        + 2 * N_DISPLAY
        + N_PARSE
        >= 1_000_000
);

const DEFAULT_SEED: u64 = 0x5eed_d0b1_e0d0_b1e5;
const U2_EXP: i64 = -106;
const U3_EXP: i64 = -159;

fn seed() -> u64 {
    seed_from_env("DD_EXACT_SEED", DEFAULT_SEED)
}

/// This test's stream of the seed.
fn rng_for(test: u64) -> ChaCha8Rng {
    random_f64::rng_for(seed(), test)
}

/// A normalised double-double with `hi` from [`rand_f64`] and `lo` anywhere from 0 to
/// `ulp(hi)/2` (kept normal).
fn rand_dd(rng: &mut ChaCha8Rng, emin: i32, emax: i32) -> Dd {
    let hi = rand_f64(rng, emin, emax);
    with_rand_lo(rng, hi)
}

fn with_rand_lo(rng: &mut ChaCha8Rng, hi: f64) -> Dd {
    if hi == 0.0 || rng.random_range(0..10) == 0 {
        return Dd::from_parts(hi, 0.0);
    }
    let e = exponent(hi);
    // |lo| <= 2^(e-53); most of the time near the top, sometimes far below
    let max_drop = (e - 53 + 1022).clamp(0, 60);
    let drop = if rng.random_bool(0.7) {
        0
    } else {
        rng.random_range(0..=max_drop)
    };
    let lo = rand_f64(rng, e - 54 - drop, e - 54 - drop);
    // may round up to ulp(hi)/2 or beyond the tie: TwoSum renormalises exactly
    Dd::new(hi, lo)
}

/// `|lo| <= ulp(hi)/2` with ulp(hi) = 2^(exponent(hi) - 52), and `hi == fl(hi + lo)`.
fn check_normalized(r: Dd, what: &dyn Fn() -> String) {
    if r.lo == 0.0 {
        return;
    }
    assert!(
        r.hi.is_normal(),
        "{}: hi {:e} not normal with lo {:e}",
        what(),
        r.hi,
        r.lo
    );
    let half_ulp = pow2(exponent(r.hi) - 53);
    assert!(
        r.lo.abs() <= half_ulp && r.hi + r.lo == r.hi,
        "{}: not normalised: hi {:e} lo {:e} (ulp(hi)/2 = {:e})",
        what(),
        r.hi,
        r.lo,
        half_ulp
    );
}

fn bound_dyadic(b: Bound) -> Dyadic {
    Dyadic::from_f64(b.u2)
        .mul(&Dyadic::pow2(U2_EXP))
        .add(&Dyadic::from_f64(b.u3).mul(&Dyadic::pow2(U3_EXP)))
}

/// Largest error seen by one operation, for the report.
struct Stats {
    name: &'static str,
    bound: Bound,
    cases: usize,
    max_u2: f64,
    worst: String,
}

impl Stats {
    fn new(name: &'static str, bound: Bound) -> Stats {
        Stats {
            name,
            bound,
            cases: 0,
            max_u2: 0.0,
            worst: String::new(),
        }
    }

    fn record(&mut self, err_u2: f64, case: &dyn Fn() -> String) {
        self.cases += 1;
        if err_u2 > self.max_u2 {
            self.max_u2 = err_u2;
            self.worst = case();
        }
    }

    fn report(&self) {
        let max = if self.max_u2 < 1e6 {
            format!("{:.4}", self.max_u2)
        } else {
            format!("{:.3e}", self.max_u2)
        };
        println!(
            "{:<10} {:>7} cases  max rel err {max} u^2  (bound {} u^2 + {} u^3)  seed {}  worst: {}",
            self.name,
            self.cases,
            self.bound.u2,
            self.bound.u3,
            seed(),
            self.worst
        );
    }
}

fn fmt_dd(x: Dd) -> String {
    format!("Dd({:e}, {:e})", x.hi, x.lo)
}

/// Asserts `|got - exact| <= bound * |exact|` exactly and returns the error in units of u^2.
/// An exact zero must be computed as exactly zero.
fn check_rel(got: Dd, exact: &Dyadic, bound: &Dyadic, what: &dyn Fn() -> String) -> f64 {
    assert!(
        got.hi.is_finite() && got.lo.is_finite(),
        "{}: non-finite result {}",
        what(),
        fmt_dd(got)
    );
    let err = Dyadic::from_dd(got).sub(exact);
    if exact.is_zero() {
        assert!(err.is_zero(), "{}: exact 0, got {}", what(), fmt_dd(got));
        return 0.0;
    }
    let allowed = exact.mul(bound);
    assert!(
        err.cmp_abs(&allowed) != Ordering::Greater,
        "{}: error {:.3} u^2 over bound",
        what(),
        err.ratio_f64(exact) * 2f64.powi(106)
    );
    err.ratio_f64(exact) * 2f64.powi(106)
}

fn case_msg(op: &str, i: usize, a: Dd, b: &str, got: Dd) -> String {
    format!(
        "seed {} case {i}: {op}({}, {b}) = {}",
        seed(),
        fmt_dd(a),
        fmt_dd(got)
    )
}

/// Operand pairs for addition, by category: independent exponents, close exponents (carries),
/// `hi` parts that cancel to a few ulps, whole values that cancel to ~u^2 or exactly, zeros,
/// extreme exponents.
fn add_operands(rng: &mut ChaCha8Rng, i: usize) -> (Dd, Dd) {
    match i % 8 {
        0 | 1 => (rand_dd(rng, -400, 400), rand_dd(rng, -400, 400)),
        2 => {
            let a = rand_dd(rng, -400, 400);
            let e = exponent(a.hi) + rng.random_range(-3..=3);
            (a, rand_dd(rng, e, e))
        }
        3 => {
            // hi parts cancel to within a few ulps, lo parts random
            let a = rand_dd(rng, -400, 400);
            let bh = nudge(-a.hi, rng.random_range(-4..=4));
            (a, with_rand_lo(rng, bh))
        }
        4 => {
            // hi cancels exactly, lo parts nearly cancel: result ~u^2|a| or below
            let a = rand_dd(rng, -400, 400);
            let blo = if a.lo == 0.0 {
                rand_f64(rng, exponent(a.hi) - 110, exponent(a.hi) - 60)
            } else {
                nudge(-a.lo, rng.random_range(-1000..=1000))
            };
            (a, Dd::new(-a.hi, blo))
        }
        5 => {
            let a = rand_dd(rng, -400, 400);
            match rng.random_range(0..3) {
                0 => (a, a.neg()),
                1 => (a, Dd::ZERO),
                _ => (Dd::ZERO, a),
            }
        }
        _ => {
            let (lo_e, hi_e) = if rng.random_bool(0.5) {
                (-960, -860)
            } else {
                (900, 1021)
            };
            let a = rand_dd(rng, lo_e, hi_e);
            // cancelling to a few ulps leaves ~2^-105 |a| in lo: keep that normal
            let b = if rng.random_bool(0.5) || exponent(a.hi) < -910 {
                rand_dd(rng, lo_e, hi_e)
            } else {
                let k = rng.random_range(-4..=4);
                with_rand_lo(rng, nudge(-a.hi, k))
            };
            (a, b)
        }
    }
}

#[test]
fn error_free_transformations_are_exact() {
    let mut rng = rng_for(1);
    for i in 0..N_EFT {
        // TwoSum is exact for any finite pair without overflow, subnormals included.
        let a = rand_f64(&mut rng, -1022, 1020);
        let b = if rng.random_bool(0.5) {
            rand_f64(&mut rng, -1022, 1020)
        } else {
            nudge(-a, rng.random_range(-8..=8))
        };
        let (s, e) = two_sum(a, b);
        let what = || {
            format!(
                "seed {} case {i}: two_sum({a:e}, {b:e}) = ({s:e}, {e:e})",
                seed()
            )
        };
        assert_eq!(s, a + b, "{}", what());
        assert_eq!(
            Dyadic::from_f64(s).add(&Dyadic::from_f64(e)),
            Dyadic::from_f64(a).add(&Dyadic::from_f64(b)),
            "{}",
            what()
        );
        if exponent(s) > -1022 + 53 {
            check_normalized(Dd::from_parts(s, e), &what);
            // the normalising constructors are TwoSum / QuickTwoSum
            let n = Dd::new(b, a);
            assert_eq!((n.hi, n.lo), (s, e), "{}: Dd::new", what());
            let n = Dd::from_parts(s, e).renormalize();
            assert_eq!((n.hi, n.lo), (s, e), "{}: renormalize", what());
        }

        // QuickTwoSum needs |a| >= |b|.
        let (a, b) = if a.abs() >= b.abs() { (a, b) } else { (b, a) };
        let (s, e) = quick_two_sum(a, b);
        let what = || format!("seed {} case {i}: quick_two_sum({a:e}, {b:e})", seed());
        assert_eq!(
            Dyadic::from_f64(s).add(&Dyadic::from_f64(e)),
            Dyadic::from_f64(a).add(&Dyadic::from_f64(b)),
            "{}",
            what()
        );

        // TwoProd is exact while the product's error is on the normal grid: |a*b| >= 2^-968.
        let ea = rng.random_range(-960..=1000);
        let eb = rng.random_range((-940 - ea).max(-1000)..=(1000 - ea).min(1000));
        let (a, b) = (rand_f64(&mut rng, ea, ea), rand_f64(&mut rng, eb, eb));
        let (p, e) = two_prod(a, b);
        let what = || {
            format!(
                "seed {} case {i}: two_prod({a:e}, {b:e}) = ({p:e}, {e:e})",
                seed()
            )
        };
        assert_eq!(p, a * b, "{}", what());
        assert_eq!(
            Dyadic::from_f64(p).add(&Dyadic::from_f64(e)),
            Dyadic::from_f64(a).mul(&Dyadic::from_f64(b)),
            "{}",
            what()
        );
        check_normalized(Dd::from_parts(p, e), &what);
    }
}

#[test]
fn quad_add_and_sub_within_bound() {
    let bound = Bound {
        u2: ADD_BOUND_U2,
        u3: ADD_BOUND_U3,
    };
    let bd = bound_dyadic(bound);
    let mut stats = Stats::new("add/sub", bound);
    let mut rng = rng_for(2);
    for i in 0..N_ADD {
        let (a, b) = add_operands(&mut rng, i);
        let (da, db) = (Dyadic::from_dd(a), Dyadic::from_dd(b));
        // alternate add and sub so both entry points are covered
        let (got, exact, op) = if i % 2 == 0 {
            (a + b, da.add(&db), "add")
        } else {
            (a - b.neg(), da.add(&db), "sub")
        };
        let what = || case_msg(op, i, a, &fmt_dd(b), got);
        check_normalized(got, &what);
        let err = check_rel(got, &exact, &bd, &what);
        // PartialOrd by (hi, lo) is the order of the exact values
        let order = match da.sub(&db).signum() {
            -1 => Ordering::Less,
            0 => Ordering::Equal,
            _ => Ordering::Greater,
        };
        assert_eq!(a.partial_cmp(&b), Some(order), "{}: order", what());
        stats.record(err, &what);
    }
    stats.report();
}

#[test]
fn add_f64_within_bound() {
    let bound = Bound {
        u2: ADD_F64_BOUND_U2,
        u3: 0.0,
    };
    let bd = bound_dyadic(bound);
    let mut stats = Stats::new("add_f64", bound);
    let mut rng = rng_for(3);
    for i in 0..N_ADD_F64 {
        let (a, b) = add_operands(&mut rng, i);
        let b = b.hi;
        let got = a + b;
        let exact = Dyadic::from_dd(a).add(&Dyadic::from_f64(b));
        let what = || case_msg("add_f64", i, a, &format!("{b:e}"), got);
        check_normalized(got, &what);
        stats.record(check_rel(got, &exact, &bd, &what), &what);
    }
    stats.report();
}

/// Factors whose product stays in the normal range with room for the lo parts.
fn mul_operands(rng: &mut ChaCha8Rng, i: usize) -> (Dd, Dd) {
    match i % 6 {
        0..=2 => (rand_dd(rng, -480, 480), rand_dd(rng, -480, 480)),
        3 => {
            // one factor a double, or both
            let a = rand_dd(rng, -480, 480);
            let b = Dd::from_f64(rand_f64(rng, -480, 480));
            if rng.random_bool(0.5) {
                (a, b)
            } else {
                (Dd::from_f64(a.hi), b)
            }
        }
        4 => {
            // extreme: a factor beyond 2^996 (Dekker's split limit) or near the bottom
            let ea = rng.random_range(-950..=1020);
            let ep = rng.random_range(-900..=1000);
            let eb = (ep - ea).clamp(-950, 1020);
            (rand_dd(rng, ea, ea), rand_dd(rng, eb, eb))
        }
        _ => {
            let a = rand_dd(rng, -480, 480);
            match rng.random_range(0..3) {
                0 => (a, Dd::ZERO),
                1 => (a, Dd::ONE),
                _ => (a, a),
            }
        }
    }
}

#[test]
fn quad_mul_within_bound() {
    let bound = Bound {
        u2: MUL_BOUND_U2,
        u3: 0.0,
    };
    let bd = bound_dyadic(bound);
    let mut stats = Stats::new("mul", bound);
    let mut rng = rng_for(4);
    for i in 0..N_MUL {
        let (a, b) = mul_operands(&mut rng, i);
        let got = a * b;
        let exact = Dyadic::from_dd(a).mul(&Dyadic::from_dd(b));
        let what = || case_msg("mul", i, a, &fmt_dd(b), got);
        check_normalized(got, &what);
        stats.record(check_rel(got, &exact, &bd, &what), &what);
    }
    stats.report();
}

#[test]
fn mul_f64_within_bound() {
    let bound = Bound {
        u2: MUL_F64_BOUND_U2,
        u3: 0.0,
    };
    let bd = bound_dyadic(bound);
    let mut stats = Stats::new("mul_f64", bound);
    let mut rng = rng_for(5);
    for i in 0..N_MUL_F64 {
        let (a, b) = mul_operands(&mut rng, i);
        let b = b.hi;
        let got = a * b;
        let exact = Dyadic::from_dd(a).mul(&Dyadic::from_f64(b));
        let what = || case_msg("mul_f64", i, a, &format!("{b:e}"), got);
        check_normalized(got, &what);
        stats.record(check_rel(got, &exact, &bd, &what), &what);
    }
    stats.report();
}

#[test]
fn accurate_div_within_bound() {
    let bound = Bound {
        u2: DIV_BOUND_U2,
        u3: DIV_BOUND_U3,
    };
    let bd = bound_dyadic(bound);
    let mut stats = Stats::new("div", bound);
    let mut rng = rng_for(6);
    for i in 0..N_DIV {
        let (a, b) = match i % 6 {
            0..=2 => (rand_dd(&mut rng, -400, 400), rand_dd(&mut rng, -400, 400)),
            3 => {
                // quotient near 1, and exactly 1
                let b = rand_dd(&mut rng, -400, 400);
                let a = match rng.random_range(0..3) {
                    0 => b,
                    1 => {
                        let k = rng.random_range(-3..=3);
                        with_rand_lo(&mut rng, nudge(b.hi, k))
                    }
                    _ if b.lo == 0.0 => b,
                    _ => Dd::new(b.hi, nudge(b.lo, rng.random_range(-3..=3))),
                };
                (a, b)
            }
            4 => {
                // extreme quotients, both directions
                let eb = rng.random_range(-940..=1020);
                let eq = rng.random_range(-900..=1000);
                let ea = (eq + eb).clamp(-940, 1020);
                (rand_dd(&mut rng, ea, ea), rand_dd(&mut rng, eb, eb))
            }
            _ => {
                let b = rand_dd(&mut rng, -400, 400);
                match rng.random_range(0..3) {
                    0 => (Dd::ZERO, b),
                    1 => (rand_dd(&mut rng, -400, 400), Dd::from_f64(b.hi)),
                    _ => (
                        rand_dd(&mut rng, -400, 400),
                        Dd::from_f64(pow2(exponent(b.hi))),
                    ),
                }
            }
        };
        let q = a / b;
        let what = || case_msg("div", i, a, &fmt_dd(b), q);
        check_normalized(q, &what);
        let (da, db) = (Dyadic::from_dd(a), Dyadic::from_dd(b));
        if a == b {
            assert_eq!(q, Dd::ONE, "{}", what());
        }
        // |q - a/b| <= c |a/b|  <=>  |q*b - a| <= c |a|   (exact, no quotient needed)
        assert!(q.is_finite(), "{}: non-finite", what());
        let resid = Dyadic::from_dd(q).mul(&db).sub(&da);
        if da.is_zero() {
            assert!(q.hi == 0.0 && q.lo == 0.0, "{}", what());
            stats.record(0.0, &what);
            continue;
        }
        assert!(
            resid.cmp_abs(&da.mul(&bd)) != Ordering::Greater,
            "{}: error {:.3} u^2 over bound",
            what(),
            resid.ratio_f64(&da) * 2f64.powi(106)
        );
        stats.record(resid.ratio_f64(&da) * 2f64.powi(106), &what);
    }
    stats.report();
}

#[test]
fn sqrt_within_bound() {
    let bound = Bound {
        u2: SQRT_BOUND_U2,
        u3: SQRT_BOUND_U3,
    };
    let c = bound_dyadic(bound);
    let one = Dyadic::from_f64(1.0);
    let (lo_sq, hi_sq) = (one.sub(&c), one.add(&c));
    let (lo_sq, hi_sq) = (lo_sq.mul(&lo_sq), hi_sq.mul(&hi_sq));
    let mut stats = Stats::new("sqrt", bound);
    let mut rng = rng_for(7);
    for i in 0..N_SQRT {
        let a = match i % 5 {
            0 | 1 => rand_dd(&mut rng, -960, 1020).abs(),
            2 => {
                // mantissa near 1 or near 4 (the double root's hardest spots)
                let e = 2 * rng.random_range(-450..=450);
                let hi = if rng.random_bool(0.5) {
                    nudge(pow2(e), rng.random_range(0..=4))
                } else {
                    nudge(pow2(e + 2), -rng.random_range(1..=4))
                };
                with_rand_lo(&mut rng, hi).abs()
            }
            3 => {
                // squares: of a 26-bit double (QD's sqrt is not exact even there), or of a
                // double-double
                if rng.random_bool(0.3) {
                    let r = (rng.random_range(1u64..1 << 26) as f64)
                        * pow2(rng.random_range(-400..=400));
                    Dd::from_f64(r * r)
                } else {
                    let x = rand_dd(&mut rng, -450, 450).abs();
                    x * x
                }
            }
            _ => {
                if rng.random_bool(0.2) {
                    assert_eq!(Dd::ZERO.sqrt(), Dd::ZERO);
                }
                Dd::from_f64(rand_f64(&mut rng, -960, 1020).abs())
            }
        };
        let s = a.sqrt();
        let what = || case_msg("sqrt", i, a, "", s);
        check_normalized(s, &what);
        assert!(s.is_finite() && s.hi > 0.0, "{}", what());
        // |s - sqrt(a)| <= c sqrt(a)  <=>  (1-c)^2 a <= s^2 <= (1+c)^2 a   (s >= 0)
        let da = Dyadic::from_dd(a);
        let ds = Dyadic::from_dd(s);
        let s2 = ds.mul(&ds);
        assert!(
            da.mul(&lo_sq).cmp_abs(&s2) != Ordering::Greater
                && s2.cmp_abs(&da.mul(&hi_sq)) != Ordering::Greater,
            "{}: error {:.3} u^2 over bound",
            what(),
            s2.sub(&da).ratio_f64(&da) * 2f64.powi(105)
        );
        // |s - sqrt a| / sqrt a = |s^2 - a| / (sqrt a (s + sqrt a)) ~ |s^2 - a| / (2a)
        stats.record(s2.sub(&da).ratio_f64(&da) * 2f64.powi(105), &what);
    }
    stats.report();
}

/// QuadAddSloppy has no relative error bound: when the hi parts cancel, the rounding of
/// `a.lo + b.lo` can be the whole result. This is why the solver uses QuadAdd.
#[test]
fn sloppy_add_fails_under_cancellation_where_quad_add_does_not() {
    // a = 1 + 2^-53, b = -(1 + 2^-52) + (2^-53 - 2^-106): a + b = -2^-106 exactly.
    let a = Dd::from_parts(1.0, pow2(-53));
    let b = Dd::from_parts(-(1.0 + pow2(-52)), pow2(-53) - pow2(-106));
    for x in [a, b] {
        check_normalized(x, &|| format!("operand {}", fmt_dd(x)));
    }
    let exact = Dyadic::from_dd(a).add(&Dyadic::from_dd(b));
    assert_eq!(exact, Dyadic::from_f64(-pow2(-106)));
    assert_eq!(a + b, Dd::from_f64(-pow2(-106)), "QuadAdd is exact here");
    assert_eq!(
        a.add_sloppy(b),
        Dd::ZERO,
        "QuadAddSloppy loses the whole result"
    );

    // Random cancelling pairs: the sloppy add's error is unbounded, QuadAdd stays in bound.
    let bound = Bound {
        u2: ADD_BOUND_U2,
        u3: ADD_BOUND_U3,
    };
    let bd = bound_dyadic(bound);
    let mut rng = rng_for(8);
    let mut sloppy = Stats::new("add_sloppy", bound); // QuadAdd's bound, for comparison
    let mut over = 0usize;
    for i in 0..N_SLOPPY {
        let (a, b) = add_operands(&mut rng, 8 * i + 3 + (i % 2)); // the cancelling categories
        let exact = Dyadic::from_dd(a).add(&Dyadic::from_dd(b));
        let what = || case_msg("add", i, a, &fmt_dd(b), a + b);
        check_rel(a + b, &exact, &bd, &what);
        let s = a.add_sloppy(b);
        let what = || case_msg("add_sloppy", i, a, &fmt_dd(b), s);
        check_normalized(s, &what);
        let err = Dyadic::from_dd(s).sub(&exact);
        let rel = if exact.is_zero() {
            if err.is_zero() { 0.0 } else { f64::INFINITY }
        } else {
            err.ratio_f64(&exact) * 2f64.powi(106)
        };
        if err.cmp_abs(&exact.mul(&bd)) == Ordering::Greater {
            over += 1;
        }
        sloppy.record(rel, &what);
    }
    sloppy.report();
    println!("add_sloppy over the QuadAdd bound in {over} of {N_SLOPPY} cancelling cases");
    assert!(over > 0 && sloppy.max_u2 > 1e20);
}

/// `Display` at 32 significant digits (the default) and at 40: the printed decimal must be within
/// half a unit of its last digit plus `FMT_BOUND_U2` of the value. At 40 digits the rounding is
/// negligible, so that error is the conversion's own.
#[test]
fn display_is_accurate() {
    let bound = Bound {
        u2: FMT_BOUND_U2,
        u3: 0.0,
    };
    let c = bound_dyadic(bound);
    let mut st32 = Stats::new("display32", bound);
    let mut st40 = Stats::new("display40", bound);
    let mut rng = rng_for(9);
    for i in 0..N_DISPLAY {
        let x = match i % 4 {
            0 | 1 => rand_dd(&mut rng, -960, 1020),
            2 => rand_dd(&mut rng, -60, 60),
            // integers and other short values: digit strings ending in long runs of 0 or 9
            _ => Dd::new(
                rng.random_range(1..1_000_000_000i64) as f64,
                rng.random_range(-3..=3i64) as f64 * pow2(-60),
            ),
        };
        assert_eq!(format!("{x}"), format!("{x:.31}"));
        let dx = Dyadic::from_dd(x);
        for (digits, stats) in [(32usize, &mut st32), (40, &mut st40)] {
            let s = format!("{x:.*}", digits - 1);
            let what = || format!("seed {} case {i}: {} printed as {s}", seed(), fmt_dd(x));
            let mant = s.trim_start_matches('-').split('e').next().unwrap();
            assert!(
                mant.len() == digits + 1
                    && (b'1'..=b'9').contains(&mant.as_bytes()[0])
                    && mant.as_bytes()[1] == b'.'
                    && (s.starts_with('-') == (x.hi < 0.0)),
                "{}: malformed",
                what()
            );
            let dec = Decimal::parse(&s);
            let (v, scale) = dec.scaled();
            let xs = dx.mul_pow10(scale);
            let err = xs.sub(&v);
            let half_unit = Dyadic::pow2(-1).mul_pow10((dec.e10 + scale as i64) as u64);
            let allowed = half_unit.add(&xs.abs().mul(&c));
            assert!(
                err.cmp_abs(&allowed) != Ordering::Greater,
                "{}: off by {:.3e} relative",
                what(),
                err.ratio_f64(&xs)
            );
            stats.record(err.ratio_f64(&xs) * 2f64.powi(106), &what);
        }
    }
    st32.report();
    st40.report();
}

/// `FromStr` on random decimal literals of 1 to 40 digits over [1e-285, 1e300].
#[test]
fn parse_is_accurate() {
    let bound = Bound {
        u2: PARSE_BOUND_U2,
        u3: 0.0,
    };
    let c = bound_dyadic(bound);
    let mut stats = Stats::new("parse", bound);
    let mut rng = rng_for(10);
    for i in 0..N_PARSE {
        let ndig = rng.random_range(1..=40usize);
        let mut digits = String::with_capacity(ndig);
        let fill = rng.random_range(0..4); // 0: random, 1: zeros, 2: nines, 3: random
        for k in 0..ndig {
            let d = match (k, fill) {
                (0, _) => rng.random_range(1..=9),
                (_, 1) => 0,
                (_, 2) => 9,
                _ => rng.random_range(0..=9),
            };
            digits.push(char::from(b'0' + d));
        }
        let point = rng.random_range(0..=ndig);
        let mag: i64 = if i % 3 == 0 {
            rng.random_range(-285..=300)
        } else {
            rng.random_range(-30..=30)
        };
        let exp = mag - point as i64 + 1;
        let sign = ["", "-", "+"][rng.random_range(0..3)];
        let s = if exp == 0 && rng.random_bool(0.5) {
            format!("{sign}{}.{}", &digits[..point], &digits[point..])
        } else {
            let e = if rng.random_bool(0.5) { 'e' } else { 'E' };
            format!("{sign}{}.{}{e}{exp}", &digits[..point], &digits[point..])
        };
        let x: Dd = s
            .parse()
            .unwrap_or_else(|e| panic!("seed {} case {i}: {s:?}: {e}", seed()));
        let what = || format!("seed {} case {i}: {s:?} parsed as {}", seed(), fmt_dd(x));
        check_normalized(x, &what);
        let dec = Decimal::parse(&s);
        let (v, scale) = dec.scaled();
        let err = Dyadic::from_dd(x).mul_pow10(scale).sub(&v);
        assert!(
            err.cmp_abs(&v.mul(&c)) != Ordering::Greater,
            "{}: off by {:.3} u^2",
            what(),
            err.ratio_f64(&v) * 2f64.powi(106)
        );
        stats.record(err.ratio_f64(&v) * 2f64.powi(106), &what);
    }
    stats.report();
}
