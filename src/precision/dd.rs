//! Double-double ("quad", ~106 bits) arithmetic: a value is the unevaluated sum `hi + lo` with
//! `|lo| <= ulp(hi)/2`.
//!
//! Algorithms are those of the QD library (Hida, Li, Bailey) as given in the thesis ch. 2
//! (`../shared/seeds/003_51c1448e0c287af5.txt`, Alg. 1-6). Addition is the *accurate* QuadAdd
//! (Alg. 4, QD's `ieee_add`), not QuadAddSloppy: under cancellation the sloppy add loses all of `lo`.
//! `kernels/common/dd.cuh` mirrors every function here operation for operation, so CPU and GPU
//! give the same bits.

use super::Precision;
use std::sync::atomic::{AtomicU8, Ordering};

/// A double-double number `hi + lo`. `#[repr(C)]` so a slice of them is a `double2` array on the GPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Dd {
    pub hi: f64,
    pub lo: f64,
}

const FMA_UNKNOWN: u8 = 0;
const FMA_YES: u8 = 1;
const FMA_NO: u8 = 2;
static FMA_STATE: AtomicU8 = AtomicU8::new(FMA_UNKNOWN);

/// Whether TwoProd uses the hardware FMA (detected once at run time) or Dekker's split.
/// Both give bitwise the same result: the product's rounding error is exact either way.
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
/// TwoProd paths give the same bits. Not for production use.
pub fn set_fma_fallback_for_tests(force_fallback: bool) {
    FMA_STATE.store(
        if force_fallback { FMA_NO } else { FMA_UNKNOWN },
        Ordering::Relaxed,
    );
}

/// TwoSum (Knuth; thesis Alg. 1): `s + e == a + b` exactly.
#[inline(always)]
pub fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let v = s - a;
    let e = (a - (s - v)) + (b - v);
    (s, e)
}

/// QuickTwoSum (Dekker; thesis Alg. 2): `s + e == a + b` exactly, requires `|a| >= |b|`.
#[inline(always)]
pub fn quick_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let e = b - (s - a);
    (s, e)
}

/// TwoProdFMA (Karp & Markstein; thesis Alg. 3): `p + e == a * b` exactly (barring overflow).
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

/// Veltkamp split + Dekker's exact product error, for CPUs without FMA.
#[inline(always)]
fn dekker_product_error(a: f64, b: f64, p: f64) -> f64 {
    const SPLITTER: f64 = 134_217_729.0; // 2^27 + 1
    let split = |x: f64| {
        let t = SPLITTER * x;
        let hi = t - (t - x);
        (hi, x - hi)
    };
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    ((ah * bh - p) + ah * bl + al * bh) + al * bl
}

impl Dd {
    pub const ZERO: Dd = Dd { hi: 0.0, lo: 0.0 };
    pub const ONE: Dd = Dd { hi: 1.0, lo: 0.0 };

    #[inline(always)]
    pub const fn new(hi: f64, lo: f64) -> Dd {
        Dd { hi, lo }
    }

    #[inline(always)]
    pub const fn from_f64(x: f64) -> Dd {
        Dd { hi: x, lo: 0.0 }
    }

    /// QuadAdd (Bailey; thesis Alg. 4, QD `ieee_add`).
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

    #[inline(always)]
    pub fn neg(self) -> Dd {
        Dd {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    #[inline(always)]
    pub fn sub(self, b: Dd) -> Dd {
        self.add(b.neg())
    }

    /// QuadMul (Bailey; thesis Alg. 6, QD `operator*`): `a_lo * b_lo` is not used.
    #[inline(always)]
    pub fn mul(self, b: Dd) -> Dd {
        let (p1, p2) = two_prod(self.hi, b.hi);
        let p2 = p2 + (self.hi * b.lo + self.lo * b.hi);
        let (hi, lo) = quick_two_sum(p1, p2);
        Dd { hi, lo }
    }

    /// Double-double times double (QD `operator*(dd_real, double)`).
    #[inline(always)]
    pub fn mul_f64(self, b: f64) -> Dd {
        let (p1, p2) = two_prod(self.hi, b);
        let p2 = p2 + self.lo * b;
        let (hi, lo) = quick_two_sum(p1, p2);
        Dd { hi, lo }
    }

    /// Accurate division (QD `accurate_div`): three quotient digits, each corrected by a residual.
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

    /// Square root by one Newton step from the double root (Karp's trick, QD `sqrt`).
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

impl Precision for Dd {
    const NAME: &'static str = "dd";
    const KERNEL_SUFFIX: &'static str = "dd";
    const EPSILON: f64 = 1.232_595_164_407_830_9e-32; // 2^-106
    const BYTES: usize = 16;

    #[inline(always)]
    fn zero() -> Self {
        Dd::ZERO
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Dd::from_f64(x)
    }
    #[inline(always)]
    fn to_f64(&self) -> f64 {
        self.hi + self.lo
    }
    #[inline(always)]
    fn to_dd(&self) -> Dd {
        *self
    }
    #[inline(always)]
    fn from_dd(x: Dd) -> Self {
        x
    }
    #[inline(always)]
    fn add(&self, b: &Self) -> Self {
        Dd::add(*self, *b)
    }
    #[inline(always)]
    fn sub(&self, b: &Self) -> Self {
        Dd::sub(*self, *b)
    }
    #[inline(always)]
    fn mul(&self, b: &Self) -> Self {
        Dd::mul(*self, *b)
    }
    #[inline(always)]
    fn div(&self, b: &Self) -> Self {
        Dd::div(*self, *b)
    }
    #[inline(always)]
    fn neg(&self) -> Self {
        Dd::neg(*self)
    }
    #[inline(always)]
    fn sqrt(&self) -> Self {
        Dd::sqrt(*self)
    }
    #[inline(always)]
    fn abs(&self) -> Self {
        if self.hi < 0.0 { self.neg() } else { *self }
    }
    #[inline(always)]
    fn mul_f64(&self, b: f64) -> Self {
        Dd::mul_f64(*self, b)
    }
    #[inline(always)]
    fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
        Dd::add(*self, Dd::mul_f64(*b, a))
    }
    #[inline(always)]
    fn is_finite(&self) -> bool {
        self.hi.is_finite() && self.lo.is_finite()
    }
}
