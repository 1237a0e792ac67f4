//! Serial kernel bodies the CPU backend runs on each parallel chunk.
//!
//! Each body is compiled twice by [`fma_kernel!`]: once inside a `#[target_feature(enable = "fma")]`
//! function (so the double-double TwoProd's `mul_add` becomes one instruction) and once plain;
//! the FMA flavour runs when the CPU has FMA. Both give the same bits (see `precision::dd`).
//! Double-double data goes to the SIMD kernels of [`simd_dd`] where the CPU runs them (same bits
//! again); the public functions here choose.

use super::simd_dd;
use crate::precision::{Precision, fma_available};
use crate::sparse::CsrMatrix;

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

/// The halving tree over `DOT_THREADS` lane sums; the result is in lane 0.
#[inline(always)]
fn tree_reduce<A: Precision>(lanes: &mut [A]) -> A {
    let mut off = lanes.len() / 2;
    while off > 0 {
        for t in 0..off {
            lanes[t] = lanes[t].add(&lanes[t + off]);
        }
        off /= 2;
    }
    lanes[0].clone()
}

/// Define `fn $name<P: Precision>(...)` that runs `$body` compiled with FMA when available.
macro_rules! fma_kernel {
    ($(#[$meta:meta])* fn $name:ident<$P:ident>($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        #[inline]
        pub fn $name<$P: Precision>($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body<$P: Precision>($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "fma")]
                unsafe fn with_fma<$P: Precision>($($arg: $ty),*) $(-> $ret)? {
                    body::<$P>($($arg),*)
                }
                if fma_available() {
                    // SAFETY: `fma_available()` confirmed the CPU executes FMA instructions.
                    return unsafe { with_fma::<$P>($($arg),*) };
                }
            }
            body::<$P>($($arg),*)
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
    x: &[P],
    first: usize,
    out: &mut [P],
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
    // Whole groups of rows for the SIMD kernel: `first + lo .. first + hi`.
    let w = sell.map_or(1, simd_dd::Sell::rows_at_once);
    let lo = (first.next_multiple_of(w) - first).min(out.len());
    let hi = lo + (out.len() - lo) / w * w;
    if let Some(sell) = sell
        && hi > lo
        && sell.built_for(a)
        && simd_dd::supports_lanes(lanes)
        && let Some(x_dd) = simd_dd::as_dd(x)
    {
        let (head, rest) = out.split_at_mut(lo);
        let (middle, tail) = rest.split_at_mut(hi - lo);
        spmv_rows_scalar(a, lanes, x, first, head, b.map(|b| &b[..lo]));
        spmv_rows_scalar(a, lanes, x, first + hi, tail, b.map(|b| &b[hi..]));
        let middle = simd_dd::as_dd_mut(middle).expect("P is Dd");
        // SAFETY: the SIMD kernel is available and takes this lane count, `sell` was built
        // from `a`, the rows are whole groups and the sizes were checked above.
        unsafe {
            simd_dd::spmv_rows(
                a,
                sell,
                lanes,
                x_dd,
                first + lo,
                middle,
                b.map(|b| &b[lo..hi]),
            );
        }
        return;
    }
    spmv_rows_scalar(a, lanes, x, first, out, b);
}

fma_kernel! {
    /// Rows `first..first + out.len()` of `A x` (or of `b - A x` when `b` is given), one at a
    /// time, by the operations of `P`: the definition [`spmv_rows`] describes.
    ///
    /// The lane counts [`spmv_lanes`](crate::backend::spmv_lanes) produces (powers of two up to
    /// 32) each get their own code, unrolled for that count; any other count takes the plain
    /// loop. All paths perform the same operations in the same order on every value.
    fn spmv_rows_scalar<P>(a: &CsrMatrix, lanes: usize, x: &[P], first: usize, out: &mut [P], b: Option<&[f64]>) {
        assert_eq!(x.len(), a.ncols(), "spmv_rows: x length");
        assert!(first + out.len() <= a.nrows(), "spmv_rows: rows out of range");
        assert!(lanes >= 1, "spmv_rows: no lanes");
        if let Some(b) = b {
            assert_eq!(b.len(), out.len(), "spmv_rows: b length");
        }
        match lanes {
            1 => spmv_rows_lanes::<P, 1>(a, x, first, out, b),
            2 => spmv_rows_lanes::<P, 2>(a, x, first, out, b),
            4 => spmv_rows_lanes::<P, 4>(a, x, first, out, b),
            8 => spmv_rows_lanes::<P, 8>(a, x, first, out, b),
            16 => spmv_rows_lanes::<P, 16>(a, x, first, out, b),
            32 => spmv_rows_lanes::<P, 32>(a, x, first, out, b),
            _ => spmv_rows_any_lanes(a, lanes, x, first, out, b),
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
fn spmv_rows_lanes<P: Precision, const L: usize>(
    a: &CsrMatrix,
    x: &[P],
    first: usize,
    out: &mut [P],
    b: Option<&[f64]>,
) {
    let (row_ptr, cols, vals) = (a.row_ptr(), a.col_idx(), a.values());
    // `row_ptr[first..=first + out.len()]`: in bounds since `first + out.len() <= nrows`.
    let row_ptr = &row_ptr[first..first + out.len() + 1];
    for (i, y) in out.iter_mut().enumerate() {
        // SAFETY (all unchecked accesses below): `i + 1 < row_ptr.len()`; by the invariants
        // `CsrMatrix` validates on construction and never lets change, row pointers are
        // non-decreasing and at most `nnz`, `col_idx` and `values` have `nnz` entries, and every
        // column index lies in `0..ncols == x.len()`. So `start <= k < end <= nnz` indexes
        // `cols` and `vals`, and `cols[k]` indexes `x`.
        let (mut k, end) = unsafe { (*row_ptr.get_unchecked(i), *row_ptr.get_unchecked(i + 1)) };
        let mut s: [P::Acc; L] = std::array::from_fn(|_| P::Acc::zero());
        // `(a_k, &x[col_k])` for `start <= k < end`.
        let entry = |k: usize| unsafe {
            (
                *vals.get_unchecked(k),
                x.get_unchecked(*cols.get_unchecked(k) as usize),
            )
        };
        // Whole chunks of `L` entries, lane `l` taking entry `k + l`...
        while end - k >= L {
            for (l, lane) in s.iter_mut().enumerate() {
                let (v, xk) = entry(k + l);
                *lane = lane.add_mul_f64(v, &xk.to_acc());
            }
            k += L;
        }
        // ...then the partial last chunk (a constant trip count, so that it unrolls).
        for (l, lane) in s.iter_mut().enumerate() {
            if l < end - k {
                let (v, xk) = entry(k + l);
                *lane = lane.add_mul_f64(v, &xk.to_acc());
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
        *y = finish_row::<P>(sum, b.map(|b| b[i]));
    }
}

/// [`spmv_rows`] for any lane count (the definition, as a plain loop).
#[inline(always)]
fn spmv_rows_any_lanes<P: Precision>(
    a: &CsrMatrix,
    lanes: usize,
    x: &[P],
    first: usize,
    out: &mut [P],
    b: Option<&[f64]>,
) {
    let row_ptr = a.row_ptr();
    let cols = a.col_idx();
    let vals = a.values();
    let mut lane_sums: Vec<P::Acc> = vec![P::Acc::zero(); lanes];
    for (i, y) in out.iter_mut().enumerate() {
        let row = first + i;
        let (start, end) = (row_ptr[row], row_ptr[row + 1]);
        for s in lane_sums.iter_mut() {
            *s = P::Acc::zero();
        }
        let mut k = start;
        while k < end {
            let stop = (k + lanes).min(end);
            for (lane, kk) in (k..stop).enumerate() {
                lane_sums[lane] =
                    lane_sums[lane].add_mul_f64(vals[kk], &x[cols[kk] as usize].to_acc());
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
        *y = finish_row::<P>(lane_sums[0].clone(), b.map(|b| b[i]));
    }
}

/// `<x, y>` over one chunk of at most `DOT_CHUNK` elements, in the GPU block's order (see
/// [`DOT_THREADS`]), computed and returned in `P::Acc` (a partial of the reduction).
/// Double-double chunks go through the SIMD kernel where the CPU has one; both paths give the
/// same bits.
pub fn dot_chunk<P: Precision>(x: &[P], y: &[P]) -> P::Acc {
    assert_eq!(x.len(), y.len(), "dot_chunk: lengths");
    assert!(x.len() <= DOT_CHUNK, "dot_chunk: chunk too long");
    if let (Some(xd), Some(yd)) = (simd_dd::as_dd(x), simd_dd::as_dd(y))
        && simd_dd::available()
    {
        // SAFETY: the SIMD kernels are available.
        let sum = unsafe { simd_dd::dot_chunk(xd, yd) };
        return P::Acc::from_dd(sum); // P is Dd, so P::Acc is Dd: exact
    }
    dot_chunk_scalar(x, y)
}

fma_kernel! {
    /// `<x, y>` over one chunk of at most `DOT_CHUNK` elements, in the GPU block's order,
    /// in `P::Acc` (lanes, products and tree).
    fn dot_chunk_scalar<P>(x: &[P], y: &[P]) -> P::Acc {
        let mut lanes: [P::Acc; DOT_THREADS] = std::array::from_fn(|_| P::Acc::zero());
        for (x, y) in x.chunks(DOT_THREADS).zip(y.chunks(DOT_THREADS)) {
            for ((lane, xi), yi) in lanes.iter_mut().zip(x).zip(y) {
                *lane = lane.add(&xi.to_acc().mul(&yi.to_acc()));
            }
        }
        tree_reduce(&mut lanes)
    }
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
    tree_reduce(&mut lanes)
}

/// `y <- alpha x + y`.
pub fn axpy_chunk<P: Precision>(alpha: &P, x: &[P], y: &mut [P]) {
    assert_eq!(x.len(), y.len(), "axpy: lengths");
    let mut done = 0;
    if let (Some(alpha), Some(xd)) = (simd_dd::as_dd_ref(alpha), simd_dd::as_dd(x))
        && simd_dd::available()
    {
        let yd = simd_dd::as_dd_mut(y).expect("P is Dd");
        // SAFETY: the SIMD kernels are available.
        done = unsafe { simd_dd::axpy(alpha, xd, yd) };
    }
    axpy_chunk_scalar(alpha, &x[done..], &mut y[done..]);
}

/// `y <- x + beta y`.
pub fn xpay_chunk<P: Precision>(x: &[P], beta: &P, y: &mut [P]) {
    assert_eq!(x.len(), y.len(), "xpay: lengths");
    let mut done = 0;
    if let (Some(beta), Some(xd)) = (simd_dd::as_dd_ref(beta), simd_dd::as_dd(x))
        && simd_dd::available()
    {
        let yd = simd_dd::as_dd_mut(y).expect("P is Dd");
        // SAFETY: the SIMD kernels are available.
        done = unsafe { simd_dd::xpay(xd, beta, yd) };
    }
    xpay_chunk_scalar(&x[done..], beta, &mut y[done..]);
}

/// `z <- alpha x + y`.
pub fn axpyz_chunk<P: Precision>(alpha: &P, x: &[P], y: &[P], z: &mut [P]) {
    assert!(x.len() == y.len() && y.len() == z.len(), "axpyz: lengths");
    let mut done = 0;
    if let (Some(alpha), Some(xd), Some(yd)) = (
        simd_dd::as_dd_ref(alpha),
        simd_dd::as_dd(x),
        simd_dd::as_dd(y),
    ) && simd_dd::available()
    {
        let zd = simd_dd::as_dd_mut(z).expect("P is Dd");
        // SAFETY: the SIMD kernels are available.
        done = unsafe { simd_dd::axpyz(alpha, xd, yd, zd) };
    }
    axpyz_chunk_scalar(alpha, &x[done..], &y[done..], &mut z[done..]);
}

/// `p <- r + beta (p - omega v)`.
pub fn bicgstab_direction_chunk<P: Precision>(r: &[P], beta: &P, omega: &P, v: &[P], p: &mut [P]) {
    assert!(
        r.len() == v.len() && v.len() == p.len(),
        "bicgstab_direction: lengths"
    );
    let mut done = 0;
    if let (Some(beta_d), Some(omega_d), Some(rd), Some(vd)) = (
        simd_dd::as_dd_ref(beta),
        simd_dd::as_dd_ref(omega),
        simd_dd::as_dd(r),
        simd_dd::as_dd(v),
    ) && simd_dd::available()
    {
        let pd = simd_dd::as_dd_mut(p).expect("P is Dd");
        // SAFETY: the SIMD kernels are available.
        done = unsafe { simd_dd::bicgstab_direction(rd, beta_d, omega_d, vd, pd) };
    }
    bicgstab_direction_chunk_scalar(&r[done..], beta, omega, &v[done..], &mut p[done..]);
}

// The element-wise updates: each output element is computed in `P::Acc` from the widened
// inputs and scalars and rounded to `P` once, when it is stored.

fma_kernel! {
    /// `y <- alpha x + y`.
    fn axpy_chunk_scalar<P>(alpha: &P, x: &[P], y: &mut [P]) {
        let alpha = alpha.to_acc();
        for (yi, xi) in y.iter_mut().zip(x) {
            *yi = P::from_acc(alpha.mul(&xi.to_acc()).add(&yi.to_acc()));
        }
    }
}

fma_kernel! {
    /// `y <- x + beta y`.
    fn xpay_chunk_scalar<P>(x: &[P], beta: &P, y: &mut [P]) {
        let beta = beta.to_acc();
        for (yi, xi) in y.iter_mut().zip(x) {
            *yi = P::from_acc(xi.to_acc().add(&beta.mul(&yi.to_acc())));
        }
    }
}

fma_kernel! {
    /// `z <- alpha x + y`.
    fn axpyz_chunk_scalar<P>(alpha: &P, x: &[P], y: &[P], z: &mut [P]) {
        let alpha = alpha.to_acc();
        for ((zi, xi), yi) in z.iter_mut().zip(x).zip(y) {
            *zi = P::from_acc(alpha.mul(&xi.to_acc()).add(&yi.to_acc()));
        }
    }
}

fma_kernel! {
    /// `p <- r + beta (p - omega v)`: `t = -omega v + p`, then `r + beta t`, in the operation
    /// order of the unfused `axpy(-omega, v, p); xpay(r, beta, p)`, all in `P::Acc` with one
    /// rounding at the store. Where `Acc` is `P` that is the unfused bits; for td the fused
    /// kernel skips the rounding of `t` (both backends fuse it).
    fn bicgstab_direction_chunk_scalar<P>(r: &[P], beta: &P, omega: &P, v: &[P], p: &mut [P]) {
        let minus_omega = omega.to_acc().neg();
        let beta = beta.to_acc();
        for ((pi, ri), vi) in p.iter_mut().zip(r).zip(v) {
            let t = minus_omega.mul(&vi.to_acc()).add(&pi.to_acc());
            *pi = P::from_acc(ri.to_acc().add(&beta.mul(&t)));
        }
    }
}
