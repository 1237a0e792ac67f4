//! Working precisions of the solver: the arithmetic a Krylov loop needs, as a trait.
//!
//! The matrix and right-hand side are always `f64` (the input precision); vectors and every scalar
//! of the recurrences are in `P: Precision`. The trait does not require `Copy`, so an arbitrary
//! precision type (MPFR through rug) can implement it later; hot loops take arguments by reference.

mod dd;
mod dd_fmt;
#[cfg(feature = "cli")]
pub mod exact_decimal;
pub mod exact_values;
mod f64_impl;
pub mod host_vector;
pub mod mp;
pub mod mpfloat;
#[cfg(feature = "mpfr")]
mod mpfr;
mod qd;
pub mod td;
mod td_impl;

pub use dd::{
    Dd, ParseDdError, fma_available, quick_two_sum, set_fma_fallback_for_tests, two_prod, two_sum,
};
pub use mpfloat::MpFloat;
#[cfg(feature = "mpfr")]
pub use mpfr::Mpfr;
pub use qd::Qd;
pub use td_impl::Td;

pub use host_vector::{HostSlice, HostSliceMut, HostVector, TdSlice, TdSliceMut, TdVector};

/// A host (CPU backend) vector of `P`.
pub type VectorOf<P> = <P as Precision>::Vector;
/// A read view of (part of) a host vector of `P`.
pub type SliceOf<'a, P> = <<P as Precision>::Vector as HostVector<P>>::Slice<'a>;
/// A write view of (part of) a host vector of `P`.
pub type SliceMutOf<'a, P> = <<P as Precision>::Vector as HostVector<P>>::SliceMut<'a>;

use std::borrow::Cow;
use std::fmt::Debug;

/// Keeps [`Precision`] to the types whose kernels exist.
mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for super::Dd {}
    impl Sealed for super::Qd {}
    impl Sealed for super::Td {}
    impl<const L: usize> Sealed for super::MpFloat<L> {}
    #[cfg(feature = "mpfr")]
    impl Sealed for super::Mpfr {}
}

/// `+ - * /` (and their `op=`) with the same type, `+` and `*` with an `f64`, and unary `-`, each
/// delegating to the type's inherent method of that name (`add`, `sub`, `mul`, `div`, `add_f64`,
/// `mul_f64`, `neg`), for a `Copy` multi-word type.
macro_rules! operators_from_methods {
    ($t:ident) => {
        $crate::precision::operators_from_methods!(@bin $t, Add, add, AddAssign, add_assign, $t, add);
        $crate::precision::operators_from_methods!(@bin $t, Sub, sub, SubAssign, sub_assign, $t, sub);
        $crate::precision::operators_from_methods!(@bin $t, Mul, mul, MulAssign, mul_assign, $t, mul);
        $crate::precision::operators_from_methods!(@bin $t, Div, div, DivAssign, div_assign, $t, div);
        $crate::precision::operators_from_methods!(@bin $t, Add, add, AddAssign, add_assign, f64, add_f64);
        $crate::precision::operators_from_methods!(@bin $t, Mul, mul, MulAssign, mul_assign, f64, mul_f64);
        impl std::ops::Neg for $t {
            type Output = $t;
            #[inline(always)]
            fn neg(self) -> $t {
                $t::neg(self)
            }
        }
    };
    (@bin $t:ident, $tr:ident, $f:ident, $atr:ident, $af:ident, $rhs:ty, $m:ident) => {
        impl std::ops::$tr<$rhs> for $t {
            type Output = $t;
            #[inline(always)]
            fn $f(self, b: $rhs) -> $t {
                $t::$m(self, b)
            }
        }
        impl std::ops::$atr<$rhs> for $t {
            #[inline(always)]
            fn $af(&mut self, b: $rhs) {
                *self = $t::$m(*self, b);
            }
        }
    };
}
pub(crate) use operators_from_methods;

/// Inside `impl Precision for T`: `Acc = Self`, lent and returned as it is (every precision
/// but td, whose kernels compute in DD).
macro_rules! acc_is_self {
    () => {
        type Acc = Self;
        #[inline(always)]
        fn to_acc(&self) -> std::borrow::Cow<'_, Self> {
            std::borrow::Cow::Borrowed(self)
        }
        #[inline(always)]
        fn from_acc(a: Self) -> Self {
            a
        }
    };
}
pub(crate) use acc_is_self;

/// Inside `impl Precision for $t`: `Acc = Self` and the arithmetic of the trait delegated to the
/// `Copy` type's inherent methods of the same names (`ZERO`, `from_f64`, `to_f64`, `add`, `sub`,
/// `mul`, `div`, `neg`, `sqrt`, `abs`, `mul_f64`, `is_finite`); `add_mul_f64(a, b)` is
/// `self + b.mul_f64(a)`. For the multi-word types, whose kernels are their own operations.
macro_rules! precision_from_methods {
    ($t:ident) => {
        $crate::precision::acc_is_self!();
        #[inline(always)]
        fn zero() -> Self {
            $t::ZERO
        }
        #[inline(always)]
        fn from_f64(x: f64) -> Self {
            $t::from_f64(x)
        }
        #[inline(always)]
        fn to_f64(&self) -> f64 {
            $t::to_f64(*self)
        }
        #[inline(always)]
        fn add(&self, b: &Self) -> Self {
            $t::add(*self, *b)
        }
        #[inline(always)]
        fn sub(&self, b: &Self) -> Self {
            $t::sub(*self, *b)
        }
        #[inline(always)]
        fn mul(&self, b: &Self) -> Self {
            $t::mul(*self, *b)
        }
        #[inline(always)]
        fn div(&self, b: &Self) -> Self {
            $t::div(*self, *b)
        }
        #[inline(always)]
        fn neg(&self) -> Self {
            $t::neg(*self)
        }
        #[inline(always)]
        fn sqrt(&self) -> Self {
            $t::sqrt(*self)
        }
        #[inline(always)]
        fn abs(&self) -> Self {
            $t::abs(*self)
        }
        #[inline(always)]
        fn mul_f64(&self, b: f64) -> Self {
            $t::mul_f64(*self, b)
        }
        #[inline(always)]
        fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
            $t::add(*self, $t::mul_f64(*b, a))
        }
        #[inline(always)]
        fn is_finite(&self) -> bool {
            $t::is_finite(*self)
        }
    };
}
pub(crate) use precision_from_methods;

/// `x 2^k`, rounded once (exact unless the result leaves the normal range); `k` may lie
/// beyond the exponents a double holds, which `2^k` alone would overflow or flush to zero.
pub fn ldexp(x: f64, k: i32) -> f64 {
    let pow2 = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
    if (-1022..=1023).contains(&k) {
        return x * pow2(k);
    }
    // two steps, the first keeping the value normal where the result is
    let first = k.clamp(-1022, 1023);
    let rest = (k - first).clamp(-1022, 1023);
    x * pow2(first) * pow2(rest)
}

/// Scalar arithmetic of one working precision.
///
/// Every operation rounds as the type's own algorithm says (IEEE round-to-nearest for `f64`, the
/// QD library's accurate algorithms for [`Dd`] and [`Qd`], the addition of Joldes, Marty, Muller,
/// Popescu for [`Qd`]); the same inputs give the same bits on every
/// machine and thread count.
///
/// Implemented by `f64`, [`Td`], [`Dd`], [`Qd`] and (feature `mpfr`) `Mp`, and sealed: the
/// kernels of both backends exist for exactly these. Name one as
/// [`Solver::precision`](crate::Solver::precision)'s type to compute in it.
pub trait Precision: sealed::Sealed + Clone + Debug + Send + Sync + PartialEq + 'static {
    /// Short name used on the command line and in reports (`f64`, `dd`, `qd`).
    const NAME: &'static str;
    /// Suffix of the GPU kernels for this precision (`axpy_dd`).
    #[doc(hidden)]
    const KERNEL_SUFFIX: &'static str;
    /// Unit roundoff u of the format as an `f64` (2^-53 for `f64`, 2^-106 for `Dd`; for `Qd` QD's
    /// own `_eps`, 2^-209, 8 times the nominal 2^-212): test tolerances and stagnation checks are
    /// written as multiples of it.
    const EPSILON: f64;
    /// The unit roundoff of the values made now: [`EPSILON`](Precision::EPSILON), or for `Mp`
    /// 2^-bits of the live precision scope (which a constant cannot hold).
    fn unit_roundoff() -> f64 {
        Self::EPSILON
    }
    /// Bytes one element occupies in a vector (memory-traffic accounting).
    const BYTES: usize;
    /// How a vector of this precision is laid out in host memory (the CPU backend's vectors):
    /// `Vec<Self>` for all but td, whose vectors are the thesis's structure of arrays
    /// ([`TdVector`]).
    #[doc(hidden)]
    type Vector: HostVector<Self>;

    /// The type vector kernels compute in: each kernel widens its inputs (vector elements and
    /// scalars) with [`to_acc`](Precision::to_acc), does all its arithmetic in `Acc` (the
    /// products and sums of an `axpy` element, an SpMV row's lane sums and tree, a dot
    /// product's lanes, tree and per-chunk partials) and rounds once per stored element with
    /// [`from_acc`](Precision::from_acc). `Self` for `f64`, [`Dd`], [`Qd`] and `Mp` (so their
    /// kernels are the plain operations of the type); [`Dd`] for [`Td`] (D+I storage, double-double
    /// arithmetic, the thesis's section 2.3 rule). Scalars a solver loop keeps (alpha, rho,
    /// omega, ...) stay `Self`, like stored vector elements: the scalar arithmetic of the loops is
    /// `Self`'s own.
    #[doc(hidden)]
    type Acc: Precision;
    /// `self` widened to the compute type, exactly (borrowed where `Acc` is `Self`).
    #[doc(hidden)]
    fn to_acc(&self) -> Cow<'_, Self::Acc>;
    /// A compute-type value rounded to `Self` (the identity where `Acc` is `Self`).
    #[doc(hidden)]
    fn from_acc(a: Self::Acc) -> Self;

    /// 0.
    fn zero() -> Self;
    /// 1.
    fn one() -> Self {
        Self::from_f64(1.0)
    }
    /// Exact for every `f64` in the precisions we ship.
    fn from_f64(x: f64) -> Self;
    /// Rounded to the nearest `f64`.
    fn to_f64(&self) -> f64;
    /// Widen or round to double-double (exact for `f64` and `Dd`).
    fn to_dd(&self) -> Dd;
    /// A double-double rounded (or widened, exactly) to this precision.
    fn from_dd(x: Dd) -> Self;

    /// `self + b`.
    fn add(&self, b: &Self) -> Self;
    /// `self - b`.
    fn sub(&self, b: &Self) -> Self;
    /// `self * b`.
    fn mul(&self, b: &Self) -> Self;
    /// `self / b`.
    fn div(&self, b: &Self) -> Self;
    /// `-self`, exactly.
    fn neg(&self) -> Self;
    /// The square root.
    fn sqrt(&self) -> Self;
    /// `|self|`, exactly.
    fn abs(&self) -> Self {
        if self.to_f64() < 0.0 {
            self.neg()
        } else {
            self.clone()
        }
    }
    /// `self * b` for a double `b` (a matrix entry): cheaper than widening `b` first.
    fn mul_f64(&self, b: f64) -> Self;
    /// `self + a * b` with `a` a double and `b` in this precision: the SpMV inner step.
    fn add_mul_f64(&self, a: f64, b: &Self) -> Self {
        self.add(&b.mul_f64(a))
    }
    /// Whether the value is finite (no NaN or infinite part).
    fn is_finite(&self) -> bool {
        self.to_f64().is_finite()
    }
    /// Append the value's exact encoding as 64-bit words: how a value travels between the ranks
    /// of a distributed solve (`crate::distributed`), as the bits of its layout.
    #[doc(hidden)]
    fn write_words(&self, out: &mut Vec<u64>);
    /// The value [`write_words`](Precision::write_words) wrote at the front of `words`, which
    /// is advanced past it.
    #[doc(hidden)]
    fn read_words(words: &mut &[u64]) -> Self;
}

/// The first `count` words of `words`, which is advanced past them (for
/// [`Precision::read_words`]).
pub(crate) fn take_words<'a>(words: &mut &'a [u64], count: usize) -> &'a [u64] {
    let (head, rest) = words.split_at(count);
    *words = rest;
    head
}
