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
///
/// Where rows of very different lengths share groups, the rows of each window of
/// [`SORT_WINDOW`] are stored longest first ("SELL-C-sigma", Kreutzer et al. 2014), so that a
/// group's rows have about one length and its steps little padding (fs_183_4: 1,350 slots for
/// 1,069 entries, against 2,812 in row order). Each row is still summed alone in its own order,
/// so the bits do not change; the kernel writes each lane's sum back to its row.
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
    /// Where the rows are reordered: the matrix row held by each row of the layout, for the
    /// rows of whole groups (each window's rows are a permutation of themselves).
    order: Option<Vec<u32>>,
}

/// Rows whose order [`Sell`] may change among themselves: the SIMD kernel takes whole windows
/// where the rows are reordered. The CPU backend's DD and td SpMV tasks (`row_tasks`) and its fused
/// SpMV and dot tasks (`TILE_ROWS`, 256) start at multiples of it, so no task boundary cuts a
/// window. 256 rows held fs_183_4 in 1,350 slots (64: 1,750) and ran its DD BiCGStab iteration
/// 16% faster than 64 (`benches/results/cpu-threads.md`).
pub const SORT_WINDOW: usize = 256;

impl Sell {
    /// The layout of `source` for groups of `w` rows.
    pub fn new(source: &Arc<CsrMatrix>, w: usize) -> Sell {
        let order = sorted_order(source, w);
        let reordered = order.as_ref().map(|order| reorder_rows(source, order));
        let layout = reordered.as_ref().unwrap_or(source);
        let shortest = SellEntries::shortest_rows(layout, w)
            .into_iter()
            // A row's column indices are distinct `i32`s, so it has fewer than 2^32.
            .map(|len| u32::try_from(len).expect("row length below 2^32"))
            .collect();
        Sell {
            source: Arc::clone(source),
            entries: SellEntries::new_marked(layout, w),
            shortest,
            order,
        }
    }

    /// Rows per group.
    pub fn rows_at_once(&self) -> usize {
        self.entries.slice_height()
    }

    /// Whether the rows are stored in another order than the matrix's (see [`Sell`]).
    pub fn reordered(&self) -> bool {
        self.order.is_some()
    }

    /// The rows of `first..end` that [`spmv_rows`] takes: whole groups, and whole windows of
    /// [`SORT_WINDOW`] rows where they are reordered (the last window ends with the last whole
    /// group). Empty (`end..end`) where there are none.
    pub fn simd_rows(&self, first: usize, end: usize) -> std::ops::Range<usize> {
        let w = self.rows_at_once();
        let grouped = self.source.nrows() / w * w;
        let unit = if self.reordered() { SORT_WINDOW } else { w };
        let lo = first.next_multiple_of(unit).min(grouped);
        let hi = if end >= grouped { grouped } else { end / unit * unit };
        if first > grouped || hi <= lo {
            return end..end;
        }
        lo..hi
    }

    /// Whether this is the layout of `a` (the very matrix: `CsrMatrix` never changes) for the
    /// SIMD width of this CPU.
    pub fn built_for(&self, a: &CsrMatrix) -> bool {
        std::ptr::eq(Arc::as_ptr(&self.source), a)
            && level().map(Level::width) == Some(self.rows_at_once())
    }
}

/// The rows of whole groups in windows of [`SORT_WINDOW`], each window's longest first (a stable
/// sort: rows of one length keep their order), where that saves a fifth of the slots or more;
/// `None` where it does not (stencils: every row one length, no change).
fn sorted_order(a: &CsrMatrix, w: usize) -> Option<Vec<u32>> {
    let grouped = a.nrows() / w * w;
    let len = |row: usize| a.row_ptr()[row + 1] - a.row_ptr()[row];
    let slots = |rows: &[usize]| -> usize {
        rows.chunks(w)
            .map(|group| w * group.iter().map(|&r| len(r)).max().unwrap_or(0))
            .sum()
    };
    let natural: Vec<usize> = (0..grouped).collect();
    let mut sorted = natural.clone();
    for window in sorted.chunks_mut(SORT_WINDOW) {
        window.sort_by_key(|&r| std::cmp::Reverse(len(r)));
    }
    let before = slots(&natural);
    if before == 0 || 5 * slots(&sorted) > 4 * before {
        return None;
    }
    // (rows below `CsrMatrix`'s limit of 2^31)
    Some(sorted.into_iter().map(|r| r as u32).collect())
}

/// `a` with its first `order.len()` rows in `order` (the rest in place): the matrix whose
/// SELL layout [`Sell`] stores.
fn reorder_rows(a: &CsrMatrix, order: &[u32]) -> CsrMatrix {
    let rows = order
        .iter()
        .map(|&r| r as usize)
        .chain(order.len()..a.nrows());
    let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for row in rows {
        let (c, v) = a.row(row);
        cols.extend_from_slice(c);
        vals.extend_from_slice(v);
        row_ptr.push(cols.len());
    }
    CsrMatrix::try_from_parts(a.nrows(), a.ncols(), row_ptr, cols, vals, a.symmetry())
        .expect("a permutation of a matrix's rows is a matrix")
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
            // The rows the lanes summed: `at..at + W`, or where the layout reordered them, the
            // rows it holds there (in the same whole windows: `Sell::simd_rows`).
            let rows: [usize; W] = match &sell.order {
                None => std::array::from_fn(|r| at + r),
                Some(order) => std::array::from_fn(|r| order[first + at + r] as usize - first),
            };
            let y = match b {
                Some(b) => DdX::from_f64(lanes(|r| b[rows[r]])).sub(sum),
                None => sum,
            };
            match sell.order {
                // SAFETY: `at + W <= out.len()`.
                None => unsafe { y.write(out, at) },
                Some(_) => {
                    let (hi, lo) = y.parts();
                    for r in 0..W {
                        assert!(rows[r] < out.len(), "spmv_rows: a window cut");
                        // SAFETY: checked on the line above.
                        unsafe { out.put(rows[r], hi[r], lo[r]) };
                    }
                }
            }
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
