//! Double-double ("quad", ~106 bits) arithmetic: a value is the unevaluated sum `hi + lo` with
//! `|lo| <= ulp(hi)/2` (equivalently `hi == fl(hi + lo)`).
//!
//! Algorithms are those of the QD library (Hida, Li, Bailey 2007) as given in the thesis ch. 2
//! (`../shared/seeds/003_51c1448e0c287af5.txt`, Alg. 1-6). Addition is the *accurate* QuadAdd
//! (Alg. 4, QD's `ieee_add`), not QuadAddSloppy: under cancellation the sloppy add loses all of `lo`.
//! `kernels/common/dd.cuh` mirrors every function here operation for operation, so CPU and GPU
//! give the same bits: do not reorder, regroup or fuse any operation below.
//!
//! Error bounds (relative, u = 2^-53, normal range, proofs in Joldes, Muller, Popescu 2017,
//! "Tight and rigorous error bounds for basic building blocks of double-word arithmetic",
//! ACM TOMS 44(2), "JMP"; `tests/dd_exact.rs` checks each against exact rationals):
//!
//! | routine      | algorithm              | bound                         | max seen |
//! |--------------|------------------------|-------------------------------|----------|
//! | `add`/`sub`  | JMP 6 AccurateDWPlusDW | 3u²/(1-4u)                    | 2.50u²   |
//! | `add_f64`    | JMP 4 DWPlusFP         | 2u²                           | 2.00u²   |
//! | `mul_f64`    | JMP 8 DWTimesFP2       | 3u²                           | 2.56u²   |
//! | `mul`        | JMP 10 DWTimesDW1      | 5u² (Muller, Rideau 2022; JMP: 7u²) | 4.50u² |
//! | `div`        | QD `accurate_div`      | 5u² + O(u³), derived at `div` | 2.80u²   |
//! | `sqrt`       | QD `sqrt`              | ~18.4u², derived at `sqrt`    | 7.57u²   |
//! | `add_sloppy` | JMP 5 SloppyDWPlusDW   | none: relative error up to 1  | 1        |
//!
//! "Max seen": over 7 seeds of `tests/dd_exact.rs` (about 10^6 cases each).
//!
//! The bounds assume no overflow and no underflow: every result and intermediate (including the
//! `lo` parts, about 2^-106 below the result) must stay normal, i.e. |results| within about
//! [2^-968, 2^1023]. Non-finite inputs give non-finite outputs (often NaN), with no further promise.
//!
//! Getting the FMA instruction: TwoProd branches on a cached run-time detection ([`fma_available`]).
//! In code compiled for baseline x86-64, `f64::mul_add` is a call into compiler-builtins' `fma`
//! (dispatched through a function pointer), about twice the cost of a DD product. Hot loops should
//! live in a function with `#[target_feature(enable = "fma")]`, called after
//! `is_x86_feature_detected!("fma")`: the routines here (`#[inline(always)]`, `div`/`sqrt` with
//! `#[inline]`, and through the generic [`Precision`] impl) inline into it and `mul_add` becomes a
//! single `vfmsub` (checked with objdump on `benches/dd_ops.rs`).

use super::Precision;
use std::sync::atomic::{AtomicU8, Ordering};

pub use super::dd_fmt::ParseDdError;

/// A double-double number `hi + lo`. `#[repr(C)]` so a slice of them is a `double2` array on the GPU.
///
/// `PartialOrd` is derived, i.e. lexicographic by `(hi, lo)`: for normalised values that is the
/// order of the exact values, since `hi = fl(hi + lo)` and rounding is monotonic.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Dd {
    /// The leading part: the value rounded to double.
    pub hi: f64,
    /// The remainder, `|lo| <= ulp(hi) / 2`.
    pub lo: f64,
}

const FMA_UNKNOWN: u8 = 0;
const FMA_YES: u8 = 1;
const FMA_NO: u8 = 2;
static FMA_STATE: AtomicU8 = AtomicU8::new(FMA_UNKNOWN);

/// Whether TwoProd uses the hardware FMA (detected once at run time) or Dekker's split.
/// Both give bitwise the same result: the product's rounding error is exact either way (see
/// [`two_prod`] for the range where that holds).
#[inline(always)]
pub fn fma_available() -> bool {
    match FMA_STATE.load(Ordering::Relaxed) {
        FMA_YES => true,
        FMA_NO => false,
        _ => detect_fma(),
    }
}

#[cold]
fn detect_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    let has = std::arch::is_x86_feature_detected!("fma");
    #[cfg(target_arch = "aarch64")]
    let has = true; // FMA is part of the AArch64 base ISA
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let has = false;
    FMA_STATE.store(if has { FMA_YES } else { FMA_NO }, Ordering::Relaxed);
    has
}

/// Force Dekker's split (true) or go back to detection (false); lets tests check that both
/// TwoProd paths give the same bits. Not for production use: the flag is process-global.
pub fn set_fma_fallback_for_tests(force_fallback: bool) {
    FMA_STATE.store(
        if force_fallback { FMA_NO } else { FMA_UNKNOWN },
        Ordering::Relaxed,
    );
}

/// TwoSum (Knuth; thesis Alg. 1; QD `two_sum`): `s + e == a + b` exactly, `s = fl(a + b)`.
#[inline(always)]
pub const fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let v = s - a;
    let e = (a - (s - v)) + (b - v);
    (s, e)
}

/// QuickTwoSum / Fast2Sum (Dekker; thesis Alg. 2; QD `quick_two_sum`): `s + e == a + b` exactly,
/// `s = fl(a + b)`. Requires `|a| >= |b|` (or `a == 0`); otherwise `e` may be wrong.
#[inline(always)]
pub const fn quick_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let e = b - (s - a);
    (s, e)
}

/// TwoProdFMA (Karp & Markstein; thesis Alg. 3; QD `two_prod`): `p + e == a * b` exactly,
/// `p = fl(a * b)`.
///
/// Without FMA, Dekker's product (QD's non-FMA `two_prod`) gives the same bits provided that
/// `a * b` is finite and at least about 2^-968 in magnitude (so its error term is not below the
/// subnormal grid) and `fl(a * b)` is below about 2^1023 (Dekker's partial products can round up
/// over it). Operands of any finite size are fine thanks to QD's rescaling in `split`.
#[inline(always)]
pub fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let e = if fma_available() {
        a.mul_add(b, -p)
    } else {
        dekker_product_error(a, b, p)
    };
    (p, e)
}

/// Dekker's exact product error (Dekker 1971, mul12; QD non-FMA `two_prod`):
/// `a * b - p` from the 26-bit halves of `a` and `b`, every partial product exact.
#[inline(always)]
fn dekker_product_error(a: f64, b: f64, p: f64) -> f64 {
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    ((ah * bh - p) + ah * bl + al * bh) + al * bl
}

/// 2^27 + 1: Veltkamp's splitting constant for 53-bit doubles.
const SPLITTER: f64 = 134_217_729.0;
/// QD's `_QD_SPLIT_THRESH`: above it `SPLITTER * a` would overflow (|a| >= ~2^997), so QD scales.
const SPLIT_THRESH: f64 = f64::from_bits((1023 + 996) << 52); // 2^996
const TWO_M28: f64 = f64::from_bits((1023 - 28) << 52); // 2^-28
const TWO_P28: f64 = f64::from_bits((1023 + 28) << 52); // 2^28

/// Veltkamp split (QD `split`): `hi + lo == a`, each with at most 26 significant bits.
/// The rescaling branch is QD's: without it `a` above 2^996 gives NaN even when `a * b` is
/// representable, and the fallback would then differ from the FMA path.
#[inline(always)]
#[allow(clippy::manual_range_contains)] // QD's two comparisons, kept as written
fn split(a: f64) -> (f64, f64) {
    if a > SPLIT_THRESH || a < -SPLIT_THRESH {
        let a = a * TWO_M28;
        let t = SPLITTER * a;
        let hi = t - (t - a);
        let lo = a - hi;
        (hi * TWO_P28, lo * TWO_P28)
    } else {
        let t = SPLITTER * a;
        let hi = t - (t - a);
        (hi, a - hi)
    }
}

// The named methods are the API that `kernels/common/dd.cuh` mirrors; the `std::ops` impls below
// delegate to them.
#[allow(clippy::should_implement_trait)]
impl Dd {
    /// 0.
    pub const ZERO: Dd = Dd { hi: 0.0, lo: 0.0 };
    /// 1.
    pub const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };

    /// The exact sum `hi + lo`, normalised by TwoSum: takes the two parts in any order and size.
    #[inline(always)]
    pub const fn new(hi: f64, lo: f64) -> Dd {
        let (hi, lo) = two_sum(hi, lo);
        Dd { hi, lo }
    }

    /// The pair as given, not normalised: for values already normalised (constants, GPU readback).
    #[inline(always)]
    pub const fn from_parts(hi: f64, lo: f64) -> Dd {
        Dd { hi, lo }
    }

    /// `x`, exactly.
    #[inline(always)]
    pub const fn from_f64(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }

    /// Restores `|lo| <= ulp(hi)/2` by QuickTwoSum (thesis Alg. 2); the value is unchanged.
    /// Requires `|hi| >= |lo|`, which holds for any pair that is at most one carry away from
    /// normalised (use [`Dd::new`] for arbitrary pairs).
    #[inline(always)]
    pub const fn renormalize(self) -> Dd {
        let (hi, lo) = quick_two_sum(self.hi, self.lo);
        Dd { hi, lo }
    }

    /// Nearest `f64` to the exact value (one rounding of `hi + lo`; equals `hi` when normalised).
    #[inline(always)]
    pub fn to_f64(self) -> f64 {
        self.hi + self.lo
    }

    /// Whether both parts are finite.
    #[inline(always)]
    pub fn is_finite(self) -> bool {
        self.hi.is_finite() && self.lo.is_finite()
    }

    /// `|self|`, exactly.
    #[inline(always)]
    pub fn abs(self) -> Dd {
        if self.hi < 0.0 { self.neg() } else { self }
    }

    /// QuadAdd (Bailey; thesis Alg. 4, QD `ieee_add`; JMP Alg. 6 AccurateDWPlusDW).
    #[inline(always)]
    pub fn add(self, b: Dd) -> Dd {
        let (s1, s2) = two_sum(self.hi, b.hi);
        let (t1, t2) = two_sum(self.lo, b.lo);
        let s2 = s2 + t1;
        let (s1, s2) = quick_two_sum(s1, s2);
        let s2 = s2 + t2;
        let (hi, lo) = quick_two_sum(s1, s2);
        Dd { hi, lo }
    }

    /// QuadAddSloppy (Bailey; thesis Alg. 5, QD `sloppy_add`, QD's default `+`; JMP Alg. 5).
    /// NOT used by the solver: when the `hi` parts cancel, the rounding of `a.lo + b.lo` can make
    /// the relative error as large as 1. Kept for tests and comparisons that show why.
    #[inline(always)]
    pub fn add_sloppy(self, b: Dd) -> Dd {
        let (s, e) = two_sum(self.hi, b.hi);
        let e = e + (self.lo + b.lo);
        let (hi, lo) = quick_two_sum(s, e);
        Dd { hi, lo }
    }

    /// Double-double plus double (QD `operator+(dd_real, double)`; JMP Alg. 4 DWPlusFP).
    #[inline(always)]
    pub fn add_f64(self, b: f64) -> Dd {
        let (s1, s2) = two_sum(self.hi, b);
        let s2 = s2 + self.lo;
        let (hi, lo) = quick_two_sum(s1, s2);
        Dd { hi, lo }
    }

    /// `-self`, exactly.
    #[inline(always)]
    pub fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    /// `self + (-b)` with QuadAdd (negation is exact).
    #[inline(always)]
    pub fn sub(self, b: Dd) -> Dd {
        self.add(b.neg())
    }

    /// QuadMul (Bailey; thesis Alg. 6, QD `operator*`; JMP Alg. 10 DWTimesDW1): `a_lo * b_lo` is
    /// not used, and the cross terms are summed first (QD's grouping).
    #[inline(always)]
    pub fn mul(self, b: Dd) -> Dd {
        let (p1, p2) = two_prod(self.hi, b.hi);
        let p2 = p2 + (self.hi * b.lo + self.lo * b.hi);
        let (hi, lo) = quick_two_sum(p1, p2);
        Dd { hi, lo }
    }

    /// Double-double times double (QD `operator*(dd_real, double)`; JMP Alg. 8 DWTimesFP2).
    #[inline(always)]
    pub fn mul_f64(self, b: f64) -> Dd {
        let (p1, p2) = two_prod(self.hi, b);
        let p2 = p2 + self.lo * b;
        let (hi, lo) = quick_two_sum(p1, p2);
        Dd { hi, lo }
    }

    /// Accurate division (QD `accurate_div`): three quotient digits, each from a residual computed
    /// with `mul_f64` and QuadAdd (QD uses its default sloppy subtraction there; the accurate one is
    /// never worse). The last step adds `q3` with QuadAdd, which for `lo == 0` gives the same value
    /// as QD's `dd_real + double`.
    ///
    /// No published bound. To first order only the first residual `a - q1*b` matters: its
    /// `mul_f64` errs by up to 3u² of `a` (JMP Alg. 8), the next residual and `q3` add O(u³), and
    /// the final DWPlusFP adds 2u², so at most 5u² + O(u³). Random cases reach about 2.8u²
    /// (`tests/dd_exact.rs` asserts 5u² + 64u³). `a / a` is exactly 1. `b == 0` gives a
    /// non-finite result.
    #[inline]
    pub fn div(self, b: Dd) -> Dd {
        let q1 = self.hi / b.hi;
        let r = self.sub(b.mul_f64(q1));
        let q2 = r.hi / b.hi;
        let r = r.sub(b.mul_f64(q2));
        let q3 = r.hi / b.hi;
        let (q1, q2) = quick_two_sum(q1, q2);
        Dd { hi: q1, lo: q2 }.add(Dd::from_f64(q3))
    }

    /// Square root by one Newton step from the double root (Karp & Markstein's trick, QD `sqrt`):
    /// `sqrt(a) ~ a*x + (a - (a*x)^2) * x/2` with `x ~ 1/sqrt(a.hi)`. QD subtracts with its sloppy
    /// add; the accurate one is used here (only the `hi` of the difference is used either way).
    ///
    /// No published bound. With `a*x = sqrt(a)(1+e)`, `x = (1+h)/sqrt(a)` and `d` the relative
    /// rounding of the correction (`diff.hi` for `diff`, and the product: |d| <= 2u), the result
    /// is `sqrt(a)(1 - e²/2 - e(d+h))` to first order. `x`'s two roundings and `a.lo` give
    /// |h| <= 2.5u, and with the rounding of `a.hi*x`, |e| <= 3.5u, and they share terms: the worst
    /// case is about 18.4u². Random cases reach about 7.6u² (`tests/dd_exact.rs` asserts 20u²).
    /// Even perfect squares are not always exact.
    /// `sqrt(0) = 0`, negative or NaN gives NaN, `+inf` gives `+inf`.
    #[inline]
    pub fn sqrt(self) -> Dd {
        if self.hi == 0.0 {
            return Dd::ZERO;
        }
        if self.hi < 0.0 || self.hi.is_nan() {
            return Dd::from_f64(f64::NAN);
        }
        if self.hi.is_infinite() {
            return self;
        }
        let x = 1.0 / self.hi.sqrt();
        let ax = self.hi * x;
        let (sq_hi, sq_lo) = two_prod(ax, ax);
        let diff = self.sub(Dd {
            hi: sq_hi,
            lo: sq_lo,
        });
        let (hi, lo) = two_sum(ax, diff.hi * (x * 0.5));
        Dd { hi, lo }
    }
}

impl From<f64> for Dd {
    #[inline(always)]
    fn from(x: f64) -> Dd {
        Dd::from_f64(x)
    }
}

// Operators delegate to the named methods, so `a + b` is QuadAdd, never the sloppy add.
super::operators_from_methods!(Dd);

impl Precision for Dd {
    type Vector = Vec<Dd>;
    const NAME: &'static str = "dd";
    const KERNEL_SUFFIX: &'static str = "dd";
    const EPSILON: f64 = f64::from_bits((1023 - 106) << 52); // u = 2^-106
    const BYTES: usize = 16;
    super::precision_from_methods!(Dd);

    #[inline(always)]
    fn to_dd(&self) -> Dd {
        *self
    }
    fn write_words(&self, out: &mut Vec<u64>) {
        out.extend([self.hi.to_bits(), self.lo.to_bits()]);
    }
    fn read_words(words: &mut &[u64]) -> Self {
        let w = super::take_words(words, 2);
        Dd {
            hi: f64::from_bits(w[0]),
            lo: f64::from_bits(w[1]),
        }
    }
    #[inline(always)]
    fn from_dd(x: Dd) -> Self {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_are_the_named_methods() {
        let a = Dd::new(1.0, 1e-20);
        let b = Dd::new(-3.0, 2e-17);
        assert_eq!(a + b, a.add(b));
        assert_eq!(a - b, a.sub(b));
        assert_eq!(a * b, a.mul(b));
        assert_eq!(a / b, a.div(b));
        assert_eq!(-a, a.neg());
        assert_eq!(a * 3.0, a.mul_f64(3.0));
        assert_eq!(a + 3.0, a.add_f64(3.0));
        let mut c = a;
        c += b;
        c -= a;
        c *= b;
        c /= a;
        c *= 0.5;
        c += 1.0;
        assert_eq!(c, a.add(b).sub(a).mul(b).div(a).mul_f64(0.5).add_f64(1.0));
        assert_eq!(Dd::from(2.5), Dd::from_f64(2.5));
    }

    #[test]
    fn order_and_normalisation() {
        let one_minus = Dd::new(1.0, -1e-30);
        assert!(one_minus < Dd::ONE && Dd::ONE < Dd::new(1.0, 1e-30));
        assert!(Dd::new(-2.0, 0.0) < one_minus);
        // lo larger than hi: TwoSum still gives the exact, normalised sum
        let x = Dd::new(1e-30, 1.0);
        assert_eq!((x.hi, x.lo), (1.0, 1e-30));
        let y = Dd::from_parts(1.0, 1.0).renormalize();
        assert_eq!((y.hi, y.lo), (2.0, 0.0));
        assert_eq!(Dd::new(1.0, 2f64.powi(-60)).to_f64(), 1.0);
        assert_eq!(Dd::from_f64(4.0).sqrt(), Dd::from_f64(2.0));
        assert!(Dd::from_f64(-1.0).sqrt().hi.is_nan());
        assert_eq!(<Dd as Precision>::EPSILON, 2f64.powi(-106));
    }

    #[test]
    fn split_constants_are_the_powers_of_two_they_claim() {
        assert_eq!(SPLIT_THRESH, 2f64.powi(996));
        assert_eq!(TWO_M28 * TWO_P28, 1.0);
        assert_eq!(TWO_P28, 268_435_456.0);
    }

    #[test]
    fn split_is_exact_and_halves_fit_in_26_bits() {
        for a in [1.0 + f64::EPSILON, -3.0e-300, 2f64.powi(996), 1.7e308, -0.1] {
            let (h, l) = split(a);
            assert_eq!(h + l, a);
            for part in [h, l] {
                let m = (part.to_bits() & ((1 << 52) - 1)) | (1 << 52);
                assert!(
                    part == 0.0 || m.trailing_zeros() >= 53 - 26,
                    "{a:e}: {part:e}"
                );
            }
        }
    }
}
