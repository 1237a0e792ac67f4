//! td's two arrays (`f64` high parts, `i32` low parts) read and written `W` elements at a time:
//! widened exactly to double-double lanes on load, rounded once (thesis Listing 2.1) on store.

use super::{F, lanes, quick_two_sum};
use crate::precision::td;

/// Elements `at..at + W` of td's two arrays as `(hi, lo)` lanes (`td::unpack` lane-wise),
/// through whole loads of each array (not the gathers LLVM makes of the element-wise form).
///
/// # Safety
/// `at + W` is at most both arrays' lengths.
#[inline(always)]
pub(super) unsafe fn td_lanes<const W: usize>(hi: &[f64], lo: &[i32], at: usize) -> (F<W>, F<W>) {
    debug_assert!(at + W <= hi.len() && at + W <= lo.len());
    // SAFETY: forwarded from the caller.
    let (h, l) = unsafe {
        (
            hi.as_ptr().add(at).cast::<F<W>>().read_unaligned(),
            lo.as_ptr().add(at).cast::<[i32; W]>().read_unaligned(),
        )
    };
    super::contiguous::split(std::array::from_fn(|r| td::unpack(h[r], l[r])))
}

const LOW: u64 = 0xffff_ffff;
const BORDER: u64 = 0x8000_0000;

/// `td::pack` on `W` values: the same steps, the same bits. With `W = 8` in AVX-512F intrinsics
/// ([`pack8`]); otherwise lane by lane without branches, written so that it would vectorise, but
/// LLVM compiled its selections into a compare and a branch per lane, which cost a td axpy
/// much of its time on Zen 4 (`benches/results/cpu.md`). The conditions of `lane_op!` in `mod.rs`.
#[inline(always)]
pub(super) fn pack_lanes<const W: usize>(hi: F<W>, lo: F<W>) -> (F<W>, [i32; W]) {
    #[cfg(target_arch = "x86_64")]
    if W == 8 {
        // SAFETY: AVX-512F wherever `W = 8` runs (`lane_op!`); the arrays have 8 lanes.
        return unsafe {
            let (h, l) = pack8(
                super::contiguous::from_lanes(&hi),
                super::contiguous::from_lanes(&lo),
            );
            (
                super::contiguous::as_lanes(h),
                std::ptr::read_unaligned((&l as *const std::arch::x86_64::__m256i).cast()),
            )
        };
    }
    let finite: [bool; W] = std::array::from_fn(|r| hi[r].is_finite() & lo[r].is_finite());
    // Listing 2.1: the upper 32 bits of `lo`, rounded to nearest even on the lower 32 (finite
    // lanes; the others are replaced below).
    let rounded: [u64; W] = std::array::from_fn(|r| {
        let bits = lo[r].to_bits();
        let (upper, lower) = (bits >> 32, bits & LOW);
        let up = (lower > BORDER) | ((lower == BORDER) & (upper & 1 == 1));
        (upper + u64::from(up)) & LOW
    });
    let (h, l) = quick_two_sum(hi, lanes(|r| f64::from_bits(rounded[r] << 32)));
    let out_hi = lanes(|r| match (finite[r], h[r].is_finite()) {
        (false, _) => hi[r] + lo[r],
        (true, true) => h[r],
        (true, false) => hi[r],
    });
    let out_lo = std::array::from_fn(|r| match (finite[r], h[r].is_finite()) {
        (false, _) => 0,
        (true, true) => (l[r].to_bits() >> 32) as u32 as i32,
        (true, false) => rounded[r] as u32 as i32,
    });
    (out_hi, out_lo)
}

/// [`pack_lanes`] on 8 lanes: the branches of `td::pack` as lane masks.
///
/// # Safety
/// The CPU has AVX-512F.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn pack8(
    hi: std::arch::x86_64::__m512d,
    lo: std::arch::x86_64::__m512d,
) -> (std::arch::x86_64::__m512d, std::arch::x86_64::__m256i) {
    use std::arch::x86_64::*;
    // SAFETY: AVX-512F (the caller).
    unsafe {
        let exponent = _mm512_set1_epi64(0x7ff0_0000_0000_0000);
        // Lanes whose exponent field is not all ones: finite. (A macro: an intrinsic inside a
        // closure is not inlined, `contiguous.rs`.)
        macro_rules! finite_mask {
            ($x:expr) => {{
                let bits = _mm512_castpd_si512($x);
                _mm512_cmpneq_epu64_mask(_mm512_and_si512(bits, exponent), exponent)
            }};
        }
        let finite: __mmask8 = finite_mask!(hi) & finite_mask!(lo);
        // Listing 2.1 on `lo`'s encoding.
        let bits = _mm512_castpd_si512(lo);
        let upper = _mm512_srli_epi64::<32>(bits);
        let lower = _mm512_and_si512(bits, _mm512_set1_epi64(LOW as i64));
        let border = _mm512_set1_epi64(BORDER as i64);
        let odd = _mm512_test_epi64_mask(upper, _mm512_set1_epi64(1));
        let up =
            _mm512_cmpgt_epu64_mask(lower, border) | (_mm512_cmpeq_epu64_mask(lower, border) & odd);
        let rounded = _mm512_and_si512(
            _mm512_mask_add_epi64(upper, up, upper, _mm512_set1_epi64(1)),
            _mm512_set1_epi64(LOW as i64),
        );
        let rounded_lo = _mm512_castsi512_pd(_mm512_slli_epi64::<32>(rounded));
        let (h, l) = quick_two_sum::<8>(
            super::contiguous::as_lanes(hi),
            super::contiguous::as_lanes(rounded_lo),
        );
        let (h, l): (__m512d, __m512d) = (
            super::contiguous::from_lanes(&h),
            super::contiguous::from_lanes(&l),
        );
        let kept = finite & finite_mask!(h);
        // Not finite: hi + lo; finite and h finite: h; finite and h not: hi.
        let out_hi = _mm512_mask_blend_pd(
            kept,
            _mm512_mask_blend_pd(finite, _mm512_add_pd(hi, lo), hi),
            h,
        );
        // Not finite: 0; finite and h finite: l's upper 32 bits; finite and h not: rounded.
        let l_upper = _mm512_srli_epi64::<32>(_mm512_castpd_si512(l));
        let out_lo =
            _mm512_mask_blend_epi64(kept, _mm512_maskz_mov_epi64(finite, rounded), l_upper);
        (out_hi, _mm512_cvtepi64_epi32(out_lo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::precision::Dd;

    /// `pack_lanes` is `td::pack` bit for bit, on the cases where `pack` branches.
    #[test]
    fn pack_lanes_is_td_pack() {
        let p = |e: i32| 2f64.powi(e);
        let mut cases: Vec<(f64, f64)> = vec![
            (0.0, 0.0),
            (-0.0, -0.0),
            (1.0, p(-60) * 1.5),
            (1.0, p(-60) * (1.0 + p(-21))),
            (1.0, p(-60) * (1.0 + p(-20) + p(-21))),
            (-3.0, -p(-60) * (1.0 + p(-20) + p(-21))),
            // lo rounds up to ulp(hi)/2 with hi odd: renormalised
            (1.0 + p(-52), p(-53) * (1.0 - p(-30))),
            // ... and that renormalisation would overflow: stored as rounded
            (f64::MAX, p(970) * (1.0 - p(-30))),
            (f64::INFINITY, 0.0),
            (f64::NEG_INFINITY, 1.0),
            (f64::NAN, 0.0),
            (1.0, f64::NAN),
            (f64::MIN_POSITIVE, f64::MIN_POSITIVE * p(-60)),
            (p(-1030), 0.0),
            (p(-960), p(-1020) * 1.75),
        ];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..4000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let hi = f64::from_bits(state >> 2) * if state & 1 == 0 { 1.0 } else { -1.0 };
            let d = Dd::new(
                hi,
                hi * p(-54) * (((state >> 20) & 0xffff) as f64 / 65536.0),
            );
            cases.push((d.hi, d.lo));
        }
        check::<2>(&cases, pack_lanes::<2>);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            /// The 8-lane form as the AVX-512 kernels compile it.
            #[target_feature(enable = "avx512f")]
            fn pack_w8(hi: F<8>, lo: F<8>) -> (F<8>, [i32; 8]) {
                pack_lanes::<8>(hi, lo)
            }
            // SAFETY: the CPU has AVX-512F.
            check::<8>(&cases, |hi, lo| unsafe { pack_w8(hi, lo) });
        }
    }

    /// `pack(hi, lo)` against `td::pack` on `cases`, `W` at a time.
    fn check<const W: usize>(cases: &[(f64, f64)], pack: impl Fn(F<W>, F<W>) -> (F<W>, [i32; W])) {
        for chunk in cases.chunks(W) {
            let hi: F<W> = lanes(|r| chunk.get(r).map_or(0.0, |c| c.0));
            let lo: F<W> = lanes(|r| chunk.get(r).map_or(0.0, |c| c.1));
            let (h, l) = pack(hi, lo);
            for r in 0..chunk.len() {
                let (wh, wl) = td::pack(Dd::from_parts(hi[r], lo[r]));
                assert_eq!(
                    (h[r].to_bits(), l[r]),
                    (wh.to_bits(), wl),
                    "W = {W}: pack({:e}, {:e})",
                    hi[r],
                    lo[r]
                );
            }
        }
    }
}
