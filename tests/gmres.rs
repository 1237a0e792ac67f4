//! Restarted GMRES(m): against exact rational arithmetic (finite termination on a small
//! nonsymmetric system in dd), against SciPy's `gmres` (the same iteration counts in double),
//! and a restart against a new solve from the iterate, bit for bit. The shared-matrix cases
//! are skipped, with the reason, where `../shared` does not exist.

mod common;
#[path = "common/exact.rs"]
mod exact;

use common::matrices::{shared_matrices, shared_matrix};
use exact::{csr_from_fn, exact_solution, worst_relative_error};
use precsolve::precision::exact_values::ExactValues;
use precsolve::solver::dispatch::{
    BackendChoice, Lane, Method, Problem, Recipe, Solution, WorkingPrecision, exact_initial_guess,
    solve_on,
};
use precsolve::solver::{NoMonitor, Orthogonalization, Params, ResidualNorm};
use precsolve::{CsrMatrix, Shadow, SolutionVector, Solver, StopReason};
use std::sync::Arc;

/// A 12 x 12 nonsymmetric matrix, diagonally dominant, every entry a small binary fraction.
fn small_system() -> CsrMatrix {
    csr_from_fn(12, |i, j| match (i, j) {
        _ if i == j => Some(8.0 + i as f64 * 0.25),
        _ if (i * 7 + j * 3) % 5 == 0 => Some(-1.0 - (j as f64) * 0.125),
        _ if j == i + 1 => Some(0.5),
        _ => None,
    })
}

/// GMRES with a basis as large as the system ends, in exact arithmetic, within n iterations at
/// the exact solution; in dd it gets there to about dd's precision (both orthogonalisations).
#[test]
fn a_full_basis_reaches_the_exact_solution_in_dd() {
    let a = small_system();
    let b: Vec<f64> = (0..a.nrows()).map(|i| 1.0 + (i % 3) as f64).collect();
    let exact = exact_solution(&a, &b);
    for how in [Orthogonalization::Mgs, Orthogonalization::Cgs2] {
        let s = Solver::gmres()
            .tol(1e-28)
            .gmres_restart(a.nrows())
            .orthogonalization(how)
            .backend(BackendChoice::Cpu)
            .solve_in(WorkingPrecision::Dd, &a, &b)
            .unwrap();
        assert_eq!(s.info.method, "gmres");
        assert!(
            s.info.iterations <= a.nrows(),
            "{how:?}: {} iterations",
            s.info.iterations
        );
        let SolutionVector::Dd(x) = &s.x else {
            panic!("a dd solve gave {:?}", s.x)
        };
        let worst = worst_relative_error(x, &exact);
        assert!(worst < 1e-27, "{how:?}: relative error {worst:e}");
    }
}

fn run(
    a: &CsrMatrix,
    b: &[f64],
    x0: Option<ExactValues>,
    p: WorkingPrecision,
    params: &Params,
) -> Solution {
    let problem = Problem::with_exact_x0(Arc::new(a.clone()), Some(b.to_vec()), x0).unwrap();
    let recipe = Recipe {
        method: Method::Gmres,
        precision: p,
        precond: &precsolve::precond::Preconditioning::None,
    };
    solve_on(
        &Lane::default(),
        &problem,
        BackendChoice::Cpu,
        recipe,
        params,
        &mut NoMonitor,
    )
    .unwrap()
}

/// The same matrix in double: the residual after a cycle of `m` is that of a new GMRES started
/// from the first cycle's `x`, bit for bit (on `||r||/||b||`, one denominator for both), in
/// f64 and dd.
#[test]
fn a_restart_is_a_new_solve_from_the_iterate() {
    let a = precsolve::poisson2d(12);
    let b = vec![1.0; a.nrows()];
    for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
        let params = |max_iter| Params {
            tol: 1e-14,
            max_iter,
            criterion: ResidualNorm::Rhs,
            gmres_restart: 10,
            ..Params::default()
        };
        let whole = run(&a, &b, None, p, &params(30));
        let first = run(&a, &b, None, p, &params(10));
        let x0 = exact_initial_guess(&first.x).unwrap();
        let rest = run(&a, &b, Some(x0), p, &params(20));
        assert_eq!(whole.info.stop_reason, StopReason::MaxIterations);
        assert_eq!(rest.info.iterations + 10, whole.info.iterations, "{p:?}");
        assert_eq!(rest.info.true_residual, whole.info.true_residual, "{p:?}");
        assert_eq!(rest.x, whole.x, "{p:?}");
    }
}

/// SciPy 1.17.1's `gmres(A, ones, rtol=1e-8, restart=30)` takes 21, 35 and 354 inner
/// iterations on cage8, rdb200l and fs_183_4, and does not converge on sherman5 in 1,000
/// cycles; ours takes the same counts (its stopping test is SciPy's here: `x0 = 0`, so
/// `||r0|| = ||b||`).
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn iteration_counts_are_scipy_s() {
    let dir = shared_matrices();
    for (name, iterations) in [("cage8", 21), ("rdb200l", 35), ("fs_183_4", 354)] {
        let a = precsolve::load_matrix(&shared_matrix(&dir, name)).unwrap();
        let b = vec![1.0; a.nrows()];
        let out = Solver::gmres()
            .backend(BackendChoice::Cpu)
            .solve(&a, &b)
            .unwrap();
        assert_eq!(out.iterations, iterations, "{name}");
        assert!(out.converged() && out.true_residual <= 1e-8, "{name}");
    }
}

/// sherman5: GMRES(30) stagnates (as SciPy's does); with ILU(0) as right preconditioner it
/// converges in 46 iterations.
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn ilu0_on_the_right_rescues_a_stagnating_gmres() {
    let dir = shared_matrices();
    let a = precsolve::load_matrix(&shared_matrix(&dir, "sherman5")).unwrap();
    let b = vec![1.0; a.nrows()];
    let plain = Solver::gmres()
        .backend(BackendChoice::Cpu)
        .max_iter(3000)
        .solve(&a, &b)
        .unwrap();
    assert_eq!(plain.stop_reason, StopReason::MaxIterations);
    let ilu = Solver::gmres()
        .backend(BackendChoice::Cpu)
        .ilu0()
        .solve(&a, &b)
        .unwrap();
    assert_eq!(ilu.iterations, 46);
    assert!(ilu.true_residual <= 1e-8);
}

/// fs_183_4 at tol 1e-8 in double: BiCGStab (r~ = r0, 5 restarts) does not solve it in 10,000
/// iterations; GMRES(30) does in 354 (benches/results/methods.md).
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn gmres_solves_one_that_bicgstab_does_not() {
    let a = precsolve::load_matrix(&shared_matrix(&shared_matrices(), "fs_183_4")).unwrap();
    let b = vec![1.0; a.nrows()];
    let bicgstab = Solver::bicgstab()
        .shadow(Shadow::R0)
        .backend(BackendChoice::Cpu)
        .max_iter(10_000)
        .solve(&a, &b)
        .unwrap();
    assert!(!(bicgstab.converged() && bicgstab.true_residual <= 1e-8));
    let gmres = Solver::gmres()
        .backend(BackendChoice::Cpu)
        .solve(&a, &b)
        .unwrap();
    assert_eq!(gmres.iterations, 354);
    assert!(gmres.converged() && gmres.true_residual <= 1e-8);
}
