//! `MpFloat`, the own multiple-precision type, against MPFR (`rug`, feature `mpfr`): every
//! operation the solvers use, on random operands and the cases that break rounding code
//! (cancellation, carries through every limb, exact ties, doubles' subnormal range, the ends of
//! the exponent range), must give MPFR's result bit for bit, signs of zeros and specials
//! included.
//!
//! Cases per operation and precision class: `MPFLOAT_ORACLE_CASES` (default 3,000; CI's oracle
//! step runs 1,000,000 in release).
#![cfg(feature = "mpfr")]

use precsolve::precision::mpfloat::{EMAX, EMIN};
use precsolve::precision::{Dd, MpFloat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rug::Float;
use rug::float::Round;

fn cases() -> usize {
    std::env::var("MPFLOAT_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn to_rug<const L: usize>(x: &MpFloat<L>) -> Float {
    let bits = x.bits();
    if x.is_nan() {
        return Float::with_val(bits, rug::float::Special::Nan);
    }
    match x.to_integer_exp() {
        None => Float::with_val(
            bits,
            if x.is_sign_negative() {
                rug::float::Special::NegInfinity
            } else {
                rug::float::Special::Infinity
            },
        ),
        Some((negative, sig, exp)) => {
            // The limbs' disjoint bits summed exactly.
            let mut f = Float::with_val(64 * L as u32 + 64, 0);
            for (i, &limb) in sig.iter().enumerate() {
                f += Float::with_val(64, limb) << (64 * i as i32);
            }
            f <<= exp as i32;
            if negative {
                f = -f;
            }
            // Exact: the value has at most `bits` significant bits.
            let (g, dir) = Float::with_val_round(bits, &f, Round::Nearest);
            assert_eq!(
                dir,
                std::cmp::Ordering::Equal,
                "{x:?} does not fit its bits"
            );
            g
        }
    }
}

fn from_rug<const L: usize>(f: &Float) -> MpFloat<L> {
    let bits = f.prec();
    if f.is_nan() {
        return MpFloat::nan(bits);
    }
    if f.is_infinite() {
        return MpFloat::infinity(f.is_sign_negative(), bits);
    }
    if f.is_zero() {
        return MpFloat::zero(f.is_sign_negative(), bits);
    }
    // MPFR's significand is ours: little-endian limbs, top bit set, 0.d * 2^exp.
    let raw = f.as_raw();
    let (digits, exp) = unsafe {
        let limbs = (bits as usize).div_ceil(64);
        let d = std::slice::from_raw_parts((*raw).d.as_ptr(), limbs).to_vec();
        (d, (*raw).exp)
    };
    MpFloat::from_integer_exp(
        f.is_sign_negative(),
        &digits,
        exp - 64 * digits.len() as i64,
        bits,
    )
}

/// The same value, NaN-ness, and sign (of zeros too), at the same precision.
fn same<const L: usize>(got: &MpFloat<L>, want: &Float) -> bool {
    let g = to_rug(got);
    got.bits() == want.prec()
        && (g.is_nan() && want.is_nan()
            || (g == *want && g.is_sign_negative() == want.is_sign_negative()))
}

/// A random operand at `bits` bits, of a shape chosen to stress the rounding code.
fn operand<const L: usize>(rng: &mut ChaCha8Rng, bits: u32) -> MpFloat<L> {
    let mut digits = vec![0u64; L];
    let shape = rng.random_range(0..8);
    for (i, d) in digits.iter_mut().enumerate() {
        *d = match shape {
            // all ones: every addition of an ulp carries through every limb
            0 => u64::MAX,
            // a top bit and a bottom bit: long runs of zeros
            1 => u64::from(i == L - 1) << 63 | u64::from(i == 0),
            2 => rng.random::<u64>() & rng.random::<u64>() & rng.random::<u64>(),
            3 => !(rng.random::<u64>() & rng.random::<u64>()),
            _ => rng.random(),
        };
    }
    digits[L - 1] |= 1 << 63;
    let exp = match rng.random_range(0..10) {
        0 => rng.random_range(EMIN..EMIN + 300),
        1 => rng.random_range(EMAX - 300..=EMAX),
        2 => rng.random_range(-1100..-1000), // doubles' subnormal range
        3..=4 => rng.random_range(-3000..3000),
        _ => rng.random_range(-8..8),
    };
    // Round the 64L-bit integer at `bits` (the top `bits` bits are random).
    let x = MpFloat::from_integer_exp(rng.random(), &digits, i64::from(exp) - 64 * L as i64, bits);
    if x.is_finite() {
        x
    } else {
        MpFloat::from_f64_bits(1.5, bits)
    }
}

/// `b` near `a`: equal exponents or one apart, most bits shared (cancellation), or exactly
/// half an ulp of `a` (a tie), or a special value.
fn partner<const L: usize>(rng: &mut ChaCha8Rng, a: &MpFloat<L>, bits: u32) -> MpFloat<L> {
    let fa = to_rug(a);
    match rng.random_range(0..12) {
        0 => {
            // a (1 + k 2^-j): shares the top j bits
            let j = rng.random_range(1..bits + 8);
            let k = Float::with_val(bits + 64, rng.random_range(-3i32..=3)) >> j as i32;
            from_rug(&Float::with_val(
                bits,
                &fa * (Float::with_val(bits + 64, 1) + k),
            ))
        }
        1 => from_rug(&Float::with_val(bits, -&fa)),
        2 => {
            // half an ulp, either sign: a + b is a tie
            let ulp = Float::with_val(bits, 1) << (fa.get_exp().unwrap() - bits as i32 - 1);
            from_rug(&if rng.random() { ulp } else { -ulp })
        }
        3 => match rng.random_range(0..5) {
            0 => MpFloat::zero(rng.random(), bits),
            1 => MpFloat::infinity(rng.random(), bits),
            2 => MpFloat::nan(bits),
            _ => MpFloat::from_f64_bits(rng.random_range(-4.0..4.0f64).round(), bits),
        },
        _ => operand(rng, bits),
    }
}

/// (-1)^negative 2^k as a double, k from -1074 (the least subnormal) to 1023.
fn power_of_two(k: i32, negative: bool) -> f64 {
    let magnitude = if k < -1022 {
        f64::from_bits(1 << (k + 1074))
    } else {
        f64::from_bits(((k + 1023) as u64) << 52)
    };
    if negative { -magnitude } else { magnitude }
}

fn check_class<const L: usize>(bits: u32, seed: u64) {
    assert_eq!(rug::float::exp_min(), EMIN, "MPFR's default exponent range");
    assert_eq!(rug::float::exp_max(), EMAX);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ u64::from(bits));
    let mut failures = Vec::new();
    let mut fail = |what: String| {
        if failures.len() < 10 {
            failures.push(what);
        }
    };
    for _ in 0..cases() {
        let a: MpFloat<L> = operand(&mut rng, bits);
        let b = partner(&mut rng, &a, bits);
        let (fa, fb) = (to_rug(&a), to_rug(&b));
        for (name, got, want) in [
            ("add", a.add(b), Float::with_val(bits, &fa + &fb)),
            ("sub", a.sub(b), Float::with_val(bits, &fa - &fb)),
            ("mul", a.mul(b), Float::with_val(bits, &fa * &fb)),
            ("div", a.div(b), Float::with_val(bits, &fa / &fb)),
            ("div'", b.div(a), Float::with_val(bits, &fb / &fa)),
            ("sqrt", a.abs().sqrt(), fa.clone().abs().sqrt()),
            ("sqrt-", a.sqrt(), fa.clone().sqrt()),
        ] {
            if !same(&got, &want) {
                fail(format!("{name}({a:?}, {b:?}) = {got:?}, MPFR {want}"));
            }
        }
        // with doubles: a matrix entry, a double-double, the conversions out
        let d = match rng.random_range(0..5) {
            0 => f64::from_bits(rng.random_range(1..1u64 << 52)), // subnormal
            1 => rng.random_range(-1e300..1e300),
            // +-2^k, subnormal ones included: the exact shortcut and, at the ends of the
            // exponent range, its way out to the rounding
            2 => power_of_two(rng.random_range(-1074..=1023), rng.random()),
            _ => rng.random_range(-10.0..10.0),
        };
        let got = a.mul_f64(d);
        let want = Float::with_val(bits, &fa * d);
        if !same(&got, &want) {
            fail(format!("mul_f64({a:?}, {d:e}) = {got:?}, MPFR {want}"));
        }
        let (got, want) = (a.to_f64(), fa.to_f64());
        if got.to_bits() != want.to_bits() {
            fail(format!("to_f64({a:?}) = {got:e}, MPFR {want:e}"));
        }
        let dd = a.to_dd();
        // lo: the nearest double to the exact rest (0 beside an infinite hi)
        let rest = Float::with_val(bits, &fa - dd.hi);
        let lo = if want.is_finite() { rest.to_f64() } else { 0.0 };
        if dd.hi.to_bits() != want.to_bits() || dd.lo.to_bits() != lo.to_bits() {
            fail(format!("to_dd({a:?}) = {dd:?}"));
        }
        let x = Dd {
            hi: d,
            lo: d
                * f64::EPSILON
                * rng.random_range(-0.5..0.5)
                * 2f64.powi(-rng.random_range(0..60)),
        };
        let got = MpFloat::<L>::from_dd_bits(x, bits);
        let want = Float::with_val(bits, &Float::with_val(53, x.hi) + x.lo);
        if !same(&got, &want) {
            fail(format!("from_dd({x:?}) = {got:?}, MPFR {want}"));
        }
    }
    assert!(failures.is_empty(), "{bits} bits:\n{}", failures.join("\n"));
}

#[test]
fn precision_64() {
    check_class::<2>(64, 1);
}
#[test]
fn precision_53_and_106() {
    check_class::<2>(53, 2);
    check_class::<2>(106, 3);
}
#[test]
fn precision_128() {
    check_class::<2>(128, 4);
}
#[test]
fn precision_256_and_200() {
    check_class::<4>(256, 5);
    check_class::<4>(200, 6);
}
#[test]
fn precision_512() {
    check_class::<8>(512, 7);
}
#[test]
fn precision_1024() {
    check_class::<16>(1024, 8);
}
#[test]
fn precision_2048_and_1500() {
    check_class::<32>(2048, 9);
    check_class::<32>(1500, 10);
}
