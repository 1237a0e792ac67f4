//! The optimised kernels against straightforward reference loops of the same operation order:
//! every result must be the same bits (that is the contract with the GPU twin).

use super::simd_dd::{SimdIn, SimdOut};
use super::{CpuBackend, CpuMatrix, CpuVector, DOT_CHUNK, DOT_THREADS, kernels, simd_dd};
use crate::backend::{Backend, Operand, TiledDots};
use crate::precision::{Dd, HostSlice, Precision, Td};
use crate::solver::{BicgstabKernels, CgKernels};
use crate::sparse::{CsrMatrix, Symmetry};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// The bits of a value, widened to double-double (exact for `f64` and `Dd`).
fn bits<P: Precision>(v: &P) -> (u64, u64) {
    let d = v.to_dd();
    (d.hi.to_bits(), d.lo.to_bits())
}

fn assert_same_bits<P: Precision>(got: &[P], want: &[P], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(bits(g), bits(w), "{what}: element {i}: {g:?} != {w:?}");
    }
}

/// A value with a full mantissa in `P` (a quotient), across magnitudes, or a signed zero one
/// time in `zeros`.
fn random_value_zeros<P: Precision>(rng: &mut impl Rng, zeros: u32) -> P {
    match rng.random_range(0..2 * zeros) {
        0 => P::from_f64(0.0),
        1 => P::from_f64(-0.0),
        _ => {
            let scale = 2f64.powi(rng.random_range(-30..30));
            let num = (rng.random::<f64>() - 0.5) * scale;
            let den = rng.random_range(1..100) as f64;
            P::from_f64(num).div(&P::from_f64(den))
        }
    }
}

fn random_value<P: Precision>(rng: &mut impl Rng) -> P {
    random_value_zeros(rng, 10)
}

fn random_vector_zeros<P: Precision>(rng: &mut impl Rng, n: usize, zeros: u32) -> Vec<P> {
    (0..n).map(|_| random_value_zeros(rng, zeros)).collect()
}

fn random_vector<P: Precision>(rng: &mut impl Rng, n: usize) -> Vec<P> {
    random_vector_zeros(rng, n, 10)
}

/// A matrix whose rows have awkward lengths: empty, single entries, one more or less than each
/// lane count, longer than 32, plus random ones.
/// `zeros`: one value in `zeros` is a signed zero (many zeros make whole rows sum to a signed
/// zero, whose sign shows whether every add of the definition was performed).
fn awkward_matrix(rng: &mut impl Rng, nrows: usize, ncols: usize, zeros: u32) -> CsrMatrix {
    const LENGTHS: [usize; 16] = [0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65];
    let mut row_ptr = vec![0];
    let mut col_idx = Vec::new();
    let mut values = Vec::new();
    for row in 0..nrows {
        // Every awkward length once, then a mix of them and short random rows.
        let len = match LENGTHS.get(row) {
            Some(&len) => len,
            None if rng.random_range(0..4) == 0 => LENGTHS[rng.random_range(0..LENGTHS.len())],
            None => rng.random_range(0..12),
        }
        .min(ncols);
        let mut cols: Vec<i32> = rand::seq::index::sample(rng, ncols, len)
            .into_iter()
            .map(|c| c as i32)
            .collect();
        cols.sort_unstable();
        for c in cols {
            col_idx.push(c);
            values.push(random_value_zeros::<f64>(rng, zeros));
        }
        row_ptr.push(col_idx.len());
    }
    CsrMatrix::try_from_parts(nrows, ncols, row_ptr, col_idx, values, Symmetry::General)
        .expect("valid matrix")
}

/// `A x` (or `b - A x`) row by row as the GPU's CSR-vector kernel sums it.
fn reference_spmv<P: Precision>(a: &CsrMatrix, lanes: usize, x: &[P], b: Option<&[f64]>) -> Vec<P> {
    (0..a.nrows())
        .map(|row| {
            let (cols, vals) = a.row(row);
            let mut s = vec![P::zero(); lanes];
            for (k, (&c, &v)) in cols.iter().zip(vals).enumerate() {
                s[k % lanes] = s[k % lanes].add_mul_f64(v, &x[c as usize]);
            }
            let mut off = lanes / 2;
            while off > 0 {
                for l in 0..off {
                    s[l] = s[l].add(&s[l + off]);
                }
                off /= 2;
            }
            match b {
                Some(b) => P::from_f64(b[row]).sub(&s[0]),
                None => s[0].clone(),
            }
        })
        .collect()
}

/// The halving tree `s[t] = s[t] + s[t + off]`, `off = len/2, ..., 1`, written plainly.
fn reference_tree<P: Precision>(mut s: Vec<P>) -> P {
    let mut off = s.len() / 2;
    while off > 0 {
        for t in 0..off {
            s[t] = s[t].add(&s[t + off]);
        }
        off /= 2;
    }
    s[0].clone()
}

/// One chunk as a GPU block sums it: lane `t` takes elements `t, t + DOT_THREADS, ...` in
/// order from zero, then the tree.
fn reference_dot_chunk<P: Precision>(x: &[P], y: &[P]) -> P {
    let mut s = vec![P::zero(); DOT_THREADS];
    for (i, (xi, yi)) in x.iter().zip(y).enumerate() {
        s[i % DOT_THREADS] = s[i % DOT_THREADS].add(&xi.mul(yi));
    }
    reference_tree(s)
}

/// `<x, y>`: the chunk results reduced the same way (strided lane sums, then the tree).
fn reference_dot<P: Precision>(x: &[P], y: &[P]) -> P {
    let partials: Vec<P> = x
        .chunks(DOT_CHUNK)
        .zip(y.chunks(DOT_CHUNK))
        .map(|(x, y)| reference_dot_chunk(x, y))
        .collect();
    let mut s = vec![P::zero(); DOT_THREADS];
    for (i, p) in partials.iter().enumerate() {
        s[i % DOT_THREADS] = s[i % DOT_THREADS].add(p);
    }
    reference_tree(s)
}

/// One tile's sum in the tiled order of CG's `<p, q>`: the products of 256 rows (zero past the
/// end), then the tree.
fn reference_dot_tile<P: Precision>(x: &[P], y: &[P]) -> P {
    let products = (0..256).map(|i| match i < x.len() {
        true => x[i].mul(&y[i]),
        false => P::zero(),
    });
    reference_tree(products.collect())
}

/// `<x, y>` in the tiled order: 1024 lanes sum the tile sums strided, from zero; then the tree
/// within each 32 lanes, then over the 32 results.
fn reference_dot_tiled<P: Precision>(x: &[P], y: &[P]) -> P {
    let tiles: Vec<P> = x
        .chunks(256)
        .zip(y.chunks(256))
        .map(|(x, y)| reference_dot_tile(x, y))
        .collect();
    let mut s = vec![P::zero(); 1024];
    for (i, t) in tiles.iter().enumerate() {
        s[i % 1024] = s[i % 1024].add(t);
    }
    let warps = s.chunks(32).map(|w| reference_tree(w.to_vec()));
    reference_tree(warps.collect())
}

/// `n` rows, row `i` with entries at columns `(i + offset) mod n`, random values.
fn periodic_stencil(rng: &mut impl Rng, n: usize, offsets: &[i64]) -> CsrMatrix {
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        for &offset in offsets {
            rows.push(i as u32);
            cols.push((i as i64 + offset).rem_euclid(n as i64) as u32);
            vals.push(random_value::<f64>(rng));
        }
    }
    CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
}

fn check_spmv<P: Precision<Acc = P, Vector = Vec<P>>>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    let shapes = [(1, 1, 10), (37, 70, 10), (300, 90, 2), (5000, 4000, 10)];
    let mut matrices: Vec<(CsrMatrix, u32)> = shapes
        .iter()
        .map(|&(nrows, ncols, zeros)| (awkward_matrix(&mut rng, nrows, ncols, zeros), zeros))
        .collect();
    // Every row the same length (a periodic stencil): the SIMD SpMV's path for groups of rows
    // without a shorter one.
    matrices.push((
        periodic_stencil(&mut rng, 2003, &[-40, -3, -1, 0, 1, 3, 40]),
        10,
    ));
    // Whether the SIMD layout reordered each matrix's rows (those of different lengths).
    let mut reordered = Vec::new();
    for (csr, zeros) in matrices {
        let (nrows, ncols) = (csr.nrows(), csr.ncols());
        let csr = Arc::new(csr);
        let x: Vec<P> = random_vector_zeros(&mut rng, ncols, zeros);
        let b: Vec<f64> = random_vector(&mut rng, nrows);
        let sell = CpuMatrix::new(Arc::clone(&csr)).sell_for::<P>().map(|s| s.reordered());
        reordered.push(sell.unwrap_or(false));
        for lanes in 1..=32 {
            let a = CpuMatrix {
                lanes,
                ..CpuMatrix::new(Arc::clone(&csr))
            };
            let what = format!("{} spmv {nrows}x{ncols} lanes {lanes}", P::NAME);
            let (xv, bv) = (CpuVector::from(x.clone()), CpuVector::from(b.clone()));
            let mut y = backend.zeros::<P>(nrows).unwrap();
            backend.spmv(&a, &xv, &mut y).unwrap();
            assert_same_bits(&y.0, &reference_spmv(&csr, lanes, &x, None), &what);
            backend.residual(&a, &bv, &xv, &mut y).unwrap();
            assert_same_bits(&y.0, &reference_spmv(&csr, lanes, &x, Some(&b)), &what);
            // Row ranges that start and end anywhere (the lockstep rows and their remainder).
            let want = reference_spmv(&csr, lanes, &x, Some(&b));
            for first in [0, 1, nrows / 3] {
                for len in [0, 1, 2, 3, nrows - first] {
                    let len = len.min(nrows - first);
                    let mut out = vec![P::zero(); len];
                    let b = &b[first..first + len];
                    kernels::spmv_rows::<P>(&csr, lanes, None, &x, first, &mut out, Some(b));
                    assert_same_bits(&out, &want[first..first + len], &what);
                    let sell = a.sell_for::<P>();
                    kernels::spmv_rows::<P>(&csr, lanes, sell, &x, first, &mut out, Some(b));
                    assert_same_bits(&out, &want[first..first + len], &what);
                }
            }
        }
    }
    // Where P has SIMD kernels: the awkward matrices of whole groups in windows of rows longest
    // first (the ranges above starting and ending inside them), the stencil in its own order.
    if simd_dd::level().is_some() && simd_dd::has_kernels::<P>() {
        assert_eq!(reordered, [false, true, true, true, false], "{}", P::NAME);
    }
}

#[test]
fn spmv_matches_reference_f64() {
    check_spmv::<f64>(1);
}

#[test]
fn spmv_matches_reference_dd() {
    check_spmv::<Dd>(2);
}

/// The fused CG step (two passes over dot-product chunks) against the reference loops:
/// `q = A p`, `<p, q>` (tiled), `r - alpha q` and `<r, r>` in the contract's orders,
/// on square matrices whose sizes straddle the chunk boundaries, one and four lanes per row.
fn check_cg_step<P: Precision<Acc = P, Vector = Vec<P>>>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    let mut taken = 0;
    for n in [1, 37, DOT_CHUNK - 3, DOT_CHUNK, 2 * DOT_CHUNK + 45] {
        let csr = Arc::new(awkward_matrix(&mut rng, n, n, 10));
        let (p, r): (Vec<P>, Vec<P>) = (random_vector(&mut rng, n), random_vector(&mut rng, n));
        let rho: P = random_value_zeros(&mut rng, 1_000_000);
        for lanes in [1, 4] {
            let what = format!("{} cg_step n {n} lanes {lanes}", P::NAME);
            let a = CpuMatrix {
                lanes,
                ..CpuMatrix::new(Arc::clone(&csr))
            };
            let q_want = reference_spmv(&csr, lanes, &p, None);
            let pq_want = reference_dot_tiled(&p, &q_want);
            let (mut q, mut rg) = (
                CpuVector::from(vec![P::zero(); n]),
                CpuVector::from(r.clone()),
            );
            let pv = CpuVector::from(p.clone());
            let (pq, rr) = backend.cg_step(&a, &rho, &pv, &mut q, &mut rg).unwrap();
            assert_same_bits(&q.0, &q_want, &what);
            assert_same_bits(
                std::slice::from_ref(&pq),
                std::slice::from_ref(&pq_want),
                &what,
            );
            if !crate::backend::cg_step_accepts(&pq_want) {
                assert_same_bits(&rg.0, &r, &what);
                assert_same_bits(&[rr], &[P::zero()], &what);
                continue;
            }
            let alpha = rho.div(&pq_want);
            let r_want = ref_axpy(&alpha.neg(), &q_want, &r);
            assert_same_bits(&rg.0, &r_want, &what);
            assert_same_bits(&[rr], &[reference_dot(&r_want, &r_want)], &what);
            taken += 1;
        }
    }
    assert!(
        taken >= 3,
        "only {taken} steps with <p, q> > 0 were checked"
    );
}

#[test]
fn cg_step_matches_reference_f64() {
    check_cg_step::<f64>(13);
}

#[test]
fn cg_step_matches_reference_dd() {
    check_cg_step::<Dd>(12);
}

/// `spmv_dots_tiled` (BiCGStab's `v = A p^` with `<r~, v>`, `t = A s^` with `<t, t>` and
/// `<t, s>`; `x` of `P` or of doubles read widened) against the reference SpMV and tiled dots.
fn check_spmv_dots<P: Precision<Acc = P, Vector = Vec<P>>>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    for n in [1, 300, DOT_CHUNK + 45, 2 * DOT_CHUNK + 256] {
        let csr = Arc::new(awkward_matrix(&mut rng, n, n, 10));
        let own: Vec<P> = random_vector(&mut rng, n);
        let wide: Vec<f64> = random_vector(&mut rng, n);
        let w: Vec<P> = random_vector(&mut rng, n);
        let wv = CpuVector::from(w.clone());
        for lanes in [1, 4] {
            let a = CpuMatrix {
                lanes,
                ..CpuMatrix::new(Arc::clone(&csr))
            };
            let widened: Vec<P> = wide.iter().map(|&v| P::from_f64(v)).collect();
            let (ov, dv) = (CpuVector::from(own.clone()), CpuVector(wide.clone()));
            for (x, x_as_p, kind) in [
                (Operand::Own(&ov), &own, "own"),
                (Operand::Wide(&dv), &widened, "wide"),
            ] {
                let q_want = reference_spmv(&csr, lanes, x_as_p, None);
                // one thread gives tasks that span several dot chunks; three split them
                for threads in [1, 3] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let what = format!(
                        "{} spmv_dots n {n} lanes {lanes} x {kind} threads {threads}",
                        P::NAME
                    );
                    let mut q = CpuVector::from(vec![P::zero(); n]);
                    let got = pool
                        .install(|| backend.spmv_dots_tiled(&a, x, TiledDots::With(&wv), &mut q))
                        .unwrap();
                    assert_same_bits(&q.0, &q_want, &what);
                    let want = [reference_dot_tiled(&w, &q_want), P::zero()];
                    assert_same_bits(&[got.0, got.1], &want, &format!("{what} <w, q>"));
                    let mut q = CpuVector::from(vec![P::zero(); n]);
                    let got = pool
                        .install(|| backend.spmv_dots_tiled(&a, x, TiledDots::SelfAnd(&wv), &mut q))
                        .unwrap();
                    assert_same_bits(&q.0, &q_want, &what);
                    let want = [
                        reference_dot_tiled(&q_want, &q_want),
                        reference_dot_tiled(&q_want, &w),
                    ];
                    assert_same_bits(&[got.0, got.1], &want, &format!("{what} <q, q>, <q, w>"));
                }
            }
        }
    }
}

#[test]
fn spmv_dots_match_reference_f64() {
    check_spmv_dots::<f64>(15);
}

#[test]
fn spmv_dots_match_reference_dd() {
    check_spmv_dots::<Dd>(16);
}

/// Lengths around the lane, row and chunk boundaries of the dot product.
fn dot_lengths() -> Vec<usize> {
    vec![
        0,
        1,
        3,
        5,
        9,
        DOT_THREADS - 1,
        DOT_THREADS,
        DOT_THREADS + 7,
        5 * DOT_THREADS + 130,
        DOT_CHUNK - 1,
        DOT_CHUNK,
        DOT_CHUNK + 1,
        4 * DOT_CHUNK + 1,
        100_003,
    ]
}

fn check_dot<P: Precision<Acc = P, Vector = Vec<P>>>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    // and more tiles than the tiled order's final lanes (1024 tiles of 256)
    for n in dot_lengths().into_iter().chain([1024 * 256 + 3000]) {
        let x: Vec<P> = random_vector(&mut rng, n);
        let y: Vec<P> = random_vector(&mut rng, n);
        let want = reference_dot(&x, &y);
        let want_tiled = reference_dot_tiled(&x, &y);
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (xv, yv) = (CpuVector::from(x.clone()), CpuVector::from(y.clone()));
            let got = pool.install(|| backend.dot(&xv, &yv)).unwrap();
            assert_eq!(
                bits(&got),
                bits(&want),
                "{} dot n = {n}, {threads} threads: {got:?} != {want:?}",
                P::NAME
            );
            let got = pool.install(|| backend.dot_tiled(&xv, &yv)).unwrap();
            assert_eq!(
                bits(&got),
                bits(&want_tiled),
                "{} dot_tiled n = {n}, {threads} threads: {got:?} != {want_tiled:?}",
                P::NAME
            );
        }
    }
}

#[test]
fn dot_matches_reference_on_any_thread_count_f64() {
    check_dot::<f64>(3);
}

#[test]
fn dot_matches_reference_on_any_thread_count_dd() {
    check_dot::<Dd>(4);
}

fn check_vector_updates<P: Precision<Acc = P, Vector = Vec<P>>>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    for n in [0, 1, 17, 40_000] {
        let x: Vec<P> = random_vector(&mut rng, n);
        let y: Vec<P> = random_vector(&mut rng, n);
        let v: Vec<P> = random_vector(&mut rng, n);
        let alpha: P = random_value(&mut rng);
        let beta: P = random_value(&mut rng);
        let (xv, yv, vv) = (
            CpuVector::from(x.clone()),
            CpuVector::from(y.clone()),
            CpuVector::from(v),
        );

        let mut got = yv.clone();
        backend.axpy(&alpha, &xv, &mut got).unwrap();
        let want: Vec<P> = x.iter().zip(&y).map(|(x, y)| alpha.mul(x).add(y)).collect();
        assert_same_bits(&got.0, &want, "axpy");

        let mut got = yv.clone();
        backend.xpay(&xv, &beta, &mut got).unwrap();
        let want: Vec<P> = x.iter().zip(&y).map(|(x, y)| x.add(&beta.mul(y))).collect();
        assert_same_bits(&got.0, &want, "xpay");

        let mut got = backend.zeros::<P>(n).unwrap();
        backend.axpyz(&alpha, &xv, &yv, &mut got).unwrap();
        let want: Vec<P> = x.iter().zip(&y).map(|(x, y)| alpha.mul(x).add(y)).collect();
        assert_same_bits(&got.0, &want, "axpyz");

        // The updates fused with their norms, chunk by chunk.
        let mut got = backend.zeros::<P>(n).unwrap();
        let norm = backend.axpyz_norm(&alpha, &xv, &yv, &mut got).unwrap();
        assert_same_bits(&got.0, &want, "axpyz_norm");
        assert_same_bits(&[norm], &[reference_dot(&want, &want)], "axpyz_norm's norm");
        let mut got = yv.clone();
        let norm = backend.axpy_norm(&alpha, &xv, &mut got).unwrap();
        assert_same_bits(&got.0, &want, "axpy_norm");
        assert_same_bits(&[norm], &[reference_dot(&want, &want)], "axpy_norm's norm");
        let mut got = backend.zeros::<P>(n).unwrap();
        let (norm, wz) = backend
            .axpyz_norm_dot(&alpha, &xv, &yv, &mut got, &vv)
            .unwrap();
        assert_same_bits(&got.0, &want, "axpyz_norm_dot");
        let want_dots = [reference_dot(&want, &want), reference_dot(&vv.0, &want)];
        assert_same_bits(&[norm, wz], &want_dots, "axpyz_norm_dot's dots");

        // x + alpha p + omega s: two axpys' bits, fused per chunk.
        let mut got = yv.clone();
        backend.x_update(&alpha, &xv, &beta, &vv, &mut got).unwrap();
        let mut want = yv.clone();
        backend.axpy(&alpha, &xv, &mut want).unwrap();
        backend.axpy(&beta, &vv, &mut want).unwrap();
        assert_same_bits(&got.0, &want.0, "x_update");

        // The fused BiCGStab update against its unfused definition.
        let mut got = yv.clone();
        backend
            .bicgstab_direction(&xv, &alpha, &beta, &vv, &mut got)
            .unwrap();
        let mut want = yv.clone();
        backend.axpy(&beta.neg(), &vv, &mut want).unwrap();
        backend.xpay(&xv, &alpha, &mut want).unwrap();
        assert_same_bits(&got.0, &want.0, "bicgstab_direction");
    }
}

#[test]
fn vector_updates_match_reference_f64() {
    check_vector_updates::<f64>(5);
}

#[test]
fn vector_updates_match_reference_dd() {
    check_vector_updates::<Dd>(6);
}

/// The scalar kernels directly: on a CPU with AVX2 the backend sends double-doubles to the
/// SIMD kernels, so these would otherwise go untested there.
fn check_scalar_kernels<P: Precision<Acc = P, Vector = Vec<P>>>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for n in dot_lengths() {
        let x: Vec<P> = random_vector(&mut rng, n);
        let y: Vec<P> = random_vector(&mut rng, n);
        let got: Vec<P> = x
            .chunks(DOT_CHUNK)
            .zip(y.chunks(DOT_CHUNK))
            .map(|(x, y)| kernels::dot_chunk_scalar::<P, _>(x, kernels::Native(y)))
            .collect();
        let want: Vec<P> = x
            .chunks(DOT_CHUNK)
            .zip(y.chunks(DOT_CHUNK))
            .map(|(x, y)| reference_dot_chunk(x, y))
            .collect();
        assert_same_bits(&got, &want, "dot_chunk_scalar");
    }
    let n = 1001;
    let (x, y, v): (Vec<P>, Vec<P>, Vec<P>) = (
        random_vector(&mut rng, n),
        random_vector(&mut rng, n),
        random_vector(&mut rng, n),
    );
    let (alpha, beta): (P, P) = (random_value(&mut rng), random_value(&mut rng));
    let mut got = y.clone();
    kernels::axpy_chunk_scalar::<P, _>(&alpha, kernels::Native(x.as_slice()), &mut got);
    let want: Vec<P> = x.iter().zip(&y).map(|(x, y)| alpha.mul(x).add(y)).collect();
    assert_same_bits(&got, &want, "axpy_chunk_scalar");
    let mut got = y.clone();
    kernels::xpay_chunk_scalar::<P, _>(kernels::Native(x.as_slice()), &beta, &mut got);
    let want: Vec<P> = x.iter().zip(&y).map(|(x, y)| x.add(&beta.mul(y))).collect();
    assert_same_bits(&got, &want, "xpay_chunk_scalar");
    let mut got = vec![P::zero(); n];
    kernels::axpyz_chunk_scalar::<P>(&alpha, &x, &y, &mut got);
    let want: Vec<P> = x.iter().zip(&y).map(|(x, y)| alpha.mul(x).add(y)).collect();
    assert_same_bits(&got, &want, "axpyz_chunk_scalar");
    let mut got = y.clone();
    kernels::bicgstab_direction_chunk_scalar::<P>(&x, &alpha, &beta, &v, &mut got);
    let want: Vec<P> = x
        .iter()
        .zip(&y)
        .zip(&v)
        .map(|((r, p), v)| r.add(&alpha.mul(&beta.neg().mul(v).add(p))))
        .collect();
    assert_same_bits(&got, &want, "bicgstab_direction_chunk_scalar");
}

#[test]
fn scalar_kernels_match_reference_f64() {
    check_scalar_kernels::<f64>(7);
}

#[test]
fn scalar_kernels_match_reference_dd() {
    check_scalar_kernels::<Dd>(8);
}

/// The SIMD levels this CPU runs: the backend takes the widest, so the narrower ones are
/// checked here directly.
fn simd_levels() -> Vec<simd_dd::Level> {
    let mut levels = Vec::new();
    #[cfg(target_arch = "x86_64")]
    if crate::precision::fma_available() {
        if std::arch::is_x86_feature_detected!("avx512f") {
            levels.push(simd_dd::Level::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            levels.push(simd_dd::Level::Avx2);
        }
    }
    levels
}

/// `alpha x + y`, element by element.
fn ref_axpy<P: Precision>(alpha: &P, x: &[P], y: &[P]) -> Vec<P> {
    x.iter().zip(y).map(|(x, y)| alpha.mul(x).add(y)).collect()
}

/// `x + beta y`, element by element.
fn ref_xpay<P: Precision>(x: &[P], beta: &P, y: &[P]) -> Vec<P> {
    x.iter().zip(y).map(|(x, y)| x.add(&beta.mul(y))).collect()
}

/// `r + beta (p - omega v)` in the order of `axpy(-omega, v, p); xpay(r, beta, p)`.
fn ref_bicgstab_direction<P: Precision>(r: &[P], beta: &P, omega: &P, v: &[P], p: &[P]) -> Vec<P> {
    r.iter()
        .zip(p)
        .zip(v)
        .map(|((r, p), v)| r.add(&beta.mul(&omega.neg().mul(v).add(p))))
        .collect()
}

/// Every SIMD width's kernels against the reference loops.
#[test]
fn simd_kernels_of_every_width_match_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for level in simd_levels() {
        let w = level.width();
        let what = |op: &str| format!("{level:?} {op}");
        // Dot chunks of every length class.
        for n in dot_lengths() {
            let n = n.min(DOT_CHUNK);
            let x: Vec<Dd> = random_vector(&mut rng, n);
            let y: Vec<Dd> = random_vector(&mut rng, n);
            // SAFETY: `simd_levels` detected the level.
            let got = unsafe { simd_dd::dot_chunk_at(level, SimdIn::Dd(&x), SimdIn::Dd(&y)) };
            let want = reference_dot_chunk(&x, &y);
            assert_eq!(bits(&got), bits(&want), "{} n = {n}", what("dot_chunk"));
            // and the whole tiles of it in CG's tiled order
            let tiles = n / 256;
            let mut got = vec![Dd::default(); tiles];
            let (xt, yt) = (&x[..256 * tiles], &y[..256 * tiles]);
            // SAFETY: as above.
            unsafe { simd_dd::dot_tiles_at(level, SimdIn::Dd(xt), SimdIn::Dd(yt), &mut got) };
            let want: Vec<Dd> = (0..tiles)
                .map(|k| reference_dot_tile(&x[256 * k..256 * k + 256], &y[256 * k..256 * k + 256]))
                .collect();
            assert_same_bits(&got, &want, &format!("{} n = {n}", what("dot_tiles")));
        }
        // Vector updates, with a tail the SIMD code leaves to the caller.
        let n = 1003;
        let (x, y, v): (Vec<Dd>, Vec<Dd>, Vec<Dd>) = (
            random_vector(&mut rng, n),
            random_vector(&mut rng, n),
            random_vector(&mut rng, n),
        );
        let (alpha, beta): (Dd, Dd) = (random_value(&mut rng), random_value(&mut rng));
        let done = n / w * w;
        let mut got = y.clone();
        // SAFETY: as above.
        assert_eq!(
            unsafe { simd_dd::axpy_at(level, &alpha, SimdIn::Dd(&x), SimdOut::Dd(&mut got)) },
            done
        );
        let want = ref_axpy(&alpha, &x, &y);
        assert_same_bits(&got[..done], &want[..done], &what("axpy"));
        let mut got = y.clone();
        // SAFETY: as above.
        assert_eq!(
            unsafe { simd_dd::xpay_at(level, SimdIn::Dd(&x), &beta, SimdOut::Dd(&mut got)) },
            done
        );
        let want = ref_xpay(&x, &beta, &y);
        assert_same_bits(&got[..done], &want[..done], &what("xpay"));
        let mut got = vec![Dd::default(); n];
        // SAFETY: as above.
        assert_eq!(
            unsafe {
                simd_dd::axpyz_at(
                    level,
                    &alpha,
                    SimdIn::Dd(&x),
                    SimdIn::Dd(&y),
                    SimdOut::Dd(&mut got),
                )
            },
            done
        );
        let want = ref_axpy(&alpha, &x, &y);
        assert_same_bits(&got[..done], &want[..done], &what("axpyz"));
        let mut got = y.clone();
        // SAFETY: as above.
        let (xs, vs, out) = (SimdIn::Dd(&x), SimdIn::Dd(&v), SimdOut::Dd(&mut got));
        let d = unsafe { simd_dd::bicgstab_direction_at(level, xs, &alpha, &beta, vs, out) };
        assert_eq!(d, done);
        let want = ref_bicgstab_direction(&x, &alpha, &beta, &v, &y);
        assert_same_bits(&got[..done], &want[..done], &what("bicgstab_direction"));
        // SpMV over whole groups of rows, every lane count the kernel takes; rows of awkward
        // lengths, and rows all of one length (the path for groups without a shorter row).
        let awkward = awkward_matrix(&mut rng, 203, 150, 4);
        let stencil = periodic_stencil(&mut rng, 203, &[-9, -1, 0, 1, 9]);
        for csr in [awkward, stencil] {
            let (nrows, ncols) = (csr.nrows(), csr.ncols());
            let csr = Arc::new(csr);
            let x: Vec<Dd> = random_vector_zeros(&mut rng, ncols, 4);
            let b: Vec<f64> = random_vector(&mut rng, nrows);
            let sell = simd_dd::Sell::new(&csr, w);
            let rows = nrows / w * w;
            for lanes in [1, 2, 4, 8, 16, 32] {
                let want = reference_spmv(&csr, lanes, &x, Some(&b));
                let mut got = vec![Dd::default(); rows];
                // SAFETY: as above; the sizes are those of `csr`, the rows whole groups.
                unsafe {
                    let (xs, out) = (SimdIn::Dd(&x), SimdOut::Dd(&mut got));
                    simd_dd::spmv_rows_at(level, &csr, &sell, lanes, xs, 0, out, Some(&b[..rows]))
                };
                assert_same_bits(
                    &got,
                    &want[..rows],
                    &format!("{} {nrows}x{ncols} lanes {lanes}", what("spmv")),
                );
            }
        }
    }
}

/// The SIMD kernels give the scalar definitions' values where some inputs are infinite or NaN:
/// every non-NaN part bit for bit, a NaN part where the definition has one (which NaN is left
/// to the hardware). The SpMV's padding reads column 0, here infinite: its lanes must be masked.
#[test]
fn simd_kernels_match_reference_on_non_finite_values() {
    let same = |got: &[Dd], want: &[Dd], what: &str| {
        assert_eq!(got.len(), want.len());
        let part = |v: f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert_eq!(
                (part(g.hi), part(g.lo)),
                (part(w.hi), part(w.lo)),
                "{what}: element {i}: {g:?} != {w:?}"
            );
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let specials = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f64::MAX];
    let with_specials = |rng: &mut ChaCha8Rng, n: usize| -> Vec<Dd> {
        let mut v: Vec<Dd> = random_vector(rng, n);
        for (i, value) in v.iter_mut().enumerate().filter(|(i, _)| i % 5 == 2) {
            *value = Dd::from_f64(specials[i % specials.len()]);
        }
        v
    };
    for level in simd_levels() {
        let what = |op: &str| format!("{level:?} {op}");
        let n = 64;
        let (x, y, v) = (
            with_specials(&mut rng, n),
            with_specials(&mut rng, n),
            with_specials(&mut rng, n),
        );
        let (alpha, beta) = (Dd::from_f64(3.0).div(Dd::from_f64(7.0)), Dd::from_f64(-2.5));
        let mut got = y.clone();
        // SAFETY: `simd_levels` detected the level.
        unsafe { simd_dd::axpy_at(level, &alpha, SimdIn::Dd(&x), SimdOut::Dd(&mut got)) };
        same(&got, &ref_axpy(&alpha, &x, &y), &what("axpy"));
        let mut got = y.clone();
        // SAFETY: as above.
        unsafe { simd_dd::xpay_at(level, SimdIn::Dd(&x), &beta, SimdOut::Dd(&mut got)) };
        same(&got, &ref_xpay(&x, &beta, &y), &what("xpay"));
        let mut got = y.clone();
        // SAFETY: as above.
        let (xs, vs, out) = (SimdIn::Dd(&x), SimdIn::Dd(&v), SimdOut::Dd(&mut got));
        unsafe { simd_dd::bicgstab_direction_at(level, xs, &alpha, &beta, vs, out) };
        let want = ref_bicgstab_direction(&x, &alpha, &beta, &v, &y);
        same(&got, &want, &what("bicgstab_direction"));
        // The SpMV: rows whose lanes step past a shorter row's end, with x[0] (the padding's
        // column) infinite.
        let w = level.width();
        let csr = Arc::new(awkward_matrix(&mut rng, 4 * w, 40, 4));
        let mut x: Vec<Dd> = with_specials(&mut rng, 40);
        x[0] = Dd::from_f64(f64::INFINITY);
        let sell = simd_dd::Sell::new(&csr, w);
        let want = reference_spmv(&csr, 1, &x, None);
        let mut got = vec![Dd::default(); 4 * w];
        // SAFETY: as above; the sizes are those of `csr`, the rows whole groups.
        unsafe {
            let (xs, out) = (SimdIn::Dd(&x), SimdOut::Dd(&mut got));
            simd_dd::spmv_rows_at(level, &csr, &sell, 1, xs, 0, out, None)
        };
        same(&got, &want, &what("spmv"));
    }
}

/// td's SIMD kernels (two arrays in, DD arithmetic, one rounding per stored element) at every
/// width against the scalar td kernels, which the td tests check against DD rounded once.
#[test]
fn simd_td_kernels_of_every_width_match_the_scalar_td_kernels() {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let td_vector = |rng: &mut ChaCha8Rng, n: usize| -> CpuVector<Td> {
        let dd: Vec<Dd> = random_vector(rng, n);
        CpuVector::from(dd.into_iter().map(Td::from_dd).collect::<Vec<_>>())
    };
    let same = |got: &CpuVector<Td>, want: &CpuVector<Td>, what: &str| {
        let (got, want) = (got.to_values(), want.to_values());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.parts(), w.parts(), "{what}: element {i}");
        }
    };
    for level in simd_levels() {
        let w = level.width();
        let what = |op: &str| format!("td {level:?} {op}");
        for n in dot_lengths() {
            let n = n.min(DOT_CHUNK);
            let (x, y) = (td_vector(&mut rng, n), td_vector(&mut rng, n));
            // SAFETY: `simd_levels` detected the level.
            let got = unsafe {
                simd_dd::dot_chunk_at(level, SimdIn::Td(x.slice()), SimdIn::Td(y.slice()))
            };
            let want = kernels::dot_chunk_scalar::<Td, _>(x.slice(), kernels::Native(y.slice()));
            assert_eq!(bits(&got), bits(&want), "{} n = {n}", what("dot_chunk"));
            // the tiled order, whole tiles
            let whole = n / 256 * 256;
            let (xt, yt) = (x.slice().split_at(whole).0, y.slice().split_at(whole).0);
            let mut got = vec![Dd::default(); n / 256];
            // SAFETY: as above.
            unsafe { simd_dd::dot_tiles_at(level, SimdIn::Td(xt), SimdIn::Td(yt), &mut got) };
            let mut want = Vec::new();
            kernels::dot_tiles_scalar::<Td>(xt, yt, &mut want);
            assert_same_bits(&got, &want, &format!("{} n = {n}", what("dot_tiles")));
        }
        let n = 1003 / w * w;
        let (x, y, v) = (
            td_vector(&mut rng, n),
            td_vector(&mut rng, n),
            td_vector(&mut rng, n),
        );
        let (alpha, beta) = (
            Td::from_dd(random_value(&mut rng)),
            Td::from_dd(random_value(&mut rng)),
        );
        let (ad, bd) = (alpha.to_dd(), beta.to_dd());
        let (mut got, mut want) = (y.clone(), y.clone());
        // SAFETY: as above.
        unsafe {
            simd_dd::axpy_at(
                level,
                &ad,
                SimdIn::Td(x.slice()),
                SimdOut::Td(got.slice_mut()),
            )
        };
        kernels::axpy_chunk_scalar::<Td, _>(&alpha, kernels::Native(x.slice()), want.slice_mut());
        same(&got, &want, &what("axpy"));
        let (mut got, mut want) = (y.clone(), y.clone());
        // SAFETY: as above.
        unsafe {
            simd_dd::xpay_at(
                level,
                SimdIn::Td(x.slice()),
                &bd,
                SimdOut::Td(got.slice_mut()),
            )
        };
        kernels::xpay_chunk_scalar::<Td, _>(kernels::Native(x.slice()), &beta, want.slice_mut());
        same(&got, &want, &what("xpay"));
        let (mut got, mut want) = (v.clone(), v.clone());
        let (xs, ys) = (SimdIn::Td(x.slice()), SimdIn::Td(y.slice()));
        // SAFETY: as above.
        unsafe { simd_dd::axpyz_at(level, &ad, xs, ys, SimdOut::Td(got.slice_mut())) };
        kernels::axpyz_chunk_scalar::<Td>(&alpha, x.slice(), y.slice(), want.slice_mut());
        same(&got, &want, &what("axpyz"));
        let (mut got, mut want) = (y.clone(), y.clone());
        let (xs, vs) = (SimdIn::Td(x.slice()), SimdIn::Td(v.slice()));
        // SAFETY: as above.
        unsafe {
            simd_dd::bicgstab_direction_at(level, xs, &ad, &bd, vs, SimdOut::Td(got.slice_mut()))
        };
        kernels::bicgstab_direction_chunk_scalar::<Td>(
            x.slice(),
            &alpha,
            &beta,
            v.slice(),
            want.slice_mut(),
        );
        same(&got, &want, &what("bicgstab_direction"));
        // SpMV and residual over whole groups of rows, every lane count.
        let (nrows, ncols) = (203, 150);
        let csr = Arc::new(awkward_matrix(&mut rng, nrows, ncols, 4));
        let x = td_vector(&mut rng, ncols);
        let b: Vec<f64> = random_vector(&mut rng, nrows);
        let sell = simd_dd::Sell::new(&csr, w);
        let rows = nrows / w * w;
        for lanes in [1, 2, 4, 8, 16, 32] {
            for b in [None, Some(&b[..rows])] {
                let mut got = CpuVector::from(vec![Td::ZERO; rows]);
                let mut want = got.clone();
                // SAFETY: as above; the sizes are those of `csr`, the rows whole groups.
                unsafe {
                    let (xs, out) = (SimdIn::Td(x.slice()), SimdOut::Td(got.slice_mut()));
                    simd_dd::spmv_rows_at(level, &csr, &sell, lanes, xs, 0, out, b)
                };
                kernels::spmv_rows_scalar::<Td>(&csr, lanes, x.slice(), 0, want.slice_mut(), b);
                same(
                    &got,
                    &want,
                    &format!("{} lanes {lanes} b {}", what("spmv"), b.is_some()),
                );
            }
        }
    }
}

/// Every word of a value, exactly (the derived `Debug` of each precision's parts).
fn words<P: Precision>(v: &[P]) -> Vec<String> {
    v.iter().map(|x| format!("{x:?}")).collect()
}

/// `dot_wide` and `xpay_wide` (CG's reads of its double preconditioned residual) give the bits
/// of `dot` and `xpay` on that vector converted to `P`, at lengths that exercise the SIMD
/// registers, their scalar tails and the chunk boundaries, in every precision.
fn check_wide_reads<P: Precision>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    for n in dot_lengths() {
        let x = CpuVector::<P>::from(random_vector::<P>(&mut rng, n));
        let z = CpuVector::<f64>::from(random_vector::<f64>(&mut rng, n));
        let mut z_wide = backend.zeros::<P>(n).unwrap();
        backend.convert(&z, &mut z_wide).unwrap();
        let got = backend.dot_wide(&x, &z).unwrap();
        let want = backend.dot(&x, &z_wide).unwrap();
        assert_eq!(
            words(&[got]),
            words(&[want]),
            "{} dot_wide n = {n}",
            P::NAME
        );

        let beta: P = random_value(&mut rng);
        let mut got = x.clone();
        backend.xpay_wide(&z, &beta, &mut got).unwrap();
        let mut want = x.clone();
        backend.xpay(&z_wide, &beta, &mut want).unwrap();
        let (got, want) = (got.to_values(), want.to_values());
        assert_eq!(words(&got), words(&want), "{} xpay_wide n = {n}", P::NAME);

        // BiCGStab's x update reads p^ and s^ widened.
        let alpha: P = random_value(&mut rng);
        let mut got = x.clone();
        backend.axpy_wide(&alpha, &z, &mut got).unwrap();
        let mut want = x.clone();
        backend.axpy(&alpha, &z_wide, &mut want).unwrap();
        let (got, want) = (got.to_values(), want.to_values());
        assert_eq!(words(&got), words(&want), "{} axpy_wide n = {n}", P::NAME);

        // CG's direction update with its deferred x update, against axpy then xpay.
        let alpha: P = random_value(&mut rng);
        let s = CpuVector::<P>::from(random_vector::<P>(&mut rng, n));
        let (mut want_p, mut want_x) = (x.clone(), s.clone());
        backend.axpy(&alpha, &want_p, &mut want_x).unwrap();
        backend.xpay(&z_wide, &beta, &mut want_p).unwrap();
        let (want_p, want_x) = (words(&want_p.to_values()), words(&want_x.to_values()));
        for wide in [true, false] {
            let (mut p, mut xs) = (x.clone(), s.clone());
            if wide {
                backend.cg_direction_wide(&alpha, &z, &beta, &mut p, &mut xs)
            } else {
                backend.cg_direction(&alpha, &z_wide, &beta, &mut p, &mut xs)
            }
            .unwrap();
            let what = format!("{} cg_direction wide = {wide} n = {n}", P::NAME);
            assert_eq!(words(&p.to_values()), want_p, "{what}: p");
            assert_eq!(words(&xs.to_values()), want_x, "{what}: x");
        }
    }
}

/// `spmv_wide` (BiCGStab's `A p^` and `A s^` with `p^`, `s^` in double) gives the bits of `spmv`
/// on the vector converted to `P`: every lane count, SIMD groups and their scalar remainder
/// rows, signed zeros in `x`.
fn check_spmv_wide<P: Precision>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let backend = CpuBackend::new();
    for (nrows, zeros) in [(1, 10), (37, 10), (300, 2), (5003, 10)] {
        let csr = Arc::new(awkward_matrix(&mut rng, nrows, nrows, zeros));
        let x = CpuVector::<f64>::from(random_vector_zeros::<f64>(&mut rng, nrows, zeros));
        let mut x_wide = backend.zeros::<P>(nrows).unwrap();
        backend.convert(&x, &mut x_wide).unwrap();
        for lanes in [1, 2, 3, 4, 8, 32] {
            let a = CpuMatrix {
                lanes,
                ..CpuMatrix::new(Arc::clone(&csr))
            };
            let (mut got, mut want) = (
                backend.zeros::<P>(nrows).unwrap(),
                backend.zeros(nrows).unwrap(),
            );
            backend.spmv_wide(&a, &x, &mut got).unwrap();
            backend.spmv(&a, &x_wide, &mut want).unwrap();
            let what = format!("{} spmv_wide {nrows} rows, {lanes} lanes", P::NAME);
            assert_eq!(words(&got.to_values()), words(&want.to_values()), "{what}");
        }
    }
}

#[test]
fn spmv_wide_matches_spmv_on_the_converted_vector() {
    check_spmv_wide::<f64>(44);
    check_spmv_wide::<Dd>(45);
    check_spmv_wide::<Td>(46);
    check_spmv_wide::<crate::precision::Qd>(47);
}

#[test]
fn wide_reads_match_the_converted_vector() {
    check_wide_reads::<f64>(40);
    check_wide_reads::<Dd>(41);
    check_wide_reads::<Td>(42);
    check_wide_reads::<crate::precision::Qd>(43);
}
