//! BiCGStab(l): against exact rational arithmetic (a small nonsymmetric system in dd), against
//! BiCGStab (l = 1 is BiCGStab reorganised: the same iteration counts within one on matrices
//! where neither breaks down), and where its degree-l minimal-residual step solves what
//! BiCGStab's degree-1 steps do not. The shared-matrix cases are skipped, with the reason,
//! where `../shared` does not exist.

mod common;
#[path = "common/exact.rs"]
mod exact;

use common::matrices::{shared_matrices, shared_matrix};
use exact::{dd_to_rational, f64_to_rational};
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};
use precsolve::solver::dispatch::{BackendChoice, Method, WorkingPrecision};
use precsolve::{CsrMatrix, SolutionVector, Solver, StopReason};

/// A 16 x 16 nonsymmetric matrix with a skew part (complex eigenvalues), every entry a binary
/// fraction.
fn skew_system() -> CsrMatrix {
    let n = 16;
    let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..n {
            let v = match (i, j) {
                _ if i == j => 4.0 + (i % 4) as f64 * 0.5,
                _ if j == i + 1 => 2.5,
                _ if i == j + 1 => -2.5,
                _ if (i * 5 + j) % 7 == 0 => 0.125,
                _ => continue,
            };
            cols.push(j);
            vals.push(v);
        }
        row_ptr.push(cols.len());
    }
    CsrMatrix::from_slices(n, n, &row_ptr, &cols, &vals).unwrap()
}

fn exact_solution(a: &CsrMatrix, b: &[f64]) -> Vec<BigRational> {
    let n = a.nrows();
    let mut m = vec![vec![BigRational::zero(); n + 1]; n];
    for (i, row) in m.iter_mut().enumerate() {
        for k in a.row_ptr()[i]..a.row_ptr()[i + 1] {
            row[a.col_idx()[k] as usize] = f64_to_rational(a.values()[k]);
        }
        row[n] = f64_to_rational(b[i]);
    }
    for c in 0..n {
        let p = (c..n).find(|&r| !m[r][c].is_zero()).expect("nonsingular");
        m.swap(c, p);
        let pivot = m[c].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != c && !row[c].is_zero() {
                let f = &row[c] / &pivot[c];
                for (entry, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *entry -= &f * p;
                }
            }
        }
    }
    (0..n).map(|i| &m[i][n] / &m[i][i]).collect()
}

/// In dd, to tol 1e-28, BiCGStab(l) for l = 1, 2, 4 lands on the exact solution to about dd's
/// precision.
#[test]
fn dd_solves_agree_with_the_exact_solution() {
    let a = skew_system();
    let b: Vec<f64> = (0..a.nrows())
        .map(|i| 1.0 - (i % 5) as f64 * 0.25)
        .collect();
    let exact = exact_solution(&a, &b);
    for l in [1, 2, 4] {
        let s = Solver::with_method(Method::BicgstabL)
            .bicgstab_l(l)
            .tol(1e-28)
            .backend(BackendChoice::Cpu)
            .solve_in(WorkingPrecision::Dd, &a, &b)
            .unwrap();
        assert_eq!(s.info.method, "bicgstab-l");
        assert_eq!(s.info.stop_reason, StopReason::ConvergedRtol, "l = {l}");
        assert_eq!(s.info.iterations % l, 0, "whole cycles");
        let SolutionVector::Dd(x) = &s.x else {
            panic!("{:?}", s.x)
        };
        let worst = x
            .iter()
            .zip(&exact)
            .map(|(xi, ei)| {
                ((dd_to_rational(*xi) - ei).abs() / ei.abs())
                    .to_f64()
                    .unwrap()
            })
            .fold(0.0, f64::max);
        assert!(worst < 1e-26, "l = {l}: relative error {worst:e}");
    }
}

/// l = 1 is BiCGStab reorganised: on matrices where neither breaks down, the iteration counts
/// agree within one (BiCGStab also tests its half step).
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn l_1_takes_bicgstab_s_iterations() {
    let dir = shared_matrices();
    for name in ["pde900", "nos3", "sherman5"] {
        let a = precsolve::load_matrix(&shared_matrix(&dir, name)).unwrap();
        let b = vec![1.0; a.nrows()];
        let one = Solver::with_method(Method::BicgstabL)
            .bicgstab_l(1)
            .backend(BackendChoice::Cpu)
            .solve(&a, &b)
            .unwrap();
        let bicgstab = Solver::bicgstab()
            .backend(BackendChoice::Cpu)
            .solve(&a, &b)
            .unwrap();
        assert!(one.converged() && bicgstab.converged(), "{name}");
        let (p, q) = (one.iterations as i64, bicgstab.iterations as i64);
        assert!((p - q).abs() <= q / 10 + 1, "{name}: {p} against {q}");
    }
}

/// impcol_c in dd at tol 1e-8: BiCGStab ends in a breakdown after its 5 restarts (iteration
/// 1310); BiCGStab(2) converges in 492 (benches/results/methods.md).
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn degree_two_steps_solve_what_bicgstab_does_not() {
    let a = precsolve::load_matrix(&shared_matrix(&shared_matrices(), "impcol_c")).unwrap();
    let b = vec![1.0; a.nrows()];
    let bicgstab = Solver::bicgstab()
        .precision::<precsolve::Dd>()
        .backend(BackendChoice::Cpu)
        .max_iter(10_000)
        .solve(&a, &b)
        .unwrap();
    assert!(
        matches!(bicgstab.stop_reason, StopReason::Breakdown { .. }),
        "{}",
        bicgstab.stop_reason
    );
    let two = Solver::with_method(Method::BicgstabL)
        .precision::<precsolve::Dd>()
        .backend(BackendChoice::Cpu)
        .solve(&a, &b)
        .unwrap();
    assert_eq!(two.iterations, 492);
    assert!(two.converged() && two.true_residual <= 1e-8);
}
