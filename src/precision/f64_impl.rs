//! `f64` as a working precision: plain IEEE double, the baseline every report compares against.

use super::{Dd, Precision};

impl Precision for f64 {
    type Vector = Vec<f64>;
    const NAME: &'static str = "f64";
    const KERNEL_SUFFIX: &'static str = "f64";
    const EPSILON: f64 = f64::EPSILON / 2.0;
    const BYTES: usize = 8;
    super::acc_is_self!();

    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
    fn write_words(&self, out: &mut Vec<u64>) {
        out.push(self.to_bits());
    }
    fn read_words(words: &mut &[u64]) -> Self {
        f64::from_bits(super::take_words(words, 1)[0])
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn to_f64(&self) -> f64 {
        *self
    }
    #[inline(always)]
    fn to_dd(&self) -> Dd {
        Dd::from_f64(*self)
    }
    #[inline(always)]
    fn from_dd(x: Dd) -> Self {
        x.hi
    }
    #[inline(always)]
    fn add(&self, b: &Self) -> Self {
        self + b
    }
    #[inline(always)]
    fn sub(&self, b: &Self) -> Self {
        self - b
    }
    #[inline(always)]
    fn mul(&self, b: &Self) -> Self {
        self * b
    }
    #[inline(always)]
    fn div(&self, b: &Self) -> Self {
        self / b
    }
    #[inline(always)]
    fn neg(&self) -> Self {
        -self
    }
    #[inline(always)]
    fn sqrt(&self) -> Self {
        f64::sqrt(*self)
    }
    #[inline(always)]
    fn abs(&self) -> Self {
        f64::abs(*self)
    }
    #[inline(always)]
    fn mul_f64(&self, b: f64) -> Self {
        self * b
    }
    /// Deliberately not fused: `a * b` is rounded, then added, so the double path is the plain
    /// double path every other library runs (and the GPU twin matches it with `__dmul_rn`/`__dadd_rn`).
    #[inline(always)]
    fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
        self + a * b
    }
    #[inline(always)]
    fn is_finite(&self) -> bool {
        f64::is_finite(*self)
    }
}
