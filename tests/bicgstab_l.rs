//! BiCGStab(l): against exact rational arithmetic (a small nonsymmetric system in dd), against
//! BiCGStab (l = 1 is BiCGStab reorganised: the same iteration counts within one on matrices
//! where neither breaks down), and where its degree-l minimal-residual step solves what
//! BiCGStab's degree-1 steps do not. The shared-matrix cases are skipped, with the reason,
//! where `../shared` does not exist.

mod common;
#[path = "common/exact.rs"]
mod exact;

use common::matrices::{shared_matrices, shared_matrix};
use exact::{csr_from_fn, exact_solution, worst_relative_error};
use precsolve::solver::dispatch::{BackendChoice, Method, WorkingPrecision};
use precsolve::{CsrMatrix, Shadow, SolutionVector, Solver, StopReason};

/// A 16 x 16 nonsymmetric matrix with a skew part (complex eigenvalues), every entry a binary
/// fraction.
fn skew_system() -> CsrMatrix {
    csr_from_fn(16, |i, j| match (i, j) {
        _ if i == j => Some(4.0 + (i % 4) as f64 * 0.5),
        _ if j == i + 1 => Some(2.5),
        _ if i == j + 1 => Some(-2.5),
        _ if (i * 5 + j) % 7 == 0 => Some(0.125),
        _ => None,
    })
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
            .shadow(Shadow::R0)
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
        let worst = worst_relative_error(x, &exact);
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
            .shadow(Shadow::R0)
            .bicgstab_l(1)
            .backend(BackendChoice::Cpu)
            .solve(&a, &b)
            .unwrap();
        let bicgstab = Solver::bicgstab()
            .shadow(Shadow::R0)
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
        .shadow(Shadow::R0)
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
        .shadow(Shadow::R0)
        .precision::<precsolve::Dd>()
        .backend(BackendChoice::Cpu)
        .solve(&a, &b)
        .unwrap();
    assert_eq!(two.iterations, 492);
    assert!(two.converged() && two.true_residual <= 1e-8);
}

/// gre_216a breaks down in the second BiCG step of its first cycle with `r~ = r0`. As BiCGStab, BiCGStab(l) restarts
/// from the iterate with a fresh shadow residual: double converges after 2 restarts, dd after
/// 1; with no restarts allowed the breakdown is the outcome.
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn a_breakdown_restarts_from_the_iterate() {
    let a = precsolve::load_matrix(&shared_matrix(&shared_matrices(), "gre_216a")).unwrap();
    let b = vec![1.0; a.nrows()];
    let solve = |p: WorkingPrecision, restarts: usize| {
        Solver::with_method(Method::BicgstabL)
            .shadow(Shadow::R0)
            .max_restarts(restarts)
            .backend(BackendChoice::Cpu)
            .solve_in(p, &a, &b)
            .unwrap()
            .info
    };
    let none = solve(WorkingPrecision::F64, 0);
    assert_eq!(none.stop_reason.to_string(), "breakdown (rho = 0)");
    // in the cycle's second BiCG step: one step made
    assert_eq!((none.iterations, none.restarts), (1, 0));
    for (p, iterations, restarts) in [
        (WorkingPrecision::F64, 1336, 2),
        (WorkingPrecision::Dd, 235, 1),
    ] {
        let info = solve(p, 5);
        assert_eq!(
            (info.iterations, info.restarts),
            (iterations, restarts),
            "{p:?}"
        );
        assert!(
            info.stop_reason.converged() && info.true_residual <= 1e-8,
            "{p:?}"
        );
    }
}
