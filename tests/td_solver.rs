//! Triple precision (`td`, D+I storage, double-double arithmetic in the vector kernels with one
//! rounding to D+I per stored element) in the CPU solver: every value a solve stores is a D+I
//! value, each vector kernel's result is the double-double kernel's on the widened inputs rounded
//! once, the GPU-shaped layout is 12 bytes per element, and on an ill-conditioned SPD system CG's
//! iteration count lies between double's and double-double's (pinned by measurement:
//! matrices/graded_spd_400.mtx at tol 1e-12 needs f64 3642, td 3029, dd 2629, qd 1644
//! iterations; td needed 3101 when it rounded after every operation; runs are bitwise
//! reproducible).

mod common;

use common::outcomes::solve_on_cpu;
use precsolve::backend::Backend;
use precsolve::backend::cpu::{CpuBackend, CpuVector};
use precsolve::precision::{Td, TdVector, td};
use precsolve::precond::{Identity, Preconditioning};
use precsolve::solver::dispatch::{Method, Problem, WorkingPrecision};
use precsolve::solver::{BicgstabKernels, CgKernels};
use precsolve::solver::{NoMonitor, Params, StopReason, cg};
use precsolve::sparse::{CsrMatrix, Symmetry, poisson3d};
use precsolve::{Dd, Precision};
use std::sync::Arc;

fn iterations(path: &str, tol: f64, precision: WorkingPrecision) -> (usize, StopReason) {
    let a = Arc::new(precsolve::load_matrix(path).unwrap());
    let problem = Problem::new(a, None, None).unwrap();
    let params = Params {
        tol,
        ..Params::default()
    };
    let info = solve_on_cpu(
        &problem,
        Method::Cg,
        precision,
        &Preconditioning::None,
        &params,
    )
    .info;
    (info.iterations, info.stop_reason)
}

#[test]
fn td_iterations_lie_between_f64_and_dd_on_graded_spd_400() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices/graded_spd_400.mtx");
    let (f, fs) = iterations(path, 1e-12, WorkingPrecision::F64);
    let (t, ts) = iterations(path, 1e-12, WorkingPrecision::Td);
    let (d, ds) = iterations(path, 1e-12, WorkingPrecision::Dd);
    for s in [fs, ts, ds] {
        assert_eq!(s, StopReason::ConvergedRtol);
    }
    assert_eq!((f, t, d), (3642, 3029, 2629), "measured f64/td/dd counts");
    assert!(d < t && t < f);
}

fn is_d_plus_i(x: Dd) -> bool {
    x.lo.to_bits() & 0xffff_ffff == 0 && td::round(x) == x
}

#[test]
fn every_stored_element_of_a_td_solve_is_a_d_plus_i_value() {
    let cpu = CpuBackend::new();
    let a = Arc::new(poisson3d(12));
    let ga = cpu.matrix(&a).unwrap();
    let b = cpu.vector_from_f64::<f64>(&vec![1.0; a.nrows()]).unwrap();
    let mut x = cpu.zeros::<Td>(a.nrows()).unwrap();
    let params = Params {
        tol: 1e-14,
        ..Params::default()
    };
    let info = cg(&cpu, &ga, &b, &mut x, &Identity, &params, &mut NoMonitor).unwrap();
    assert_eq!(info.stop_reason, StopReason::ConvergedRtol);
    assert_eq!(info.precision, "td");
    let mut nonzero_lo = 0;
    for v in x.to_values() {
        let d = v.to_dd();
        assert!(is_d_plus_i(d), "{v:?}");
        nonzero_lo += usize::from(d.lo != 0.0);
    }
    // the low words carry information (this is not an f64 solve in disguise)
    assert!(nonzero_lo > x.len() / 2, "{nonzero_lo} of {}", x.len());
    // vector kernels and scalars: results are D+I values too
    let mut y = x.clone();
    let alpha = Td::one().div(&Td::from_f64(3.0));
    cpu.axpy(&alpha, &x, &mut y).unwrap();
    let dot = cpu.dot(&x, &y).unwrap();
    assert!(is_d_plus_i(dot.to_dd()) && is_d_plus_i(alpha.to_dd()));
    assert!(y.to_values().iter().all(|v| is_d_plus_i(v.to_dd())));
    // The thesis's structure of arrays, as on the GPU: n doubles and n i32, 12 bytes per element
    let TdVector { hi, lo } = &x.0;
    assert_eq!((hi.len(), lo.len()), (x.len(), x.len()));
    assert_eq!(size_of_val(&hi[..]) + size_of_val(&lo[..]), 12 * x.len());
    assert_eq!(x.to_values()[7].parts(), (hi[7], lo[7]));
}

#[test]
fn td_parses_and_reports_its_name() {
    assert_eq!(
        "td".parse::<WorkingPrecision>().unwrap(),
        WorkingPrecision::Td
    );
    assert_eq!(WorkingPrecision::Td.name(), "td");
    let list: precsolve::solver::dispatch::PrecisionChoice = "f64,td,dd,qd".parse().unwrap();
    assert_eq!(list.to_string(), "f64,td,dd,qd");
}

/// Values that use the whole D+I format (a full 20-bit `lo`), from a xorshift generator.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn td(&mut self) -> Td {
        let (a, b) = (self.unit() - 0.5, self.unit() + 0.25);
        Td::from_dd(Dd::from_f64(a).div(Dd::from_f64(b)))
    }
    fn vec(&mut self, n: usize) -> Vec<Td> {
        (0..n).map(|_| self.td()).collect()
    }
}

fn widen(x: &[Td]) -> Vec<Dd> {
    x.iter().map(|v| v.to_dd()).collect()
}

fn rounded(x: &[Dd]) -> Vec<Td> {
    x.iter().map(|&v| Td::from_dd(v)).collect()
}

fn same_bits(got: &[Td], want: &[Td], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.parts(), w.parts(), "{what}: element {i}");
    }
}

/// How many elements differ from the old rule (every `Td` operation rounded), to show that the
/// comparison above is not vacuous.
fn differing(got: &[Td], per_op: &[Td]) -> usize {
    got.iter()
        .zip(per_op)
        .filter(|(g, p)| g.parts() != p.parts())
        .count()
}

#[test]
fn td_vector_kernels_are_the_dd_kernels_on_widened_inputs_rounded_once() {
    let cpu = CpuBackend::new();
    let mut rng = Rng(0x7d_acc0_0001);
    // A few chunks of the dot product (DOT_CHUNK = 8192), with a ragged end.
    let n = 3 * 8192 + 123;
    let (x, y, v) = (rng.vec(n), rng.vec(n), rng.vec(n));
    let (xd, yd, vd) = (widen(&x), widen(&y), widen(&v));
    let (alpha, beta, omega) = (rng.td(), rng.td(), rng.td());
    let (ad, bd, od) = (alpha.to_dd(), beta.to_dd(), omega.to_dd());

    let (cx, cy, cv) = (host(&x), host(&y), host(&v));
    let (cxd, cyd, cvd) = (host(&xd), host(&yd), host(&vd));

    // dot: lanes, tree and partials in DD, one rounding of the result
    let dot = cpu.dot(&cx, &cy).unwrap();
    let dot_dd = cpu.dot(&cxd, &cyd).unwrap();
    assert_eq!(dot.parts(), Td::from_dd(dot_dd).parts(), "dot");

    // axpy, xpay, axpyz, bicgstab_direction: each element in DD, rounded once
    let mut got = cy.clone();
    cpu.axpy(&alpha, &cx, &mut got).unwrap();
    let mut want = cyd.clone();
    cpu.axpy(&ad, &cxd, &mut want).unwrap();
    same_bits(&got.to_values(), &rounded(&want.0), "axpy");
    let per_op: Vec<Td> = x.iter().zip(&y).map(|(x, y)| alpha.mul(x).add(y)).collect();
    assert!(
        differing(&got.to_values(), &per_op) > n / 100,
        "axpy vs rounding per operation"
    );

    let mut got = cy.clone();
    cpu.xpay(&cx, &beta, &mut got).unwrap();
    let mut want = cyd.clone();
    cpu.xpay(&cxd, &bd, &mut want).unwrap();
    same_bits(&got.to_values(), &rounded(&want.0), "xpay");

    let mut got = cpu.zeros::<Td>(n).unwrap();
    cpu.axpyz(&alpha, &cx, &cy, &mut got).unwrap();
    let mut want = cpu.zeros::<Dd>(n).unwrap();
    cpu.axpyz(&ad, &cxd, &cyd, &mut want).unwrap();
    same_bits(&got.to_values(), &rounded(&want.0), "axpyz");

    let mut got = cy.clone();
    cpu.bicgstab_direction(&cx, &beta, &omega, &cv, &mut got)
        .unwrap();
    let mut want = cyd.clone();
    cpu.bicgstab_direction(&cxd, &bd, &od, &cvd, &mut want)
        .unwrap();
    same_bits(&got.to_values(), &rounded(&want.0), "bicgstab_direction");

    // copy keeps the bits; convert rounds through DD
    let mut got = cpu.zeros::<Td>(n).unwrap();
    cpu.copy(&cx, &mut got).unwrap();
    same_bits(&got.to_values(), &x, "copy");
    let mut got = cpu.zeros::<Td>(n).unwrap();
    cpu.convert(&cyd, &mut got).unwrap();
    same_bits(&got.to_values(), &y, "convert dd -> td");

    // SpMV and residual: each row summed in DD (lanes and tree), rounded once when stored.
    // poisson3d (7 per row: one lane) and a band of 67 per row (several lanes and the tree).
    for a in [poisson3d(20), band(3000, 33, &mut rng)] {
        spmv_matches_dd(&cpu, a, &mut rng);
    }

    // The fused CG step: the bits of spmv and the tiled dot, then axpy and axpy-then-dot, each as above
    // (on the second-difference matrix of n rows, so that <p, A p> > 0 and the step is taken).
    let rho = rng.td();
    let a = cpu.matrix(&Arc::new(second_difference(n))).unwrap();
    let p = host(&rng.vec(n));
    let mut q = cpu.zeros::<Td>(n).unwrap();
    cpu.spmv(&a, &p, &mut q).unwrap();
    let pq = cpu.dot_tiled(&p, &q).unwrap();
    let (mut rg, mut qg) = (cy.clone(), cpu.zeros::<Td>(n).unwrap());
    let (pq_got, rr_got) = cpu.cg_step(&a, &rho, &p, &mut qg, &mut rg).unwrap();
    assert_eq!(pq_got.parts(), pq.parts(), "cg_step <p, q>");
    same_bits(&qg.to_values(), &q.to_values(), "cg_step q");
    let alpha = rho.div(&pq); // a scalar the loop keeps: td arithmetic, rounded
    let mut rw = cy.clone();
    cpu.axpy(&alpha.neg(), &q, &mut rw).unwrap();
    same_bits(&rg.to_values(), &rw.to_values(), "cg_step r");
    assert_eq!(rr_got.parts(), cpu.dot(&rw, &rw).unwrap().parts());
}

/// A CPU vector holding these values (td: the two arrays).
fn host<P: Precision>(values: &[P]) -> CpuVector<P> {
    CpuVector::from(values.to_vec())
}

/// A banded matrix with `2 half + 1` random entries per row (fewer at the ends).
fn band(n: usize, half: usize, rng: &mut Rng) -> CsrMatrix {
    let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for i in 0..n {
        for j in i.saturating_sub(half)..(i + half + 1).min(n) {
            cols.push(j as i32);
            vals.push(rng.unit() - 0.5);
        }
        row_ptr.push(cols.len());
    }
    CsrMatrix::try_from_parts(n, n, row_ptr, cols, vals, Symmetry::General).unwrap()
}

/// The `n`-row matrix `tridiag(-1, 2, -1)`: positive definite.
fn second_difference(n: usize) -> CsrMatrix {
    let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for i in 0..n {
        for (j, v) in [(i.wrapping_sub(1), -1.0), (i, 2.0), (i + 1, -1.0)] {
            if j < n {
                cols.push(j as i32);
                vals.push(v);
            }
        }
        row_ptr.push(cols.len());
    }
    CsrMatrix::try_from_parts(n, n, row_ptr, cols, vals, Symmetry::General).expect("valid")
}

fn spmv_matches_dd(cpu: &CpuBackend, a: CsrMatrix, rng: &mut Rng) {
    let rows = a.nrows();
    let ma = cpu.matrix(&Arc::new(a)).unwrap();
    let x = rng.vec(rows);
    let (cx, cxd) = (host(&x), host(&widen(&x)));
    let mut got = cpu.zeros::<Td>(rows).unwrap();
    cpu.spmv(&ma, &cx, &mut got).unwrap();
    let mut want = cpu.zeros::<Dd>(rows).unwrap();
    cpu.spmv(&ma, &cxd, &mut want).unwrap();
    same_bits(&got.to_values(), &rounded(&want.0), "spmv");
    let b: Vec<f64> = (0..rows).map(|_| rng.unit()).collect();
    let b = host(&b);
    let mut got = cpu.zeros::<Td>(rows).unwrap();
    cpu.residual(&ma, &b, &cx, &mut got).unwrap();
    let mut want = cpu.zeros::<Dd>(rows).unwrap();
    cpu.residual(&ma, &b, &cxd, &mut want).unwrap();
    same_bits(&got.to_values(), &rounded(&want.0), "residual");
}
