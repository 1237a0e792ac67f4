//! Values that every working precision reads exactly, as far as it can hold them: an initial
//! guess read from a file written in td, dd, qd or mp arrives in each solve's precision without
//! passing through a double.
//!
//! # Nearest-first expansions
//!
//! A real `v` is carried as its *nearest-first expansion* in four doubles: `w0` = the double
//! nearest `v`, `w1` = the double nearest `v - w0`, `w2` = the double nearest `v - w0 - w1`,
//! `w3` likewise (round to nearest, ties to even, subnormals included; once a remainder is 0 the
//! further words are `+0.0`; the sign of a zero `v` is `w0`'s). Taking a prefix of that
//! expansion *is* the same greedy rounding to fewer words, so each precision's value is a prefix:
//!
//! | precision | value of `v`                                                                 |
//! |-----------|------------------------------------------------------------------------------|
//! | `f64`     | `w0`: the nearest double                                                     |
//! | `dd`      | `(w0, w1)`: canonical (`w0 = fl(w0 + w1)`), as every `Dd` operation returns  |
//! | `qd`      | `(w0, w1, w2, w3)`                                                           |
//! | `td`      | `hi = w0`; `lo` = `v - w0` rounded to nearest (ties to even) on D+I's grid of `lo` (21 significant bits, no finer than 2^-1042), then renormalised as [`td::pack`](super::td::pack) does |
//! | `mp:<bits>` | the decimal text where one is kept, rounded once by MPFR; else `w0 + w1 + w2 + w3` (exact) rounded once to `bits` |
//!
//! The td row needs only `w1` and the sign of `w2`: `v - w0 = w1 + t` with `|t| <= ulp(w1)/2`
//! (`t = w2 + w3 + ...` has the sign of `w2`, or is 0). The grid of D+I's `lo` is coarser than
//! `w1`'s own 53-bit grid, and its midpoints lie on the 53-bit grid of `w1`'s binade too, so
//! adding `t` moves `w1` across no midpoint: it only decides a tie, when `w1` sits exactly on
//! one (upward in magnitude if `t` has `w1`'s sign, downward if the other, to even if `t = 0`).
//!
//! Values written by `solver --write-x` in a precision come back bit for bit in that precision
//! (`precision::exact_decimal`), with two exceptions that a decimal number cannot carry: the
//! sign of a zero lower word (`lo = -0.0` reads back `+0.0`), and a quad-double whose words are
//! not its own nearest-first expansion (QD's renormalisation leaves a word slightly over half
//! an ulp of the one before now and then): it reads back as the canonical quad-double of its
//! value (the same value whenever four canonical words can hold it).

use super::{Dd, Precision, Qd, Td};
use rayon::prelude::*;
use std::any::{Any, TypeId};

/// A vector of values for any working precision (an initial guess): either doubles, which every
/// precision holds exactly, or nearest-first expansions of values beyond a double (see the
/// module docs), with their decimal text where `mp:<bits>` should round it itself.
#[derive(Clone, Debug, PartialEq)]
pub struct ExactValues {
    repr: Repr,
    /// Each entry's decimal text, for `mp:<bits>` (rounded once, at any precision).
    decimals: Option<Vec<Box<str>>>,
}

#[derive(Clone, Debug, PartialEq)]
enum Repr {
    F64(Vec<f64>),
    Expansions(Vec<[f64; 4]>),
}

impl ExactValues {
    /// Doubles, held exactly by every precision.
    pub fn from_f64(values: Vec<f64>) -> ExactValues {
        ExactValues {
            repr: Repr::F64(values),
            decimals: None,
        }
    }

    /// Nearest-first expansions (see the module docs; `precision::exact_decimal` computes them
    /// from decimal text). Words that are not one give each precision a prefix of them as
    /// they are, i.e. a value that may not be the nearest.
    pub fn from_expansions(words: Vec<[f64; 4]>) -> ExactValues {
        ExactValues {
            repr: Repr::Expansions(words),
            decimals: None,
        }
    }

    /// Keeps each entry's decimal text for `mp:<bits>`, which is then rounded once at the
    /// solve's precision (the four words hold about 212 bits; a decimal may hold more). The
    /// texts must be the values the expansions came from; `None` if their count differs.
    pub fn with_decimals(mut self, decimals: Vec<Box<str>>) -> Option<ExactValues> {
        if decimals.len() != self.len() {
            return None;
        }
        self.decimals = Some(decimals);
        Some(self)
    }

    /// Entries.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::F64(v) => v.len(),
            Repr::Expansions(w) => w.len(),
        }
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first entry (0-based) with a word that is not finite.
    pub fn first_non_finite(&self) -> Option<usize> {
        match &self.repr {
            Repr::F64(v) => v.iter().position(|x| !x.is_finite()),
            Repr::Expansions(w) => w.iter().position(|e| e.iter().any(|x| !x.is_finite())),
        }
    }

    /// Each entry rounded to the nearest double.
    pub fn to_f64(&self) -> Vec<f64> {
        self.values::<f64>()
    }

    /// Each entry in precision `P` (see the module docs for how each rounds). For
    /// `mp:<bits>` this must run inside the solve's `MpScope`.
    pub fn values<P: Precision>(&self) -> Vec<P> {
        let words = match &self.repr {
            Repr::F64(v) => {
                let bits = super::mp::current_bits();
                return v
                    .par_iter()
                    .map(|&x| super::mp::carried(bits, || P::from_f64(x)))
                    .collect();
            }
            Repr::Expansions(w) => w,
        };
        /// `Vec<T>` as `Vec<P>` when they are the same type.
        fn cast<T: 'static, P: 'static>(v: Vec<T>) -> Vec<P> {
            *(Box::new(v) as Box<dyn Any>)
                .downcast::<Vec<P>>()
                .expect("checked TypeId")
        }
        let is = |id: TypeId| TypeId::of::<P>() == id;
        if is(TypeId::of::<f64>()) {
            return cast(words.iter().map(|w| w[0]).collect::<Vec<f64>>());
        }
        if is(TypeId::of::<Dd>()) {
            return cast(words.iter().map(|w| dd_of(*w)).collect::<Vec<Dd>>());
        }
        if is(TypeId::of::<Qd>()) {
            return cast(words.iter().map(|w| qd_of(*w)).collect::<Vec<Qd>>());
        }
        if is(TypeId::of::<Td>()) {
            return cast(words.iter().map(|w| td_of(*w)).collect::<Vec<Td>>());
        }
        macro_rules! own_mp {
            ($($l:literal),*) => {$(
                if is(TypeId::of::<super::MpFloat<$l>>()) {
                    let texts = self.decimals.as_deref();
                    return cast(mp::own_values::<$l>(words, texts));
                }
            )*};
        }
        own_mp!(2, 4, 8, 16, 32);
        #[cfg(feature = "mpfr")]
        if is(TypeId::of::<super::Mpfr>()) {
            return cast(mpfr::values(words, self.decimals.as_deref()));
        }
        // A precision added without a row here: through its own rounding of the leading DD.
        let bits = super::mp::current_bits();
        words
            .par_iter()
            .map(|w| super::mp::carried(bits, || P::from_dd(dd_of(*w))))
            .collect()
    }
}

/// `dd` of a nearest-first expansion: its first two words.
pub fn dd_of(w: [f64; 4]) -> Dd {
    Dd::from_parts(w[0], w[1])
}

/// `qd` of a nearest-first expansion: its four words.
pub fn qd_of(w: [f64; 4]) -> Qd {
    Qd::from_parts(w[0], w[1], w[2], w[3])
}

/// `td` of a nearest-first expansion: `hi = w0` and `lo = w1 + w2 + ...` rounded to nearest on
/// D+I's grid of `lo`, the tail `w2` breaking a tie (see the module docs); then renormalised by
/// [`Td::from_dd`] ([`td::pack`](super::td::pack), which leaves the already rounded `lo` as it
/// is). A `lo` that is zero gives [`Td`]'s own widening of `w0` (`lo = +0`, a zero `w0`'s sign
/// kept).
pub fn td_of(w: [f64; 4]) -> Td {
    let lo = if w[1] == 0.0 {
        0.0
    } else {
        round_td_lo(w[1], w[2])
    };
    if lo == 0.0 {
        // Nothing (or a tail below D+I's grid) past `w0`: `lo = +0`, like `Td::from_f64`.
        return Td::from_f64(w[0]);
    }
    Td::from_dd(Dd::from_parts(w[0], lo))
}

/// `lo + t` rounded to nearest, ties to even, on D+I's grid (the upper 32 bits of the
/// encoding: 21 significant bits, 2^-1042 for subnormals), where `t` is below half an ulp of
/// `lo`'s own 53 bits and only its sign matters (it decides an exact tie of `lo`).
fn round_td_lo(lo: f64, t: f64) -> f64 {
    let bits = lo.to_bits();
    let upper = bits >> 32;
    let lower = bits as u32; // the 32 bits D+I drops
    const BORDER: u32 = 0x8000_0000;
    let up = match lower.cmp(&BORDER) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        // A tie on `lo` alone: the tail decides, or to even without one.
        std::cmp::Ordering::Equal if t == 0.0 => upper & 1 == 1,
        std::cmp::Ordering::Equal => t.is_sign_negative() == lo.is_sign_negative(),
    };
    // The magnitude's encoding is monotonic: a carry out of the fraction bumps the exponent.
    f64::from_bits((upper + u64::from(up)) << 32)
}

mod mp {
    use crate::precision::mp::bits_for_new_value;
    use crate::precision::MpFloat;
    use rayon::prelude::*;

    /// Entries at the live scope's precision: the decimal text rounded once (feature `cli`,
    /// where texts are kept), or the words' exact sum rounded once.
    pub(super) fn own_values<const L: usize>(
        words: &[[f64; 4]],
        decimals: Option<&[Box<str>]>,
    ) -> Vec<MpFloat<L>> {
        let bits = bits_for_new_value();
        let from_words = |w: &[f64; 4]| MpFloat::from_f64_sum(w, bits);
        #[cfg(feature = "cli")]
        if let Some(texts) = decimals {
            use crate::precision::exact_decimal::read_mpfloat;
            return words
                .par_iter()
                .zip(texts.par_iter())
                .map(|(w, text)| read_mpfloat(text, bits).unwrap_or_else(|_| from_words(w)))
                .collect();
        }
        let _ = decimals;
        words.par_iter().map(from_words).collect()
    }
}

#[cfg(feature = "mpfr")]
mod mpfr {
    use crate::precision::{Mpfr, Precision};
    use rayon::prelude::*;
    use rug::Float;

    /// Bits that hold any sum of four doubles exactly: from 2^1024 down to 2^-1074.
    const EXACT_BITS: u32 = 2200;

    /// Entries at the live scope's precision: the decimal text rounded once by MPFR, or the
    /// words' exact sum rounded once.
    pub(super) fn values(words: &[[f64; 4]], decimals: Option<&[Box<str>]>) -> Vec<Mpfr> {
        let bits = <Mpfr as Precision>::zero().prec();
        let from_words = |w: &[f64; 4]| {
            let mut sum = Float::with_val(EXACT_BITS, w[0]);
            for &x in &w[1..] {
                sum += x;
            }
            Mpfr(Float::with_val(bits, &sum))
        };
        match decimals {
            Some(texts) => words
                .par_iter()
                .zip(texts.par_iter())
                .map(|(w, text)| match Float::parse(text.as_bytes()) {
                    Ok(parsed) => Mpfr(Float::with_val(bits, parsed)),
                    Err(_) => from_words(w),
                })
                .collect(),
            None => words.par_iter().map(from_words).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn td_lo_ties_follow_the_tail() {
        // lo = 2^-60 (1 + 2^-21): exactly a tie of D+I's grid, kept part even.
        let lo = 2f64.powi(-60) * (1.0 + 2f64.powi(-21));
        let t = 2f64.powi(-140);
        assert_eq!(round_td_lo(lo, 0.0), 2f64.powi(-60));
        assert_eq!(round_td_lo(lo, t), 2f64.powi(-60) * (1.0 + 2f64.powi(-20)));
        assert_eq!(round_td_lo(lo, -t), 2f64.powi(-60));
        assert_eq!(round_td_lo(-lo, t), -2f64.powi(-60));
        assert_eq!(
            round_td_lo(-lo, -t),
            -2f64.powi(-60) * (1.0 + 2f64.powi(-20))
        );
    }

    #[test]
    fn doubles_reach_every_precision_unchanged() {
        let x = ExactValues::from_f64(vec![0.1, -0.0, 3.0]);
        assert_eq!(x.values::<Dd>()[0], Dd::from_f64(0.1));
        assert!(x.values::<f64>()[1].is_sign_negative());
        let e = ExactValues::from_expansions(vec![[0.1, 0.0, 0.0, 0.0], [-0.0, 0.0, 0.0, 0.0]]);
        assert_eq!(e.values::<f64>()[0], 0.1);
        assert!(e.values::<f64>()[1].is_sign_negative());
        assert_eq!(e.values::<Td>()[0].parts(), Td::from_f64(0.1).parts());
    }
}
