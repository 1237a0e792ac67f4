//! Updates fused with the dot products that follow them: CG's step as two passes over the
//! vectors instead of five, BiCGStab's `s` and `r` updates with their norms. Each pass works on
//! the dot product's chunks ([`DOT_CHUNK`] elements, one task each) and computes a chunk's
//! partial right after writing the chunk, while it is still in cache; the partials are the ones
//! `dot` computes over the same chunks, so the bits are those of the unfused kernels, except
//! the dots summed beside an SpMV (CG's `<p, q>`, BiCGStab's `<r~, v>`, `<t, t>` and `<t, s>`),
//! which follow the tiled order of [`kernels::TILE_ROWS`] (what the GPU can compute inside its
//! SpMV) and equal [`dot_tiled`].

use super::kernels::{self, DOT_CHUNK};
use super::{CpuMatrix, CpuVector, VECTOR_CHUNK, tasks};
use crate::backend::{Operand, TiledDots, cg_step_accepts};
use crate::precision::{HostSlice, HostSliceMut, HostVector, Precision, SliceOf};

/// The length of either kind of operand.
fn operand_len<P: Precision>(x: &Operand<'_, CpuVector<P>, CpuVector<f64>>) -> usize {
    match x {
        Operand::Own(x) => x.len(),
        Operand::Wide(x) => x.len(),
    }
}

/// Elements `first..first + len` of `x`.
fn piece<'a, P: Precision>(x: SliceOf<'a, P>, first: usize, len: usize) -> SliceOf<'a, P> {
    x.split_at(first).1.split_at(len).0
}

/// `q <- A x` with the dot products `dots` asks for, in the tiled order of
/// [`kernels::TILE_ROWS`] (the order the GPU's fused kernels give): per dot chunk, the SpMV rows
/// then the chunk's tile partials, while `q` is in cache.
pub(super) fn spmv_dots<P: Precision>(
    a: &CpuMatrix,
    x: Operand<'_, CpuVector<P>, CpuVector<f64>>,
    dots: TiledDots<'_, CpuVector<P>>,
    q: &mut CpuVector<P>,
) -> (P, P) {
    assert_eq!(a.csr.nrows(), a.csr.ncols(), "spmv_dots: a square matrix");
    let tiles = spmv_dot_tiles(a, x, dots, q, 0..a.csr.nrows());
    let total = |k: usize| P::from_acc(kernels::sum_tiles(&tiles[k]));
    match dots {
        TiledDots::With(_) => (total(0), P::zero()),
        TiledDots::SelfAnd(_) => (total(0), total(1)),
    }
}

/// [`spmv_dots`]'s tile partials, in order (the second list empty for [`TiledDots::With`]),
/// for rows of a matrix whose `x` may be longer than `q` (a rank's rows, `x` with its halo).
/// Only `rows` (a range starting a tile) are computed, and only their tiles returned: a rank
/// computes its interior rows while its halo is in flight, then the others.
pub(super) fn spmv_dot_tiles<P: Precision>(
    a: &CpuMatrix,
    x: Operand<'_, CpuVector<P>, CpuVector<f64>>,
    dots: TiledDots<'_, CpuVector<P>>,
    q: &mut CpuVector<P>,
    rows: std::ops::Range<usize>,
) -> [Vec<P::Acc>; 2] {
    let csr = &*a.csr;
    let w = dots.other();
    assert!(
        operand_len(&x) == csr.ncols() && q.len() == csr.nrows() && w.len() == q.len(),
        "spmv_dots: lengths"
    );
    if rows.is_empty() {
        return Default::default();
    }
    assert!(
        rows.start.is_multiple_of(kernels::TILE_ROWS) && rows.end <= csr.nrows(),
        "spmv_dots: rows"
    );
    let sell = a.sell_for::<P>();
    let ws = w.slice();
    // Tasks of whole tiles, balanced by nonzeros: the tile partials are the same whoever
    // computes them, and they are collected in order.
    let share = (csr.row_ptr()[rows.end] - csr.row_ptr()[rows.start]) + rows.len();
    let work = share.saturating_mul(tasks::cost::<P>());
    let ranges: Vec<_> = tasks::row_ranges(csr, tasks::task_count(work), kernels::TILE_ROWS)
        .into_iter()
        .map(|r| r.start.max(rows.start)..r.end.min(rows.end))
        .filter(|r| !r.is_empty())
        .collect();
    let (_, from_rows) = q.slice_mut().split_at_mut(rows.start);
    let pieces = tasks::split_mut(from_rows, &ranges);
    let jobs: Vec<_> = pieces.into_iter().zip(&ranges).collect();
    let tiles: Vec<[Vec<P::Acc>; 2]> = tasks::map(jobs, work, |_, (mut out, range)| {
        let (first, len) = (range.start, out.len());
        let rows = P::Vector::lend(&mut out);
        match x {
            Operand::Own(x) => {
                kernels::spmv_rows::<P>(csr, a.lanes, sell, x.slice(), first, rows, None)
            }
            Operand::Wide(x) => kernels::spmv_rows_wide::<P>(csr, a.lanes, sell, &x.0, first, rows),
        }
        let (wc, qc) = (piece::<P>(ws, first, len), P::Vector::read_back(&out));
        let mut sums: [Vec<P::Acc>; 2] = Default::default();
        // a task may span several dot chunks; each tile's partial is its own either way
        for (w, q) in wc.chunks(DOT_CHUNK).into_iter().zip(qc.chunks(DOT_CHUNK)) {
            match dots {
                TiledDots::With(_) => kernels::dot_tiles::<P>(w, q, &mut sums[0]),
                TiledDots::SelfAnd(_) => {
                    kernels::dot_tiles::<P>(q, q, &mut sums[0]);
                    kernels::dot_tiles::<P>(q, w, &mut sums[1]);
                }
            }
        }
        sums
    });
    let all = |k: usize| tiles.iter().flat_map(|t| t[k].iter().cloned()).collect();
    [all(0), all(1)]
}

/// The tile partials of `<x, y>` in the order of CG's `<p, q>` beside its SpMV
/// ([`kernels::TILE_ROWS`]), not the order of `dot`.
pub(super) fn dot_tiles<P: Precision>(x: &CpuVector<P>, y: &CpuVector<P>) -> Vec<P::Acc> {
    assert_eq!(x.len(), y.len(), "dot_tiled: lengths");
    let chunks = x.slice().chunks(DOT_CHUNK).into_iter();
    let chunks: Vec<_> = chunks.zip(y.slice().chunks(DOT_CHUNK)).collect();
    let tiles: Vec<Vec<P::Acc>> = tasks::map(chunks, super::work::<P>(x.len()), |_, (x, y)| {
        let mut tiles = Vec::with_capacity(DOT_CHUNK / kernels::TILE_ROWS);
        kernels::dot_tiles::<P>(x, y, &mut tiles);
        tiles
    });
    tiles.concat()
}

/// `r <- r - alpha q`, returning `<r, r>`.
pub(super) fn update_norm<P: Precision>(alpha: &P, q: &CpuVector<P>, r: &mut CpuVector<P>) -> P {
    assert_eq!(q.len(), r.len(), "cg update: lengths");
    let minus_alpha = alpha.neg();
    let qs = q.slice();
    let work = super::work::<P>(r.len());
    let chunks = r.slice_mut().chunks_mut(DOT_CHUNK);
    let partials: Vec<P::Acc> = tasks::map(chunks, work, |chunk, mut rc| {
        let (first, len) = (chunk * DOT_CHUNK, rc.len());
        let qc = piece::<P>(qs, first, len);
        kernels::axpy_chunk::<P>(&minus_alpha, qc, P::Vector::lend(&mut rc));
        let rc = P::Vector::read_back(&rc);
        kernels::dot_chunk::<P>(rc, rc)
    });
    P::from_acc(kernels::sum_partials(&partials))
}

/// `z <- alpha x + y` (or `y <- alpha x + y` when `y` is `None`), returning `<z, z>` and, where
/// `w` is given, `<w, z>` (BiCGStab's `r` update with the next `rho = <r~, r>`), else zero.
pub(super) fn axpyz_norm<P: Precision>(
    alpha: &P,
    x: &CpuVector<P>,
    y: Option<&CpuVector<P>>,
    z: &mut CpuVector<P>,
    w: Option<&CpuVector<P>>,
) -> (P, P) {
    let (zz, wz): (Vec<P::Acc>, Vec<P::Acc>) =
        axpyz_norm_partials(alpha, x, y, z, w).into_iter().unzip();
    let wz = match w {
        Some(_) => P::from_acc(kernels::sum_partials(&wz)),
        None => P::zero(),
    };
    (P::from_acc(kernels::sum_partials(&zz)), wz)
}

/// [`axpyz_norm`] before the final sums: each chunk's partials of `<z, z>` and `<w, z>` (zero
/// without `w`), in order, as [`dot_partials_of`](super::dot_partials_of) gives them (a
/// rank's block of a distributed solve gathers them).
pub(super) fn axpyz_norm_partials<P: Precision>(
    alpha: &P,
    x: &CpuVector<P>,
    y: Option<&CpuVector<P>>,
    z: &mut CpuVector<P>,
    w: Option<&CpuVector<P>>,
) -> Vec<(P::Acc, P::Acc)> {
    let n = z.len();
    assert!(
        x.len() == n && y.is_none_or(|y| y.len() == n) && w.is_none_or(|w| w.len() == n),
        "axpyz_norm: lengths"
    );
    let (xs, ys, ws) = (x.slice(), y.map(CpuVector::slice), w.map(CpuVector::slice));
    let work = super::work::<P>(n);
    let chunks = z.slice_mut().chunks_mut(DOT_CHUNK);
    tasks::map(chunks, work, |chunk, mut zc| {
        let (first, len) = (chunk * DOT_CHUNK, zc.len());
        let xc = piece::<P>(xs, first, len);
        match ys {
            Some(ys) => {
                let yc = piece::<P>(ys, first, len);
                kernels::axpyz_chunk::<P>(alpha, xc, yc, P::Vector::lend(&mut zc))
            }
            None => kernels::axpy_chunk::<P>(alpha, xc, P::Vector::lend(&mut zc)),
        }
        let zc = P::Vector::read_back(&zc);
        let wz = match ws {
            Some(ws) => kernels::dot_chunk::<P>(piece::<P>(ws, first, len), zc),
            None => P::Acc::zero(),
        };
        (kernels::dot_chunk::<P>(zc, zc), wz)
    })
}

/// [`Backend::x_update`](crate::backend::Backend::x_update): per chunk, `x <- x + alpha p` then
/// `x <- x + omega s` while the chunk of `x` is in cache (the bits of two axpys).
pub(super) fn x_update<P: Precision>(
    alpha: &P,
    p: &CpuVector<P>,
    omega: &P,
    s: &CpuVector<P>,
    x: &mut CpuVector<P>,
) {
    let n = x.len();
    assert!(p.len() == n && s.len() == n, "x_update: lengths");
    let (ps, ss) = (p.slice(), s.slice());
    let chunks = x.slice_mut().chunks_mut(VECTOR_CHUNK);
    tasks::for_each(chunks, super::work::<P>(n), |chunk, mut xc| {
        let (first, len) = (chunk * VECTOR_CHUNK, xc.len());
        let pc = piece::<P>(ps, first, len);
        kernels::axpy_chunk::<P>(alpha, pc, P::Vector::lend(&mut xc));
        let sc = piece::<P>(ss, first, len);
        kernels::axpy_chunk::<P>(omega, sc, P::Vector::lend(&mut xc));
    });
}

/// [`Backend::cg_step`](crate::backend::Backend::cg_step) from the two passes above.
pub(super) fn cg_step<P: Precision>(
    a: &CpuMatrix,
    rho: &P,
    p: &CpuVector<P>,
    q: &mut CpuVector<P>,
    r: &mut CpuVector<P>,
) -> (P, P) {
    let (pq, _) = spmv_dots(a, Operand::Own(p), TiledDots::With(p), q);
    if !cg_step_accepts(&pq) {
        return (pq, P::zero());
    }
    let rr = update_norm(&rho.div(&pq), q, r);
    (pq, rr)
}

/// [`Backend::cg_direction`](crate::backend::Backend::cg_direction): per chunk, `x <- x +
/// alpha p` then `p <- z + beta p` while the chunk of `p` is in cache.
pub(super) fn cg_direction<P: Precision>(
    alpha: &P,
    z: Operand<'_, CpuVector<P>, CpuVector<f64>>,
    beta: &P,
    p: &mut CpuVector<P>,
    x: &mut CpuVector<P>,
) {
    let n = p.len();
    assert!(
        operand_len(&z) == n && x.len() == n,
        "cg_direction: lengths"
    );
    let chunks = p.slice_mut().chunks_mut(VECTOR_CHUNK).into_iter();
    let chunks: Vec<_> = chunks.zip(x.slice_mut().chunks_mut(VECTOR_CHUNK)).collect();
    tasks::for_each(chunks, super::work::<P>(n), |chunk, (mut pc, xc)| {
        let (first, len) = (chunk * VECTOR_CHUNK, pc.len());
        kernels::axpy_chunk::<P>(alpha, P::Vector::read_back(&pc), xc);
        match &z {
            Operand::Own(z) => {
                let zc = piece::<P>(z.slice(), first, len);
                kernels::xpay_chunk::<P>(zc, beta, P::Vector::lend(&mut pc));
            }
            Operand::Wide(z) => {
                let zc = &z.0[first..first + len];
                kernels::xpay_chunk_wide::<P>(zc, beta, P::Vector::lend(&mut pc));
            }
        }
    });
}
