//! Conversions between [`MpFloat`] and doubles (and sums of doubles): exact into `MpFloat`
//! where the precision holds the value, correctly rounded otherwise and into `f64`.

use super::{Kind, MpFloat, limbs};
use crate::precision::Dd;

/// `x = m 2^e` with an integer `m < 2^53` (a finite double's significand and exponent).
pub(super) fn decompose(x: f64) -> (bool, u64, i64) {
    let b = x.to_bits();
    let biased = ((b >> 52) & 0x7ff) as i64;
    let fraction = b & ((1 << 52) - 1);
    let (m, e) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, biased - 1075)
    };
    (b >> 63 == 1, m, e)
}

impl<const L: usize> MpFloat<L> {
    /// `x` at `bits` bits, exactly (`bits >= 53`).
    pub fn from_f64_bits(x: f64, bits: u32) -> Self {
        if x.is_nan() {
            return Self::nan(bits);
        }
        if x.is_infinite() {
            return Self::infinity(x < 0.0, bits);
        }
        let (negative, m, e) = decompose(x);
        if m == 0 {
            return Self::zero(negative, bits);
        }
        let zeros = m.leading_zeros();
        let mut sig = [0u64; L];
        sig[L - 1] = m << zeros;
        Self::normal(negative, sig, (e + 64 - i64::from(zeros)) as i32, bits)
    }

    /// The exact sum of the doubles `words`, rounded once at `bits` bits (a double-double's or
    /// quad-double's value, or an exact expansion read from text).
    pub fn from_f64_sum(words: &[f64], bits: u32) -> Self {
        if words.iter().any(|w| !w.is_finite()) {
            let sum: f64 = words.iter().sum();
            return Self::from_f64_bits(sum, bits);
        }
        let parts: Vec<_> = words.iter().map(|&w| decompose(w)).collect();
        let Some(low) = parts.iter().filter(|p| p.1 != 0).map(|p| p.2).min() else {
            // All zeros: the sign of their IEEE sum.
            return Self::from_f64_bits(words.iter().sum(), bits);
        };
        // Every double is a multiple of 2^low below 2^1024: 2,100 bits and the carries.
        const SPAN: usize = 36;
        let (mut plus, mut minus) = ([0u64; SPAN], [0u64; SPAN]);
        for &(negative, m, e) in &parts {
            let mut term = [0u64; SPAN];
            term[0] = m;
            limbs::shl(&mut term, (e - low) as u32);
            limbs::add_assign(if negative { &mut minus } else { &mut plus }, &term);
        }
        let negative = limbs::cmp(&plus, &minus).is_lt();
        let (big, small) = if negative {
            (&mut minus, &plus)
        } else {
            (&mut plus, &minus)
        };
        limbs::sub_assign(big, small);
        Self::from_integer_exp(negative, big, low, bits)
    }

    /// A double-double's exact value `hi + lo` rounded once at `bits` bits.
    pub fn from_dd_bits(x: Dd, bits: u32) -> Self {
        Self::from_f64_bits(x.hi, bits).add(Self::from_f64_bits(x.lo, bits))
    }

    /// The nearest double (ties to even; subnormals on their grid; beyond the range an
    /// infinity).
    pub fn to_f64(&self) -> f64 {
        let signed = |v: f64| if self.negative() { -v } else { v };
        match self.kind() {
            Kind::Nan => f64::NAN,
            Kind::Inf => signed(f64::INFINITY),
            Kind::Zero => signed(0.0),
            Kind::Normal => {
                let e = i64::from(self.exp());
                if e > 1024 {
                    return signed(f64::INFINITY);
                }
                // Significant bits the double keeps: 53, fewer in the subnormal range.
                let p = if e >= -1021 { 53 } else { e + 1074 };
                let top = self.sig[L - 1];
                let below = self.sig[..L - 1].iter().any(|&l| l != 0);
                if p <= 0 {
                    // |x| < 2^-1074: 2^-1074 if above half of it, else zero.
                    let above_half = p == 0 && (top != 1 << 63 || below);
                    return signed(if above_half { f64::from_bits(1) } else { 0.0 });
                }
                let lsb = 64 - p as u32;
                let round_bit = top >> (lsb - 1) & 1 == 1;
                let sticky = below || top & ((1u64 << (lsb - 1)) - 1) != 0;
                let mut m = top >> lsb;
                if round_bit && (sticky || m & 1 == 1) {
                    m += 1;
                }
                signed(crate::precision::ldexp(m as f64, (e - p) as i32))
            }
        }
    }

    /// `hi` the nearest double, `lo` the nearest double to the exact remainder `self - hi`
    /// (which the precision holds exactly): a normalised double-double. `lo` is 0 where `hi`
    /// is not finite.
    pub fn to_dd(&self) -> Dd {
        let hi = self.to_f64();
        if !hi.is_finite() {
            return Dd { hi, lo: 0.0 };
        }
        let rest = self.sub(Self::from_f64_bits(hi, self.bits()));
        Dd {
            hi,
            lo: rest.to_f64(),
        }
    }
}
