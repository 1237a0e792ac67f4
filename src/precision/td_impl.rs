//! `td` as a working precision: [`Td`], a value stored in the thesis's D+I format (a double and
//! the upper 32 bits of a second double's encoding, 12 bytes; see [`super::td`]) and computed in
//! double-double: D+I is the storage format, DD the arithmetic (thesis section 2.3: "values kept
//! as D+I and computed in DD after loading").
//!
//! # Semantics (the definition the CPU and GPU backends both implement)
//!
//! Every `Td` value is a D+I value: `unpack(pack(x)) == x`. There are two kinds of arithmetic.
//!
//! **Vector kernels** compute in [`Precision::Acc`] = [`Dd`]: they widen what they load (vector
//! elements and scalars, exactly), do every product and sum of an output element in DD, and
//! round once, with [`td::pack`](super::td::pack) (round to nearest, ties to even on the 21-bit
//! `lo`, Listing 2.1), when the element is stored:
//!
//! | kernel                  | computed as (`w` = widen, `r` = round to D+I)                |
//! |-------------------------|--------------------------------------------------------------|
//! | `axpy`, `axpyz`         | `r(w(alpha) * w(x_i) + w(y_i))`                              |
//! | `xpay`                  | `r(w(x_i) + w(beta) * w(y_i))`                               |
//! | `bicgstab_direction`    | `r(w(r_i) + w(beta) * (-w(omega) * w(v_i) + w(p_i)))` (fused: one rounding) |
//! | `spmv`, `residual`      | the row's lane sums (`s + a_k w(x_j)`), tree and `b_i - s` in DD; `r` per row |
//! | `dot`                   | lanes, tree and per-chunk partials in DD (the GPU keeps its partials in a DD buffer); `r` of the sum |
//! | `axpy_norm`, `axpyz_norm`, `x_update`, `cg_step`, ... | the bits of the unfused kernels above (each intermediate vector rounded as if stored) |
//! | `convert`               | unchanged: `Q::from_dd(P::to_dd(x))`                         |
//! | ILU(0) `apply`          | unchanged: the solves in f64, each result stored with `from_f64` (exact) |
//!
//! **Scalars** the solver loops keep (alpha, rho, omega, `<p, q>`, ...) are `Td` values, like
//! stored vector elements, and their arithmetic is the [`Precision`] operations of `Td` itself:
//!
//! | operation             | computed as                                         |
//! |-----------------------|-----------------------------------------------------|
//! | `add`, `sub`, `mul`, `div`, `sqrt` | `round(Dd::op(a, b))`                  |
//! | `mul_f64(a)`          | `round(Dd::mul_f64(self, a))`                       |
//! | `add_mul_f64(a, x)`   | `round(Dd::add(self, Dd::mul_f64(x, a)))`           |
//! | `neg`                 | exact (negation commutes with the rounding)         |
//! | `from_f64`            | exact (`lo = 0`)                                    |
//! | `to_f64`              | `Dd::to_f64` (`hi + lo` rounded)                    |
//! | `to_dd` / `from_dd`   | `unpack` (exact) / `pack`                           |
//! | `to_acc` / `from_acc` | `unpack` (exact) / `pack`                           |
//!
//! Up to commit 9797bec the kernels used these operations too, so a td solve rounded to
//! D+I inside kernels (each step of a dot product's sum, the product inside `alpha * x + y`);
//! computing in DD and rounding on store is both more accurate (CG on graded_spd_400 at 1e-12:
//! 3029 iterations instead of 3101) and cheaper. `kernels/xprec.cu` (its `a_*` routines and
//! `O::round`) and `kernels/common/td.cuh` implement the same on the GPU, bit for bit.
//!
//! # Layout
//!
//! A `Td` scalar is a plain struct (`hi` and the `i32` of `lo`). Vectors are the thesis's
//! structure of arrays on both backends: on the CPU [`TdVector`](super::TdVector) (`n` doubles
//! and `n` `i32`), on the GPU one allocation of `n` doubles then `n` `i32`. The layout changes no
//! bit of any result. `PartialEq` compares the widened values (so `lo = -0.0` equals `lo = +0.0`,
//! as for [`Dd`]).

use super::td::{BYTES, UNIT_ROUNDOFF, pack, unpack};
use super::{Dd, Precision};

/// A triple-precision (D+I) number: `hi` and the upper 32 bits of `lo`'s IEEE encoding.
#[derive(Clone, Copy)]
pub struct Td {
    hi: f64,
    lo_bits: i32,
}

impl Td {
    /// 0.
    pub const ZERO: Td = Td {
        hi: 0.0,
        lo_bits: 0,
    };

    /// The D+I rounding of `x` (`td::pack`).
    #[inline(always)]
    pub fn from_dd(x: Dd) -> Td {
        let (hi, lo_bits) = pack(x);
        Td { hi, lo_bits }
    }

    /// The value as a double-double (exact).
    #[inline(always)]
    pub fn to_dd(self) -> Dd {
        unpack(self.hi, self.lo_bits)
    }

    /// The stored parts: `hi` and the `i32` of `lo` (what a GPU vector holds).
    #[inline(always)]
    pub fn parts(self) -> (f64, i32) {
        (self.hi, self.lo_bits)
    }

    /// From stored parts (exact; they should come from [`Td::parts`] or a GPU vector).
    #[inline(always)]
    pub fn from_parts(hi: f64, lo_bits: i32) -> Td {
        Td { hi, lo_bits }
    }
}

impl std::fmt::Debug for Td {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (hi, lo) = (self.hi, self.lo_bits);
        write!(f, "Td({hi:e}, {lo:#010x} = {:e})", self.to_dd().lo)
    }
}

impl PartialEq for Td {
    fn eq(&self, other: &Td) -> bool {
        self.to_dd() == other.to_dd()
    }
}

impl Default for Td {
    fn default() -> Td {
        Td::ZERO
    }
}

#[inline(always)]
fn round(x: Dd) -> Td {
    Td::from_dd(x)
}

impl Precision for Td {
    type Vector = super::TdVector;
    const NAME: &'static str = "td";
    const KERNEL_SUFFIX: &'static str = "td";
    /// 2^-75, the rounding bound of D+I (see the `td` module).
    const EPSILON: f64 = UNIT_ROUNDOFF;
    const BYTES: usize = BYTES;
    /// Double-double: D+I is the storage format, kernels compute in DD and round on store.
    type Acc = Dd;
    /// As its double-double value (exact both ways: every D+I value is one).
    fn write_words(&self, out: &mut Vec<u64>) {
        Td::to_dd(*self).write_words(out);
    }
    fn read_words(words: &mut &[u64]) -> Self {
        Td::from_dd(Dd::read_words(words))
    }
    #[inline(always)]
    fn to_acc(&self) -> std::borrow::Cow<'_, Dd> {
        std::borrow::Cow::Owned(Td::to_dd(*self))
    }
    #[inline(always)]
    fn from_acc(a: Dd) -> Self {
        Td::from_dd(a)
    }

    #[inline(always)]
    fn zero() -> Self {
        Td::ZERO
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        Td { hi: x, lo_bits: 0 }
    }
    #[inline(always)]
    fn to_f64(&self) -> f64 {
        self.to_dd().to_f64()
    }
    #[inline(always)]
    fn to_dd(&self) -> Dd {
        Td::to_dd(*self)
    }
    #[inline(always)]
    fn from_dd(x: Dd) -> Self {
        Td::from_dd(x)
    }
    #[inline(always)]
    fn add(&self, b: &Self) -> Self {
        round(self.to_dd().add(b.to_dd()))
    }
    #[inline(always)]
    fn sub(&self, b: &Self) -> Self {
        round(self.to_dd().sub(b.to_dd()))
    }
    #[inline(always)]
    fn mul(&self, b: &Self) -> Self {
        round(self.to_dd().mul(b.to_dd()))
    }
    #[inline(always)]
    fn div(&self, b: &Self) -> Self {
        round(self.to_dd().div(b.to_dd()))
    }
    #[inline(always)]
    fn neg(&self) -> Self {
        round(self.to_dd().neg())
    }
    #[inline(always)]
    fn sqrt(&self) -> Self {
        round(self.to_dd().sqrt())
    }
    #[inline(always)]
    fn abs(&self) -> Self {
        if self.to_dd().hi < 0.0 {
            Precision::neg(self)
        } else {
            *self
        }
    }
    #[inline(always)]
    fn mul_f64(&self, b: f64) -> Self {
        round(self.to_dd().mul_f64(b))
    }
    #[inline(always)]
    fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
        round(self.to_dd().add(b.to_dd().mul_f64(a)))
    }
    #[inline(always)]
    fn is_finite(&self) -> bool {
        self.to_dd().is_finite()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_constants() {
        assert_eq!(<Td as Precision>::BYTES, 12);
        assert_eq!(<Td as Precision>::EPSILON, 2f64.powi(-75));
    }

    #[test]
    fn every_result_is_a_d_plus_i_value() {
        let third = Td::one().div(&Td::from_f64(3.0));
        let d = third.to_dd();
        assert_eq!(d.lo.to_bits() & 0xffff_ffff, 0);
        assert_eq!(super::super::td::round(d), d);
        // 75-bit accurate: |1/3 - third| <= 2^-75 / 3 (about)
        let err = Dd::ONE.div(Dd::from_f64(3.0)).sub(d);
        assert!(err.hi.abs() <= 2f64.powi(-76), "{err:?}");
        let neg = Precision::neg(&third);
        assert_eq!(neg.to_dd(), d.neg());
        assert_eq!(Td::from_f64(2.5).to_f64(), 2.5);
        assert_eq!(Td::from_parts(0.0, i32::MIN), Td::ZERO);
        let s = Td::from_f64(2.0).sqrt().mul(&Td::from_f64(2.0).sqrt());
        assert!((s.to_f64() - 2.0).abs() <= 1e-15);
    }
}
