//! Updates fused with the dot products that follow them: CG's step as two passes over the
//! vectors instead of five, BiCGStab's `s` and `r` updates with their norms. Each pass works on
//! the dot product's chunks ([`DOT_CHUNK`] elements, one rayon task each) and computes a chunk's
//! partial right after writing the chunk, while it is still in cache; the partials are the ones
//! `dot` computes over the same chunks, so the bits are those of the unfused kernels, except
//! CG's `<p, q>`, which follows the tiled order of [`kernels::TILE_ROWS`] (what the GPU can
//! compute inside its SpMV) and equals [`dot_tiled`].

use super::kernels::{self, DOT_CHUNK};
use super::{CpuMatrix, CpuVector, VECTOR_CHUNK};
use crate::backend::cg_step_accepts;
use crate::precision::{HostSlice, HostSliceMut, HostVector, Precision, SliceOf};
use rayon::prelude::*;

/// Elements `first..first + len` of `x`.
fn piece<'a, P: Precision>(x: SliceOf<'a, P>, first: usize, len: usize) -> SliceOf<'a, P> {
    x.split_at(first).1.split_at(len).0
}

/// `q <- A p`, returning `<p, q>` in the tiled order of [`kernels::TILE_ROWS`] (the order the
/// GPU's fused kernel gives).
pub(super) fn spmv_dot<P: Precision>(a: &CpuMatrix, p: &CpuVector<P>, q: &mut CpuVector<P>) -> P {
    let csr = &*a.csr;
    assert!(
        p.len() == csr.ncols() && q.len() == csr.nrows() && csr.nrows() == csr.ncols(),
        "spmv_dot: a square matrix and vectors of its size"
    );
    let sell = a.sell_for::<P>();
    let ps = p.slice();
    let tiles: Vec<Vec<P::Acc>> = q
        .slice_mut()
        .chunks_mut(DOT_CHUNK)
        .into_par_iter()
        .enumerate()
        .map(|(chunk, mut out)| {
            let (first, len) = (chunk * DOT_CHUNK, out.len());
            let rows = P::Vector::lend(&mut out);
            kernels::spmv_rows::<P>(csr, a.lanes, sell, ps, first, rows, None);
            let mut tiles = Vec::with_capacity(DOT_CHUNK / kernels::TILE_ROWS);
            let (pc, qc) = (piece::<P>(ps, first, len), P::Vector::read_back(&out));
            kernels::dot_tiles::<P>(pc, qc, &mut tiles);
            tiles
        })
        .collect();
    P::from_acc(kernels::sum_tiles(&tiles.concat()))
}

/// `<x, y>` in the order of CG's `<p, q>` beside its SpMV ([`kernels::TILE_ROWS`]), not the
/// order of `dot`.
pub(super) fn dot_tiled<P: Precision>(x: &CpuVector<P>, y: &CpuVector<P>) -> P {
    assert_eq!(x.len(), y.len(), "dot_tiled: lengths");
    let xs = x.slice().chunks(DOT_CHUNK);
    let ys = y.slice().chunks(DOT_CHUNK);
    let tiles: Vec<Vec<P::Acc>> = xs
        .into_par_iter()
        .zip(ys)
        .map(|(x, y)| {
            let mut tiles = Vec::with_capacity(DOT_CHUNK / kernels::TILE_ROWS);
            kernels::dot_tiles::<P>(x, y, &mut tiles);
            tiles
        })
        .collect();
    P::from_acc(kernels::sum_tiles(&tiles.concat()))
}

/// `r <- r - alpha q`, returning `<r, r>`.
pub(super) fn update_norm<P: Precision>(alpha: &P, q: &CpuVector<P>, r: &mut CpuVector<P>) -> P {
    assert_eq!(q.len(), r.len(), "cg update: lengths");
    let minus_alpha = alpha.neg();
    let qs = q.slice();
    let partials: Vec<P::Acc> = r
        .slice_mut()
        .chunks_mut(DOT_CHUNK)
        .into_par_iter()
        .enumerate()
        .map(|(chunk, mut rc)| {
            let (first, len) = (chunk * DOT_CHUNK, rc.len());
            let qc = piece::<P>(qs, first, len);
            kernels::axpy_chunk::<P>(&minus_alpha, qc, P::Vector::lend(&mut rc));
            let rc = P::Vector::read_back(&rc);
            kernels::dot_chunk::<P>(rc, rc)
        })
        .collect();
    P::from_acc(kernels::sum_partials(&partials))
}

/// `z <- alpha x + y` (or `y <- alpha x + y` when `y` is `None`), returning `<z, z>`.
pub(super) fn axpyz_norm<P: Precision>(
    alpha: &P,
    x: &CpuVector<P>,
    y: Option<&CpuVector<P>>,
    z: &mut CpuVector<P>,
) -> P {
    let n = z.len();
    assert!(
        x.len() == n && y.is_none_or(|y| y.len() == n),
        "axpyz_norm: lengths"
    );
    let (xs, ys) = (x.slice(), y.map(CpuVector::slice));
    let partials: Vec<P::Acc> = z
        .slice_mut()
        .chunks_mut(DOT_CHUNK)
        .into_par_iter()
        .enumerate()
        .map(|(chunk, mut zc)| {
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
            kernels::dot_chunk::<P>(zc, zc)
        })
        .collect();
    P::from_acc(kernels::sum_partials(&partials))
}

/// [`Backend::cg_step`](crate::backend::Backend::cg_step) from the two passes above.
pub(super) fn cg_step<P: Precision>(
    a: &CpuMatrix,
    rho: &P,
    p: &CpuVector<P>,
    q: &mut CpuVector<P>,
    r: &mut CpuVector<P>,
) -> (P, P) {
    let pq = spmv_dot(a, p, q);
    if !cg_step_accepts(&pq) {
        return (pq, P::zero());
    }
    let rr = update_norm(&rho.div(&pq), q, r);
    (pq, rr)
}

/// The `z` of CG's direction update: a vector of `P`, or of doubles read widened.
pub(super) enum Direction<'a, P: Precision> {
    Own(&'a CpuVector<P>),
    Wide(&'a CpuVector<f64>),
}

/// [`Backend::cg_direction`](crate::backend::Backend::cg_direction): per chunk, `x <- x +
/// alpha p` then `p <- z + beta p` while the chunk of `p` is in cache.
pub(super) fn cg_direction<P: Precision>(
    alpha: &P,
    z: Direction<'_, P>,
    beta: &P,
    p: &mut CpuVector<P>,
    x: &mut CpuVector<P>,
) {
    let n = p.len();
    let z_len = match &z {
        Direction::Own(z) => z.len(),
        Direction::Wide(z) => z.len(),
    };
    assert!(z_len == n && x.len() == n, "cg_direction: lengths");
    p.slice_mut()
        .chunks_mut(VECTOR_CHUNK)
        .into_par_iter()
        .zip(x.slice_mut().chunks_mut(VECTOR_CHUNK))
        .enumerate()
        .for_each(|(chunk, (mut pc, xc))| {
            let (first, len) = (chunk * VECTOR_CHUNK, pc.len());
            kernels::axpy_chunk::<P>(alpha, P::Vector::read_back(&pc), xc);
            match &z {
                Direction::Own(z) => {
                    let zc = piece::<P>(z.slice(), first, len);
                    kernels::xpay_chunk::<P>(zc, beta, P::Vector::lend(&mut pc));
                }
                Direction::Wide(z) => {
                    let zc = &z.0[first..first + len];
                    kernels::xpay_chunk_wide::<P>(zc, beta, P::Vector::lend(&mut pc));
                }
            }
        });
}
