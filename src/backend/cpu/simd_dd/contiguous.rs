//! `W` consecutive double-doubles loaded into (or stored from) a register of high parts and one
//! of low parts through two whole-register loads (stores) and two permutes.
//!
//! The lane-by-lane form (`lanes(|r| x[at + r].hi)`), and also the same split written with
//! constant indices over two plain arrays, is what LLVM turns into hardware gathers and scatters
//! (`vgatherqpd`, `vscatterqpd`, a stride of 16 bytes). Those are cheap on Intel's cores but
//! microcoded on AMD Zen 4, where a DD CG solve spent more time in them than in its SpMV
//! (`benches/results/cpu.md`). Hence intrinsics, for `W = 8` (AVX-512F) and `W = 4` (AVX2).
//!
//! These must only be reached from a kernel body compiled for that width's features
//! (`simd_entry!`'s `w8` and `w4`) through `#[inline(always)]` functions and macros, never
//! through a closure: a closure carries no target features, so an intrinsic inside it stays an
//! out-of-line call, a function call for every permute (`benches/results/cpu.md`). Any
//! other `W`, or another architecture, takes the element-by-element form. The values and their
//! order are unchanged, so are the bits.

use super::F;
use crate::precision::Dd;

/// Elements `p[0..W]` as `(hi, lo)` lanes.
///
/// # Safety
/// `p[0..W]` is readable, and the running code was compiled for AVX-512F when `W == 8` and for
/// AVX2 when `W == 4`.
#[inline(always)]
pub(super) unsafe fn load<const W: usize>(p: *const Dd) -> (F<W>, F<W>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let f = p.cast::<f64>();
        if W == 8 {
            // SAFETY: 16 doubles readable at `f`; AVX-512F by the caller.
            unsafe {
                return split8(_mm512_loadu_pd(f), _mm512_loadu_pd(f.add(8)));
            }
        }
        if W == 4 {
            // SAFETY: 8 doubles readable at `f`; AVX2 by the caller.
            unsafe {
                return split4(_mm256_loadu_pd(f), _mm256_loadu_pd(f.add(4)));
            }
        }
    }
    // SAFETY: `p[0..W]` readable (the caller).
    split(std::array::from_fn(|r| unsafe { *p.add(r) }))
}

/// `p[r] <- (hi[r], lo[r])` for `r < W`, the parts stored as given.
///
/// # Safety
/// `p[0..W]` is writable, and the conditions on `W` of [`load`].
#[inline(always)]
pub(super) unsafe fn store<const W: usize>(p: *mut Dd, hi: F<W>, lo: F<W>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let f = p.cast::<f64>();
        if W == 8 {
            // SAFETY: 16 doubles writable at `f`; AVX-512F by the caller.
            unsafe {
                let (h, l): (__m512d, __m512d) = (from_lanes(&hi), from_lanes(&lo));
                let first =
                    _mm512_permutex2var_pd(h, _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), l);
                let second =
                    _mm512_permutex2var_pd(h, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), l);
                _mm512_storeu_pd(f, first);
                _mm512_storeu_pd(f.add(8), second);
                return;
            }
        }
        if W == 4 {
            // SAFETY: 8 doubles writable at `f`; AVX2 by the caller.
            unsafe {
                // Lanes 0 2 1 3 of each, then interleaved: (h0 l0 h1 l1), (h2 l2 h3 l3).
                let (h, l): (__m256d, __m256d) = (from_lanes(&hi), from_lanes(&lo));
                let h = _mm256_permute4x64_pd::<0b11_01_10_00>(h);
                let l = _mm256_permute4x64_pd::<0b11_01_10_00>(l);
                _mm256_storeu_pd(f, _mm256_unpacklo_pd(h, l));
                _mm256_storeu_pd(f.add(4), _mm256_unpackhi_pd(h, l));
                return;
            }
        }
    }
    for r in 0..W {
        // SAFETY: `p[0..W]` writable (the caller).
        unsafe { p.add(r).write(Dd::from_parts(hi[r], lo[r])) };
    }
}

/// Elements `x[col[r]]` as `(hi, lo)` lanes: each pair read with one 16-byte load, the pairs
/// joined into two registers and split as in [`load`].
///
/// Not a hardware gather (slower, `benches/results/cpu.md`) and not the lane-by-lane form
/// either: from that, LLVM's SLP vectoriser left part of each step of the SpMV (products, sums,
/// for some of the lanes) in scalar instructions on Zen 4's build of the kernel.
///
/// # Safety
/// Every `x[col[r]]` is readable, and the conditions on `W` of [`load`].
#[inline(always)]
pub(super) unsafe fn gather<const W: usize>(x: *const Dd, col: &[usize; W]) -> (F<W>, F<W>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // Element `col[r]` of `x`, as a 128-bit `(hi, lo)`.
        macro_rules! pair {
            ($r:expr) => {
                _mm_loadu_pd(x.add(col[$r]).cast::<f64>())
            };
        }
        // Elements `col[r]`, `col[r + 1]` as `(hi, lo, hi, lo)`.
        macro_rules! two {
            ($r:expr) => {
                _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(pair!($r)), pair!($r + 1))
            };
        }
        if W == 8 {
            // SAFETY: the pairs are readable (the caller); AVX-512F by the caller.
            unsafe {
                let a = _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(two!(0)), two!(2));
                let b = _mm512_insertf64x4::<1>(_mm512_castpd256_pd512(two!(4)), two!(6));
                return split8(a, b);
            }
        }
        if W == 4 {
            // SAFETY: the pairs are readable (the caller); AVX2 by the caller.
            unsafe {
                return split4(two!(0), two!(2));
            }
        }
    }
    // SAFETY: readable (the caller).
    split(std::array::from_fn(|r| unsafe { *x.add(col[r]) }))
}

/// `W` double-doubles as `(hi, lo)` lanes, lane by lane (the widths without intrinsics).
#[inline(always)]
pub(super) fn split<const W: usize>(x: [Dd; W]) -> (F<W>, F<W>) {
    (
        std::array::from_fn(|r| x[r].hi),
        std::array::from_fn(|r| x[r].lo),
    )
}

/// 8 double-doubles as `(hi, lo)` lanes from the two registers holding their pairs in order
/// (`a`: elements 0-3, `b`: 4-7).
///
/// # Safety
/// AVX-512F; `W == 8`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn split8<const W: usize>(
    a: std::arch::x86_64::__m512d,
    b: std::arch::x86_64::__m512d,
) -> (F<W>, F<W>) {
    use std::arch::x86_64::*;
    // SAFETY: AVX-512F (the caller); 8 lanes.
    unsafe {
        let hi = _mm512_permutex2var_pd(a, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b);
        let lo = _mm512_permutex2var_pd(a, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b);
        (as_lanes(hi), as_lanes(lo))
    }
}

/// [`split8`] for 4 double-doubles (`a`: elements 0-1, `b`: 2-3).
///
/// # Safety
/// AVX2; `W == 4`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn split4<const W: usize>(
    a: std::arch::x86_64::__m256d,
    b: std::arch::x86_64::__m256d,
) -> (F<W>, F<W>) {
    use std::arch::x86_64::*;
    // SAFETY: AVX2 (the caller); 4 lanes.
    unsafe {
        // (h0 l0 h1 l1), (h2 l2 h3 l3) -> (h0 h2 h1 h3), (l0 l2 l1 l3) -> lanes 0 2 1 3.
        let hi = _mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_unpacklo_pd(a, b));
        let lo = _mm256_permute4x64_pd::<0b11_01_10_00>(_mm256_unpackhi_pd(a, b));
        (as_lanes(hi), as_lanes(lo))
    }
}

/// A register's doubles as `W` lanes (only called where `size_of::<V>() == 8 W`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) unsafe fn as_lanes<const W: usize, V>(v: V) -> F<W> {
    debug_assert_eq!(size_of::<V>(), size_of::<F<W>>());
    // SAFETY: the same size (the caller), and any bits are a double.
    unsafe { std::ptr::read_unaligned((&v as *const V).cast::<F<W>>()) }
}

/// `W` lanes as a register (only called where `size_of::<V>() == 8 W`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) unsafe fn from_lanes<const W: usize, V>(x: &F<W>) -> V {
    debug_assert_eq!(size_of::<V>(), size_of::<F<W>>());
    // SAFETY: the same size (the caller), and a register holds any bits.
    unsafe { std::ptr::read_unaligned((x as *const F<W>).cast::<V>()) }
}
