//! Quad-double (~212 bits) arithmetic: a value is the unevaluated sum `x[0] + x[1] + x[2] + x[3]`
//! of four doubles, renormalised so that the components do not overlap (each at most one ulp of
//! the previous one, mostly at most half an ulp; see [`Qd::renormalize`] for exactly what holds).
//!
//! Addition is the merge-and-renormalise addition of floating-point expansions of M. Joldes,
//! O. Marty, J.-M. Muller, V. Popescu, "Arithmetic algorithms for extended precision using
//! floating-point expansions", IEEE Trans. Computers 65(4), 2016, pp. 1197-1210 ("JMMP"; §3:
//! Merge, then Renormalize = VecSum (Alg. 3) + VecSumErrBranch (Alg. 4), as CAMPARY's
//! `certifiedAdd`), which has a proven error bound. Everything else follows the *accurate*
//! algorithms of the QD library: Y. Hida, X. S. Li, D. H. Bailey, "Algorithms for quad-double
//! precision floating point arithmetic", Proc. 15th IEEE Symposium on Computer Arithmetic
//! (ARITH-15), 2001, pp. 155-162 ("HLB"), as implemented in QD 2.3.x (`include/qd/qd_inline.h`,
//! `src/qd_real.cpp`, `QD_SLOPPY_MUL` / `QD_SLOPPY_DIV` not defined):
//!
//! | routine    | algorithm                            | reference |
//! |------------|--------------------------------------|--------|
//! | `add`/`sub`| merge by magnitude, VecSum, VecSumErrBranch to 4 terms | JMMP §3, Alg. 3-4 |
//! | `renormalize` | QD `renorm` (4 and 5 inputs)      | HLB Alg. 7 |
//! | `add_f64`  | QD `operator+(qd_real, double)`      | HLB Fig. 3 |
//! | `mul_f64`  | QD `operator*(qd_real, double)`      | HLB §4.2   |
//! | `mul`      | QD `qd_real::accurate_mul` (not `sloppy_mul`) | HLB §4.2, Fig. 6-7 |
//! | `sqr`      | QD `sqr(qd_real)`                    |        |
//! | `div`      | QD `qd_real::accurate_div` (five quotient digits; its subtractions are `sub` above) | HLB §4.3 |
//! | `sqrt`     | QD `sqrt(qd_real)`: three Newton steps on 1/sqrt(a) (its additions are `add` above) | HLB §5 |
//!
//! QD's own accurate addition, `qd_real::ieee_add` (HLB §4.1, Fig. 4), was used here before and
//! is not: it emits a component as soon as its double-length accumulator overflows, before later
//! inputs of comparable magnitude from the other operand are merged, then drops part of the
//! accumulator; about 0.2% of the test cases erred beyond 2^-212, up to 2^-163 relative
//! (reproduced with a line-by-line Python transcription of QD's C++; two such cases stay in
//! `tests/qd_exact.rs`). QD's default `+`, `sloppy_add`, can lose everything under cancellation.
//!
//! The error-free building blocks (TwoSum, QuickTwoSum, TwoProd with its FMA / Dekker branch) are
//! those of [`super::dd`], so a run's bits do not depend on the CPU's FMA either. A CUDA twin must
//! mirror every function here operation for operation: same argument order (none of these
//! routines is bitwise symmetric in its operands), same left-to-right grouping of every sum
//! (`a + b + c` is `(a + b) + c`), no contraction into FMA (use `__dadd_rn`/`__dmul_rn`), and the
//! same data-dependent branches (`renorm`'s zero tests, the merge's magnitude comparisons with
//! ties to the first operand, VecSumErrBranch's zero tests). Do not reorder, regroup or fuse any
//! operation below.
//!
//! Accuracy, U = 2^-212. **Addition** has a proof: VecSum and VecSumErrBranch are error-free
//! transformations (TwoSum chains) up to the final truncation, and JMMP prove that on the merge
//! of two nonoverlapping expansions their output is ulp-nonoverlapping (`|r[k+1]| <= ulp(r[k])`).
//! The first four components are exactly those an untruncated run would give, so the error is the
//! dropped tail: `|err| <= sum_{k>=4} |r[k]| <= 2^-52 |r[3]| (1 + 2^-51) <= 2^-208 (1 + 2^-51)
//! |r[0]|`, and `|x + y| >= |r[0]| (1 - 2^-51)`: **relative error at most 2^-208 (1 + 2^-50) <
//! 16.0001 U, relative to the exact sum even under total cancellation** (an exact zero sum gives
//! exactly zero). The other routines have no rigorous published bound (HLB argue IEEE-style
//! bounds without full proofs; the formal double-word analyses of Joldes, Muller, Popescu do not
//! cover quad-double). `tests/qd_exact.rs` checks every routine against exact rationals; for
//! those the asserted bounds are empirical, about 2-4 times the worst case seen (41 seeds for
//! `add`, `add_f64`, `sqrt`; 9 for the rest):
//!
//! | routine   | max seen | asserted |
//! |-----------|----------|----------|
//! | `add`/`sub` | 1.19 U (1.07 U on computed, overlapping operands) | 16.0001 U (proven) |
//! | `add_f64` | 0.42 U   | 1 U      |
//! | `mul_f64` | 0.25 U   | 1 U      |
//! | `mul`     | 0.13 U   | 1 U      |
//! | `sqr`     | 1.52 U   | 4 U      |
//! | `div`     | 0.34 U   | 1 U      |
//! | `sqrt`    | 1.50 U (0.74 U with QD's `ieee_add`) | 4 U |
//!
//! Results are renormalised only approximately: QD's `renorm` and VecSumErrBranch can leave a
//! component over half an ulp of its predecessor (up to 0.75 ulp seen; after `add` in about 8% of
//! the random cases, after `add_f64` in 1.6%, far fewer elsewhere); JMMP's ulp-nonoverlapping
//! property (at most one ulp) is what the tests assert. QD's own `qd_real::_eps` is 2^-209
//! (`src/qd_const.cpp`: `_eps = 1.21543267145725e-63; // = 2^-209`), which is what
//! [`Precision::EPSILON`] is for `Qd`.
//!
//! Range. The accuracy holds where every component and every partial product stays normal: the
//! last component sits about 2^-159 below the value and its rounding error 2^-212 below, so
//! results should be within about [2^-800, 2^1020] in magnitude (QD's `_min_normalized` is
//! 2^-863). TwoProd's Dekker fallback gives the FMA bits only where the product's error term is
//! not subnormal (see [`two_prod`]), the same range. Non-finite inputs give non-finite outputs
//! (often NaN) with no further promise; `renormalize` leaves a value with an infinite leading
//! component alone, as QD does.

use super::dd::{quick_two_sum, two_prod, two_sum};
use super::{Dd, Precision};

/// A quad-double number `x[0] + x[1] + x[2] + x[3]`, largest component first. `#[repr(C)]` with
/// four consecutive doubles, so a slice of them is a `double4`-like array on the GPU.
///
/// `PartialOrd` is derived, i.e. lexicographic over `x` (QD's `operator<`): for renormalised
/// values that is the order of the exact values.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Qd {
    /// The components, leading first, renormalised: each is the rounded sum of itself and
    /// those after it.
    pub x: [f64; 4],
}

/// QD `three_sum`: `(a, b, c)` becomes an exact expansion of the same sum, `a` the rounded sum.
#[inline(always)]
fn three_sum(a: f64, b: f64, c: f64) -> (f64, f64, f64) {
    let (t1, t2) = two_sum(a, b);
    let (a, t3) = two_sum(c, t1);
    let (b, c) = two_sum(t2, t3);
    (a, b, c)
}

/// QD `three_sum2`: like [`three_sum`] but the two error terms are added (one rounding), `c` is
/// only read.
#[inline(always)]
fn three_sum2(a: f64, b: f64, c: f64) -> (f64, f64) {
    let (t1, t2) = two_sum(a, b);
    let (a, t3) = two_sum(c, t1);
    (a, t2 + t3)
}

/// QD `renorm(c0, c1, c2, c3)` (HLB Alg. 7 for four terms).
#[inline(always)]
fn renorm4(c0: f64, c1: f64, c2: f64, c3: f64) -> [f64; 4] {
    if c0.is_infinite() {
        return [c0, c1, c2, c3];
    }
    let (s0, c3) = quick_two_sum(c2, c3);
    let (s0, c2) = quick_two_sum(c1, s0);
    let (c0, c1) = quick_two_sum(c0, s0);

    let (mut s0, mut s1, mut s2, mut s3) = (c0, c1, 0.0, 0.0);
    if s1 != 0.0 {
        (s1, s2) = quick_two_sum(s1, c2);
        if s2 != 0.0 {
            (s2, s3) = quick_two_sum(s2, c3);
        } else {
            (s1, s2) = quick_two_sum(s1, c3);
        }
    } else {
        (s0, s1) = quick_two_sum(s0, c2);
        if s1 != 0.0 {
            (s1, s2) = quick_two_sum(s1, c3);
        } else {
            (s0, s1) = quick_two_sum(s0, c3);
        }
    }
    [s0, s1, s2, s3]
}

/// QD `renorm(c0, c1, c2, c3, c4)` (HLB Alg. 7 for five terms): the fifth term is folded in or
/// dropped.
#[inline(always)]
fn renorm5(c0: f64, c1: f64, c2: f64, c3: f64, c4: f64) -> [f64; 4] {
    if c0.is_infinite() {
        return [c0, c1, c2, c3];
    }
    let (s0, c4) = quick_two_sum(c3, c4);
    let (s0, c3) = quick_two_sum(c2, s0);
    let (s0, c2) = quick_two_sum(c1, s0);
    let (c0, c1) = quick_two_sum(c0, s0);

    let (mut s0, mut s1, mut s2, mut s3) = (c0, c1, 0.0, 0.0);
    if s1 != 0.0 {
        (s1, s2) = quick_two_sum(s1, c2);
        if s2 != 0.0 {
            (s2, s3) = quick_two_sum(s2, c3);
            if s3 != 0.0 {
                s3 += c4;
            } else {
                (s2, s3) = quick_two_sum(s2, c4);
            }
        } else {
            (s1, s2) = quick_two_sum(s1, c3);
            if s2 != 0.0 {
                (s2, s3) = quick_two_sum(s2, c4);
            } else {
                (s1, s2) = quick_two_sum(s1, c4);
            }
        }
    } else {
        (s0, s1) = quick_two_sum(s0, c2);
        if s1 != 0.0 {
            (s1, s2) = quick_two_sum(s1, c3);
            if s2 != 0.0 {
                (s2, s3) = quick_two_sum(s2, c4);
            } else {
                (s1, s2) = quick_two_sum(s1, c4);
            }
        } else {
            (s0, s1) = quick_two_sum(s0, c3);
            if s1 != 0.0 {
                (s1, s2) = quick_two_sum(s1, c4);
            } else {
                (s0, s1) = quick_two_sum(s0, c4);
            }
        }
    }
    [s0, s1, s2, s3]
}

/// Merge of two 4-term expansions into one sequence of decreasing magnitude (JMMP §3, the first
/// step of the addition): the usual two-pointer merge, taking `a`'s component when the
/// magnitudes tie. Exact (it only reorders). Zero components sort last.
#[inline(always)]
fn merge8(a: &[f64; 4], b: &[f64; 4]) -> [f64; 8] {
    let mut f = [0.0f64; 8];
    let (mut i, mut j) = (0usize, 0usize);
    for slot in f.iter_mut() {
        let take_a = j >= 4 || (i < 4 && a[i].abs() >= b[j].abs());
        if take_a {
            *slot = a[i];
            i += 1;
        } else {
            *slot = b[j];
            j += 1;
        }
    }
    f
}

/// VecSum (JMMP Alg. 3): a chain of TwoSums from the smallest term up, `s = f[7]`, then
/// `(s, e[i + 1]) = TwoSum(f[i], s)` for `i = 6, ..., 0`, and `e[0] = s`. Error-free: `sum(e) ==
/// sum(f)` exactly; on a merged sequence of two nonoverlapping expansions it returns `e[0]` the
/// rounded-ish leading sum and error terms that JMMP show the next step renormalises.
#[inline(always)]
fn vec_sum8(f: [f64; 8]) -> [f64; 8] {
    let mut e = [0.0f64; 8];
    let mut s = f[7];
    for i in (0..7).rev() {
        let (t, err) = two_sum(f[i], s);
        e[i + 1] = err;
        s = t;
    }
    e[0] = s;
    e
}

/// VecSumErrBranch (JMMP Alg. 4) truncated to four output components: walks the terms with a
/// running `err`, `(r[j], err) = TwoSum(err, e[i + 1])`; a zero `err` means `r[j]` absorbed the
/// term, so it becomes the running value and `j` stays; otherwise `r[j]` is final and the next
/// slot opens. When the fourth slot is final, the remaining `err` and terms are dropped (the only
/// error of the whole addition); a last nonzero `err` fills the next free slot. Unwritten slots
/// are zero. The branches depend on exact zero tests only, so a GPU twin takes the same ones.
#[inline(always)]
fn vec_sum_err_branch(e: [f64; 8]) -> [f64; 4] {
    let mut r = [0.0f64; 4];
    let mut j = 0usize;
    let mut err = e[0];
    for &t in &e[1..] {
        let (s, new_err) = two_sum(err, t);
        r[j] = s;
        if new_err != 0.0 {
            if j == 3 {
                return r;
            }
            j += 1;
            err = new_err;
        } else {
            err = s;
        }
    }
    if err != 0.0 {
        r[j] = err;
    }
    r
}

// The named methods are the API a CUDA twin mirrors; the `std::ops` impls below delegate to them.
#[allow(clippy::should_implement_trait)]
impl Qd {
    /// 0.
    pub const ZERO: Qd = Qd { x: [0.0; 4] };
    /// 1.
    pub const ONE: Qd = Qd {
        x: [1.0, 0.0, 0.0, 0.0],
    };

    /// The four components as given, not renormalised: for values already renormalised
    /// (constants, GPU readback). Use [`Qd::renormalize`] otherwise.
    #[inline(always)]
    pub const fn from_parts(x0: f64, x1: f64, x2: f64, x3: f64) -> Qd {
        Qd {
            x: [x0, x1, x2, x3],
        }
    }

    /// Exact.
    #[inline(always)]
    pub const fn from_f64(x: f64) -> Qd {
        Qd {
            x: [x, 0.0, 0.0, 0.0],
        }
    }

    /// Exact (QD's `qd_real(const dd_real &)`): `(hi, lo, 0, 0)`.
    #[inline(always)]
    pub const fn from_dd(a: Dd) -> Qd {
        Qd {
            x: [a.hi, a.lo, 0.0, 0.0],
        }
    }

    /// To double-double as QD's `to_dd_real` does: keeps `(x[0], x[1])`, i.e. truncates the tail
    /// `x[2] + x[3]`. For a renormalised value the tail is at most `ulp(x[1])/2` plus
    /// `ulp(x[2])/2`, so this is the nearest double-double except in the corner cases where
    /// `|x[2]|` is exactly `ulp(x[1])/2` (then the tie or the sign of `x[3]` decides, and the result
    /// may be the other neighbour). Error at most `ulp(x[1])/2 + ulp(x[2])/2`, i.e. relative
    /// `2^-106 (1 + 2^-52)`, the same bound as a correctly rounded conversion to first order.
    /// Exact for values that came from [`Qd::from_dd`].
    #[inline(always)]
    pub const fn to_dd(self) -> Dd {
        Dd::from_parts(self.x[0], self.x[1])
    }

    /// The leading component, as QD's `to_double`. For a renormalised value it is the nearest
    /// double except when `x[1]` is exactly half an ulp of `x[0]` (a tie broken by renormalisation
    /// to even, where the sign of `x[2]` would decide).
    #[inline(always)]
    /// The value rounded to double (the leading component).
    pub const fn to_f64(self) -> f64 {
        self.x[0]
    }

    /// Whether every component is finite.
    #[inline(always)]
    pub fn is_finite(self) -> bool {
        self.x.iter().all(|c| c.is_finite())
    }

    /// QD `abs`: negates when the leading component is negative.
    #[inline(always)]
    pub fn abs(self) -> Qd {
        if self.x[0] < 0.0 { self.neg() } else { self }
    }

    /// `-self`, exactly.
    #[inline(always)]
    pub fn neg(self) -> Qd {
        Qd {
            x: [-self.x[0], -self.x[1], -self.x[2], -self.x[3]],
        }
    }

    /// QD `renorm` (HLB Alg. 7): the same value (the quick-two-sums are exact) as a
    /// non-overlapping expansion, largest first. Requires the components to be roughly ordered by
    /// magnitude, as they are in every routine that calls it (QuickTwoSum needs `|a| >= |b|` at
    /// each step). A leading infinity is left as is.
    ///
    /// What holds afterwards (checked on every result in `tests/qd_exact.rs`): a zero component
    /// is followed only by zeros, and each nonzero component is at most one ulp of the previous
    /// one in magnitude. Mostly at most half an ulp and absorbed by it (`x[i] == fl(x[i] +
    /// x[i+1])`), but not always: the top-down pass can push a component slightly over half an
    /// ulp of its predecessor (0.75 ulp seen).
    #[inline(always)]
    pub fn renormalize(self) -> Qd {
        Qd {
            x: renorm4(self.x[0], self.x[1], self.x[2], self.x[3]),
        }
    }

    /// Exact multiplication by a power of two (QD `mul_pwr2`), componentwise.
    #[inline(always)]
    pub fn mul_pwr2(self, b: f64) -> Qd {
        Qd {
            x: [self.x[0] * b, self.x[1] * b, self.x[2] * b, self.x[3] * b],
        }
    }

    /// Accurate addition of two quad-doubles with a proven error bound: the eight components are
    /// merged by decreasing magnitude, summed without error by VecSum and renormalised to four
    /// components by VecSumErrBranch. This is the addition of Joldes, Marty, Muller, Popescu,
    /// "Arithmetic algorithms for extended precision using floating-point expansions", IEEE
    /// Trans. Computers 65(4), 2016, pp. 1197-1210 ("JMMP": §3, the addition of two expansions,
    /// i.e. Merge then the renormalisation Renormalize = VecSum + VecSumErrBranch, Algorithms
    /// 3-6; CAMPARY's `certifiedAdd`), with `n = m = r = 4`. See `merge8`, `vec_sum8` and
    /// `vec_sum_err_branch` (private) for the steps and the module docs for the bound.
    ///
    /// It replaces QD 2.3's `qd_real::ieee_add` (HLB §4.1, Fig. 4), which emits a component as
    /// soon as its double-length accumulator overflows, before later inputs of comparable
    /// magnitude have been merged, and then drops part of the accumulator: relative errors up to
    /// about 2^-163 were measured with a line-by-line transcription of QD's C++ (cases pinned in
    /// `tests/qd_exact.rs`, which now pass within the bound below).
    ///
    /// Only TwoSum is used (also where JMMP's proofs allow Fast2Sum: TwoSum then returns the same
    /// two doubles, so the bits are those of the paper's algorithm, and exactness never depends
    /// on an ordering precondition). Not bitwise symmetric in its operands where components of
    /// `self` and `b` have equal magnitudes (the merge takes `self`'s first).
    pub fn add(self, b: Qd) -> Qd {
        let f = merge8(&self.x, &b.x);
        let e = vec_sum8(f);
        Qd {
            x: vec_sum_err_branch(e),
        }
    }

    /// `self + (-b)` with the accurate addition (negation is exact), as QD's `operator-`.
    #[inline]
    pub fn sub(self, b: Qd) -> Qd {
        self.add(b.neg())
    }

    /// QD `operator+(qd_real, double)` (HLB Fig. 3): a TwoSum chain, exact, then `renorm` of the
    /// five terms.
    #[inline]
    pub fn add_f64(self, b: f64) -> Qd {
        let (c0, e) = two_sum(self.x[0], b);
        let (c1, e) = two_sum(self.x[1], e);
        let (c2, e) = two_sum(self.x[2], e);
        let (c3, e) = two_sum(self.x[3], e);
        Qd {
            x: renorm5(c0, c1, c2, c3, e),
        }
    }

    /// QD `operator*(qd_real, double)` (HLB §4.2).
    #[inline]
    pub fn mul_f64(self, b: f64) -> Qd {
        let a = &self.x;
        let (p0, q0) = two_prod(a[0], b);
        let (p1, q1) = two_prod(a[1], b);
        let (p2, q2) = two_prod(a[2], b);
        let p3 = a[3] * b;

        let s0 = p0;
        let (s1, s2) = two_sum(q0, p1);
        let (s2, q1, p2) = three_sum(s2, q1, p2);
        let (q1, q2) = three_sum2(q1, q2, p3);
        let s3 = q1;
        let s4 = q2 + p2;
        Qd {
            x: renorm5(s0, s1, s2, s3, s4),
        }
    }

    /// QD `qd_real::accurate_mul` (HLB §4.2, Fig. 6-7): all partial products down to order
    /// 2^-159 with their errors, the order-2^-212 ones rounded, then `renorm`.
    pub fn mul(self, b: Qd) -> Qd {
        let a = &self.x;
        let b = &b.x;
        let (p0, q0) = two_prod(a[0], b[0]);

        let (p1, q1) = two_prod(a[0], b[1]);
        let (p2, q2) = two_prod(a[1], b[0]);

        let (p3, q3) = two_prod(a[0], b[2]);
        let (p4, q4) = two_prod(a[1], b[1]);
        let (p5, q5) = two_prod(a[2], b[0]);

        // Start accumulation
        let (p1, p2, q0) = three_sum(p1, p2, q0);

        // Six-three sum of p2, q1, q2, p3, p4, p5
        let (p2, q1, q2) = three_sum(p2, q1, q2);
        let (p3, p4, p5) = three_sum(p3, p4, p5);
        // (s0, s1, s2) = (p2, q1, q2) + (p3, p4, p5)
        let (s0, t0) = two_sum(p2, p3);
        let (s1, t1) = two_sum(q1, p4);
        let s2 = q2 + p5;
        let (s1, t0) = two_sum(s1, t0);
        let s2 = s2 + (t0 + t1);

        // O(eps^3) order terms
        let (p6, q6) = two_prod(a[0], b[3]);
        let (p7, q7) = two_prod(a[1], b[2]);
        let (p8, q8) = two_prod(a[2], b[1]);
        let (p9, q9) = two_prod(a[3], b[0]);

        // Nine-two sum of q0, s1, q3, q4, q5, p6, p7, p8, p9
        let (q0, q3) = two_sum(q0, q3);
        let (q4, q5) = two_sum(q4, q5);
        let (p6, p7) = two_sum(p6, p7);
        let (p8, p9) = two_sum(p8, p9);
        // (t0, t1) = (q0, q3) + (q4, q5)
        let (t0, t1) = two_sum(q0, q4);
        let t1 = t1 + (q3 + q5);
        // (r0, r1) = (p6, p7) + (p8, p9)
        let (r0, r1) = two_sum(p6, p8);
        let r1 = r1 + (p7 + p9);
        // (q3, q4) = (t0, t1) + (r0, r1)
        let (q3, q4) = two_sum(t0, r0);
        let q4 = q4 + (t1 + r1);
        // (t0, t1) = (q3, q4) + s1
        let (t0, t1) = two_sum(q3, s1);
        let t1 = t1 + q4;

        // O(eps^4) terms: nine-one sum, left to right as QD's `t1 += a + b + ...`
        let tail = a[1] * b[3] + a[2] * b[2] + a[3] * b[1] + q6 + q7 + q8 + q9 + s2;
        let t1 = t1 + tail;

        Qd {
            x: renorm5(p0, p1, s0, t0, t1),
        }
    }

    /// QD `sqr(qd_real)`: the square with the symmetric partial products computed once.
    /// (QD's `two_sqr` gives the same bits as `two_prod(a, a)`: both are the exact error.)
    pub fn sqr(self) -> Qd {
        let a = &self.x;
        let (p0, q0) = two_prod(a[0], a[0]);
        let (p1, q1) = two_prod(2.0 * a[0], a[1]);
        let (p2, q2) = two_prod(2.0 * a[0], a[2]);
        let (p3, q3) = two_prod(a[1], a[1]);

        let (p1, q0) = two_sum(q0, p1);

        let (q0, q1) = two_sum(q0, q1);
        let (p2, p3) = two_sum(p2, p3);

        let (s0, t0) = two_sum(q0, p2);
        let (s1, t1) = two_sum(q1, p3);

        let (s1, t0) = two_sum(s1, t0);
        let t0 = t0 + t1;

        let (s1, t0) = quick_two_sum(s1, t0);
        let (p2, t1) = quick_two_sum(s0, s1);
        let (p3, q0) = quick_two_sum(t1, t0);

        let p4 = 2.0 * a[0] * a[3];
        let p5 = 2.0 * a[1] * a[2];

        let (p4, p5) = two_sum(p4, p5);
        let (q2, q3) = two_sum(q2, q3);

        let (t0, t1) = two_sum(p4, q2);
        let t1 = t1 + p5 + q3;

        let (p3, p4) = two_sum(p3, t0);
        let p4 = p4 + q0 + t1;

        Qd {
            x: renorm5(p0, p1, p2, p3, p4),
        }
    }

    /// QD `qd_real::accurate_div(qd_real, qd_real)` (HLB §4.3): long division, five quotient
    /// digits `q_k = r[0] / b[0]`, each residual `r - b*q_k` by `mul_f64` and the accurate
    /// subtraction, then `renorm` of the five digits. `a / a` is exactly 1 (first digit 1, then
    /// an exactly zero residual). `b == 0` gives a non-finite result.
    pub fn div(self, b: Qd) -> Qd {
        let q0 = self.x[0] / b.x[0];
        let r = self.sub(b.mul_f64(q0));

        let q1 = r.x[0] / b.x[0];
        let r = r.sub(b.mul_f64(q1));

        let q2 = r.x[0] / b.x[0];
        let r = r.sub(b.mul_f64(q2));

        let q3 = r.x[0] / b.x[0];
        let r = r.sub(b.mul_f64(q3));

        let q4 = r.x[0] / b.x[0];
        Qd {
            x: renorm5(q0, q1, q2, q3, q4),
        }
    }

    /// QD `sqrt(qd_real)` (HLB §5): Newton's iteration `r += (1/2 - (a/2) r^2) r` for 1/sqrt(a),
    /// three times from the double `1/sqrt(a[0])`, then `r * a`. Each step as QD writes it:
    /// `0.5 - h * sqr(r)` is `add_f64(0.5)` of the negated product, and `r += t * r` is the
    /// accurate addition `r + (t * r)`.
    ///
    /// Special cases (QD only has the first two): `sqrt(0) = 0`, negative gives NaN (QD: NaN and
    /// an error message), NaN gives NaN, `+inf` gives `+inf` (QD: NaN).
    ///
    /// Range: the iteration squares `1/sqrt(a)`, whose last components underflow for large `a`;
    /// the accuracy above holds for `a` within about [2^-690, 2^740].
    pub fn sqrt(self) -> Qd {
        let a0 = self.x[0];
        if a0 == 0.0 {
            return Qd::ZERO;
        }
        if a0 < 0.0 || a0.is_nan() {
            return Qd::from_f64(f64::NAN);
        }
        if a0.is_infinite() {
            return self;
        }
        let mut r = Qd::from_f64(1.0 / a0.sqrt());
        let h = self.mul_pwr2(0.5);
        for _ in 0..3 {
            let t = h.mul(r.sqr()).neg().add_f64(0.5);
            r = r.add(t.mul(r));
        }
        r.mul(self)
    }
}

impl From<f64> for Qd {
    #[inline(always)]
    fn from(x: f64) -> Qd {
        Qd::from_f64(x)
    }
}

impl From<Dd> for Qd {
    #[inline(always)]
    fn from(x: Dd) -> Qd {
        Qd::from_dd(x)
    }
}

// Operators delegate to the named methods, so `a + b` is the accurate addition, never a sloppy one.
super::operators_from_methods!(Qd);

impl Precision for Qd {
    type Vector = Vec<Qd>;
    const NAME: &'static str = "qd";
    const KERNEL_SUFFIX: &'static str = "qd";
    /// QD's `qd_real::_eps` = 2^-209 (QD `src/qd_const.cpp`), 8 times the nominal 2^-212 of four
    /// 53-bit components. Note the convention differs from [`Dd`]'s 2^-106 (QD's `dd_real::_eps`
    /// is 2^-104): this is QD's own, more conservative constant.
    const EPSILON: f64 = f64::from_bits((1023 - 209) << 52);
    const BYTES: usize = 32;
    super::precision_from_methods!(Qd);

    fn write_words(&self, out: &mut Vec<u64>) {
        out.extend(self.x.map(f64::to_bits));
    }
    fn read_words(words: &mut &[u64]) -> Self {
        let w = super::take_words(words, 4);
        Qd {
            x: std::array::from_fn(|i| f64::from_bits(w[i])),
        }
    }

    #[inline(always)]
    fn to_dd(&self) -> Dd {
        Qd::to_dd(*self)
    }
    #[inline(always)]
    fn from_dd(x: Dd) -> Self {
        Qd::from_dd(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_are_the_named_methods() {
        let a = Qd::from_dd(Dd::new(1.0, 1e-20)).add_f64(1e-40);
        let b = Qd::from_dd(Dd::new(-3.0, 2e-17)).add_f64(-7e-50);
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
        assert_eq!(Qd::from(2.5), Qd::from_f64(2.5));
        assert_eq!(Qd::from(Dd::new(1.0, 1e-20)).to_dd(), Dd::new(1.0, 1e-20));
    }

    #[test]
    fn small_exact_cases() {
        let three = Qd::from_f64(3.0);
        assert_eq!(three + Qd::ONE, Qd::from_f64(4.0));
        assert_eq!(three * three, Qd::from_f64(9.0));
        assert_eq!(three.sqr(), Qd::from_f64(9.0));
        assert_eq!(Qd::from_f64(4.0).sqrt().to_f64(), 2.0);
        assert_eq!(Qd::ZERO.sqrt(), Qd::ZERO);
        assert!(Qd::from_f64(-1.0).sqrt().x[0].is_nan());
        assert_eq!(Qd::from_f64(f64::INFINITY).sqrt().x[0], f64::INFINITY);
        assert_eq!((three - three), Qd::ZERO);
        assert_eq!(Qd::from_f64(-2.0).abs(), Qd::from_f64(2.0));
        assert!(!Qd::from_f64(1.0).div(Qd::ZERO).is_finite());
        assert_eq!(<Qd as Precision>::EPSILON, 2f64.powi(-209));
        assert_eq!(std::mem::size_of::<Qd>(), <Qd as Precision>::BYTES);
        // 1/3 to ~212 bits: 3 * (1/3) is 1 within a few 2^-212
        let third = Qd::ONE / three;
        let back = third * three - Qd::ONE;
        assert!(back.x[0].abs() <= 2f64.powi(-208), "{back:?}");
    }
}
