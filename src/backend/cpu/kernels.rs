//! Serial kernel bodies the CPU backend runs on each parallel chunk.
//!
//! Each body is compiled twice by [`fma_kernel!`]: once inside a `#[target_feature(enable = "fma")]`
//! function (so the double-double TwoProd's `mul_add` becomes one instruction) and once plain;
//! the FMA flavour runs when the CPU has FMA. Both give the same bits (see `precision::dd`).
//! Double-double and td data go to the SIMD kernels of [`simd_dd`] where the CPU runs them (same
//! bits again); the public functions here choose. Kernels read and write vectors through the
//! views of `precision::host_vector` (`SliceOf`, `SliceMutOf`), so one body serves every layout.

use super::simd_dd;
use crate::precision::{
    Dd, HostSlice, HostSliceMut, HostVector, Precision, SliceMutOf, SliceOf, fma_available,
};
use crate::sparse::{ColumnIndex, CsrMatrix, CsrView};
use std::borrow::Cow;

/// Dot products follow the GPU's reduction (kernels/common/reduce.cuh), which is part of the
/// result's definition: a chunk of `DOT_CHUNK` elements is summed by `DOT_THREADS` lanes, lane
/// `t` taking elements `t, t + DOT_THREADS, ...` in order from zero; the lanes then combine by
/// the halving tree `s[t] = s[t] + s[t + off]`, `off = DOT_THREADS/2, ..., 1`. Chunk results are
/// reduced the same way (strided lane sums, then the tree).
///
/// All of it is computed in [`Precision::Acc`]: the lane sums, the tree and the per-chunk
/// partials (which never leave the backend) are `P::Acc`, and only the final scalar is rounded
/// to `P` (in the backend's `dot`). The GPU keeps its partials in `Acc` too (a double-double
/// buffer for td).
pub const DOT_THREADS: usize = 256;
pub const DOT_PER_THREAD: usize = 32;
pub const DOT_CHUNK: usize = DOT_THREADS * DOT_PER_THREAD;

/// The halving tree over the lane sums (`DOT_THREADS` of a dot, or a tile's groups): `s[t] =
/// s[t] + s[t + off]`, `off = len/2, ..., 1`; the result is in lane 0. Only the first `active`
/// lanes were ever written; the rest hold the zero they started as. A zero plus a zero is that zero again (`+0 + +0 = +0`, in every word
/// of every precision), so the additions between two untouched lanes are skipped: a short
/// vector's dot costs a few additions instead of the whole tree, with the same bits. Where an
/// active lane meets an untouched one the addition is still made (`-0 + +0` is `+0`).
#[inline(always)]
fn tree_reduce_prefix<A: Precision>(lanes: &mut [A], mut active: usize) -> A {
    debug_assert!(lanes.len().is_power_of_two() && active <= lanes.len());
    let mut off = lanes.len() / 2;
    while off > 0 {
        for t in 0..off.min(active) {
            lanes[t] = lanes[t].add(&lanes[t + off]);
        }
        active = active.min(off);
        off /= 2;
    }
    lanes[0].clone()
}

/// Define `fn $name<P: Precision>(...)` that runs `$body` compiled with FMA when available.
macro_rules! fma_kernel {
    ($(#[$meta:meta])* fn $name:ident<$P:ident $(, $G:ident: $B:path)*>($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[inline]
        pub fn $name<$P: Precision $(, $G: $B)*>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body<$P: Precision $(, $G: $B)*>($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "fma")]
                unsafe fn with_fma<$P: Precision $(, $G: $B)*>($($arg: $ty),*) $(-> $ret)? {
                    body::<$P $(, $G)*>($($arg),*)
                }
                if fma_available() {
                    // SAFETY: `fma_available()` confirmed the CPU executes FMA instructions.
                    return unsafe { with_fma::<$P $(, $G)*>($($arg),*) };
                }
            }
            body::<$P $(, $G)*>($($arg),*)
        }
    };
}

/// Rows `first..first + out.len()` of `A x` (or of `b - A x` when `b` is given).
///
/// A row is computed in [`Precision::Acc`] (its lane sums, the tree and the `b_i - sum`) from
/// the widened `x` entries and rounded to `P` once, when it is stored. Each row is summed as the CSR-vector GPU kernel with `lanes` threads per row does it: lane
/// `l` accumulates entries `l, l + lanes, ...` from zero, then the lanes are combined by the
/// shuffle-down tree (`s[l] += s[l + off]` for `off = lanes/2, ..., 1`). Besides matching the
/// GPU bit for bit, the independent lanes break the dependency chain of the DD adds.
/// Double-double rows go several at a time through the SIMD kernel when `sell` (the layout it
/// reads) is given and was built from `a`, the rest through [`spmv_rows_scalar`]; both give the
/// same bits.
pub fn spmv_rows<P: Precision>(
    a: &CsrMatrix,
    lanes: usize,
    sell: Option<&simd_dd::Sell>,
    x: SliceOf<'_, P>,
    first: usize,
    out: SliceMutOf<'_, P>,
    b: Option<&[f64]>,
) {
    spmv_rows_from::<P, _>(a, lanes, sell, Native(x), first, out, b);
}

/// [`spmv_rows`] with `x` a double vector widened to `P` as it is read (BiCGStab's
/// preconditioned directions): the bits of `spmv_rows` on `x` converted to `P`.
pub fn spmv_rows_wide<P: Precision>(
    a: &CsrMatrix,
    lanes: usize,
    sell: Option<&simd_dd::Sell>,
    x: &[f64],
    first: usize,
    out: SliceMutOf<'_, P>,
) {
    spmv_rows_from::<P, _>(a, lanes, sell, Widened(x), first, out, None);
}

fn spmv_rows_from<P: Precision, X: AccSource<P>>(
    a: &CsrMatrix,
    lanes: usize,
    sell: Option<&simd_dd::Sell>,
    x: X,
    first: usize,
    out: SliceMutOf<'_, P>,
    b: Option<&[f64]>,
) {
    if let Some(sell) = sell
        && sell.built_for(a)
        && simd_dd::supports_lanes(lanes)
        && simd_dd::has_kernels::<P>()
    {
        spmv_rows_grouped::<P, X>(a, lanes, sell, x, first, out, b);
        return;
    }
    spmv_rows_scalar_from::<P, X>(a, lanes, x, first, out, b);
}

/// [`spmv_rows`] for double-double and td vectors with the SIMD layout `sell` (built from `a`):
/// whole groups of rows through the SIMD kernel, the rest through [`spmv_rows_scalar`].
fn spmv_rows_grouped<P: Precision, X: AccSource<P>>(
    a: &CsrMatrix,
    lanes: usize,
    sell: &simd_dd::Sell,
    x: X,
    first: usize,
    out: SliceMutOf<'_, P>,
    b: Option<&[f64]>,
) {
    assert_eq!(x.len(), a.ncols(), "spmv_rows: x length");
    assert!(
        first + out.len() <= a.nrows(),
        "spmv_rows: rows out of range"
    );
    if let Some(b) = b {
        assert_eq!(b.len(), out.len(), "spmv_rows: b length");
    }
    // Whole groups (and windows) of rows for the SIMD kernel: `first + lo .. first + hi`.
    let simd = sell.simd_rows(first, first + out.len());
    let (lo, hi) = (simd.start - first, simd.end - first);
    let (head, rest) = out.split_at_mut(lo);
    let (middle, tail) = rest.split_at_mut(hi - lo);
    spmv_rows_scalar_from::<P, X>(a, lanes, x, first, head, b.map(|b| &b[..lo]));
    spmv_rows_scalar_from::<P, X>(a, lanes, x, first + hi, tail, b.map(|b| &b[hi..]));
    if hi > lo {
        let (x, middle) = (x.simd_in(), simd_out::<P>(middle));
        // SAFETY: the caller checked that `sell` was built from `a` (so the SIMD kernels exist)
        // and takes this lane count; the rows are whole groups and the sizes were checked above.
        unsafe {
            simd_dd::spmv_rows(a, sell, lanes, x, first + lo, middle, b.map(|b| &b[lo..hi]));
        }
    }
}

/// How many leading elements of a vector of `n` the SIMD element-wise kernels take: whole
/// registers, where `P` has SIMD kernels and the CPU runs them; none otherwise.
fn simd_prefix<P: Precision>(n: usize) -> usize {
    match simd_dd::level() {
        Some(level) if simd_dd::has_kernels::<P>() => n / level.width() * level.width(),
        _ => 0,
    }
}

/// `x` as the SIMD kernels read it (`P` has SIMD kernels: double-double or td).
fn simd_in<P: Precision>(x: SliceOf<'_, P>) -> simd_dd::SimdIn<'_> {
    if let Some(td) = x.as_td() {
        return simd_dd::SimdIn::Td(td);
    }
    let dd = x.as_slice().and_then(simd_dd::as_dd);
    simd_dd::SimdIn::Dd(dd.expect("SIMD kernels take double-double or td vectors"))
}

/// `y` as the SIMD kernels write it (`P` has SIMD kernels: double-double or td).
fn simd_out<P: Precision>(y: SliceMutOf<'_, P>) -> simd_dd::SimdOut<'_> {
    let y = match y.into_td() {
        Ok(td) => return simd_dd::SimdOut::Td(td),
        Err(y) => y,
    };
    let dd = y.into_slice().ok().and_then(simd_dd::as_dd_mut);
    simd_dd::SimdOut::Dd(dd.expect("SIMD kernels take double-double or td vectors"))
}

/// Rows `first..first + out.len()` of `A x` (or of `b - A x` when `b` is given), one at a
/// time, by the operations of `P`: the definition [`spmv_rows`] describes.
#[cfg(test)]
pub fn spmv_rows_scalar<P: Precision>(
    a: &CsrMatrix,
    lanes: usize,
    x: SliceOf<'_, P>,
    first: usize,
    out: SliceMutOf<'_, P>,
    b: Option<&[f64]>,
) {
    spmv_rows_scalar_from::<P, _>(a, lanes, Native(x), first, out, b);
}

fma_kernel! {
    /// [`spmv_rows_scalar`] from either kind of source.
    ///
    /// The lane counts [`spmv_lanes`](crate::backend::spmv_lanes) produces (powers of two up to
    /// 32) each get their own code, unrolled for that count; any other count takes the plain
    /// loop. All paths perform the same operations in the same order on every value.
    fn spmv_rows_scalar_from<P, X: AccSource<P>>(a: &CsrMatrix, lanes: usize, x: X, first: usize, out: SliceMutOf<'_, P>, b: Option<&[f64]>) {
        assert_eq!(x.len(), a.ncols(), "spmv_rows: x length");
        assert!(first + out.len() <= a.nrows(), "spmv_rows: rows out of range");
        assert!(lanes >= 1, "spmv_rows: no lanes");
        if let Some(b) = b {
            assert_eq!(b.len(), out.len(), "spmv_rows: b length");
        }
        match lanes {
            1 => spmv_rows_lanes::<P, X, 1>(a, x, first, out, b),
            2 => spmv_rows_lanes::<P, X, 2>(a, x, first, out, b),
            4 => spmv_rows_lanes::<P, X, 4>(a, x, first, out, b),
            8 => spmv_rows_lanes::<P, X, 8>(a, x, first, out, b),
            16 => spmv_rows_lanes::<P, X, 16>(a, x, first, out, b),
            32 => spmv_rows_lanes::<P, X, 32>(a, x, first, out, b),
            _ => spmv_rows_any_lanes::<P, X>(a, lanes, x, first, out, b),
        }
    }
}

fma_kernel! {
    /// Rows `first..first + out.len()` of `A x` for a borrowed matrix ([`CsrView`]), in `P`'s
    /// own arithmetic, in the lanes and tree of [`spmv_rows`] (the same bits for every `P`
    /// whose `Acc` is itself; td rounds each step here, once a row there). `lanes` is a power
    /// of two.
    fn view_rows<P, I: ColumnIndex>(a: &CsrView<'_, I>, lanes: usize, x: &[P], first: usize, out: &mut [P]) {
        let x_at = |c: &I| &x[c.to_i64() as usize];
        if lanes == 1 {
            for (i, y) in out.iter_mut().enumerate() {
                let (cols, vals) = a.row(first + i);
                let entries = cols.iter().zip(vals);
                *y = entries.fold(P::zero(), |s, (c, v)| s.add_mul_f64(*v, x_at(c)));
            }
            return;
        }
        let mut sums = vec![P::zero(); lanes];
        for (i, y) in out.iter_mut().enumerate() {
            let (cols, vals) = a.row(first + i);
            sums.iter_mut().for_each(|s| *s = P::zero());
            for (k, (c, v)) in cols.iter().zip(vals).enumerate() {
                let lane = &mut sums[k % lanes];
                *lane = lane.add_mul_f64(*v, x_at(c));
            }
            let mut half = lanes / 2;
            while half > 0 {
                for l in 0..half {
                    sums[l] = sums[l].add(&sums[l + half]);
                }
                half /= 2;
            }
            *y = sums[0].clone();
        }
    }
}

/// `b_i - sum` or `sum` in `Acc`, rounded to `P`: the last step of a row.
#[inline(always)]
fn finish_row<P: Precision>(sum: P::Acc, b: Option<f64>) -> P {
    P::from_acc(match b {
        Some(b) => P::Acc::from_f64(b).sub(&sum),
        None => sum,
    })
}

/// [`spmv_rows`] for a lane count known at compile time: the lane sums stay in registers (for
/// `f64`), the tree is unrolled, and no index is bounds-checked.
///
/// Preconditions (checked by `spmv_rows`): `x.len() == a.ncols()`, `first + out.len() <=
/// a.nrows()`, `b` (if any) has `out.len()` entries.
#[inline(always)]
fn spmv_rows_lanes<P: Precision, X: AccSource<P>, const L: usize>(
    a: &CsrMatrix,
    x: X,
    first: usize,
    mut out: SliceMutOf<'_, P>,
    b: Option<&[f64]>,
) {
    let (row_ptr, cols, vals) = (a.row_ptr(), a.col_idx(), a.values());
    // `row_ptr[first..=first + out.len()]`: in bounds since `first + out.len() <= nrows`.
    let row_ptr = &row_ptr[first..first + out.len() + 1];
    for i in 0..out.len() {
        // SAFETY (all unchecked accesses below): `i + 1 < row_ptr.len()`; by the invariants
        // `CsrMatrix` validates on construction and never lets change, row pointers are
        // non-decreasing and at most `nnz`, `col_idx` and `values` have `nnz` entries, and every
        // column index lies in `0..ncols == x.len()`. So `start <= k < end <= nnz` indexes
        // `cols` and `vals`, and `cols[k]` indexes `x`.
        let (mut k, end) = unsafe { (*row_ptr.get_unchecked(i), *row_ptr.get_unchecked(i + 1)) };
        let mut s: [P::Acc; L] = std::array::from_fn(|_| P::Acc::zero());
        // `(a_k, x[col_k] widened)` for `start <= k < end`.
        let entry = |k: usize| unsafe {
            (
                *vals.get_unchecked(k),
                x.load_unchecked(*cols.get_unchecked(k) as usize),
            )
        };
        // Whole chunks of `L` entries, lane `l` taking entry `k + l`...
        while end - k >= L {
            for (l, lane) in s.iter_mut().enumerate() {
                let (v, xk) = entry(k + l);
                *lane = lane.add_mul_f64(v, &xk);
            }
            k += L;
        }
        // ...then the partial last chunk (a constant trip count, so that it unrolls).
        for (l, lane) in s.iter_mut().enumerate() {
            if l < end - k {
                let (v, xk) = entry(k + l);
                *lane = lane.add_mul_f64(v, &xk);
            }
        }
        // Shuffle-down tree: `s[l] += s[l + off]`, `off = L/2, ..., 1`.
        let mut off = L / 2;
        while off > 0 {
            for l in 0..off {
                s[l] = s[l].add(&s[l + off]);
            }
            off /= 2;
        }
        let sum = s.into_iter().next().expect("at least one lane");
        out.set(i, finish_row::<P>(sum, b.map(|b| b[i])));
    }
}

/// [`spmv_rows`] for any lane count (the definition, as a plain loop).
#[inline(always)]
fn spmv_rows_any_lanes<P: Precision, X: AccSource<P>>(
    a: &CsrMatrix,
    lanes: usize,
    x: X,
    first: usize,
    mut out: SliceMutOf<'_, P>,
    b: Option<&[f64]>,
) {
    let row_ptr = a.row_ptr();
    let cols = a.col_idx();
    let vals = a.values();
    let mut lane_sums: Vec<P::Acc> = vec![P::Acc::zero(); lanes];
    for i in 0..out.len() {
        let row = first + i;
        let (start, end) = (row_ptr[row], row_ptr[row + 1]);
        for s in lane_sums.iter_mut() {
            *s = P::Acc::zero();
        }
        let mut k = start;
        while k < end {
            let stop = (k + lanes).min(end);
            for (lane, kk) in (k..stop).enumerate() {
                lane_sums[lane] = lane_sums[lane].add_mul_f64(vals[kk], &x.load(cols[kk] as usize));
            }
            k = stop;
        }
        let mut off = lanes / 2;
        while off > 0 {
            for l in 0..off {
                lane_sums[l] = lane_sums[l].add(&lane_sums[l + off]);
            }
            off /= 2;
        }
        out.set(i, finish_row::<P>(lane_sums[0].clone(), b.map(|b| b[i])));
    }
}

/// An input vector as the scalar bodies read it: each element widened to `P::Acc`. [`Native`]
/// is a vector of `P` as stored; [`Widened`] a double vector read as `P` (CG's preconditioned
/// residual: the bits of converting it to `P` first, without the pass that would store it).
pub trait AccSource<P: Precision>: Copy {
    fn len(&self) -> usize;
    fn load(&self, i: usize) -> Cow<'_, P::Acc>;
    /// [`load`](AccSource::load) without the bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    unsafe fn load_unchecked(&self, i: usize) -> Cow<'_, P::Acc>;
    /// The vector as the SIMD kernels read it (`P` has SIMD kernels: double-double or td).
    fn simd_in(&self) -> simd_dd::SimdIn<'_>;
}

/// A vector of `P`, read as stored.
pub struct Native<'a, P: Precision>(pub SliceOf<'a, P>);

impl<P: Precision> Clone for Native<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for Native<'_, P> {}

impl<P: Precision> AccSource<P> for Native<'_, P> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn load(&self, i: usize) -> Cow<'_, P::Acc> {
        self.0.load(i)
    }
    #[inline(always)]
    unsafe fn load_unchecked(&self, i: usize) -> Cow<'_, P::Acc> {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.load_unchecked(i) }
    }
    fn simd_in(&self) -> simd_dd::SimdIn<'_> {
        simd_in::<P>(self.0)
    }
}

/// A vector of doubles, each widened exactly to `P::Acc` as it is read.
#[derive(Clone, Copy)]
pub struct Widened<'a>(pub &'a [f64]);

impl<P: Precision> AccSource<P> for Widened<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn load(&self, i: usize) -> Cow<'_, P::Acc> {
        Cow::Owned(P::Acc::from_f64(self.0[i]))
    }
    #[inline(always)]
    unsafe fn load_unchecked(&self, i: usize) -> Cow<'_, P::Acc> {
        // SAFETY: forwarded from the caller.
        Cow::Owned(P::Acc::from_f64(unsafe { *self.0.get_unchecked(i) }))
    }
    fn simd_in(&self) -> simd_dd::SimdIn<'_> {
        simd_dd::SimdIn::F64(self.0)
    }
}

/// `<x, y>` over one chunk of at most `DOT_CHUNK` elements, in the GPU block's order (see
/// [`DOT_THREADS`]), computed and returned in `P::Acc` (a partial of the reduction).
/// Double-double chunks go through the SIMD kernel where the CPU has one; both paths give the
/// same bits.
pub fn dot_chunk<P: Precision>(x: SliceOf<'_, P>, y: SliceOf<'_, P>) -> P::Acc {
    assert_eq!(x.len(), y.len(), "dot_chunk: lengths");
    if simd_dd::available() && simd_dd::has_kernels::<P>() {
        return simd_dot_chunk::<P>(x, simd_in::<P>(y));
    }
    dot_chunk_scalar::<P, _>(x, Native(y))
}

/// [`dot_chunk`] with `y` a double vector widened to `P` as it is read.
pub fn dot_chunk_wide<P: Precision>(x: SliceOf<'_, P>, y: &[f64]) -> P::Acc {
    assert_eq!(x.len(), y.len(), "dot_chunk: lengths");
    if simd_dd::available() && simd_dd::has_kernels::<P>() {
        return simd_dot_chunk::<P>(x, simd_dd::SimdIn::F64(y));
    }
    dot_chunk_scalar::<P, _>(x, Widened(y))
}

fn simd_dot_chunk<P: Precision>(x: SliceOf<'_, P>, y: simd_dd::SimdIn<'_>) -> P::Acc {
    assert!(x.len() <= DOT_CHUNK, "dot_chunk: chunk too long");
    // SAFETY: the caller found the SIMD kernels available.
    let sum = unsafe { simd_dd::dot_chunk(simd_in::<P>(x), y) };
    P::Acc::from_dd(sum) // P is Dd or Td, so P::Acc is Dd: exact
}

fma_kernel! {
    /// `<x, y>` over one chunk of at most `DOT_CHUNK` elements, in the GPU block's order,
    /// in `P::Acc` (lanes, products and tree).
    fn dot_chunk_scalar<P, Y: AccSource<P>>(x: SliceOf<'_, P>, y: Y) -> P::Acc {
        assert_eq!(x.len(), y.len(), "dot_chunk: lengths");
        assert!(x.len() <= DOT_CHUNK, "dot_chunk: chunk too long");
        let mut lanes: [P::Acc; DOT_THREADS] = std::array::from_fn(|_| P::Acc::zero());
        for base in (0..x.len()).step_by(DOT_THREADS) {
            let count = DOT_THREADS.min(x.len() - base);
            for (t, lane) in lanes[..count].iter_mut().enumerate() {
                let (xi, yi) = (x.load(base + t), y.load(base + t));
                *lane = lane.add(&xi.mul(&yi));
            }
        }
        tree_reduce_prefix(&mut lanes, x.len().min(DOT_THREADS))
    }
}

fma_kernel! {
    /// [`dot_chunk`]'s lane sums carried on over more rows of the same chunk: `x` and `y` start
    /// a round of lanes (a multiple of [`DOT_THREADS`] rows into the chunk) and `lanes` hold
    /// the sums of the rows before them, as the chunk's owner left them. A chunk split between
    /// two ranks is summed so, by one and then the other, to the bits of one [`dot_chunk`]
    /// (`crate::distributed`); [`finish_lanes`] then gives its partial.
    fn dot_lanes<P, Y: AccSource<P>>(x: SliceOf<'_, P>, y: Y, lanes: &mut [P::Acc]) {
        assert_eq!(x.len(), y.len(), "dot_lanes: lengths");
        assert_eq!(lanes.len(), DOT_THREADS, "dot_lanes: lanes");
        for base in (0..x.len()).step_by(DOT_THREADS) {
            let count = DOT_THREADS.min(x.len() - base);
            for (t, lane) in lanes[..count].iter_mut().enumerate() {
                let (xi, yi) = (x.load(base + t), y.load(base + t));
                *lane = lane.add(&xi.mul(&yi));
            }
        }
    }
}

/// The partial of a chunk of `chunk_len` elements from its lane sums ([`dot_lanes`]).
pub fn finish_lanes<A: Precision>(lanes: &mut [A], chunk_len: usize) -> A {
    tree_reduce_prefix(lanes, chunk_len.min(DOT_THREADS))
}

/// Sum of the chunk results (in `Acc`, as [`dot_chunk`] returns them), in the order of the
/// GPU's final one-block stage; the caller rounds the sum to `P`.
pub fn sum_partials<A: Precision>(partials: &[A]) -> A {
    let mut lanes: [A; DOT_THREADS] = std::array::from_fn(|_| A::zero());
    for row in partials.chunks(DOT_THREADS) {
        for (lane, p) in lanes.iter_mut().zip(row) {
            *lane = lane.add(p);
        }
    }
    tree_reduce_prefix(&mut lanes, partials.len().min(DOT_THREADS))
}

/// CG's `<p, q>` computed beside the SpMV that produces `q` follows its own order, the one a GPU
/// block computing one row per thread can follow (`spmv_dot_{p}_*` in kernels/spmv_csr.cu,
/// `tile_final_*` in kernels/common/reduce.cuh): the rows in tiles of `TILE_ROWS` consecutive
/// rows; a tile's products `x_i y_i` (zero past the last row) are summed by the halving tree
/// `s[t] = s[t] + s[t + off]`, `off = TILE_ROWS/2, ..., 1` (a dot block's tree, one product a
/// lane). The tile sums are reduced by [`sum_tiles`]. All of it in `P::Acc`.
pub const TILE_ROWS: usize = DOT_THREADS;
/// Lanes of the final sum of the tile sums ([`sum_tiles`]).
pub const TILE_FINAL_LANES: usize = 1024;
const _: () = assert!(DOT_CHUNK.is_multiple_of(TILE_ROWS));

/// The tile partials of `<x, y>` (see [`TILE_ROWS`]) over one dot chunk (at most `DOT_CHUNK`
/// elements, starting a tile), appended to `out`. Whole tiles of double-double and td vectors
/// go through the SIMD kernel where the CPU has one; both paths give the same bits.
pub fn dot_tiles<P: Precision>(x: SliceOf<'_, P>, y: SliceOf<'_, P>, out: &mut Vec<P::Acc>) {
    assert_eq!(x.len(), y.len(), "dot_tiles: lengths");
    assert!(x.len() <= DOT_CHUNK, "dot_tiles: chunk too long");
    let mut done = 0;
    let whole = x.len() / TILE_ROWS * TILE_ROWS;
    if whole > 0 && simd_dd::available() && simd_dd::has_kernels::<P>() {
        let mut sums = [Dd::ZERO; DOT_CHUNK / TILE_ROWS];
        let sums = &mut sums[..whole / TILE_ROWS];
        let (xs, ys) = (x.split_at(whole).0, y.split_at(whole).0);
        // SAFETY: the SIMD kernels are available (checked above).
        unsafe { simd_dd::dot_tiles(simd_in::<P>(xs), simd_in::<P>(ys), sums) };
        // P is Dd or Td, so P::Acc is Dd: exact
        out.extend(sums.iter().map(|s| P::Acc::from_dd(*s)));
        done = whole;
    }
    let (x, y) = (x.split_at(done).1, y.split_at(done).1);
    // A long partial tile of double-doubles goes through the SIMD kernel too, padded with
    // zeros: a product of zeros is the zero lane the definition has there (+0, +0).
    if let (Some(xd), Some(yd)) = (
        x.as_slice().and_then(simd_dd::as_dd),
        y.as_slice().and_then(simd_dd::as_dd),
    ) && xd.len() >= TILE_ROWS / 4
        && simd_dd::available()
    {
        let (mut xp, mut yp) = ([Dd::ZERO; TILE_ROWS], [Dd::ZERO; TILE_ROWS]);
        xp[..xd.len()].copy_from_slice(xd);
        yp[..yd.len()].copy_from_slice(yd);
        let mut sum = [Dd::ZERO];
        // SAFETY: the SIMD kernels are available (checked above).
        unsafe { simd_dd::dot_tiles(simd_dd::SimdIn::Dd(&xp), simd_dd::SimdIn::Dd(&yp), &mut sum) };
        out.push(P::Acc::from_dd(sum[0]));
        return;
    }
    dot_tiles_scalar::<P>(x, y, out);
}

fma_kernel! {
    /// [`dot_tiles`] one element at a time, in `P::Acc`.
    fn dot_tiles_scalar<P>(x: SliceOf<'_, P>, y: SliceOf<'_, P>, out: &mut Vec<P::Acc>) {
        assert_eq!(x.len(), y.len(), "dot_tiles: lengths");
        for first in (0..x.len()).step_by(TILE_ROWS) {
            // Zeros, then the products over a plain range: a loop the compiler vectorises for
            // doubles. Choosing product or zero per lane inside `from_fn` kept double's tile
            // sums scalar (`benches/results/cpu.md`).
            let count = TILE_ROWS.min(x.len() - first);
            let mut lanes: [P::Acc; TILE_ROWS] = std::array::from_fn(|_| P::Acc::zero());
            for (t, lane) in lanes[..count].iter_mut().enumerate() {
                *lane = x.load(first + t).mul(&y.load(first + t));
            }
            out.push(tree_reduce_prefix(&mut lanes, count));
        }
    }
}

/// The sum of the tile partials (in `Acc`, as [`dot_tiles`] gives them), in the order of the
/// GPU's final block of `TILE_FINAL_LANES` threads: lane `t` sums tiles `t, t +
/// TILE_FINAL_LANES, ...` from zero, then the halving tree within each 32 lanes (a warp), then
/// over the 32 warp sums. The caller rounds the sum to `P`.
pub fn sum_tiles<A: Precision>(tiles: &[A]) -> A {
    const WARP: usize = 32;
    // Lanes past the last tile stay zero, and so do warps of such lanes (see
    // `tree_reduce_prefix`): only the lanes and warps tiles reach are stored and summed.
    let active = tiles.len().min(TILE_FINAL_LANES);
    let warps_active = active.div_ceil(WARP);
    let mut lanes: Vec<A> = vec![A::zero(); warps_active * WARP];
    for row in tiles.chunks(TILE_FINAL_LANES) {
        for (lane, t) in lanes.iter_mut().zip(row) {
            *lane = lane.add(t);
        }
    }
    let mut warps: [A; TILE_FINAL_LANES / WARP] = std::array::from_fn(|w| {
        if w < warps_active {
            let lanes_here = (active - w * WARP).min(WARP);
            tree_reduce_prefix(&mut lanes[w * WARP..(w + 1) * WARP], lanes_here)
        } else {
            A::zero()
        }
    });
    tree_reduce_prefix(&mut warps, warps_active)
}

// The element-wise updates: whole SIMD registers of double-double and td vectors through the
// SIMD kernels (scalars widened with `to_dd`, exact for both), the rest through the scalar
// bodies below; both give the same bits.

/// `y <- alpha x + y`.
pub fn axpy_chunk<P: Precision>(alpha: &P, x: SliceOf<'_, P>, y: SliceMutOf<'_, P>) {
    assert_eq!(x.len(), y.len(), "axpy: lengths");
    let at = simd_prefix::<P>(x.len());
    let ((xs, x), (ys, y)) = (x.split_at(at), y.split_at_mut(at));
    if at > 0 {
        let (xs, ys) = (simd_in::<P>(xs), simd_out::<P>(ys));
        // SAFETY: `simd_prefix` found the SIMD kernels available.
        unsafe { simd_dd::axpy(&alpha.to_dd(), xs, ys) };
    }
    axpy_chunk_scalar::<P, _>(alpha, Native(x), y);
}

/// [`axpy_chunk`] with `x` a double vector widened to `P` as it is read.
pub fn axpy_chunk_wide<P: Precision>(alpha: &P, x: &[f64], y: SliceMutOf<'_, P>) {
    assert_eq!(x.len(), y.len(), "axpy: lengths");
    let at = simd_prefix::<P>(x.len());
    let ((xs, x), (ys, y)) = (x.split_at(at), y.split_at_mut(at));
    if at > 0 {
        let (xs, ys) = (simd_dd::SimdIn::F64(xs), simd_out::<P>(ys));
        // SAFETY: `simd_prefix` found the SIMD kernels available.
        unsafe { simd_dd::axpy(&alpha.to_dd(), xs, ys) };
    }
    axpy_chunk_scalar::<P, _>(alpha, Widened(x), y);
}

/// `y <- x + beta y`.
pub fn xpay_chunk<P: Precision>(x: SliceOf<'_, P>, beta: &P, y: SliceMutOf<'_, P>) {
    assert_eq!(x.len(), y.len(), "xpay: lengths");
    let at = simd_prefix::<P>(x.len());
    let ((xs, x), (ys, y)) = (x.split_at(at), y.split_at_mut(at));
    if at > 0 {
        let (xs, ys) = (simd_in::<P>(xs), simd_out::<P>(ys));
        // SAFETY: `simd_prefix` found the SIMD kernels available.
        unsafe { simd_dd::xpay(xs, &beta.to_dd(), ys) };
    }
    xpay_chunk_scalar::<P, _>(Native(x), beta, y);
}

/// [`xpay_chunk`] with `x` a double vector widened to `P` as it is read.
pub fn xpay_chunk_wide<P: Precision>(x: &[f64], beta: &P, y: SliceMutOf<'_, P>) {
    assert_eq!(x.len(), y.len(), "xpay: lengths");
    let at = simd_prefix::<P>(x.len());
    let ((xs, x), (ys, y)) = (x.split_at(at), y.split_at_mut(at));
    if at > 0 {
        let (xs, ys) = (simd_dd::SimdIn::F64(xs), simd_out::<P>(ys));
        // SAFETY: `simd_prefix` found the SIMD kernels available.
        unsafe { simd_dd::xpay(xs, &beta.to_dd(), ys) };
    }
    xpay_chunk_scalar::<P, _>(Widened(x), beta, y);
}

/// `z <- alpha x + y`.
pub fn axpyz_chunk<P: Precision>(
    alpha: &P,
    x: SliceOf<'_, P>,
    y: SliceOf<'_, P>,
    z: SliceMutOf<'_, P>,
) {
    assert!(x.len() == y.len() && y.len() == z.len(), "axpyz: lengths");
    let at = simd_prefix::<P>(x.len());
    let ((xs, x), (ys, y), (zs, z)) = (x.split_at(at), y.split_at(at), z.split_at_mut(at));
    if at > 0 {
        let (xs, ys, zs) = (simd_in::<P>(xs), simd_in::<P>(ys), simd_out::<P>(zs));
        // SAFETY: `simd_prefix` found the SIMD kernels available.
        unsafe { simd_dd::axpyz(&alpha.to_dd(), xs, ys, zs) };
    }
    axpyz_chunk_scalar::<P>(alpha, x, y, z);
}

/// `p <- r + beta (p - omega v)`.
pub fn bicgstab_direction_chunk<P: Precision>(
    r: SliceOf<'_, P>,
    beta: &P,
    omega: &P,
    v: SliceOf<'_, P>,
    p: SliceMutOf<'_, P>,
) {
    assert!(
        r.len() == v.len() && v.len() == p.len(),
        "bicgstab_direction: lengths"
    );
    let at = simd_prefix::<P>(r.len());
    let ((rs, r), (vs, v), (ps, p)) = (r.split_at(at), v.split_at(at), p.split_at_mut(at));
    if at > 0 {
        let (rs, vs, ps) = (simd_in::<P>(rs), simd_in::<P>(vs), simd_out::<P>(ps));
        let (beta_d, omega_d) = (beta.to_dd(), omega.to_dd());
        // SAFETY: `simd_prefix` found the SIMD kernels available.
        unsafe { simd_dd::bicgstab_direction(rs, &beta_d, &omega_d, vs, ps) };
    }
    bicgstab_direction_chunk_scalar::<P>(r, beta, omega, v, p);
}

/// `y <- x` (the values as stored: no rounding); one slice copy where both are stored as
/// values.
pub fn copy_chunk<P: Precision>(x: SliceOf<'_, P>, mut y: SliceMutOf<'_, P>) {
    assert_eq!(x.len(), y.len(), "copy: lengths");
    if let Some(xs) = x.as_slice()
        && let Ok(ys) = <P::Vector as HostVector<P>>::lend(&mut y).into_slice()
    {
        ys.clone_from_slice(xs);
        return;
    }
    for i in 0..x.len() {
        y.set(i, x.get(i).into_owned());
    }
}

/// `y <- x` converted through double-double (`Q::from_dd(P::to_dd(x_i))`).
pub fn convert_chunk<P: Precision, Q: Precision>(x: SliceOf<'_, P>, mut y: SliceMutOf<'_, Q>) {
    assert_eq!(x.len(), y.len(), "convert: lengths");
    for i in 0..x.len() {
        y.set(i, Q::from_dd(x.get(i).to_dd()));
    }
}

// The scalar bodies of the element-wise updates: each output element is computed in `P::Acc`
// from the widened inputs and scalars and rounded to `P` once, when it is stored.

fma_kernel! {
    /// `y <- alpha x + y`.
    fn axpy_chunk_scalar<P, X: AccSource<P>>(alpha: &P, x: X, y: SliceMutOf<'_, P>) {
        assert_eq!(x.len(), y.len(), "axpy: lengths");
        let (alpha, mut y) = (alpha.to_acc(), y);
        for i in 0..x.len() {
            let yi = alpha.mul(&x.load(i)).add(&y.load(i));
            y.set(i, P::from_acc(yi));
        }
    }
}

fma_kernel! {
    /// `y <- x + beta y`.
    fn xpay_chunk_scalar<P, X: AccSource<P>>(x: X, beta: &P, y: SliceMutOf<'_, P>) {
        assert_eq!(x.len(), y.len(), "xpay: lengths");
        let (beta, mut y) = (beta.to_acc(), y);
        for i in 0..x.len() {
            let yi = x.load(i).add(&beta.mul(&y.load(i)));
            y.set(i, P::from_acc(yi));
        }
    }
}

fma_kernel! {
    /// `z <- alpha x + y`.
    fn axpyz_chunk_scalar<P>(alpha: &P, x: SliceOf<'_, P>, y: SliceOf<'_, P>, z: SliceMutOf<'_, P>) {
        assert!(x.len() == y.len() && y.len() == z.len(), "axpyz: lengths");
        let (alpha, mut z) = (alpha.to_acc(), z);
        for i in 0..x.len() {
            z.set(i, P::from_acc(alpha.mul(&x.load(i)).add(&y.load(i))));
        }
    }
}

fma_kernel! {
    /// `p <- r + beta (p - omega v)`: `t = -omega v + p`, then `r + beta t`, in the operation
    /// order of the unfused `axpy(-omega, v, p); xpay(r, beta, p)`, all in `P::Acc` with one
    /// rounding at the store. Where `Acc` is `P` that is the unfused bits; for td the fused
    /// kernel skips the rounding of `t` (both backends fuse it).
    fn bicgstab_direction_chunk_scalar<P>(r: SliceOf<'_, P>, beta: &P, omega: &P, v: SliceOf<'_, P>, p: SliceMutOf<'_, P>) {
        assert!(r.len() == v.len() && v.len() == p.len(), "bicgstab_direction: lengths");
        let minus_omega = omega.to_acc().neg();
        let (beta, mut p) = (beta.to_acc(), p);
        for i in 0..r.len() {
            let t = minus_omega.mul(&v.load(i)).add(&p.load(i));
            p.set(i, P::from_acc(r.load(i).add(&beta.mul(&t))));
        }
    }
}
