//! The double-double SpMV `W` rows at a time, one row per SIMD lane, with `L` lanes of a row's
//! sum each (the CSR-vector kernel's threads per row), on the SELL-W copy of the matrix.
//!
//! Each lane count and layout is a function of its own, compiled for its width and called once
//! per block of rows (`spmv_rows_apart`), not inlined into one entry per width as the other
//! kernels are: inlined, they made functions that LLVM took most of the crate's build time to
//! optimise, and apart they run the same instructions (`benches/results/build.md`).

use super::{DdX, F, Level, SimdIn, SimdOut, Sink, Source, lanes, level, select};
use crate::sparse::{CsrMatrix, PADDING_COL, SellEntries};
use std::sync::Arc;

/// The CSR entries regrouped for [`spmv_rows`] ("SELL-W", [`SellEntries`] with slices of `w`
/// rows): one step loads `w` values and `w` column indices contiguously, faster than selecting
/// them from CSR (`benches/results/cpu.md`). Padding is ~1% for a 7-point stencil. Only
/// whole groups are used; the last `nrows % w` rows go through the scalar kernel. Memory: 12
/// bytes per stored entry plus padding, a second copy of the matrix.
#[derive(Debug)]
pub struct Sell {
    /// The matrix this is a copy of (held, so that its address identifies it).
    source: Arc<CsrMatrix>,
    /// Groups of the SIMD width it was built for.
    entries: SellEntries,
    /// Per group, the length of its shortest row: the steps all its lanes take, summed without
    /// looking for padding. With the padding marked in `entries`, the kernel never reads the
    /// row pointers (see [`group_sums`]).
    shortest: Vec<u32>,
}

impl Sell {
    /// The layout of `source` for groups of `w` rows.
    pub fn new(source: &Arc<CsrMatrix>, w: usize) -> Sell {
        let shortest = SellEntries::shortest_rows(source, w)
            .into_iter()
            // A row's column indices are distinct `i32`s, so it has fewer than 2^32.
            .map(|len| u32::try_from(len).expect("row length below 2^32"))
            .collect();
        Sell {
            source: Arc::clone(source),
            entries: SellEntries::new_marked(source, w),
            shortest,
        }
    }

    /// Rows per group.
    pub fn rows_at_once(&self) -> usize {
        self.entries.slice_height()
    }

    /// Whether this is the layout of `a` (the very matrix: `CsrMatrix` never changes) for the
    /// SIMD width of this CPU.
    pub fn built_for(&self, a: &CsrMatrix) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.source), a)
            && level().map(Level::width) == Some(self.rows_at_once())
    }
}

/// Whether [`spmv_rows`] has a kernel for this many lanes per row.
pub fn supports_lanes(lanes: usize) -> bool {
    matches!(lanes, 1 | 2 | 4 | 8 | 16 | 32)
}

simd_entry! {
    /// Rows `first..first + out.len()` of `A x` or `b - A x`, as `kernels::spmv_rows` defines
    /// them, given `first` and `out.len()` multiples of `sell.rows_at_once()`.
    ///
    /// # Safety
    /// [`available()`] and [`supports_lanes`]`(lanes)` are true; `x.len() == a.ncols()`;
    /// `first + out.len() <= a.nrows()`; `b` (if any) has `out.len()` entries.
    fn spmv_rows / spmv_rows_at(
        a: &CsrMatrix,
        sell: &Sell,
        lanes: usize,
        x: SimdIn<'_>,
        first: usize,
        out: SimdOut<'_>,
        b: Option<&[f64]>,
    ) => spmv_rows_impl
}

/// [`spmv_rows`] with `W` rows at once.
///
/// # Safety
/// As [`spmv_rows`].
#[inline(always)]
unsafe fn spmv_rows_impl<const W: usize>(
    a: &CsrMatrix,
    sell: &Sell,
    lanes: usize,
    x: SimdIn<'_>,
    first: usize,
    out: SimdOut<'_>,
    b: Option<&[f64]>,
) {
    // SAFETY: forwarded from the caller.
    with_layout_or_wide!(x, out, unsafe {
        spmv_rows_layout::<W>(a, sell, lanes, x, first, out, b)
    })
}

/// [`spmv_rows_impl`] on one layout.
///
/// # Safety
/// As [`spmv_rows`].
#[inline(always)]
unsafe fn spmv_rows_layout<const W: usize>(
    a: &CsrMatrix,
    sell: &Sell,
    lanes: usize,
    x: impl Source,
    first: usize,
    mut out: impl Sink,
    b: Option<&[f64]>,
) {
    assert!(
        first.is_multiple_of(W) && out.len().is_multiple_of(W),
        "spmv_rows: whole groups"
    );
    assert!(
        std::ptr::eq(Arc::as_ptr(&sell.source), a) && sell.rows_at_once() == W,
        "spmv_rows: layout of another matrix or width"
    );
    assert!(
        first + out.len() <= a.nrows(),
        "spmv_rows: rows out of range"
    );
    assert_eq!(x.len(), a.ncols(), "spmv_rows: x length");
    if let Some(b) = b {
        assert_eq!(b.len(), out.len(), "spmv_rows: b length");
    }
    let out = &mut out;
    // SAFETY: forwarded from the caller and checked above.
    unsafe {
        match lanes {
            1 => spmv_rows_apart::<W, 1, GROUPS_IN_FLIGHT>(sell, x, first, out, b, 1),
            2 => spmv_rows_apart::<W, 2, 1>(sell, x, first, out, b, 2),
            4 => spmv_rows_apart::<W, 4, 1>(sell, x, first, out, b, 4),
            // One instance for the wide lane counts, the count at run time (see `group_sums`).
            8 | 16 | 32 => spmv_rows_apart::<W, MAX_LANES, 1>(sell, x, first, out, b, lanes),
            _ => unreachable!("spmv_rows: {lanes} lanes"),
        }
    }
}

/// [`spmv_rows_simd`] as a function of its own for each lane count and layout, compiled for
/// `W`'s SIMD level and never inlined into the entry point. Inlined, every lane count and
/// layout made one function per width of tens of thousands of instructions, and LLVM's time on
/// it grew faster than its size: those two functions took most of the crate's optimisation and
/// register allocation at opt-level 2 (`benches/results/build.md`). One call per block of rows
/// costs nothing measurable.
///
/// # Safety
/// As [`spmv_rows_simd`], and the CPU runs `W`'s SIMD level (the entry points check it).
#[inline(always)]
unsafe fn spmv_rows_apart<const W: usize, const L: usize, const N: usize>(
    sell: &Sell,
    x: impl Source,
    first: usize,
    out: &mut impl Sink,
    b: Option<&[f64]>,
    lanes: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,fma")]
        #[inline(never)]
        unsafe fn w8<const L: usize, const N: usize>(
            sell: &Sell,
            x: impl Source,
            first: usize,
            out: &mut impl Sink,
            b: Option<&[f64]>,
            lanes: usize,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { spmv_rows_simd::<8, L, N>(sell, x, first, out, b, lanes) }
        }
        #[target_feature(enable = "avx2,fma")]
        #[inline(never)]
        unsafe fn w4<const L: usize, const N: usize>(
            sell: &Sell,
            x: impl Source,
            first: usize,
            out: &mut impl Sink,
            b: Option<&[f64]>,
            lanes: usize,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { spmv_rows_simd::<4, L, N>(sell, x, first, out, b, lanes) }
        }
        // SAFETY: the caller runs on a CPU with `W`'s level (8: AVX-512F, 4: AVX2 and FMA).
        match W {
            8 => unsafe { w8::<L, N>(sell, x, first, out, b, lanes) },
            4 => unsafe { w4::<L, N>(sell, x, first, out, b, lanes) },
            _ => unreachable!("spmv_rows: SIMD width {W}"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: forwarded from the caller.
    unsafe {
        spmv_rows_simd::<W, L, N>(sell, x, first, out, b, lanes)
    }
}

/// [`spmv_rows`] with `row_lanes` lanes per row (`L`, or at most `L`: see [`group_sums`]):
/// row `W g + r` in SIMD lane `r`, `N` groups at a time (the rest one by one).
#[inline(always)]
unsafe fn spmv_rows_simd<const W: usize, const L: usize, const N: usize>(
    sell: &Sell,
    x: impl Source,
    first: usize,
    out: &mut impl Sink,
    b: Option<&[f64]>,
    row_lanes: usize,
) {
    let groups = out.len() / W;
    let mut j = 0;
    while j < groups {
        let together = if j + N <= groups { N } else { 1 };
        // SAFETY: groups `first / W + j ..+ together` lie in `first..first + out.len()`, whole
        // groups of `sell`; the other preconditions are the caller's.
        let sums: [DdX<W>; N] = if together == N {
            unsafe { group_sums::<W, L, N>(sell, x, first / W + j, row_lanes) }
        } else {
            let mut s = [DdX::ZERO; N];
            s[0] = unsafe { group_sums::<W, L, 1>(sell, x, first / W + j, row_lanes) }[0];
            s
        };
        for (g, sum) in sums.into_iter().take(together).enumerate() {
            let at = W * (j + g);
            let y = match b {
                Some(b) => DdX::from_f64(lanes(|r| b[at + r])).sub(sum),
                None => sum,
            };
            // SAFETY: `at + W <= out.len()`.
            unsafe { y.write(out, at) };
        }
        j += together;
    }
}

/// How far ahead of the step being summed (in slots: 8 KB of values with `W = 8`)
/// [`prefetch_ahead`] asks for the matrix. Without it the loads of the values stalled the kernel,
/// whether or not the matrix had just been read: the hardware prefetchers do not keep ahead of
/// the groups' value and column streams. 256 and 4096 slots do as well (`benches/results/cpu.md`).
const PREFETCH_SLOTS: usize = 1024;

/// Ask the cache for the values and column indices [`PREFETCH_SLOTS`] after slot `at` (a hint:
/// past the end of the arrays it does nothing).
#[inline(always)]
fn prefetch_ahead(vals: &[f64], cols: &[i32], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address; `wrapping_add` makes no reference.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(vals.as_ptr().wrapping_add(at + PREFETCH_SLOTS).cast());
        _mm_prefetch::<_MM_HINT_T0>(cols.as_ptr().wrapping_add(at + PREFETCH_SLOTS).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (vals, cols, at);
}

/// `sum + v x` for the step at slot `at`: its `W` values, and `x` at its `W` column indices.
/// With `PADDED`, some of those may be padding ([`PADDING_COL`]): its lanes read `x[0]` and
/// keep `sum` (the select), so each row's sum sees only its entries.
///
/// # Safety
/// Slots `at..at + W` exist, and their column indices are below `x.len()` (or, with `PADDED`,
/// [`PADDING_COL`], and `x` is not empty).
#[inline(always)]
unsafe fn step<const W: usize, const PADDED: bool>(
    vals: &[f64],
    cols: &[i32],
    x: impl Source,
    at: usize,
    sum: DdX<W>,
) -> DdX<W> {
    prefetch_ahead(vals, cols, at);
    // SAFETY: forwarded from the caller.
    let v: F<W> = lanes(|r| unsafe { *vals.get_unchecked(at + r) });
    let raw: [i32; W] = std::array::from_fn(|r| unsafe { *cols.get_unchecked(at + r) });
    let col: [usize; W] = std::array::from_fn(|r| {
        if PADDED {
            raw[r].max(0) as usize
        } else {
            raw[r] as usize
        }
    });
    // SAFETY: every `col[r]` is an entry's column, or 0 for padding (the caller).
    let (hi, lo) = unsafe { x.gather_lanes::<W>(&col) };
    let added = sum.add_mul_f64(v, DdX { hi, lo });
    if PADDED {
        select(std::array::from_fn(|r| raw[r] != PADDING_COL), added, sum)
    } else {
        added
    }
}

/// Groups [`spmv_rows_simd`] sums at once with one lane per row: independent QuadAdd chains in
/// flight, so that one group's additions fill the latency of another's (one group's chain left
/// the FP ports idle two thirds of the time). With more lanes per row a group has `L` chains
/// already; those run one group at a time (compiling them four at a time also took minutes).
const GROUPS_IN_FLIGHT: usize = 4;

/// Lanes per row up to which [`group_sums`] writes its lanes out (below).
const LANES_WRITTEN_OUT: usize = 4;

/// The most lanes per row (the GPU's warp).
const MAX_LANES: usize = 32;

/// The row sums of the `W` rows of each of the groups `group..group + N`, with `lanes` lanes
/// per row. Step `k` of a row goes to its lane `k % lanes`, as in the scalar kernel; a SIMD
/// lane whose row has no entry `k` (padding, marked in the layout) keeps its value (the
/// select), so each row's sums see only its own entries. Then the tree. The `N` groups advance
/// step by step together (independent chains).
///
/// Up to [`LANES_WRITTEN_OUT`] lanes, `lanes == L` and the lanes are written out so that their
/// sums live in registers. Wider (`L` = [`MAX_LANES`], `lanes` 8, 16 or 32) they cannot (8 DD
/// lanes are 16 vector registers a group, before the step's own), and written out they only
/// made functions that LLVM took minutes to allocate registers for: one instance loops over
/// the lanes, the count known at run time, in the same order (the same bits).
///
/// The row pointers are not read. Where a group's rows differed in length they were, to build
/// the masks, and the kernel waited on them: read only there, they came at no regular stride,
/// each a wait on memory (`benches/results/cpu.md`).
///
/// # Safety
/// As [`spmv_rows`], and the groups `group..group + N` are groups of `sell`; `lanes == L` up to
/// `LANES_WRITTEN_OUT`, else `lanes <= L`.
#[inline(always)]
unsafe fn group_sums<const W: usize, const L: usize, const N: usize>(
    sell: &Sell,
    x: impl Source,
    group: usize,
    lanes: usize,
) -> [DdX<W>; N] {
    let (vals, cols) = (sell.entries.vals(), sell.entries.cols());
    let group_ptr = sell.entries.slice_ptr();
    // SAFETY (all unchecked accesses below): `group + N < group_ptr.len()` and
    // `group + N <= shortest.len()`, as the caller passes groups of `sell` (whole ones).
    // Step `k < width[g]` of group `group + g` occupies slots `base[g] + W k ..+ W`, inside
    // `vals` and `cols`; a column index there is `PADDING_COL` (padding, only where a row is
    // shorter than its group's longest, so never below the group's shortest row) or one of the
    // matrix, in `0..ncols == x.len()` by the invariants `CsrMatrix` validates on construction
    // and never lets change (and `ncols > 0`, as some row has an entry).
    let base: [usize; N] = std::array::from_fn(|g| unsafe { *group_ptr.get_unchecked(group + g) });
    let width: [usize; N] =
        std::array::from_fn(|g| (unsafe { *group_ptr.get_unchecked(group + g + 1) } - base[g]) / W);
    let widest = width.iter().copied().max().unwrap_or(0);
    // Steps below a group's shortest row hold no padding: no mask, no select (the same values
    // as selecting all lanes).
    let full: [usize; N] =
        std::array::from_fn(|g| unsafe { *sell.shortest.get_unchecked(group + g) } as usize);
    let mut s = [[DdX::<W>::ZERO; L]; N];
    // With one lane per row, the steps every row of the groups has (below the shortest of
    // `full`) run first without the checks of the general loop below, which then takes only
    // the rest: none in a stencil's interior, the last step where a group holds a boundary row
    // (half the sets of four groups of poisson3d(100) do). The same steps in the same order.
    let mut chunk = 0;
    if L == 1 {
        let common = full.iter().copied().min().unwrap_or(0);
        for k in 0..common {
            unroll!(N, <= 4, |g| {
                // SAFETY: as above, `k < full[g] <= width[g]`.
                s[g][0] = unsafe { step::<W, false>(vals, cols, x, base[g] + W * k, s[g][0]) };
            });
        }
        if common == widest {
            return std::array::from_fn(|g| s[g][0]);
        }
        chunk = common;
    }
    while chunk < widest {
        'chunk: {
            // Step `k = chunk + l` of every group into its lane `l`.
            macro_rules! lane_step {
                ($l:expr) => {{
                    let l = $l;
                    let k = chunk + l;
                    if k >= widest {
                        break 'chunk;
                    }
                    unroll!(N, <= 4, |g| {
                        if k < width[g] {
                            let at = base[g] + W * k;
                            // SAFETY: as above.
                            s[g][l] = if k < full[g] {
                                unsafe { step::<W, false>(vals, cols, x, at, s[g][l]) }
                            } else {
                                unsafe { step::<W, true>(vals, cols, x, at, s[g][l]) }
                            };
                        }
                    });
                }};
            }
            if const { L <= LANES_WRITTEN_OUT } {
                unroll!(L, <= 4, |l| lane_step!(l));
            } else {
                for l in 0..lanes.min(widest - chunk) {
                    lane_step!(l);
                }
            }
        }
        chunk += if L <= LANES_WRITTEN_OUT { L } else { lanes };
    }
    // The tree, `off = lanes/2, ..., 1`.
    if const { L <= LANES_WRITTEN_OUT } {
        for off in [2, 1] {
            if off < L {
                unroll!(N, <= 4, |g| unroll!(2, <= 4, |l| if l < off {
                    s[g][l] = s[g][l].add(s[g][l + off]);
                }));
            }
        }
    } else {
        let mut off = lanes / 2;
        while off > 0 {
            for l in 0..off {
                unroll!(N, <= 4, |g| s[g][l] = s[g][l].add(s[g][l + off]));
            }
            off /= 2;
        }
    }
    std::array::from_fn(|g| s[g][0])
}
