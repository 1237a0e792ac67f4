//! Exact conversion between decimal text and the working precisions (feature `cli`): what
//! `solver --write-x` writes and `--x0` / `--rhs` read.
//!
//! # Reading
//!
//! [`Decimal::parse`] takes the number as written (`[+-]digits[.digits][(e|E)[+-]digits]`) as
//! its exact value `±D × 10^E`, big integers and all. [`Decimal::nearest`] rounds that value to
//! its nearest-first expansion in four doubles (`precision::exact_values`: `w0` the nearest
//! double, `w1` the nearest double to the exact remainder, ...) by exact integer arithmetic: each
//! word is the correctly rounded quotient of two big integers (round to nearest, ties to even,
//! subnormals on their grid), and the remainder is then formed exactly. Each precision takes its
//! value from that expansion as `exact_values` documents ([`read_f64`], [`read_td`],
//! [`read_dd`], [`read_qd`]); `mp:<bits>` is rounded by MPFR from the text itself.
//!
//! # Writing
//!
//! A value of f64, td, dd or qd is a sum of doubles, i.e. a dyadic rational `M × 2^e`, whose
//! decimal expansion `M × 5^-e × 10^e` is finite: that exact decimal always reads back to the
//! same words (for canonical words; see below). It is long (about 107 significant digits for a
//! dd near 1), so [`write_dd`] and the others first try the value rounded to the digits that the
//! last word's ulp calls for (about 33 for a dd, 23 for a td, 65 for a qd), and keep that shorter
//! text only if it reads back ([`Decimal::nearest`]) to exactly the same words; otherwise one
//! or two digits more, and failing those the exact decimal. So every text written is checked by
//! the reader before it is written. A double is written by Rust's shortest round-trip formatting
//! (`{:e}`), which reads back exactly under any correctly rounded reader, this one included.
//! `mp:<bits>` is written by MPFR with the digits that read back to the same `bits`-bit number
//! (`1 + ceil(bits log10 2)`).
//!
//! Words read back bit for bit when they are the nearest-first expansion of their value, as
//! every f64, dd and td value is (a `Dd` operation ends with a TwoSum, D+I's `pack` with a
//! QuickTwoSum), apart from the sign of a zero lower word, which a decimal cannot carry (it
//! reads back `+0.0`). A quad-double's words are not always its nearest-first expansion (QD's
//! renormalisation leaves a word slightly over half an ulp of the previous one now and then):
//! what is written for one reads back to the canonical quad-double of its words' value (the
//! exact decimal of that value where no shorter text does), which is the same value whenever
//! four canonical words hold it, and otherwise its nearest-first rounding (within 2^-212).
//!
//! Text is scientific: `-1.2345e-7`, `0e0`, `-0e0`; a non-finite value is written `nan`, `inf`
//! or `-inf` (which every reader here refuses as a value, naming the line).

use super::exact_values::{ExactValues, dd_of, qd_of, td_of};
use super::{Dd, Qd, Td};
use num_bigint::{BigInt, BigUint, Sign};

/// A decimal number's exact value `±digits × 10^exp10` (a zero keeps its sign).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    digits: BigUint,
    exp10: i64,
}

/// A value outside the range of doubles (its nearest double would be an infinity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfRange;

impl std::fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("beyond the range of a double (about 1.8e308)")
    }
}

impl std::error::Error for OutOfRange {}

/// A value's nearest-first expansion in four doubles (see `precision::exact_values`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expansion {
    /// `w0` (the nearest double), `w1`, `w2`, `w3`.
    pub words: [f64; 4],
    /// How many words hold the value exactly (0 for a zero), `None` if four do not.
    pub exact_in: Option<usize>,
}

impl Expansion {
    /// Whether the value is exactly a double.
    pub fn is_double(&self) -> bool {
        matches!(self.exact_in, Some(0 | 1))
    }
}

/// Exponents of ten beyond these put any nonzero digit string out of range, or below half the
/// smallest subnormal (2^-1075 ~ 2.5e-324), whatever the digits.
const MAX_EXP10: i64 = 310;
const MIN_EXP10: i64 = -330;

impl Decimal {
    /// The exact value of `[+-]digits[.digits][(e|E)[+-]digits]` (at least one digit in the
    /// significand; `1.`, `.5`, `+2E+3` are numbers). `None` for anything else, `inf` and `nan`
    /// included.
    pub fn parse(text: &str) -> Option<Decimal> {
        let b = text.as_bytes();
        let (negative, mut i) = match b.first() {
            Some(b'-') => (true, 1),
            Some(b'+') => (false, 1),
            _ => (false, 0),
        };
        let mut digits = Vec::with_capacity(b.len());
        let mut frac_digits: i64 = 0;
        let mut seen_digit = false;
        let mut seen_point = false;
        while i < b.len() {
            match b[i] {
                c @ b'0'..=b'9' => {
                    seen_digit = true;
                    // Leading zeros carry no value.
                    if !(digits.is_empty() && c == b'0') {
                        digits.push(c);
                    }
                    if seen_point {
                        frac_digits += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            i += 1;
        }
        if !seen_digit {
            return None;
        }
        let mut exp10: i64 = 0;
        if i < b.len() {
            if !matches!(b[i], b'e' | b'E') {
                return None;
            }
            i += 1;
            let exp_negative = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            if i == b.len() || !b[i..].iter().all(u8::is_ascii_digit) {
                return None;
            }
            // Saturates far beyond any exponent that can still matter (see MAX/MIN_EXP10).
            let magnitude = b[i..].iter().fold(0i64, |acc, &c| {
                (acc * 10 + i64::from(c - b'0')).min(1 << 40)
            });
            exp10 = if exp_negative { -magnitude } else { magnitude };
        }
        // Trailing zeros of the significand move into the exponent.
        let kept = digits.len() - digits.iter().rev().take_while(|&&c| c == b'0').count();
        exp10 += (digits.len() - kept) as i64 - frac_digits;
        digits.truncate(kept);
        Some(Decimal {
            negative,
            digits: if digits.is_empty() {
                BigUint::ZERO
            } else {
                BigUint::parse_bytes(&digits, 10)?
            },
            exp10,
        })
    }

    /// Whether the value is zero (of either sign).
    pub fn is_zero(&self) -> bool {
        self.digits == BigUint::ZERO
    }

    /// The same value with a zero's sign made `+` (an integer file's `-0`, which reads as `+0`).
    pub fn without_negative_zero(mut self) -> Decimal {
        if self.is_zero() {
            self.negative = false;
        }
        self
    }

    /// The exact sum (duplicate entries of a coordinate file). A zero sum is `+0` unless both
    /// are negative zeros (as IEEE addition).
    pub fn add(&self, other: &Decimal) -> Decimal {
        if other.is_zero() {
            let mut sum = self.clone();
            sum.negative = self.negative && (other.negative || !self.is_zero());
            return sum;
        }
        if self.is_zero() {
            return other.clone();
        }
        let e = self.exp10.min(other.exp10);
        let scaled = |d: &Decimal| {
            let m = &d.digits * BigUint::from(10u32).pow((d.exp10 - e) as u32);
            BigInt::from_biguint(if d.negative { Sign::Minus } else { Sign::Plus }, m)
        };
        let sum = scaled(self) + scaled(other);
        let negative = sum.sign() == Sign::Minus;
        let mut d = Decimal {
            negative: false,
            digits: sum.magnitude().clone(),
            exp10: e,
        };
        d.strip_zeros();
        d.negative = negative;
        d
    }

    fn strip_zeros(&mut self) {
        if self.is_zero() {
            self.exp10 = 0;
            return;
        }
        let ten = BigUint::from(10u32);
        loop {
            let q = &self.digits / &ten;
            if &q * &ten != self.digits {
                break;
            }
            self.digits = q;
            self.exp10 += 1;
        }
    }

    /// Whether this text is the double `x` as doubles are written, i.e. carries nothing a
    /// double loses: `x`'s exact value, at most 17 significant digits (what any double needs;
    /// `x` should then be its nearest double), or `x`'s exact value rounded to this text's own
    /// digits (a double printed with more, `%.25e`), a tie either way.
    pub fn is_written_double(&self, x: f64) -> bool {
        if self.digits < BigUint::from(10u64.pow(17)) || !x.is_finite() {
            return true;
        }
        // 2 |x - d| <= 10^e, scaled to integers by 2^s2 10^s10.
        let (mx, ex) = if x == 0.0 { (0, 0) } else { decompose(x) };
        let s2 = (-ex).max(0) as u64;
        let s10 = (-self.exp10).max(0) as u32;
        let ten = |k: u32| BigInt::from(10u32).pow(k);
        let signed = |neg: bool, m: BigInt| if neg { -m } else { m };
        let a = signed(x < 0.0, BigInt::from(mx) << (ex + s2 as i64) as u64) * ten(s10);
        let unit = ten((self.exp10 + i64::from(s10)) as u32) << s2;
        let b = signed(self.negative, BigInt::from(self.digits.clone())) * &unit;
        let twice_gap: BigInt = (a - b) * 2;
        twice_gap.magnitude() <= unit.magnitude()
    }

    /// The exact value in scientific notation (`-1.25e-3`, `0e0`, `-0e0`): every digit kept.
    pub fn to_text(&self) -> String {
        if self.is_zero() {
            return zero_text(self.negative);
        }
        let digits = self.digits.to_str_radix(10);
        scientific(self.negative, digits.as_bytes(), self.exp10)
    }

    /// The nearest-first expansion of the exact value (see the module docs); `Err` when the
    /// nearest double is beyond the range of doubles.
    pub fn nearest(&self) -> Result<Expansion, OutOfRange> {
        self.nearest_in(4)
    }

    /// The nearest double, and whether it is the value exactly.
    pub fn nearest_double(&self) -> Result<(f64, bool), OutOfRange> {
        let e = self.nearest_in(1)?;
        Ok((e.words[0], e.exact_in.is_some()))
    }

    /// The first `count` words of the nearest-first expansion (the others zero); `exact_in`
    /// is `None` if they do not hold the value.
    fn nearest_in(&self, count: usize) -> Result<Expansion, OutOfRange> {
        if self.is_zero() {
            return Ok(zero_expansion(self.negative));
        }
        // |v| lies in [10^(top - 1), 10^top), top within one of this estimate from the bits
        // (the bounds have more than that to spare).
        let bits = self.digits.bits() as i64;
        let top = self
            .exp10
            .saturating_add(((bits - 1) as f64 * std::f64::consts::LOG10_2) as i64 + 1);
        if top - 1 > MAX_EXP10 {
            return Err(OutOfRange);
        }
        if top < MIN_EXP10 {
            // Below half the smallest subnormal: every word is zero, w0 with the value's sign.
            return Ok(Expansion {
                words: [if self.negative { -0.0 } else { 0.0 }, 0.0, 0.0, 0.0],
                exact_in: None,
            });
        }
        let sign = if self.negative {
            Sign::Minus
        } else {
            Sign::Plus
        };
        let ratio = if self.exp10 >= 0 {
            let num = &self.digits * BigUint::from(10u32).pow(self.exp10 as u32);
            Ratio::new(BigInt::from_biguint(sign, num), 0, 0)
        } else {
            let k = (-self.exp10) as u32;
            Ratio::new(BigInt::from_biguint(sign, self.digits.clone()), k as i64, k)
        };
        ratio.nearest(self.negative, count)
    }
}

fn zero_text(negative: bool) -> String {
    if negative { "-0e0" } else { "0e0" }.to_string()
}

fn zero_expansion(negative: bool) -> Expansion {
    Expansion {
        words: [if negative { -0.0 } else { 0.0 }, 0.0, 0.0, 0.0],
        exact_in: Some(0),
    }
}

/// `d0.d1d2...e<exp>` for `digits` (no leading zero) times 10^`exp10` (of the last digit).
fn scientific(negative: bool, digits: &[u8], exp10: i64) -> String {
    let mut s = String::with_capacity(digits.len() + 8);
    if negative {
        s.push('-');
    }
    s.push(digits[0] as char);
    if digits.len() > 1 {
        s.push('.');
        s.extend(digits[1..].iter().map(|&c| c as char));
    }
    s.push('e');
    s.push_str(&(exp10 + digits.len() as i64 - 1).to_string());
    s
}

/// `±num × 2^-s ÷ 5^k`: the exact value being expanded.
struct Ratio {
    num: BigInt,
    s: i64,
    five_k: BigUint,
}

impl Ratio {
    fn new(num: BigInt, s: i64, k: u32) -> Ratio {
        Ratio {
            num,
            s,
            five_k: BigUint::from(5u32).pow(k),
        }
    }

    /// The exact value of finite doubles' sum.
    fn of_words(words: &[f64]) -> Ratio {
        let parts: Vec<(bool, u64, i64)> = words
            .iter()
            .filter(|w| **w != 0.0)
            .map(|&w| {
                let (m, e) = decompose(w);
                (w < 0.0, m, e)
            })
            .collect();
        let emin = parts.iter().map(|p| p.2).min().unwrap_or(0);
        let mut num = BigInt::ZERO;
        for (neg, m, e) in parts {
            let t = BigInt::from(m) << (e - emin) as u64;
            if neg {
                num -= t;
            } else {
                num += t;
            }
        }
        Ratio::new(num, -emin, 0)
    }

    /// The first `count` words of the nearest-first expansion; `negative_zero`: the sign of
    /// `w0` if the value is zero.
    fn nearest(mut self, negative_zero: bool, count: usize) -> Result<Expansion, OutOfRange> {
        if self.num.sign() == Sign::NoSign {
            return Ok(zero_expansion(negative_zero));
        }
        let mut words = [0.0; 4];
        for (i, word) in words.iter_mut().enumerate().take(count) {
            let negative = match self.num.sign() {
                Sign::NoSign => {
                    return Ok(Expansion {
                        words,
                        exact_in: Some(i),
                    });
                }
                Sign::Minus => true,
                Sign::Plus => false,
            };
            let (q_mant, q) = round_to_double(self.num.magnitude(), &self.five_k, self.s);
            if q_mant == 0 {
                // Below half the smallest subnormal: so is every further remainder.
                if i == 0 {
                    *word = if negative { -0.0 } else { 0.0 };
                }
                return Ok(Expansion {
                    words,
                    exact_in: None,
                });
            }
            if 64 - q_mant.leading_zeros() as i64 + q > 1024 {
                return Err(OutOfRange);
            }
            // exact: q_mant <= 2^53, and the result is a finite double
            let w = super::ldexp(q_mant as f64, q as i32);
            *word = if negative { -w } else { w };
            // The remainder, exactly: num 2^-s / 5^k - ±Q 2^q.
            let mut sub = BigInt::from(q_mant) * BigInt::from(self.five_k.clone());
            if q + self.s >= 0 {
                sub <<= (q + self.s) as u64;
            } else {
                self.num <<= (-(q + self.s)) as u64;
                self.s = -q;
            }
            if negative {
                self.num += sub;
            } else {
                self.num -= sub;
            }
        }
        let exact = self.num.sign() == Sign::NoSign;
        Ok(Expansion {
            words,
            exact_in: exact.then_some(count),
        })
    }
}

/// `a × 2^-s ÷ den` (positive) rounded to nearest, ties to even, to a double's 53 bits on
/// the subnormal grid 2^-1074 at least: `(Q, q)` with the result `Q × 2^q`, `Q <= 2^53`.
fn round_to_double(a: &BigUint, den: &BigUint, s: i64) -> (u64, i64) {
    // floor(log2(a / den)) is est or est - 1.
    let est = a.bits() as i64 - den.bits() as i64;
    let at_least = |e: i64| {
        if e >= 0 {
            *a >= den << e as u64
        } else {
            (a << (-e) as u64) >= *den
        }
    };
    let e_ratio = if at_least(est) { est } else { est - 1 };
    let q = (e_ratio - s - 52).max(-1074);
    // Q = round(a 2^(-s-q) / den).
    let t = -s - q;
    let (num, d) = if t >= 0 {
        (a << t as u64, den.clone())
    } else {
        (a.clone(), den << (-t) as u64)
    };
    let quotient = &num / &d;
    let twice_rem = (&num - &quotient * &d) << 1u32;
    let mut mant = quotient.iter_u64_digits().next().unwrap_or(0);
    debug_assert!(quotient.bits() <= 53);
    if twice_rem > d || (twice_rem == d && mant & 1 == 1) {
        mant += 1;
    }
    (mant, q)
}

/// A finite nonzero double as `m × 2^e` with `m < 2^53`.
fn decompose(x: f64) -> (u64, i64) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let frac = bits & ((1 << 52) - 1);
    if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), biased - 1075)
    }
}

/// `floor(log2 |x|)` of a finite nonzero double; -1022 for subnormals (their grid's exponent).
fn exponent(x: f64) -> i64 {
    (((x.to_bits() >> 52) & 0x7ff) as i64 - 1023).max(-1022)
}

/// The words whose values the precisions hold, and how each reads an expansion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Td,
    Dd,
    Qd,
}

impl Kind {
    /// Words of the expansion that this kind's value depends on (td: the sign of `w2` too).
    fn words(self) -> usize {
        match self {
            Kind::Td => 3,
            Kind::Dd => 2,
            Kind::Qd => 4,
        }
    }

    /// The bits of `kind`'s value of an expansion (what must read back identically).
    fn bits(self, e: &Expansion) -> [u64; 4] {
        let b = |x: f64| x.to_bits();
        match self {
            Kind::Td => {
                let (hi, lo) = td_of(e.words).parts();
                [b(hi), u64::from(lo as u32), 0, 0]
            }
            Kind::Dd => [b(e.words[0]), b(e.words[1]), 0, 0],
            Kind::Qd => e.words.map(b),
        }
    }

    /// log2 of the ulp of the last word on its grid, `None` if it is zero (a zero word stands
    /// for an exact value: only about 2^-1075 around it reads back to it).
    fn last_ulp_log2(self, e: &Expansion) -> Option<i64> {
        match self {
            Kind::Td => {
                let lo = td_of(e.words).to_dd().lo;
                (lo != 0.0).then(|| (exponent(lo) - 20).max(-1042))
            }
            Kind::Dd | Kind::Qd => {
                let last = if self == Kind::Dd {
                    e.words[1]
                } else {
                    e.words[3]
                };
                (last != 0.0).then(|| (exponent(last) - 52).max(-1074))
            }
        }
    }
}

/// Text for finite words of `kind` (their exact sum is the value): the shortest of the tried
/// roundings that reads back to the same words, else the exact decimal.
fn write_words(words: &[f64], kind: Kind) -> String {
    let ratio = Ratio::of_words(words);
    let negative = match ratio.num.sign() {
        Sign::NoSign => return zero_text(words[0].is_sign_negative()),
        Sign::Minus => true,
        Sign::Plus => false,
    };
    // Exact decimal: |num| 2^-s = |num| 5^s 10^-s.
    let (digits, exp10) = if ratio.s <= 0 {
        (ratio.num.magnitude() << (-ratio.s) as u64, 0)
    } else {
        (
            ratio.num.magnitude() * BigUint::from(5u32).pow(ratio.s as u32),
            -ratio.s,
        )
    };
    let mut exact = Decimal {
        negative,
        digits,
        exp10,
    };
    exact.strip_zeros();
    let target = match exact.nearest_in(kind.words()) {
        Ok(e) => e,
        Err(OutOfRange) => return exact.to_text(),
    };
    let target_bits = kind.bits(&target);
    let text = exact.digits.to_str_radix(10);
    let digits = text.as_bytes();
    if let Some(ulp_log2) = kind.last_ulp_log2(&target) {
        // Rounding to n digits errs by at most half a unit of the n-th digit, 10^(top - n) / 2
        // with 10^top above |v|: below a quarter of the last word's ulp it reads back, ties and
        // boundaries aside, when n > top - log10(ulp / 2).
        let top = exact.exp10 + digits.len() as i64;
        let guess =
            (top as f64 - (ulp_log2 - 1) as f64 * std::f64::consts::LOG10_2).floor() as i64 + 1;
        for n in guess.max(1)..guess.max(1) + 3 {
            let n = n as usize;
            if n >= digits.len() {
                break;
            }
            // The nearest n-digit decimal, then the one on the other side of the value: where
            // a word is a tie that the words above it win, only one side reads back.
            let nearest_up = rounds_up(digits, n);
            for up in [nearest_up, !nearest_up] {
                let (rounded, exp) = round_digits(digits, exact.exp10, n, up);
                let candidate = Decimal {
                    negative,
                    digits: BigUint::parse_bytes(&rounded, 10).expect("digits"),
                    exp10: exp,
                };
                if candidate
                    .nearest_in(kind.words())
                    .is_ok_and(|e| kind.bits(&e) == target_bits)
                {
                    return scientific(negative, &rounded, exp);
                }
            }
        }
    }
    scientific(negative, digits, exact.exp10)
}

/// Whether rounding `digits` to `n < digits.len()` significant digits to nearest, ties to
/// even, rounds the magnitude up.
fn rounds_up(digits: &[u8], n: usize) -> bool {
    let rest = &digits[n..];
    match rest[0] {
        b'6'..=b'9' => true,
        b'5' => rest[1..].iter().any(|&c| c != b'0') || (digits[n - 1] - b'0') % 2 == 1,
        _ => false,
    }
}

/// `digits × 10^exp10` cut to `n < digits.len()` significant digits, the magnitude rounded up
/// (`up`, by one unit of the last kept digit) or down, with trailing zeros dropped:
/// `(digits, exp10 of the last)`.
fn round_digits(digits: &[u8], exp10: i64, n: usize, up: bool) -> (Vec<u8>, i64) {
    let mut kept = digits[..n].to_vec();
    let mut exp = exp10 + (digits.len() - n) as i64;
    if up {
        let mut i = n;
        loop {
            if i == 0 {
                // 99...9 rounded up: 1 followed by zeros.
                kept.insert(0, b'1');
                kept.pop();
                exp += 1;
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    while kept.len() > 1 && kept.last() == Some(&b'0') {
        kept.pop();
        exp += 1;
    }
    (kept, exp)
}

/// `nan`, `inf` or `-inf` for a non-finite value.
fn non_finite_text(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// A double: the shortest decimal that reads back to it (Rust's `{:e}`).
pub fn write_f64(x: f64) -> String {
    if !x.is_finite() {
        return non_finite_text(x);
    }
    format!("{x:e}")
}

/// A triple-precision (D+I) value; see the module docs.
pub fn write_td(x: Td) -> String {
    let d = x.to_dd();
    if !(d.hi.is_finite() && d.lo.is_finite()) {
        return non_finite_text(d.hi + d.lo);
    }
    write_words(&[d.hi, d.lo], Kind::Td)
}

/// A double-double; see the module docs.
pub fn write_dd(x: Dd) -> String {
    if !(x.hi.is_finite() && x.lo.is_finite()) {
        return non_finite_text(x.hi + x.lo);
    }
    write_words(&[x.hi, x.lo], Kind::Dd)
}

/// A quad-double; see the module docs.
pub fn write_qd(x: Qd) -> String {
    if !x.x.iter().all(|w| w.is_finite()) {
        return non_finite_text(x.x.iter().sum());
    }
    write_words(&x.x, Kind::Qd)
}

/// An MPFR value: MPFR's digits that read back to the same number at its precision, in the
/// same scientific form as the others (the same decimal, trailing zeros dropped).
#[cfg(feature = "mpfr")]
pub fn write_mpfr(x: &super::Mpfr) -> String {
    let f = x.as_float();
    if !f.is_finite() {
        return non_finite_text(f.to_f64());
    }
    // No precision given: MPFR's `get_str` with the digits that read back exactly.
    let text = format!("{f:e}");
    match Decimal::parse(&text) {
        Some(d) => d.to_text(),
        None => text,
    }
}

/// An `mp:<bits>` value: its exact decimal rounded (to nearest, ties to even) to
/// `1 + ceil(bits log10 2)` significant digits, which read back to the same `bits`-bit number
/// (the digits MPFR writes for it too), trailing zeros dropped.
pub fn write_mpfloat<const L: usize>(x: &super::MpFloat<L>) -> String {
    let Some((negative, sig, exp)) = x.to_integer_exp() else {
        return non_finite_text(x.to_f64());
    };
    let magnitude = BigUint::from_slice(
        &sig.iter()
            .flat_map(|l| [*l as u32, (*l >> 32) as u32])
            .collect::<Vec<_>>(),
    );
    if magnitude.bits() == 0 {
        return zero_text(negative);
    }
    // Exact decimal: m 2^exp = m 5^-exp 10^exp.
    let (digits, exp10) = if exp >= 0 {
        (magnitude << exp as u64, 0)
    } else {
        (magnitude * BigUint::from(5u32).pow((-exp) as u32), exp)
    };
    let text = digits.to_str_radix(10);
    let digits = text.as_bytes();
    let n = 1 + (f64::from(x.bits()) * std::f64::consts::LOG10_2).ceil() as usize;
    if n >= digits.len() {
        let mut exact = Decimal {
            negative,
            digits: BigUint::parse_bytes(digits, 10).expect("digits"),
            exp10,
        };
        exact.strip_zeros();
        return exact.to_text();
    }
    let (rounded, exp) = round_digits(digits, exp10, n, rounds_up(digits, n));
    scientific(negative, &rounded, exp)
}

/// The decimal `text` rounded once (to nearest, ties to even) at `bits` bits.
pub fn read_mpfloat<const L: usize>(
    text: &str,
    bits: u32,
) -> Result<super::MpFloat<L>, ReadError> {
    let d = Decimal::parse(text).ok_or(ReadError::NotANumber)?;
    Ok(mpfloat_of(&d, bits))
}

/// `d` rounded once at `bits` bits: `digits 10^e` as an integer, or for `e < 0` the quotient
/// `digits 2^k / 10^-e` with at least `bits + 2` bits and its remainder's being nonzero in its
/// last bit (below the rounding bit, so it only breaks ties).
pub fn mpfloat_of<const L: usize>(d: &Decimal, bits: u32) -> super::MpFloat<L> {
    let limbs = |x: &BigUint| x.to_u64_digits();
    if d.digits.bits() == 0 {
        return super::MpFloat::zero(d.negative, bits);
    }
    if d.exp10 >= 0 {
        let n = &d.digits * BigUint::from(10u32).pow(d.exp10 as u32);
        return super::MpFloat::from_integer_exp(d.negative, &limbs(&n), 0, bits);
    }
    let den = BigUint::from(10u32).pow((-d.exp10) as u32);
    let k = (i64::from(bits) + 2 + den.bits() as i64 - d.digits.bits() as i64 + 1).max(0);
    let num = &d.digits << k as u64;
    let (mut q, r) = (&num / &den, &num % &den);
    if r.bits() != 0 {
        q |= BigUint::from(1u32);
    }
    super::MpFloat::from_integer_exp(d.negative, &limbs(&q), -k, bits)
}

/// Why a text is not a value of a precision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Not a decimal number (`nan` and `inf` included).
    NotANumber,
    /// Beyond the range of doubles.
    OutOfRange,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotANumber => f.write_str("not a finite decimal number"),
            ReadError::OutOfRange => OutOfRange.fmt(f),
        }
    }
}

impl std::error::Error for ReadError {}

fn expansion(text: &str) -> Result<Expansion, ReadError> {
    Decimal::parse(text)
        .ok_or(ReadError::NotANumber)?
        .nearest()
        .map_err(|_| ReadError::OutOfRange)
}

/// The double nearest the decimal `text`.
pub fn read_f64(text: &str) -> Result<f64, ReadError> {
    Ok(expansion(text)?.words[0])
}

/// The triple-precision value of the decimal `text` (see `precision::exact_values`).
pub fn read_td(text: &str) -> Result<Td, ReadError> {
    Ok(td_of(expansion(text)?.words))
}

/// The double-double nearest-first expansion of the decimal `text`.
pub fn read_dd(text: &str) -> Result<Dd, ReadError> {
    Ok(dd_of(expansion(text)?.words))
}

/// The quad-double nearest-first expansion of the decimal `text`.
pub fn read_qd(text: &str) -> Result<Qd, ReadError> {
    Ok(qd_of(expansion(text)?.words))
}

/// The value of the decimal `text` at the live `MpScope`'s precision (MPFR rounds it once).
#[cfg(feature = "mpfr")]
pub fn read_mpfr(text: &str) -> Result<super::Mpfr, ReadError> {
    use super::Precision;
    Decimal::parse(text).ok_or(ReadError::NotANumber)?;
    let bits = <super::Mpfr as Precision>::zero().prec();
    let parsed = rug::Float::parse(text).map_err(|_| ReadError::NotANumber)?;
    Ok(super::Mpfr(rug::Float::with_val(bits, parsed)))
}

/// One entry of a vector file: 0-based row, 1-based line, value.
pub type Entry = (usize, usize, Decimal);

/// A vector's entries summed per row (exactly), each with the line of its last entry.
fn per_row(len: usize, entries: impl IntoIterator<Item = Entry>) -> Vec<Option<(Decimal, usize)>> {
    let mut rows: Vec<Option<(Decimal, usize)>> = vec![None; len];
    for (row, line, value) in entries {
        let slot = &mut rows[row];
        *slot = Some(match slot.take() {
            None => (value, line),
            Some((sum, _)) => (sum.add(&value), line),
        });
    }
    rows
}

/// An initial guess from a vector file's entries (duplicates summed exactly), for every
/// precision as `precision::exact_values` says; with `keep_decimals` (an `mp:<bits>` solve
/// will read it) each entry's exact decimal too. Entries that are all exactly
/// doubles give doubles. `Err((line, message))` for a value beyond the range of doubles.
pub fn initial_guess(
    len: usize,
    entries: impl IntoIterator<Item = Entry>,
    keep_decimals: bool,
) -> Result<ExactValues, (usize, String)> {
    use rayon::prelude::*;
    let rows = per_row(len, entries);
    let expansions: Vec<Expansion> = rows
        .par_iter()
        .enumerate()
        .map(|(i, row)| match row {
            None => Ok(zero_expansion(false)),
            Some((d, line)) => d
                .nearest()
                .map_err(|e| (*line, format!("the value of row {} is {e}", i + 1))),
        })
        .collect::<Result<_, _>>()?;
    if expansions.iter().all(Expansion::is_double) {
        return Ok(ExactValues::from_f64(
            expansions.iter().map(|e| e.words[0]).collect(),
        ));
    }
    let values = ExactValues::from_expansions(expansions.iter().map(|e| e.words).collect());
    if keep_decimals {
        let texts = rows
            .iter()
            .map(|row| match row {
                None => "0e0".into(),
                Some((d, _)) => d.to_text().into_boxed_str(),
            })
            .collect();
        return Ok(values.with_decimals(texts).expect("one text per entry"));
    }
    Ok(values)
}

/// A right-hand side from a vector file's entries (duplicates summed exactly): each row's
/// nearest double, and how many rows were rounded beyond the way doubles are written (a value
/// with more than 17 significant digits that is neither a double's exact decimal nor one
/// rounded to its digits: a td, dd, qd or mp solution's text, say;
/// [`Decimal::is_written_double`]).
/// `Err((line, message))` for a value beyond the range of doubles.
pub fn nearest_doubles(
    len: usize,
    entries: impl IntoIterator<Item = Entry>,
) -> Result<(Vec<f64>, usize), (usize, String)> {
    use rayon::prelude::*;
    let rows = per_row(len, entries);
    let nearest: Vec<(f64, bool)> = rows
        .par_iter()
        .enumerate()
        .map(|(i, row)| match row {
            None => Ok((0.0, true)),
            Some((d, line)) => d
                .nearest_double()
                .map(|(x, exact)| (x, exact || d.is_written_double(x)))
                .map_err(|e| (*line, format!("the value of row {} is {e}", i + 1))),
        })
        .collect::<Result<_, _>>()?;
    let rounded = nearest.iter().filter(|(_, exact)| !exact).count();
    Ok((nearest.into_iter().map(|(x, _)| x).collect(), rounded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_what_std_accepts() {
        for (text, value) in [
            ("1", 1.0f64),
            ("-2.5", -2.5),
            ("+.5", 0.5),
            ("1.", 1.0),
            ("1e3", 1000.0),
            ("1.25E-2", 0.0125),
            ("-0", -0.0),
            ("007.50e+1", 75.0),
        ] {
            let d = Decimal::parse(text).unwrap_or_else(|| panic!("{text}"));
            let w = d.nearest().unwrap().words[0];
            assert_eq!(w.to_bits(), value.to_bits(), "{text}");
            assert_eq!(
                text.parse::<f64>().unwrap().to_bits(),
                w.to_bits(),
                "{text}"
            );
        }
        for bad in [
            "", ".", "e5", "1e", "1e+", "nan", "inf", "0x10", "1.2.3", "1 2", "--1",
        ] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn extremes() {
        assert_eq!(read_f64("1e-400").unwrap().to_bits(), 0);
        assert_eq!(read_f64("-1e-400").unwrap().to_bits(), (-0.0f64).to_bits());
        assert_eq!(
            read_f64("4.9406564584124654e-324").unwrap(),
            f64::from_bits(1)
        );
        assert_eq!(
            read_f64("2.4703282292062328e-324").unwrap(),
            f64::from_bits(1)
        );
        assert_eq!(read_f64("2.4703282292062327e-324").unwrap(), 0.0);
        assert_eq!(read_f64("1.7976931348623157e308").unwrap(), f64::MAX);
        assert_eq!(
            read_f64("1.7976931348623159e308"),
            Err(ReadError::OutOfRange)
        );
        assert_eq!(read_f64("1e400"), Err(ReadError::OutOfRange));
        assert_eq!(
            read_f64("1e99999999999999999999"),
            Err(ReadError::OutOfRange)
        );
        assert_eq!(read_f64("0e99999999999999999999").unwrap(), 0.0);
    }

    #[test]
    fn dd_of_a_tenth() {
        let d = read_dd("0.1").unwrap();
        assert_eq!(d.hi, 0.1);
        assert_eq!(d.lo, -5.551115123125783e-18);
        assert_eq!(read_dd(&write_dd(d)).unwrap(), d);
        // A dd that holds a double exactly is written as that double's exact decimal.
        let text = write_dd(Dd::from_f64(0.1));
        assert_eq!(
            text,
            "1.000000000000000055511151231257827021181583404541015625e-1"
        );
    }

    #[test]
    fn rounding_digits() {
        let nearest = |d: &[u8], e, n| round_digits(d, e, n, rounds_up(d, n));
        assert_eq!(nearest(b"12345", 0, 3), (b"123".to_vec(), 2));
        assert_eq!(nearest(b"12350", 0, 3), (b"124".to_vec(), 2));
        assert_eq!(nearest(b"12250", 0, 3), (b"122".to_vec(), 2));
        assert_eq!(nearest(b"12251", 0, 3), (b"123".to_vec(), 2));
        assert_eq!(nearest(b"99951", -5, 3), (b"1".to_vec(), 0));
        assert_eq!(nearest(b"10049", 0, 3), (b"1".to_vec(), 4));
        assert_eq!(round_digits(b"12345", 0, 3, true), (b"124".to_vec(), 2));
        assert_eq!(round_digits(b"12389", 0, 3, false), (b"123".to_vec(), 2));
    }
}
