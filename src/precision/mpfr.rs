//! MPFR through `rug` as a working precision, `mp-mpfr:<bits>` (cargo feature `mpfr`, CPU
//! only): the oracle the own [`MpFloat`](super::MpFloat) is tested against, and the way to more
//! than 2,048 bits.
//!
//! Every operation is one MPFR call rounding to nearest, ties to even, to the precision of its
//! result: `add`, `sub`, `mul`, `div`, `sqrt`, `mul_f64` (MPFR `mul_d`) are correctly rounded;
//! `neg` and `abs` are exact. `add_mul_f64(a, b)` is `self + (a b)` with two roundings (the
//! product, then the sum), as for the other precisions. A result has the larger precision of its
//! operands; new values take the precision of the thread's `MpScope` (`precision::mp`).
use super::mp::{bits_for_new_value, current_bits, mpfr_bytes_per_element};
use crate::precision::{Dd, Precision};
use rug::Float;

/// An MPFR number (`rug::Float`) as a working precision; see the module docs for its
/// rounding and for where the precision of new values comes from.
///
/// Not `Copy`: each value owns its limbs on the heap. `PartialEq` compares values (NaN is
/// unequal to itself; `+0 == -0`).
#[derive(Clone, Debug, PartialEq)]
pub struct Mpfr(pub Float);

impl Mpfr {
    /// The MPFR value.
    pub fn as_float(&self) -> &Float {
        &self.0
    }

    /// The precision of this value in bits.
    pub fn prec(&self) -> u32 {
        self.0.prec()
    }

    /// Unit roundoff of the live scope, 2^-bits (the run-time value [`Precision::EPSILON`]
    /// can only bound); `None` outside every scope.
    pub fn epsilon() -> Option<f64> {
        current_bits().map(super::mp::unit_roundoff)
    }

    /// Estimated bytes per vector element in the live scope (see
    /// [`mpfr_bytes_per_element`](super::mp::mpfr_bytes_per_element)); `None` outside every scope.
    pub fn bytes() -> Option<usize> {
        current_bits().map(mpfr_bytes_per_element)
    }

    #[inline]
    fn prec2(&self, b: &Mpfr) -> u32 {
        self.0.prec().max(b.0.prec())
    }
}

impl Precision for Mpfr {
    type Vector = Vec<Mpfr>;
    const NAME: &'static str = "mp-mpfr";
    /// The CUDA backend has no kernels named so and refuses it (`dispatch` refuses `mp` on
    /// the GPU before any work).
    const KERNEL_SUFFIX: &'static str = "mp";
    /// 2^-53: the unit roundoff of the smallest precision accepted, so an upper bound on
    /// 2^-bits for every `mp:<bits>`. An associated constant cannot hold the run-time
    /// precision; [`Mpfr::epsilon`] gives 2^-bits of the live scope.
    const EPSILON: f64 = f64::EPSILON / 2.0;
    /// At 53..=106 bits (64 bytes); more at higher precisions, see [`Mpfr::bytes`].
    const BYTES: usize = 64;
    fn unit_roundoff() -> f64 {
        Mpfr::epsilon().unwrap_or(Self::EPSILON)
    }
    crate::precision::acc_is_self!();

    #[inline]
    fn zero() -> Self {
        Mpfr(Float::new(bits_for_new_value()))
    }
    /// `[precision, kind, exponent, digit count, digits...]`: a finite non-zero value is its
    /// integer significand (the digits, least significant first, of its magnitude) times 2 to
    /// the exponent; kinds are +0, -0, NaN, +inf, -inf, finite positive, finite negative. The
    /// digits are always `ceil(precision / 64)` words, so every value of a precision takes as
    /// many (a rank sizes its receive buffers by one value's).
    fn write_words(&self, out: &mut Vec<u64>) {
        let f = &self.0;
        let kind: u64 = match f.classify() {
            std::num::FpCategory::Zero => u64::from(f.is_sign_negative()),
            std::num::FpCategory::Nan => 2,
            std::num::FpCategory::Infinite => 3 + u64::from(f.is_sign_negative()),
            _ => 5 + u64::from(f.is_sign_negative()),
        };
        let mut digits = vec![0u64; f.prec().div_ceil(64) as usize];
        let exp = match f.to_integer_exp() {
            Some((int, exp)) => {
                int.as_abs()
                    .write_digits(&mut digits, rug::integer::Order::Lsf);
                exp
            }
            None => 0,
        };
        out.extend([u64::from(f.prec()), kind, exp as i64 as u64, digits.len() as u64]);
        out.extend(digits);
    }
    fn read_words(words: &mut &[u64]) -> Self {
        let head = super::take_words(words, 4);
        let (prec, kind, exp, count) = (head[0] as u32, head[1], head[2] as i64, head[3]);
        let digits = super::take_words(words, count as usize);
        let value = match kind {
            0 => Float::with_val(prec, 0.0),
            1 => Float::with_val(prec, -0.0),
            2 => Float::with_val(prec, f64::NAN),
            3 => Float::with_val(prec, f64::INFINITY),
            4 => Float::with_val(prec, f64::NEG_INFINITY),
            _ => {
                let int = rug::Integer::from_digits(digits, rug::integer::Order::Lsf);
                let magnitude = Float::with_val(prec, int) << exp as i32;
                if kind == 6 { -magnitude } else { magnitude }
            }
        };
        Mpfr(value)
    }
    #[inline]
    fn one() -> Self {
        Mpfr(Float::with_val(bits_for_new_value(), 1u32))
    }
    /// Exact (bits >= 53).
    #[inline]
    fn from_f64(x: f64) -> Self {
        Mpfr(Float::with_val(bits_for_new_value(), x))
    }
    /// Nearest double (MPFR `get_d`, ties to even, subnormals rounded correctly).
    #[inline]
    fn to_f64(&self) -> f64 {
        self.0.to_f64()
    }
    /// `hi` = the nearest double, `lo` = the nearest double to the remainder `self - hi`,
    /// which is computed exactly (it fits in `self`'s precision: `|self - hi| <= ulp(hi)/2`,
    /// and its last bit is no lower than `self`'s). The pair is a normalised DD. If `hi` is
    /// not finite (an infinity, NaN, or a finite value beyond the double range), `lo` is 0.
    fn to_dd(&self) -> Dd {
        let hi = self.0.to_f64();
        if !hi.is_finite() {
            return Dd { hi, lo: 0.0 };
        }
        let rem = Float::with_val(self.0.prec(), &self.0 - hi);
        Dd {
            hi,
            lo: rem.to_f64(),
        }
    }
    /// `hi + lo` rounded once to the precision (MPFR `add_d` on `hi` held exactly), so exact
    /// whenever the sum fits in `bits` bits: from 107 bits on for every normalised DD whose
    /// `lo` has its exponent within 54 of `hi`'s (the DD arithmetic's full-precision results;
    /// 53 + 1 + 53 bits), and for every `f64` and every DD with `lo == 0` from 53 bits on. A
    /// DD whose `lo` lies further down (a gap of zeros between the parts) spans more bits
    /// than its 106 significant ones and is rounded like any other value.
    fn from_dd(x: Dd) -> Self {
        let bits = bits_for_new_value();
        let hi = Float::with_val(53, x.hi);
        Mpfr(Float::with_val(bits, &hi + x.lo))
    }

    #[inline]
    fn add(&self, b: &Self) -> Self {
        Mpfr(Float::with_val(self.prec2(b), &self.0 + &b.0))
    }
    #[inline]
    fn sub(&self, b: &Self) -> Self {
        Mpfr(Float::with_val(self.prec2(b), &self.0 - &b.0))
    }
    #[inline]
    fn mul(&self, b: &Self) -> Self {
        Mpfr(Float::with_val(self.prec2(b), &self.0 * &b.0))
    }
    #[inline]
    fn div(&self, b: &Self) -> Self {
        Mpfr(Float::with_val(self.prec2(b), &self.0 / &b.0))
    }
    #[inline]
    fn neg(&self) -> Self {
        Mpfr(Float::with_val(self.0.prec(), -&self.0))
    }
    #[inline]
    fn sqrt(&self) -> Self {
        Mpfr(Float::with_val(self.0.prec(), self.0.sqrt_ref()))
    }
    #[inline]
    fn abs(&self) -> Self {
        Mpfr(Float::with_val(self.0.prec(), self.0.abs_ref()))
    }
    #[inline]
    fn mul_f64(&self, b: f64) -> Self {
        Mpfr(Float::with_val(self.0.prec(), &self.0 * b))
    }
    /// `self + fl(a b)`: the product rounded to `b`'s precision, then the sum rounded (one
    /// allocation instead of the default's two).
    #[inline]
    fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
        let mut t = Float::with_val(b.0.prec(), &b.0 * a);
        if self.0.prec() > t.prec() {
            t.set_prec(self.0.prec()); // exact: the precision only grows
        }
        t += &self.0;
        Mpfr(t)
    }
    #[inline]
    fn is_finite(&self) -> bool {
        self.0.is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_every_kind_in_a_fixed_length() {
        let prec = 300;
        let values = [
            Float::with_val(prec, 0.0),
            Float::with_val(prec, -0.0),
            Float::with_val(prec, f64::INFINITY),
            Float::with_val(prec, f64::NEG_INFINITY),
            Float::with_val(prec, 1) / 3u32,
            -Float::with_val(prec, Float::with_val(prec, 2).sqrt() << 1000i32),
            Float::with_val(prec, Float::with_val(prec, 1) >> 100_000i32),
        ];
        let mut lengths = Vec::new();
        for v in values {
            let mut words = Vec::new();
            Mpfr(v.clone()).write_words(&mut words);
            lengths.push(words.len());
            let mut rest = &words[..];
            let back = Mpfr::read_words(&mut rest);
            assert!(rest.is_empty());
            assert_eq!(back.0.prec(), prec);
            assert_eq!(back.0.is_sign_negative(), v.is_sign_negative());
            assert!(back.0 == v || (back.0.is_zero() && v.is_zero()), "{v}");
        }
        assert!(lengths.windows(2).all(|w| w[0] == w[1]), "{lengths:?}");
    }
}
