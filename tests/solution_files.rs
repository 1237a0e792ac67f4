//! Solutions leave in their precision (issue #28, item 6): `--write-x` writes every value with
//! the digits that read back exactly, and `--x0` reads them back into each working precision.
//!
//! The oracle is independent of the code under test: exact rationals (`common/exact.rs`,
//! num-rational) give the value of a text and of a precision's words, and `round_rational` below
//! rounds a rational to nearest by definition (floor of the scaled rational, ties to even).
//! Every written text is checked twice: its exact value, rounded by the oracle, gives back the
//! words it was written from; and the reader under test gives back the same words, bit for bit.
//!
//! Seed: `SOLUTION_FILES_SEED=<u64>` (default below).
#![cfg(feature = "cli")]

mod common;
#[path = "common/exact.rs"]
mod exact;
#[path = "common/random_f64.rs"]
mod random_f64;

use common::cli::{EXIT_BAD_INPUT, EXIT_OK, solver};
use exact::{Decimal as OracleDecimal, Dyadic};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use precsolve::precision::exact_decimal::{
    self, Decimal, read_dd, read_f64, read_qd, read_td, write_dd, write_f64, write_qd, write_td,
};
use precsolve::precision::exact_values::ExactValues;
use precsolve::{BackendChoice, Dd, Precision, Qd, SolutionVector, Solver, Td, WorkingPrecision};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use random_f64::{pow2, rand_f64, rng_for, seed_from_env};
use std::path::Path;

const DEFAULT_SEED: u64 = 0x28_0006;
const CASES: usize = 3000;

fn rng(test: u64) -> ChaCha8Rng {
    rng_for(seed_from_env("SOLUTION_FILES_SEED", DEFAULT_SEED), test)
}

// ---------------------------------------------------------------------------------------------
// The oracle.

fn pow2r(k: i64) -> BigRational {
    if k >= 0 {
        BigRational::from_integer(BigInt::one() << k as u64)
    } else {
        BigRational::new(BigInt::one(), BigInt::one() << (-k) as u64)
    }
}

/// `floor(log2 a)` for `a > 0`.
fn ilog2(a: &BigRational) -> i64 {
    let est = a.numer().bits() as i64 - a.denom().bits() as i64;
    if *a >= pow2r(est) { est } else { est - 1 }
}

/// `r` rounded to nearest, ties to even, with a `p`-bit significand on a grid no finer than
/// `2^qmin`.
fn round_rational(r: &BigRational, p: u32, qmin: i64) -> BigRational {
    if r.is_zero() {
        return r.clone();
    }
    let a = r.abs();
    let q = (ilog2(&a) - (i64::from(p) - 1)).max(qmin);
    let scaled = &a / pow2r(q);
    let floor = scaled.floor();
    let frac = &scaled - &floor;
    let half = BigRational::new(BigInt::one(), BigInt::from(2));
    let mut m = floor.to_integer();
    if frac > half || (frac == half && m.bit(0)) {
        m += 1;
    }
    let rounded = BigRational::from_integer(m) * pow2r(q);
    if r.is_negative() { -rounded } else { rounded }
}

/// A rational that is a double, as that double (panics otherwise).
fn as_f64(r: &BigRational) -> f64 {
    if r.is_zero() {
        return 0.0;
    }
    let e = ilog2(&r.abs());
    assert!(e < 1024, "{r} is beyond the doubles");
    let q = (e - 52).max(-1074);
    let m = r / pow2r(q);
    assert!(m.is_integer(), "{r} is not a double");
    let m = m.to_integer().to_f64().unwrap();
    // Exact: the product is a double.
    m * pow2(q.clamp(-1074, 1023) as i32)
}

fn value_of(words: &[f64]) -> BigRational {
    words
        .iter()
        .fold(Dyadic::zero(), |acc, &w| acc.add(&Dyadic::from_f64(w)))
        .to_rational()
}

fn value_of_text(text: &str) -> BigRational {
    OracleDecimal::parse(text).to_rational()
}

/// The nearest-first expansion in four doubles, by definition.
fn oracle_words(v: &BigRational, negative: bool) -> [f64; 4] {
    let mut w = [0.0; 4];
    let mut rem = v.clone();
    for word in &mut w {
        if rem.is_zero() {
            break;
        }
        let r = round_rational(&rem, 53, -1074);
        *word = as_f64(&r);
        rem -= r;
    }
    if w[0] == 0.0 && negative {
        w[0] = -0.0;
    }
    w
}

/// Whether a decimal text is negative (a `-0` included).
fn negative(text: &str) -> bool {
    text.starts_with('-')
}

/// D+I's value of `v` by definition: `hi` the nearest double, `lo` the remainder rounded to
/// nearest on 21 significant bits (no finer than 2^-1042), then `hi` moved to the nearest double
/// of `hi + lo` if the rounding of `lo` made it a tie that `hi` loses.
fn oracle_td(v: &BigRational, negative: bool) -> (f64, f64) {
    let hi = round_rational(v, 53, -1074);
    let lo = round_rational(&(v - &hi), 21, -1042);
    let sum = &hi + &lo;
    let s = round_rational(&sum, 53, -1074);
    let (hi, lo) = if s == hi {
        (hi, lo)
    } else {
        (s.clone(), sum - s)
    };
    let mut hi = as_f64(&hi);
    if hi == 0.0 && negative {
        hi = -0.0;
    }
    (hi, as_f64(&lo))
}

fn bits(w: &[f64]) -> Vec<u64> {
    w.iter().map(|x| x.to_bits()).collect()
}

/// The exact decimal of a dyadic rational (`n / 2^k = n 5^k / 10^k`), for texts that sit
/// exactly on a tie.
fn dyadic_text(r: &BigRational) -> String {
    let k = r.denom().trailing_zeros().unwrap_or(0);
    assert_eq!(*r.denom(), BigInt::one() << k, "{r} is not dyadic");
    let n = r.numer() * num_traits::pow(BigInt::from(5), k as usize);
    format!("{n}e-{k}")
}

// ---------------------------------------------------------------------------------------------
// Random values of each precision.

/// A double of any shape: normal over the whole range, subnormal, zero of either sign, extremes.
fn any_f64(rng: &mut ChaCha8Rng) -> f64 {
    match rng.random_range(0..20) {
        0 => f64::from_bits(rng.random_range(1..1u64 << 52)), // subnormal
        1 => [0.0, -0.0, f64::MAX, -f64::MAX, f64::MIN_POSITIVE, 5e-324][rng.random_range(0..6)],
        2 => rand_f64(rng, -1022, -1000),
        3 => rand_f64(rng, 1000, 1023),
        _ => rand_f64(rng, -60, 60),
    }
}

/// A canonical double-double (`hi = fl(hi + lo)`) from a TwoSum: gaps of every size between the
/// words, ties (`lo` exactly half an ulp of `hi`), cancellation, tiny values with a subnormal
/// `lo`, huge ones, `lo = 0`.
fn any_dd(rng: &mut ChaCha8Rng) -> Dd {
    let (emin, emax) = match rng.random_range(0..8) {
        0 => (-1022, -960), // lo subnormal or gone
        1 => (960, 1022),
        _ => (-40, 40),
    };
    let hi = rand_f64(rng, emin, emax);
    let e = random_f64::exponent(hi);
    let dd = match rng.random_range(0..10) {
        0 => Dd::from_f64(hi),
        1 => {
            // lo = +-ulp(hi)/2: a tie, which TwoSum resolves to even.
            let half = pow2((e - 53).max(-1074));
            Dd::new(hi, if rng.random_bool(0.5) { half } else { -half })
        }
        2 if e > -900 => {
            // Cancellation: (a + b) - a in double-double, a and b of different sizes.
            let a = Dd::new(hi, rand_f64(rng, e - 60, e - 53));
            let b = Dd::new(
                rand_f64(rng, e - 120, e - 50),
                rand_f64(rng, e - 200, e - 110),
            );
            a.add(b).sub(a)
        }
        3 if e - 400 > -1022 => Dd::new(hi, rand_f64(rng, e - 400, e - 54)),
        4 => {
            // A subnormal lo (the whole lo when hi is tiny, absorbed by hi otherwise).
            let lo = f64::from_bits(rng.random_range(1..1u64 << 52));
            Dd::new(hi, if rng.random_bool(0.5) { lo } else { -lo })
        }
        _ => Dd::new(hi, rand_f64(rng, (e - 60).max(-1022), (e - 53).max(-1022))),
    };
    if dd.hi.is_finite() && dd.lo.is_finite() {
        dd
    } else {
        Dd::from_f64(hi)
    }
}

/// A canonical quad-double: the oracle's expansion of a random sum of doubles (gaps, ties and
/// cancellation come from the terms), so the expected words are known.
fn any_qd_value(rng: &mut ChaCha8Rng) -> BigRational {
    let top = match rng.random_range(0..8) {
        0 => rng.random_range(-1022..-900),
        1 => rng.random_range(900..1020),
        _ => rng.random_range(-40..40),
    };
    let mut v = Dyadic::from_f64(rand_f64(rng, top, top));
    let mut e = top;
    for _ in 0..rng.random_range(0..7) {
        e -= rng.random_range(1..120);
        if e < -1074 {
            break;
        }
        let x = if e >= -1022 {
            rand_f64(rng, e, e)
        } else {
            f64::from_bits(rng.random_range(1..1u64 << 52))
        };
        v = v.add(&Dyadic::from_f64(x));
    }
    v.to_rational()
}

// ---------------------------------------------------------------------------------------------
// Round trips of each precision.

/// Checks `text` against the oracle (its exact value rounds to `expected`) and returns it.
fn check_text(text: &str, expected: &[f64], what: &str) {
    let v = value_of_text(text);
    assert_eq!(
        bits(&oracle_words(&v, negative(text))[..expected.len()]),
        bits(expected),
        "{what}: the text {text} does not round to the words {expected:?}"
    );
}

#[test]
fn f64_round_trip_is_bitwise() {
    let mut rng = rng(1);
    for _ in 0..CASES {
        let x = any_f64(&mut rng);
        let text = write_f64(x);
        check_text(&text, &[x], "f64");
        assert_eq!(
            read_f64(&text).unwrap().to_bits(),
            x.to_bits(),
            "{x:e}: {text}"
        );
        assert_eq!(
            text.parse::<f64>().unwrap().to_bits(),
            x.to_bits(),
            "{text}"
        );
        // As a right-hand side it is that double, no warning.
        assert!(
            Decimal::parse(&text).unwrap().is_written_double(x),
            "{text}"
        );
    }
}

#[test]
fn dd_round_trip_is_bitwise() {
    let mut rng = rng(2);
    let mut longest = 0;
    for _ in 0..CASES {
        let x = any_dd(&mut rng);
        let text = write_dd(x);
        check_text(&text, &[x.hi, x.lo + 0.0], "dd");
        let back = read_dd(&text).unwrap();
        assert_eq!(
            bits(&[back.hi, back.lo]),
            bits(&[x.hi, x.lo + 0.0]),
            "{x:?}: {text}"
        );
        // Another reader gets the nearest double; as a right-hand side, with a warning.
        assert_eq!(
            text.parse::<f64>().unwrap().to_bits(),
            x.hi.to_bits(),
            "{text}"
        );
        if significant_digits(&text) > 17 {
            assert_eq!(
                Decimal::parse(&text).unwrap().is_written_double(x.hi),
                x.lo == 0.0,
                "{text}"
            );
        }
        if x.lo != 0.0 && (random_f64::exponent(x.hi) - random_f64::exponent(x.lo)) < 60 {
            longest = longest.max(significant_digits(&text));
        }
    }
    // A dd with its words adjacent takes about 33 digits, not the ~107 of its exact decimal.
    assert!(longest <= 36, "{longest} significant digits");
}

fn significant_digits(text: &str) -> usize {
    let mantissa = text.split('e').next().unwrap();
    mantissa.bytes().filter(u8::is_ascii_digit).count()
}

#[test]
fn td_round_trip_is_bitwise() {
    let mut rng = rng(3);
    for i in 0..CASES {
        let x = match i % 10 {
            0 => Td::from_f64(any_f64(&mut rng)),
            _ => Td::from_dd(any_dd(&mut rng)),
        };
        let d = x.to_dd();
        let text = write_td(x);
        let v = value_of_text(&text);
        let (hi, lo) = oracle_td(&v, negative(&text));
        assert_eq!(
            bits(&[hi, lo]),
            bits(&[d.hi, d.lo + 0.0]),
            "{x:?}: the text {text} is another D+I value"
        );
        let back = read_td(&text).unwrap();
        let (bhi, blo) = back.parts();
        let (xhi, xlo) = x.parts();
        // lo = -0 (i32::MIN) reads back +0: a decimal has one sign.
        let xlo = if xlo == i32::MIN { 0 } else { xlo };
        assert_eq!((bhi.to_bits(), blo), (xhi.to_bits(), xlo), "{x:?}: {text}");
    }
}

#[test]
fn qd_round_trip_is_bitwise() {
    let mut rng = rng(4);
    let mut longest = 0;
    let mut skipped = 0;
    for _ in 0..CASES {
        let v = any_qd_value(&mut rng);
        // Four nearest words of a value that needs more are not always canonical themselves
        // (w3 exactly half an ulp of an odd w2, with the tail below it dropped).
        let words = oracle_words(&v, false);
        if oracle_words(&value_of(&words), false) != words {
            skipped += 1;
            continue;
        }
        let x = Qd::from_parts(words[0], words[1], words[2], words[3]);
        let text = write_qd(x);
        check_text(&text, &words, "qd");
        assert_eq!(
            bits(&read_qd(&text).unwrap().x),
            bits(&words),
            "{x:?}: {text}"
        );
        if words[3] != 0.0 {
            let span = random_f64::exponent(words[0]) - random_f64::exponent(words[3]);
            if span < 170 {
                longest = longest.max(significant_digits(&text));
            }
        }
    }
    assert!(longest <= 70, "{longest} significant digits");
    assert!(skipped < CASES / 20, "{skipped} of {CASES} skipped");
}

/// Quad-doubles as the arithmetic leaves them (now and then a word over half an ulp of the one
/// before, i.e. not their own nearest-first expansion): the text reads back as the canonical
/// quad-double of their value, which holds that value exactly where four words can.
#[test]
fn qd_arithmetic_results_keep_their_value() {
    let mut rng = rng(5);
    let (mut canonical, mut exact) = (0, 0);
    for _ in 0..CASES {
        let a = Qd::from_parts(
            rand_f64(&mut rng, -20, 20),
            rand_f64(&mut rng, -80, -73),
            rand_f64(&mut rng, -140, -130),
            rand_f64(&mut rng, -200, -190),
        )
        .renormalize();
        let b = Qd::from_f64(rand_f64(&mut rng, -20, 20)).add_f64(rand_f64(&mut rng, -90, -70));
        let x = match rng.random_range(0..4) {
            0 => a.add(b),
            1 => a.sub(b),
            2 => a.mul(b),
            _ => a.div(b),
        };
        let text = write_qd(x);
        let v = value_of(&x.x);
        let expected = oracle_words(&v, x.x[0].is_sign_negative());
        check_text(&text, &expected, "qd result");
        assert_eq!(bits(&read_qd(&text).unwrap().x), bits(&expected), "{x:?}");
        if bits(&expected) == bits(&x.x) {
            canonical += 1;
        } else if value_of(&expected) == v {
            exact += 1;
        }
    }
    println!("{canonical} canonical, {exact} more of the same value, of {CASES}");
    assert!(canonical > CASES / 2, "{canonical} canonical of {CASES}");
}

/// Texts no writer made: long decimals, exact ties, tiny and huge values, against the oracle.
#[test]
fn decimals_are_read_as_the_oracle_rounds_them() {
    let mut rng = rng(6);
    for i in 0..CASES {
        let text = match i % 3 {
            0 => {
                let digits: String = (0..rng.random_range(1..90))
                    .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
                    .collect();
                let e = rng.random_range(-420..300);
                let sign = if rng.random_bool(0.5) { "-" } else { "" };
                format!("{sign}0.{digits}e{e}")
            }
            _ => {
                // Exactly halfway between two neighbours of a dd (a tie of lo), or of a qd, or a
                // hair beside it, written exactly.
                let x = any_dd(&mut rng);
                let last = if x.lo != 0.0 { x.lo } else { x.hi };
                if last == 0.0 {
                    continue;
                }
                let half = pow2r(i64::from(random_f64::exponent(last)) - 53);
                let half = if random_f64::exponent(last) - 53 < -1075 {
                    pow2r(-1075)
                } else {
                    half
                };
                let nudge_by = match rng.random_range(0..3) {
                    0 => BigRational::zero(),
                    1 => pow2r(-1200),
                    _ => -pow2r(-1200),
                };
                dyadic_text(&(value_of(&[x.hi, x.lo]) + half + nudge_by))
            }
        };
        let v = value_of_text(&text);
        let neg = negative(&text);
        let words = match exact_decimal::Decimal::parse(&text).unwrap().nearest() {
            Ok(e) => e.words,
            Err(_) => {
                // Out of range: the oracle's nearest double is at least 2^1024.
                let w = round_rational(&v, 53, -1074);
                assert!(ilog2(&w.abs()) >= 1024, "{text} refused");
                continue;
            }
        };
        assert_eq!(bits(&words), bits(&oracle_words(&v, neg)), "{text}");
        assert_eq!(
            read_f64(&text).unwrap().to_bits(),
            text.parse::<f64>().unwrap().to_bits()
        );
        let (hi, lo) = oracle_td(&v, neg);
        let (bhi, blo) = read_td(&text).unwrap().parts();
        assert_eq!(
            (bhi.to_bits(), blo),
            (hi.to_bits(), (lo.to_bits() >> 32) as u32 as i32),
            "td of {text}"
        );
    }
}

#[test]
fn texts_are_matrix_market_numbers() {
    // Each value is one decimal number (no spaces, no hex, no `@`), which C, Python and Rust
    // read; non-finite values are written as the words those readers know.
    for text in [
        write_f64(-0.0),
        write_dd(Dd::from_f64(-0.0)),
        write_td(Td::from_f64(0.0)),
        write_qd(Qd::from_f64(5e-324)),
        write_dd(Dd::new(1.0, 1e-300)),
    ] {
        assert!(
            text.bytes()
                .all(|c| c.is_ascii_digit() || b"+-.e".contains(&c)),
            "{text}"
        );
        assert!(text.parse::<f64>().is_ok(), "{text}");
    }
    assert_eq!(write_f64(-0.0), "-0e0");
    assert_eq!(write_dd(Dd::from_f64(0.0)), "0e0");
    assert_eq!(write_dd(Dd::from_parts(f64::NAN, 0.0)), "nan");
    assert_eq!(write_qd(Qd::from_f64(f64::NEG_INFINITY)), "-inf");
    assert_eq!(write_td(Td::from_f64(f64::INFINITY)), "inf");
    for bad in ["nan", "inf", "-inf", "1e400"] {
        assert!(read_dd(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_double_in_a_wider_file_is_read_as_that_double() {
    // A vector that holds only doubles is doubles for every precision; one that does not is
    // each precision's own rounding of the same values.
    let x0 = exact_decimal::initial_guess(
        3,
        [
            (0, 4, Decimal::parse("0.5").unwrap()),
            (2, 6, Decimal::parse("-3").unwrap()),
        ],
        false,
    )
    .unwrap();
    assert_eq!(x0, ExactValues::from_f64(vec![0.5, 0.0, -3.0]));
    let x0 = exact_decimal::initial_guess(
        2,
        [
            (0, 4, Decimal::parse("0.1").unwrap()),
            (1, 5, Decimal::parse("1e-3").unwrap()),
            // Duplicates of a coordinate file add up exactly: 1e-3 + 2e-3 = 3e-3.
            (1, 6, Decimal::parse("2e-3").unwrap()),
        ],
        false,
    )
    .unwrap();
    assert_eq!(x0.values::<f64>(), vec![0.1, 3e-3]);
    assert_eq!(
        x0.values::<Dd>(),
        vec![read_dd("0.1").unwrap(), read_dd("3e-3").unwrap()]
    );
    assert_eq!(x0.values::<Qd>()[1].x, read_qd("0.003").unwrap().x);
    assert_eq!(
        x0.values::<Td>()[0].parts(),
        read_td("0.1").unwrap().parts()
    );
    // A sum beyond the doubles names the line of its last entry.
    let err = exact_decimal::initial_guess(
        1,
        [
            (0, 7, Decimal::parse("1.5e308").unwrap()),
            (0, 9, Decimal::parse("1.5e308").unwrap()),
        ],
        false,
    )
    .unwrap_err();
    assert_eq!(err.0, 9, "{err:?}");
    // The right-hand side: nearest doubles, and a count of the values rounded beyond the way
    // doubles are written (17 digits, the exact decimal, or that rounded to the text's digits).
    let (b, rounded) = exact_decimal::nearest_doubles(
        6,
        [
            (0, 1, Decimal::parse("0.1").unwrap()),
            (1, 2, Decimal::parse("0.10000000000000001").unwrap()),
            (
                2,
                3,
                Decimal::parse("1.000000000000000055511151231257827021181583404541015625e-1")
                    .unwrap(),
            ),
            (
                3,
                4,
                Decimal::parse("0.10000000000000000555111512312578270211815834045410156").unwrap(),
            ),
            (
                4,
                5,
                Decimal::parse("0.10000000000000000555111512312578270211815834045410157").unwrap(),
            ),
            (5, 6, Decimal::parse("0.3333333333333333333333").unwrap()),
        ],
    )
    .unwrap();
    assert_eq!(b, vec![0.1, 0.1, 0.1, 0.1, 0.1, 1.0 / 3.0]);
    assert_eq!(rounded, 2);
}

// ---------------------------------------------------------------------------------------------
// mp:<bits>

/// The own `MpFloat`'s text: written with the digits that read back, read back to the same
/// bits; the text's value checked by exact rationals.
mod mpfloat {
    use super::*;
    use precsolve::MpFloat;
    use precsolve::precision::exact_decimal::{read_mpfloat, write_mpfloat};

    fn value_of<const L: usize>(x: &MpFloat<L>) -> BigRational {
        let (negative, sig, exp) = x.to_integer_exp().expect("finite");
        let mut int = BigInt::zero();
        for &limb in sig.iter().rev() {
            int = (int << 64) + BigInt::from(limb);
        }
        let v = BigRational::from(int) * pow2_rational(exp);
        if negative { -v } else { v }
    }

    fn pow2_rational(e: i64) -> BigRational {
        let p = BigRational::from(BigInt::one() << e.unsigned_abs());
        if e < 0 { p.recip() } else { p }
    }

    fn round_trip<const L: usize>(bits: u32, test: u64) {
        let mut rng = rng(test);
        for i in 0..400 {
            let mut x = MpFloat::<L>::from_f64_bits(rand_f64(&mut rng, -1, 1), bits);
            for k in 1..(bits / 50 + 2) {
                let w = rand_f64(&mut rng, -1, 1) * pow2(-(50 * k as i32));
                x = x.add(MpFloat::from_f64_bits(w, bits));
            }
            x = x.mul_f64(pow2(rng.random_range(-900..900)));
            if i == 0 {
                x = MpFloat::zero(true, bits);
            }
            let text = write_mpfloat(&x);
            assert!(text.parse::<f64>().is_ok(), "{text}");
            let back: MpFloat<L> = read_mpfloat(&text, bits).unwrap();
            assert_eq!(back.bits(), bits);
            assert_eq!(
                back.to_integer_exp(),
                x.to_integer_exp(),
                "mp:{bits}: {text}"
            );
            if x.is_zero() {
                continue;
            }
            // Oracle: the text's value rounded to `bits` bits is x's value.
            assert_eq!(
                round_rational(&value_of_text(&text), bits, -100_000),
                value_of(&x),
                "mp:{bits}: {text} is another value"
            );
        }
    }

    #[test]
    fn mp128_round_trip_is_bitwise() {
        round_trip::<2>(128, 17);
    }

    #[test]
    fn mp300_and_mp1024_round_trip_is_bitwise() {
        round_trip::<8>(300, 18);
        round_trip::<16>(1024, 19);
    }
}

#[cfg(feature = "mpfr")]
mod mpfr {
    use super::*;
    use precsolve::Mpfr as Mp;
    use precsolve::precision::exact_decimal::{read_mpfr as read_mp, write_mpfr as write_mp};
    use precsolve::precision::mp::MpScope;
    use rug::Float;

    /// The exact value of a finite Float within the double range: peel nearest doubles (each
    /// remainder is exact at the Float's precision).
    fn value_of_float(x: &Float) -> BigRational {
        let mut rem = x.clone();
        let mut v = Dyadic::zero();
        while !rem.is_zero() {
            let w = rem.to_f64();
            assert!(w.is_finite() && w != 0.0, "{x} outside the double range");
            v = v.add(&Dyadic::from_f64(w));
            rem -= w;
        }
        v.to_rational()
    }

    fn round_trip(bits: u32, test: u64) {
        let _scope = MpScope::enter(bits);
        let mut rng = rng(test);
        for i in 0..400 {
            let mut x = Float::with_val(bits, rand_f64(&mut rng, -1, 1));
            for k in 1..(bits / 50 + 2) {
                x += rand_f64(&mut rng, -1, 1) * pow2(-(50 * k as i32));
            }
            // The whole significand stays within the doubles' range (the oracle peels doubles).
            x <<= rng.random_range(bits as i32 - 1000..900);
            if i == 0 {
                x = -Float::new(bits);
            }
            let text = write_mp(&Mp(x.clone()));
            assert!(text.parse::<f64>().is_ok(), "{text}");
            // Oracle: the text's value rounded to `bits` bits is the Float's value.
            let v = value_of_text(&text);
            assert_eq!(
                round_rational(&v, bits, -100_000),
                value_of_float(&x),
                "mp:{bits}: {text} is another value"
            );
            let back = read_mp(&text).unwrap();
            assert_eq!(back.prec(), bits);
            assert_eq!(*back.as_float(), x, "mp:{bits}: {text}");
            assert_eq!(
                back.as_float().is_sign_negative(),
                x.is_sign_negative(),
                "{text}"
            );
        }
    }

    #[test]
    fn mp128_round_trip_is_bitwise() {
        round_trip(128, 7);
    }

    #[test]
    fn mp1024_round_trip_is_bitwise() {
        round_trip(1024, 8);
    }
}

// ---------------------------------------------------------------------------------------------
// The command line, end to end.

fn matrix() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices/graded_spd_400.mtx")
        .display()
        .to_string()
}

fn run_json(args: &[&str], dir: &Path, codes: &[i32]) -> serde_json::Value {
    let out = solver(args, dir);
    assert!(
        codes.contains(&out.status.code().unwrap_or(-1)),
        "{args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// The values of a written solution file.
fn file_values(path: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let comment = text.lines().nth(1).expect("a comment line").to_string();
    let values = text
        .lines()
        .filter(|l| !l.starts_with('%'))
        .skip(1)
        .map(str::to_string)
        .collect();
    (comment, values)
}

/// `--write-x` in td, dd and qd writes what the library's own solve computes, to the bit; and
/// `--x0` of that file starts a solve from exactly that vector: its initial residual
/// `||b - A x0|| / ||b||` (the recurrence residual at iteration 0 with `--criterion rhs`) is the
/// first run's final true residual. Rounded to double, x0 would start about 30 times higher.
#[test]
fn solve_writes_x_that_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let a = precsolve::read_matrix_market(matrix()).unwrap();
    let b = vec![1.0; a.nrows()];
    let m = matrix();
    for (precision, max_iter) in [("dd", "30000"), ("td", "30000"), ("qd", "30000")]
        .into_iter()
        .chain([("mp:128", "300")])
    {
        let x_file = format!("x_{}.mtx", precision.replace(':', "_"));
        let common = [
            "solve",
            &m,
            "--precision",
            precision,
            "--method",
            "cg",
            "--backend",
            "cpu",
            "--tol",
            "1e-12",
            "--format",
            "json",
            "-q",
        ];
        let mut first: Vec<&str> = common.to_vec();
        first.extend(["--max-iter", max_iter, "--write-x", &x_file]);
        run_json(&first, dir.path(), &[0, 3]);

        let (comment, values) = file_values(&dir.path().join(&x_file));
        assert_eq!(
            comment,
            format!(
                "% precision {precision}: each value is written with enough digits to read back \
                 exactly"
            )
        );
        assert_eq!(values.len(), a.nrows());

        // The library's solve of the same problem, compared word for word with the file.
        let wp: WorkingPrecision = precision.parse().unwrap();
        let solved = Solver::cg()
            .tol(1e-12)
            .max_iter(max_iter.parse().unwrap())
            .backend(BackendChoice::Cpu)
            .solve_in(wp, &a, &b)
            .unwrap();
        // (serde_json's float parser is not correctly rounded: the library's own number.)
        let true_residual = solved.info.true_residual;
        match &solved.x {
            SolutionVector::Dd(x) => {
                for (xi, text) in x.iter().zip(&values) {
                    let back = read_dd(text).unwrap();
                    assert_eq!(
                        bits(&[back.hi, back.lo]),
                        bits(&[xi.hi, xi.lo + 0.0]),
                        "{text}"
                    );
                    check_text(text, &[xi.hi, xi.lo + 0.0], "dd solution");
                }
            }
            SolutionVector::Td(x) => {
                for (xi, text) in x.iter().zip(&values) {
                    let (hi, lo) = read_td(text).unwrap().parts();
                    let (xhi, xlo) = xi.parts();
                    let xlo = if xlo == i32::MIN { 0 } else { xlo };
                    assert_eq!((hi.to_bits(), lo), (xhi.to_bits(), xlo), "{text}");
                }
            }
            SolutionVector::Qd(x) => {
                for (xi, text) in x.iter().zip(&values) {
                    // The canonical quad-double of the solver's words, which are that in
                    // most entries; by the oracle and by the reader.
                    let expected = oracle_words(&value_of(&xi.x), xi.x[0] < 0.0);
                    check_text(text, &expected, "qd solution");
                    assert_eq!(bits(&read_qd(text).unwrap().x), bits(&expected), "{text}");
                }
            }
            SolutionVector::Mp(precsolve::precision::mpfloat::MpVector::L2(x)) => {
                for (xi, text) in x.iter().zip(&values) {
                    let back: precsolve::MpFloat<2> =
                        exact_decimal::read_mpfloat(text, 128).unwrap();
                    assert_eq!(back.to_integer_exp(), xi.to_integer_exp(), "{text}");
                }
            }
            other => panic!("{precision} gave {other:?}"),
        }

        // Restart from the file.
        let mut second: Vec<&str> = common.to_vec();
        second.extend([
            "--x0",
            &x_file,
            "--max-iter",
            "1",
            "--criterion",
            "rhs",
            "--history",
            "h.csv",
        ]);
        run_json(&second, dir.path(), &[0, 3]);
        let history = std::fs::read_to_string(dir.path().join("h.csv")).unwrap();
        let initial: f64 = history
            .lines()
            .nth(1)
            .unwrap()
            .split(',')
            .nth(4)
            .unwrap()
            .parse()
            .unwrap();
        // dd computes both in the same kernel: the same bits. td keeps its residual in D+I and
        // qd in quad-double before the norm: within a few units of the last place of a double.
        if precision == "dd" {
            assert_eq!(initial, true_residual, "{precision}: {history}");
        } else {
            let rel = (initial - true_residual).abs() / true_residual;
            assert!(rel < 1e-14, "{precision}: {initial:e} vs {true_residual:e}");
        }
    }
}

/// The right-hand side stays in double: values that carry more than a double are rounded, with
/// one warning that counts them and names the file (a double's own decimals do not count). A non-finite `--x0` value is refused naming its
/// file and line.
#[test]
fn rhs_is_rounded_with_one_warning_and_bad_x0_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("b.mtx"),
        "%%MatrixMarket matrix array real general\n4 1\n0.1\n1.00000000000000000000000001\n\
         1.000000000000000055511151231257827021181583404541015625e-1\n1.00000000000000005551e-1\n",
    )
    .unwrap();
    let out = solver(
        &[
            "solve",
            "poisson2d:2",
            "--rhs",
            "b.mtx",
            "--precision",
            "dd",
            "-q",
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stderr}");
    assert_eq!(stderr.matches("rounded").count(), 1, "{stderr}");
    assert!(
        stderr.contains("b.mtx") && stderr.contains("1 of the 4"),
        "{stderr}"
    );

    std::fs::write(
        dir.path().join("x0.mtx"),
        "%%MatrixMarket matrix array real general\n% written by a breakdown\n4 1\n0\n1e-40\nnan\n1\n",
    )
    .unwrap();
    let out = solver(
        &["solve", "poisson2d:2", "--x0", "x0.mtx", "-q"],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("x0.mtx") && stderr.contains("line 6"),
        "{stderr}"
    );
}
