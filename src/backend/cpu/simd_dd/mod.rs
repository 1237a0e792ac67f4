//! Double-double kernels `W` values at a time (AVX-512: `W = 8`; AVX2: `W = 4`), bitwise equal
//! to the scalar kernels. They also run td vectors (the two arrays of D+I): elements are widened
//! to double-double exactly when loaded and rounded once when stored ([`pack_lanes`], the
//! branch-free `td::pack`), as the td definition in `precision/td_impl.rs` says; [`SimdIn`] and
//! [`SimdOut`] carry either layout, and each kernel body is compiled once per layout.
//!
//! Scalar double-double code runs at the limit of a core's two floating-point add ports: a
//! QuadAdd is 20 adds and subtractions, and the SpMV of a 7-point stencil performs 14 QuadAdds
//! per row. LLVM cannot vectorise the scalar kernels because every TwoProd in `precision/dd.rs`
//! tests `fma_available()` (an atomic load and a branch). Here each double-double operation is
//! performed on `W` independent values at once, one per SIMD lane: `W` rows of an SpMV (as the
//! GPU gives each row its own threads), `W` adjacent lanes of a dot product's 256 (as `W` GPU
//! threads of a block), `W` elements of a vector update. Each value still goes through exactly
//! the IEEE operations, in exactly the order, of `precision/dd.rs`: the operations below mirror
//! that file function by function (as `kernels/common/dd.cuh` does for the GPU), and a lane with
//! nothing to do at a step keeps its value. The tests in `tests.rs` compare every kernel bitwise
//! with reference loops over the `Precision` operations; a change to the algorithms in `dd.rs`
//! must be made here too, and those tests say where it was not.
//!
//! The lanes are plain `[f64; W]` arrays, and each entry point is compiled twice (by
//! [`simd_entry!`]): with `#[target_feature(enable = "avx512f,fma")]` for `W = 8` and with
//! `avx2,fma` for `W = 4`; the widest the CPU runs is chosen at run time ([`level`]). The
//! arithmetic, the blends and the loads and stores of double-doubles are intrinsics for those two
//! widths ([`lane_op!`], [`select`], `contiguous.rs`): left to itself, LLVM split steps into
//! scalar pieces and made gathers and scatters of contiguous pairs, which cost little on Intel's
//! cores and are microcoded on AMD Zen 4 (`benches/results/cpu.md`). Any other width runs the
//! same operations lane by lane. Rust never contracts `a * b + c` into an FMA nor reassociates,
//! so the arithmetic is IEEE as written. The kernels run only where [`available()`]; elsewhere
//! the scalar kernels do all the work. AVX-512 measured faster than AVX2 where both were timed
//! (`benches/results/cpu.md`).

use super::kernels::{DOT_CHUNK, DOT_THREADS, TILE_ROWS};
use crate::precision::{Dd, Precision, TdSlice, TdSliceMut, td};
use std::any::TypeId;

/// The SIMD instruction set the kernels use here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// AVX-512F and FMA: 8 doubles per register.
    Avx512,
    /// AVX2 and FMA: 4 doubles per register.
    Avx2,
}

impl Level {
    /// Doubles per register: the values each kernel step works on.
    pub const fn width(self) -> usize {
        match self {
            Level::Avx512 => 8,
            Level::Avx2 => 4,
        }
    }
}

/// The widest SIMD level this CPU runs (FMA is required for TwoProd), if any.
pub fn level() -> Option<Level> {
    #[cfg(target_arch = "x86_64")]
    {
        if !crate::precision::fma_available() {
            return None;
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Some(Level::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Level::Avx2);
        }
        None
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Whether the SIMD kernels can run here.
pub fn available() -> bool {
    level().is_some()
}

/// `x` as double-doubles when `P` is [`Dd`].
pub fn as_dd<P: Precision>(x: &[P]) -> Option<&[Dd]> {
    (TypeId::of::<P>() == TypeId::of::<Dd>()).then(|| {
        // SAFETY: `P` is `Dd`, so this is the same slice at the same type.
        unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<Dd>(), x.len()) }
    })
}

/// `x` as double-doubles when `P` is [`Dd`].
pub fn as_dd_mut<P: Precision>(x: &mut [P]) -> Option<&mut [Dd]> {
    (TypeId::of::<P>() == TypeId::of::<Dd>()).then(|| {
        // SAFETY: `P` is `Dd`, so this is the same slice at the same type.
        unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<Dd>(), x.len()) }
    })
}

/// Whether `P` has kernels here: double-double, and td (read widened to DD, rounded on store).
pub fn has_kernels<P: Precision>() -> bool {
    let p = TypeId::of::<P>();
    p == TypeId::of::<Dd>() || p == TypeId::of::<crate::precision::Td>()
}

/// `pub unsafe fn $name(args) -> ret` running `$imp::<8>` compiled for AVX-512 or `$imp::<4>`
/// compiled for AVX2, by [`level`] (callers guarantee [`available()`]), and `pub unsafe fn
/// $at(level, args)` running the one of `level` (callers guarantee the CPU has it; tests use
/// it to check the AVX2 code on an AVX-512 CPU).
macro_rules! simd_entry {
    ($(#[$meta:meta])* fn $name:ident / $at:ident($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? => $imp:ident) => {
        $(#[$meta])*
        pub unsafe fn $name($($arg: $ty),*) $(-> $ret)? {
            let level = level().expect(concat!(stringify!($name), ": no SIMD kernels on this CPU"));
            // SAFETY: `level()` detected it.
            unsafe { $at(level, $($arg),*) }
        }

        /// As the function without `_at`, with the SIMD width of `level`.
        ///
        /// # Safety
        /// The CPU runs `level`'s instructions; the other conditions of the function without
        /// `_at`.
        #[allow(dead_code, clippy::too_many_arguments)]
        pub unsafe fn $at(level: Level, $($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,fma")]
                unsafe fn w8($($arg: $ty),*) $(-> $ret)? {
                    #[allow(unused_unsafe)]
                    // SAFETY: forwarded from the caller.
                    let r = unsafe { $imp::<8>($($arg),*) };
                    r
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn w4($($arg: $ty),*) $(-> $ret)? {
                    #[allow(unused_unsafe)]
                    // SAFETY: forwarded from the caller.
                    let r = unsafe { $imp::<4>($($arg),*) };
                    r
                }
                // SAFETY: the caller guarantees the target features of `level`.
                match level {
                    Level::Avx512 => unsafe { w8($($arg),*) },
                    Level::Avx2 => unsafe { w4($($arg),*) },
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                let _ = level;
                unreachable!(concat!(stringify!($name), ": no SIMD kernels on this CPU"))
            }
        }
    };
}

/// `body` for `l = 0, 1, ..., n - 1` (`n <= 32`, or `n <= 4` in the form `unroll!(n, <= 4, |l| ...)`),
/// written out so that every index is a constant and arrays indexed by `l` can live in
/// registers. `n` must be a constant (a const generic or item): each written-out body sits
/// under `if const { i < n }`, which rustc resolves when it instantiates the function, so only
/// the `n` live bodies reach LLVM. (Under a plain `if i < n` every instance carried all 32 bodies
/// into LLVM, with each step inlined, and the SpMV's `group_sums` dominated the crate's IR and
/// its build time: `benches/results/build.md`.) Nest only with the small bound.
macro_rules! unroll {
    ($n:expr, |$l:ident| $body:expr) => {{
        debug_assert!($n <= 32);
        unroll!(@ $n, $l, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    }};
    ($n:expr, <= 4, |$l:ident| $body:expr) => {{
        debug_assert!($n <= 4, "unroll!: more iterations than written out");
        unroll!(@ $n, $l, $body; 0 1 2 3)
    }};
    (@ $n:expr, $l:ident, $body:expr; $($i:literal)*) => {{
        $(
            if const { $i < $n } {
                let $l: usize = $i;
                $body;
            }
        )*
    }};
}

// ---------------------------------------------------------------------------------------------
// Lane-wise IEEE operations.

type F<const W: usize> = [f64; W];

#[inline(always)]
fn lanes<const W: usize>(f: impl FnMut(usize) -> f64) -> F<W> {
    std::array::from_fn(f)
}

/// `$op8` (AVX-512F) on registers of `W = 8` lanes, `$op4` (AVX/FMA) on `W = 4`, `$lanes`
/// otherwise (the same IEEE operation, lane by lane). Written with intrinsics because from the
/// lane-by-lane form LLVM's SLP vectoriser split the SpMV's steps into pieces of 4, 2 and 1
/// lanes, a third of them scalar instructions (`cpu.md`, 2026-11-22). The kernels instantiate
/// `W = 8` only in bodies compiled for AVX-512F and `W = 4` only in bodies compiled for AVX2
/// and FMA (`simd_entry!`), which is what makes this sound; reach these through
/// `#[inline(always)]` functions and macros, not closures (`contiguous.rs` says why).
macro_rules! lane_op {
    ($w:ident, ($($arg:ident),+), $op8:ident, $op4:ident, $lanes:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            if $w == 8 {
                // SAFETY: AVX-512F, as above; `F<8>` and `__m512d` are 64 bytes.
                return unsafe {
                    contiguous::as_lanes($op8($(contiguous::from_lanes::<$w, __m512d>(&$arg)),+))
                };
            }
            if $w == 4 {
                // SAFETY: AVX2 and FMA, as above; `F<4>` and `__m256d` are 32 bytes.
                return unsafe {
                    contiguous::as_lanes($op4($(contiguous::from_lanes::<$w, __m256d>(&$arg)),+))
                };
            }
        }
        $lanes
    }};
}

#[inline(always)]
fn add<const W: usize>(a: F<W>, b: F<W>) -> F<W> {
    lane_op!(
        W,
        (a, b),
        _mm512_add_pd,
        _mm256_add_pd,
        lanes(|i| a[i] + b[i])
    )
}

#[inline(always)]
fn sub<const W: usize>(a: F<W>, b: F<W>) -> F<W> {
    lane_op!(
        W,
        (a, b),
        _mm512_sub_pd,
        _mm256_sub_pd,
        lanes(|i| a[i] - b[i])
    )
}

#[inline(always)]
fn mul<const W: usize>(a: F<W>, b: F<W>) -> F<W> {
    lane_op!(
        W,
        (a, b),
        _mm512_mul_pd,
        _mm256_mul_pd,
        lanes(|i| a[i] * b[i])
    )
}

/// `-a` (the sign flipped, zeros and NaNs included).
#[inline(always)]
fn neg<const W: usize>(a: F<W>) -> F<W> {
    lanes(|i| -a[i])
}

/// `a * b + c` rounded once.
#[inline(always)]
fn mul_add<const W: usize>(a: F<W>, b: F<W>, c: F<W>) -> F<W> {
    lane_op!(
        W,
        (a, b, c),
        _mm512_fmadd_pd,
        _mm256_fmadd_pd,
        lanes(|i| a[i].mul_add(b[i], c[i]))
    )
}

/// Lane `i` of `a` where `mask[i]`, of `b` elsewhere: a blend instruction for `W = 8` and
/// `W = 4` (from the lane-by-lane form LLVM made extracts and scalar moves, one per lane, and
/// spilled the SpMV's sums), lane by lane otherwise. The conditions of [`lane_op!`].
#[inline(always)]
fn select<const W: usize>(mask: [bool; W], a: DdX<W>, b: DdX<W>) -> DdX<W> {
    #[cfg(target_arch = "x86_64")]
    {
        use contiguous::{as_lanes, from_lanes};
        use std::arch::x86_64::*;
        if W == 8 {
            let mut k = 0u8;
            for (i, &m) in mask.iter().enumerate() {
                k |= u8::from(m) << i;
            }
            // SAFETY: AVX-512F for `W = 8` (`lane_op!`); 64-byte registers.
            return unsafe {
                DdX::<W> {
                    hi: as_lanes(_mm512_mask_blend_pd(
                        k,
                        from_lanes(&b.hi),
                        from_lanes(&a.hi),
                    )),
                    lo: as_lanes(_mm512_mask_blend_pd(
                        k,
                        from_lanes(&b.lo),
                        from_lanes(&a.lo),
                    )),
                }
            };
        }
        if W == 4 {
            // SAFETY: AVX2 for `W = 4` (`lane_op!`); 32-byte registers.
            return unsafe {
                let m = _mm256_castsi256_pd(_mm256_setr_epi64x(
                    -i64::from(mask[0]),
                    -i64::from(mask[1]),
                    -i64::from(mask[2]),
                    -i64::from(mask[3]),
                ));
                DdX::<W> {
                    hi: as_lanes(_mm256_blendv_pd(from_lanes(&b.hi), from_lanes(&a.hi), m)),
                    lo: as_lanes(_mm256_blendv_pd(from_lanes(&b.lo), from_lanes(&a.lo), m)),
                }
            };
        }
    }
    DdX {
        hi: lanes(|i| if mask[i] { a.hi[i] } else { b.hi[i] }),
        lo: lanes(|i| if mask[i] { a.lo[i] } else { b.lo[i] }),
    }
}

// ---------------------------------------------------------------------------------------------
// Double-double operations: `precision/dd.rs`, operation for operation.

/// TwoSum (Knuth; thesis Alg. 1), as `dd::two_sum`.
#[inline(always)]
fn two_sum<const W: usize>(a: F<W>, b: F<W>) -> (F<W>, F<W>) {
    let s = add(a, b);
    let v = sub(s, a);
    let e = add(sub(a, sub(s, v)), sub(b, v));
    (s, e)
}

/// QuickTwoSum (Dekker; thesis Alg. 2), as `dd::quick_two_sum`.
#[inline(always)]
fn quick_two_sum<const W: usize>(a: F<W>, b: F<W>) -> (F<W>, F<W>) {
    let s = add(a, b);
    let e = sub(b, sub(s, a));
    (s, e)
}

/// TwoProdFMA (thesis Alg. 3), as `dd::two_prod` on a CPU with FMA.
#[inline(always)]
fn two_prod<const W: usize>(a: F<W>, b: F<W>) -> (F<W>, F<W>) {
    let p = mul(a, b);
    let e = mul_add(a, b, neg(p));
    (p, e)
}

/// `W` double-doubles, split into their high and low parts.
#[derive(Clone, Copy)]
struct DdX<const W: usize> {
    hi: F<W>,
    lo: F<W>,
}

impl<const W: usize> DdX<W> {
    const ZERO: DdX<W> = DdX {
        hi: [0.0; W],
        lo: [0.0; W],
    };

    /// `Dd::from_f64`, lane-wise.
    #[inline(always)]
    fn from_f64(x: F<W>) -> DdX<W> {
        DdX {
            hi: x,
            lo: [0.0; W],
        }
    }

    /// QuadAdd (thesis Alg. 4), as `Dd::add`.
    #[inline(always)]
    fn add(self, b: DdX<W>) -> DdX<W> {
        let (s1, s2) = two_sum(self.hi, b.hi);
        let (t1, t2) = two_sum(self.lo, b.lo);
        let s2 = add(s2, t1);
        let (s1, s2) = quick_two_sum(s1, s2);
        let s2 = add(s2, t2);
        let (hi, lo) = quick_two_sum(s1, s2);
        DdX { hi, lo }
    }

    /// As `Dd::neg`.
    #[inline(always)]
    fn neg(self) -> DdX<W> {
        DdX {
            hi: neg(self.hi),
            lo: neg(self.lo),
        }
    }

    /// As `Dd::sub`.
    #[inline(always)]
    fn sub(self, b: DdX<W>) -> DdX<W> {
        self.add(b.neg())
    }

    /// As `Dd::mul_f64`.
    #[inline(always)]
    fn mul_f64(self, b: F<W>) -> DdX<W> {
        let (p1, p2) = two_prod(self.hi, b);
        let p2 = add(p2, mul(self.lo, b));
        let (hi, lo) = quick_two_sum(p1, p2);
        DdX { hi, lo }
    }

    /// QuadMul (thesis Alg. 6), as `Dd::mul`.
    #[inline(always)]
    fn mul(self, b: DdX<W>) -> DdX<W> {
        let (p1, p2) = two_prod(self.hi, b.hi);
        let p2 = add(p2, add(mul(self.hi, b.lo), mul(self.lo, b.hi)));
        let (hi, lo) = quick_two_sum(p1, p2);
        DdX { hi, lo }
    }

    /// `W` copies of `x`.
    #[inline(always)]
    fn splat(x: &Dd) -> DdX<W> {
        DdX {
            hi: [x.hi; W],
            lo: [x.lo; W],
        }
    }

    /// `x[0..W]`.
    #[inline(always)]
    fn load(x: &[Dd]) -> DdX<W> {
        let x: &[Dd; W] = x.try_into().expect("W values");
        // SAFETY: `W` values; `W = 8` and `W = 4` run in their kernels' bodies (`lane_op!`).
        let (hi, lo) = unsafe { contiguous::load::<W>(x.as_ptr()) };
        DdX { hi, lo }
    }

    /// `out[0..W] <- self`, the parts as they are (as [`Sink::put_lanes`] stores them).
    #[inline(always)]
    fn store(self, out: &mut [Dd]) {
        let out: &mut [Dd; W] = out.try_into().expect("W values");
        // SAFETY: as in `load`.
        unsafe { contiguous::store::<W>(out.as_mut_ptr(), self.hi, self.lo) };
    }

    /// The high and the low parts.
    #[inline(always)]
    fn parts(self) -> (F<W>, F<W>) {
        (self.hi, self.lo)
    }

    /// As `<Dd as Precision>::add_mul_f64`: `self + b * a`.
    #[inline(always)]
    fn add_mul_f64(self, a: F<W>, b: DdX<W>) -> DdX<W> {
        self.add(b.mul_f64(a))
    }
}

// ---------------------------------------------------------------------------------------------
// Vector layouts: what the kernels read and write.

/// A vector the SIMD kernels read, as double-doubles: `Dd` values, or td's two arrays (each
/// element widened exactly, as `Td::to_dd`).
#[derive(Clone, Copy, Debug)]
pub enum SimdIn<'a> {
    Dd(&'a [Dd]),
    Td(TdSlice<'a>),
    /// Doubles, each widened exactly to `(x, 0)` (a preconditioned vector kept in double: see
    /// `kernels::Widened`); read by `dot_chunk` (as `y`), `xpay` and `axpy` (as `x`) and
    /// `spmv_rows` (as `x`) only.
    F64(&'a [f64]),
}

/// A vector the SIMD kernels write (and may read): `Dd` values, or td's two arrays (each element
/// rounded once when stored, as `Td::from_dd`).
#[derive(Debug)]
pub enum SimdOut<'a> {
    Dd(&'a mut [Dd]),
    Td(TdSliceMut<'a>),
}

/// Read access for the kernels' generic bodies.
trait Source: Copy {
    fn len(self) -> usize;
    /// Element `i` as `(hi, lo)`.
    ///
    /// # Safety
    /// `i < self.len()`.
    unsafe fn get(self, i: usize) -> (f64, f64);
    /// Elements `at..at + W` as `(hi, lo)` lanes.
    ///
    /// # Safety
    /// `at + W <= self.len()`.
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(self, at: usize) -> (F<W>, F<W>) {
        // SAFETY: forwarded from the caller.
        DdX::gather(|r| unsafe { self.get(at + r) }).parts()
    }
    /// Elements `col[r]` as `(hi, lo)` lanes.
    ///
    /// # Safety
    /// Every `col[r] < self.len()`.
    #[inline(always)]
    unsafe fn gather_lanes<const W: usize>(self, col: &[usize; W]) -> (F<W>, F<W>) {
        // SAFETY: forwarded from the caller.
        DdX::gather(|r| unsafe { self.get(col[r]) }).parts()
    }
}

/// Write access (with reads of the current value) for the kernels' generic bodies.
trait Sink {
    fn len(&self) -> usize;
    /// # Safety
    /// `i < self.len()`.
    unsafe fn get(&self, i: usize) -> (f64, f64);
    /// Elements `at..at + W` as `(hi, lo)` lanes.
    ///
    /// # Safety
    /// `at + W <= self.len()`.
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(&self, at: usize) -> (F<W>, F<W>) {
        // SAFETY: forwarded from the caller.
        DdX::gather(|r| unsafe { self.get(at + r) }).parts()
    }
    /// Store `hi + lo` (a double-double as the arithmetic returned it) at `i`.
    ///
    /// # Safety
    /// `i < self.len()`.
    unsafe fn put(&mut self, i: usize, hi: f64, lo: f64);
    /// [`put`](Sink::put) for elements `at..at + W`.
    ///
    /// # Safety
    /// `at + W <= self.len()`.
    #[inline(always)]
    unsafe fn put_lanes<const W: usize>(&mut self, at: usize, hi: F<W>, lo: F<W>) {
        for r in 0..W {
            // SAFETY: forwarded from the caller.
            unsafe { self.put(at + r, hi[r], lo[r]) };
        }
    }
}

impl Source for &[Dd] {
    #[inline(always)]
    fn len(self) -> usize {
        <[Dd]>::len(self)
    }
    #[inline(always)]
    unsafe fn get(self, i: usize) -> (f64, f64) {
        // SAFETY: forwarded from the caller.
        let d = unsafe { *self.get_unchecked(i) };
        (d.hi, d.lo)
    }
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(self, at: usize) -> (F<W>, F<W>) {
        debug_assert!(at + W <= self.len());
        // SAFETY: forwarded from the caller.
        unsafe { contiguous::load::<W>(self.as_ptr().add(at)) }
    }
    #[inline(always)]
    unsafe fn gather_lanes<const W: usize>(self, col: &[usize; W]) -> (F<W>, F<W>) {
        debug_assert!(col.iter().all(|&c| c < self.len()));
        // SAFETY: forwarded from the caller.
        unsafe { contiguous::gather::<W>(self.as_ptr(), col) }
    }
}

impl Source for &[f64] {
    #[inline(always)]
    fn len(self) -> usize {
        <[f64]>::len(self)
    }
    #[inline(always)]
    unsafe fn get(self, i: usize) -> (f64, f64) {
        // SAFETY: forwarded from the caller.
        (unsafe { *self.get_unchecked(i) }, 0.0)
    }
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(self, at: usize) -> (F<W>, F<W>) {
        debug_assert!(at + W <= self.len());
        // SAFETY: forwarded from the caller. One whole load, not a gather (`contiguous.rs`).
        let hi = unsafe { self.as_ptr().add(at).cast::<F<W>>().read_unaligned() };
        (hi, [0.0; W])
    }
}

impl Source for TdSlice<'_> {
    #[inline(always)]
    fn len(self) -> usize {
        self.hi.len()
    }
    #[inline(always)]
    unsafe fn get(self, i: usize) -> (f64, f64) {
        // SAFETY: forwarded from the caller; both arrays have `len` elements.
        let (hi, lo) = unsafe { (*self.hi.get_unchecked(i), *self.lo.get_unchecked(i)) };
        let d = td::unpack(hi, lo);
        (d.hi, d.lo)
    }
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(self, at: usize) -> (F<W>, F<W>) {
        // SAFETY: forwarded from the caller.
        unsafe { td_lanes(self.hi, self.lo, at) }
    }
}

impl Sink for &mut [Dd] {
    #[inline(always)]
    fn len(&self) -> usize {
        <[Dd]>::len(self)
    }
    #[inline(always)]
    unsafe fn get(&self, i: usize) -> (f64, f64) {
        // SAFETY: forwarded from the caller.
        let d = unsafe { *self.get_unchecked(i) };
        (d.hi, d.lo)
    }
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(&self, at: usize) -> (F<W>, F<W>) {
        debug_assert!(at + W <= self.len());
        // SAFETY: forwarded from the caller.
        unsafe { contiguous::load::<W>(self.as_ptr().add(at)) }
    }
    #[inline(always)]
    unsafe fn put(&mut self, i: usize, hi: f64, lo: f64) {
        // SAFETY: forwarded from the caller.
        unsafe { *self.get_unchecked_mut(i) = Dd::from_parts(hi, lo) };
    }
    #[inline(always)]
    unsafe fn put_lanes<const W: usize>(&mut self, at: usize, hi: F<W>, lo: F<W>) {
        debug_assert!(at + W <= self.len());
        // SAFETY: forwarded from the caller.
        unsafe { contiguous::store::<W>(self.as_mut_ptr().add(at), hi, lo) };
    }
}

impl Sink for TdSliceMut<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.hi.len()
    }
    #[inline(always)]
    unsafe fn get(&self, i: usize) -> (f64, f64) {
        // SAFETY: forwarded from the caller; both arrays have `len` elements.
        let (hi, lo) = unsafe { (*self.hi.get_unchecked(i), *self.lo.get_unchecked(i)) };
        let d = td::unpack(hi, lo);
        (d.hi, d.lo)
    }
    #[inline(always)]
    unsafe fn get_lanes<const W: usize>(&self, at: usize) -> (F<W>, F<W>) {
        // SAFETY: forwarded from the caller.
        unsafe { td_lanes(self.hi, self.lo, at) }
    }
    #[inline(always)]
    unsafe fn put(&mut self, i: usize, hi: f64, lo: f64) {
        let (hi, lo) = td::pack(Dd::from_parts(hi, lo));
        // SAFETY: forwarded from the caller; both arrays have `len` elements.
        unsafe {
            *self.hi.get_unchecked_mut(i) = hi;
            *self.lo.get_unchecked_mut(i) = lo;
        }
    }
    #[inline(always)]
    unsafe fn put_lanes<const W: usize>(&mut self, at: usize, hi: F<W>, lo: F<W>) {
        let (hi, lo) = pack_lanes(hi, lo);
        debug_assert!(at + W <= self.hi.len() && at + W <= self.lo.len());
        // SAFETY: forwarded from the caller; both arrays have `len` elements. Whole stores.
        unsafe {
            self.hi
                .as_mut_ptr()
                .add(at)
                .cast::<F<W>>()
                .write_unaligned(hi);
            self.lo
                .as_mut_ptr()
                .add(at)
                .cast::<[i32; W]>()
                .write_unaligned(lo);
        }
    }
}

impl<const W: usize> DdX<W> {
    /// Lane `r` from `element(r)`, a `(hi, lo)` pair.
    #[inline(always)]
    fn gather(element: impl FnMut(usize) -> (f64, f64)) -> DdX<W> {
        let v: [(f64, f64); W] = std::array::from_fn(element);
        DdX {
            hi: lanes(|r| v[r].0),
            lo: lanes(|r| v[r].1),
        }
    }

    /// Elements `at..at + W` of `x`.
    ///
    /// # Safety
    /// `at + W <= x.len()`.
    #[inline(always)]
    unsafe fn read(x: impl Source, at: usize) -> DdX<W> {
        // SAFETY: forwarded from the caller.
        let (hi, lo) = unsafe { x.get_lanes::<W>(at) };
        DdX { hi, lo }
    }

    /// Element `at + r` of `x` in lane `r` where `mask[r]`, zero elsewhere.
    ///
    /// # Safety
    /// `at + r < x.len()` wherever `mask[r]`.
    #[inline(always)]
    unsafe fn read_masked(x: impl Source, at: usize, mask: [bool; W]) -> DdX<W> {
        // SAFETY: forwarded from the caller.
        DdX::gather(|r| {
            if mask[r] {
                unsafe { x.get(at + r) }
            } else {
                (0.0, 0.0)
            }
        })
    }

    /// Elements `at..at + W` of `y` as stored now.
    ///
    /// # Safety
    /// `at + W <= y.len()`.
    #[inline(always)]
    unsafe fn read_out(y: &impl Sink, at: usize) -> DdX<W> {
        // SAFETY: forwarded from the caller.
        let (hi, lo) = unsafe { y.get_lanes::<W>(at) };
        DdX { hi, lo }
    }

    /// `y[at..at + W] <- self`.
    ///
    /// # Safety
    /// `at + W <= y.len()`.
    #[inline(always)]
    unsafe fn write(self, y: &mut impl Sink, at: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { y.put_lanes::<W>(at, self.hi, self.lo) };
    }
}

/// Run `$body` with `$x`, `$y`, ... bound to the same layout's views of every `SimdIn` and
/// `SimdOut` given (each body is compiled once per layout).
macro_rules! with_layout {
    (in: [$($i:ident),*], out: [$($o:ident),*], $body:expr) => {
        match ($($i,)* $($o,)*) {
            ($(SimdIn::Dd($i),)* $(SimdOut::Dd($o),)*) => $body,
            ($(SimdIn::Td($i),)* $(SimdOut::Td($o),)*) => $body,
            #[allow(unreachable_patterns)]
            _ => panic!("SIMD kernel: vectors of different layouts"),
        }
    };
}

/// [`with_layout!`] for a kernel of one input `$x` and one output `$y` whose input may also be
/// doubles read widened ([`SimdIn::F64`], beside either output layout).
macro_rules! with_layout_or_wide {
    ($x:ident, $y:ident, $body:expr) => {
        match ($x, $y) {
            (SimdIn::F64($x), SimdOut::Dd($y)) => $body,
            (SimdIn::F64($x), SimdOut::Td($y)) => $body,
            ($x, $y) => with_layout!(in: [$x], out: [$y], $body),
        }
    };
}

/// `$out[at..at + W] <- $value` for `at` over the whole groups of `W` elements, returning how
/// many elements that was (the caller does the rest). `$value` may read elements `at..at + W` of
/// `$out` and of the inputs whose lengths are listed. A macro, not a function taking a closure,
/// so that the loads and stores inside are compiled with the kernel's target features
/// (`contiguous.rs` says why that matters).
macro_rules! elementwise {
    ($w:ident, [$($len:expr),*], $out:ident, |$at:ident| $value:expr) => {{
        let n = $out.len();
        assert!([$($len),*].iter().all(|&len| len == n), "SIMD kernel: lengths");
        let done = n / $w * $w;
        for $at in (0..done).step_by($w) {
            let v: DdX<$w> = $value;
            // SAFETY: `at + W <= done <= n`.
            unsafe { v.write(&mut $out, $at) };
        }
        done
    }};
}

mod contiguous;
mod spmv;
mod td_lanes;
mod tile_tree;
#[cfg(test)]
pub use spmv::spmv_rows_at;
pub use spmv::{SORT_WINDOW, Sell, spmv_rows, supports_lanes};
use td_lanes::{pack_lanes, td_lanes};
use tile_tree::TileTree;

// ---------------------------------------------------------------------------------------------
// Dot product: the chunk's `DOT_THREADS` lanes, `W` adjacent lanes per SIMD register.

/// SIMD registers of lane sums [`dot_chunk`] carries together: independent QuadAdd chains that
/// overlap their latency.
const DOT_REGS: usize = 4;

simd_entry! {
    /// `<x, y>` over one chunk of at most `DOT_CHUNK` elements, as `kernels::dot_chunk` defines
    /// it: lane `t` of `DOT_THREADS` sums elements `t, t + DOT_THREADS, ...` in order from zero,
    /// then the halving tree `s[t] = s[t] + s[t + off]`, `off = DOT_THREADS/2, ..., 1`.
    ///
    /// # Safety
    /// [`available()`] is true.
    fn dot_chunk / dot_chunk_at(x: SimdIn<'_>, y: SimdIn<'_>) -> Dd => dot_chunk_impl
}

#[inline(always)]
fn dot_chunk_impl<const W: usize>(x: SimdIn<'_>, y: SimdIn<'_>) -> Dd {
    match (x, y) {
        (SimdIn::Dd(x), SimdIn::F64(y)) => dot_chunk_layout::<W>(x, y),
        (SimdIn::Td(x), SimdIn::F64(y)) => dot_chunk_layout::<W>(x, y),
        _ => with_layout!(in: [x, y], out: [], dot_chunk_layout::<W>(x, y)),
    }
}

#[inline(always)]
fn dot_chunk_layout<const W: usize>(x: impl Source, y: impl Source) -> Dd {
    const T: usize = DOT_THREADS;
    assert_eq!(x.len(), y.len(), "dot_chunk: lengths");
    assert!(x.len() <= DOT_CHUNK, "dot_chunk: chunk too long");
    assert!(T.is_multiple_of(DOT_REGS * W), "dot_chunk: lanes per block");
    let n = x.len();
    let full_rows = n / T;
    let rem = n % T;
    let mut sums = [Dd::default(); T];
    // Lanes at and past `n` stay zero: blocks made only of them are skipped, and so are the
    // tree's sums of two of them (0 + 0 is the zero already there), as in `tree_reduce_prefix`.
    let mut active = n.min(T);
    // Lanes `block .. block + DOT_REGS W`, register `g` holding lanes `block + W g ..+ W`.
    for block in (0..active).step_by(DOT_REGS * W) {
        let mut s = [DdX::<W>::ZERO; DOT_REGS];
        for i in 0..full_rows {
            let at = i * T + block;
            unroll!(DOT_REGS, <= 4, |g| {
                // SAFETY: `at + W g + W <= (i + 1) T <= n`.
                let (xi, yi) =
                    unsafe { (DdX::<W>::read(x, at + W * g), DdX::<W>::read(y, at + W * g)) };
                s[g] = s[g].add(xi.mul(yi));
            });
        }
        // The short last row: lane `t` has an element iff `t < rem`.
        if rem > block {
            let at = full_rows * T;
            unroll!(DOT_REGS, <= 4, |g| {
                let t0 = block + W * g;
                if t0 < rem {
                    let m: [bool; W] = std::array::from_fn(|r| t0 + r < rem);
                    // SAFETY: element `at + t0 + r` exists where `t0 + r < rem`.
                    let (xi, yi) = unsafe {
                        (
                            DdX::<W>::read_masked(x, at + t0, m),
                            DdX::<W>::read_masked(y, at + t0, m),
                        )
                    };
                    s[g] = select(m, s[g].add(xi.mul(yi)), s[g]);
                }
            });
        }
        for (g, s) in s.into_iter().enumerate() {
            let t0 = block + W * g;
            s.store(&mut sums[t0..t0 + W]);
        }
    }
    // The halving tree; `W` lanes at a time while `off >= W`, then lane by lane.
    let mut off = T / 2;
    while off >= W {
        for t in (0..off.min(active)).step_by(W) {
            let v =
                DdX::<W>::load(&sums[t..t + W]).add(DdX::<W>::load(&sums[t + off..t + off + W]));
            v.store(&mut sums[t..t + W]);
        }
        active = active.min(off);
        off /= 2;
    }
    while off > 0 {
        for t in 0..off.min(active) {
            sums[t] = sums[t].add(sums[t + off]);
        }
        active = active.min(off);
        off /= 2;
    }
    sums[0]
}

simd_entry! {
    /// The tile partials of `<x, y>` as `kernels::dot_tiles` defines them (CG's `<p, q>` beside
    /// its SpMV), for whole tiles: `x.len() == TILE_ROWS * out.len()`, tile `k`'s sum in `out[k]`.
    ///
    /// # Safety
    /// [`available()`] is true.
    fn dot_tiles / dot_tiles_at(x: SimdIn<'_>, y: SimdIn<'_>, out: &mut [Dd]) => dot_tiles_impl
}

#[inline(always)]
fn dot_tiles_impl<const W: usize>(x: SimdIn<'_>, y: SimdIn<'_>, out: &mut [Dd]) {
    with_layout!(in: [x, y], out: [], dot_tiles_layout::<W>(x, y, out))
}

/// The tiles' sums through [`TileTree`], one register of products at a time.
#[inline(always)]
fn dot_tiles_layout<const W: usize>(x: impl Source, y: impl Source, out: &mut [Dd]) {
    assert!(
        x.len() == y.len() && x.len() == out.len() * TILE_ROWS,
        "dot_tiles: whole tiles"
    );
    let mut tree = TileTree::<W>::new();
    for (tile, sum) in out.iter_mut().enumerate() {
        let first = tile * TILE_ROWS;
        for t in (0..TILE_ROWS).step_by(W) {
            // SAFETY: `t + W <= TILE_ROWS`, so `first + t + W <= x.len()`.
            let (xt, yt) = unsafe { (DdX::<W>::read(x, first + t), DdX::<W>::read(y, first + t)) };
            tree.push(xt.mul(yt));
        }
        *sum = tree.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Vector updates: `W` consecutive elements at a time. Each returns how many leading elements it
// did (a multiple of `W`); the caller does the rest with the scalar kernel.

simd_entry! {
    /// `y <- alpha x + y`, as `kernels::axpy_chunk`.
    ///
    /// # Safety
    /// [`available()`] is true.
    fn axpy / axpy_at(alpha: &Dd, x: SimdIn<'_>, y: SimdOut<'_>) -> usize => axpy_impl
}

#[inline(always)]
fn axpy_impl<const W: usize>(alpha: &Dd, x: SimdIn<'_>, y: SimdOut<'_>) -> usize {
    let alpha = DdX::<W>::splat(alpha);
    with_layout_or_wide!(x, y, {
        let mut y = y;
        elementwise!(W, [x.len()], y, |at| unsafe {
            alpha.mul(DdX::read(x, at)).add(DdX::read_out(&y, at))
        })
    })
}

simd_entry! {
    /// `y <- x + beta y`, as `kernels::xpay_chunk`.
    ///
    /// # Safety
    /// [`available()`] is true.
    fn xpay / xpay_at(x: SimdIn<'_>, beta: &Dd, y: SimdOut<'_>) -> usize => xpay_impl
}

#[inline(always)]
fn xpay_impl<const W: usize>(x: SimdIn<'_>, beta: &Dd, y: SimdOut<'_>) -> usize {
    let beta = DdX::<W>::splat(beta);
    with_layout_or_wide!(x, y, {
        let mut y = y;
        elementwise!(W, [x.len()], y, |at| unsafe {
            DdX::read(x, at).add(beta.mul(DdX::read_out(&y, at)))
        })
    })
}

simd_entry! {
    /// `z <- alpha x + y`, as `kernels::axpyz_chunk`.
    ///
    /// # Safety
    /// [`available()`] is true.
    fn axpyz / axpyz_at(alpha: &Dd, x: SimdIn<'_>, y: SimdIn<'_>, z: SimdOut<'_>) -> usize => axpyz_impl
}

#[inline(always)]
fn axpyz_impl<const W: usize>(alpha: &Dd, x: SimdIn<'_>, y: SimdIn<'_>, z: SimdOut<'_>) -> usize {
    let alpha = DdX::<W>::splat(alpha);
    with_layout!(in: [x, y], out: [z], {
        let mut z = z;
        elementwise!(W, [x.len(), y.len()], z, |at| unsafe {
            alpha.mul(DdX::read(x, at)).add(DdX::read(y, at))
        })
    })
}

simd_entry! {
    /// `p <- r + beta (p - omega v)`, as `kernels::bicgstab_direction_chunk`.
    ///
    /// # Safety
    /// [`available()`] is true.
    fn bicgstab_direction / bicgstab_direction_at(r: SimdIn<'_>, beta: &Dd, omega: &Dd, v: SimdIn<'_>, p: SimdOut<'_>) -> usize
        => bicgstab_direction_impl
}

#[inline(always)]
fn bicgstab_direction_impl<const W: usize>(
    r: SimdIn<'_>,
    beta: &Dd,
    omega: &Dd,
    v: SimdIn<'_>,
    p: SimdOut<'_>,
) -> usize {
    let (beta, minus_omega) = (DdX::<W>::splat(beta), DdX::<W>::splat(omega).neg());
    with_layout!(in: [r, v], out: [p], {
        let mut p = p;
        elementwise!(W, [r.len(), v.len()], p, |at| unsafe {
            let t = minus_omega.mul(DdX::read(v, at)).add(DdX::read_out(&p, at));
            DdX::read(r, at).add(beta.mul(t))
        })
    })
}
