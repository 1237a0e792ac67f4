//! Solves of the real SuiteSparse matrices in `../shared/matrices`, pinned by measurement
//! (`scripts/survey_shared.sh 1e-8`, double paths cross-checked against SciPy 1.17's cg and
//! bicgstab: same breakdowns and non-convergence, iteration counts within 2%).
//! Skipped, with a SKIPPED line, where `../shared` does not exist.

mod common;

use common::matrices::{shared_matrices, shared_matrix};
use common::outcomes::{TRUE_RESIDUAL_SLACK, assert_solved, solve_on_cpu, thesis_params};
use precsolve::precond::Preconditioning;
use precsolve::solver::dispatch::{Method, Problem, WorkingPrecision};
use precsolve::solver::{Params, SolveInfo, StopReason};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

fn solve_both(dir: &Path, name: &str, method: Method) -> (SolveInfo, SolveInfo) {
    let a = Arc::new(precsolve::load_matrix(&shared_matrix(dir, name)).unwrap());
    let problem = Problem::new(a, None, None).unwrap();
    let params = thesis_params(); // tol 1e-8 on ||r||/||r0||, 30,000 iterations, b = 1
    let run = |p| solve_on_cpu(&problem, method, p, &Preconditioning::None, &params).info;
    (run(WorkingPrecision::F64), run(WorkingPrecision::Dd))
}

/// Positive definite per PROVENANCE.md. bcsstk13 (condition 1e10) is left out: unpreconditioned
/// CG reaches 30,000 iterations in both precisions with ||r||/||r0|| ~ 5 (it needs ILU(0)).
const SPD: &[&str] = &[
    "1138_bus", "494_bus", "bcsstk01", "bcsstk02", "bcsstk03", "bcsstk04", "bcsstk05", "bcsstk06",
    "bcsstk07", "bcsstk16", "bcsstk22", "bcsstm07", "gr_30_30", "mesh2e1", "mesh2em5", "nos1",
    "nos3", "nos5",
];

#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn cg_solves_the_positive_definite_matrices_in_both_precisions() {
    let dir = shared_matrices();
    // Matrices side by side on the rayon pool (one test holds many solves).
    SPD.par_iter().for_each(|name| {
        let (f64_run, dd_run) = solve_both(&dir, name, Method::Auto);
        assert_eq!(dd_run.method, "cg", "{name} is stored as symmetric");
        assert_solved(name, &f64_run);
        assert_solved(name, &dd_run);
        // DD never needs more iterations than double here (measured: 0.45x to 1.0x).
        assert!(
            dd_run.iterations <= f64_run.iterations,
            "{name}: {} vs {}",
            dd_run.iterations,
            f64_run.iterations
        );
    });
}

/// Nonsymmetric matrices both precisions solve with BiCGStab at 1e-8.
const NONSYMMETRIC_SOLVED_BY_BOTH: &[&str] = &[
    "arc130",
    "bfwa62",
    "bwm200",
    "cavity01",
    "ck104",
    "ck400",
    "cz148",
    "dw2048",
    "e05r0100",
    "ex1",
    "odepa400",
    "pde225",
    "pde900",
    "pivtol",
    "poisson2D",
    "rajat11",
    "rdb1250",
    "rdb200",
];

#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn bicgstab_solves_nonsymmetric_matrices_in_both_precisions() {
    let dir = shared_matrices();
    NONSYMMETRIC_SOLVED_BY_BOTH.par_iter().for_each(|name| {
        let (f64_run, dd_run) = solve_both(&dir, name, Method::Auto);
        assert_eq!(dd_run.method, "bicgstab");
        assert_solved(name, &f64_run);
        assert_solved(name, &dd_run);
    });
}

#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn fs_183_4_dd_converges_in_a_fraction_of_the_iterations() {
    let dir = shared_matrices();
    // Measured: double reaches 30,000 iterations without converging, DD converges in 553
    // (condition number 2.2e11).
    let (f64_run, dd_run) = solve_both(&dir, "fs_183_4", Method::Bicgstab);
    assert_solved("fs_183_4", &dd_run);
    const AT_LEAST_FEWER: usize = 10;
    assert!(
        dd_run.iterations * AT_LEAST_FEWER < f64_run.iterations,
        "DD {} vs double {} iterations",
        dd_run.iterations,
        f64_run.iterations
    );
    // DD also takes less time: 0.15x double's total with `solver solve --backend cpu` (553 DD
    // iterations at ~31 us against 30,000 at ~3.9 us). That is a measurement's claim, not a
    // test's: a timed assertion here failed once when the shared CI machine stalled.
}

#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn olm500_and_rdb200l_are_solved_by_dd_only() {
    let dir = shared_matrices();
    // Measured: double BiCGStab without restarts breaks down (olm500 after 818 iterations at
    // ||r||/||r0|| 2.9, rdb200l after 45 at 4.5e-7; SciPy's bicgstab fails on both too); DD
    // converges in 354 and 29. (With restarts double solves rdb200l: tests/bicgstab_restarts.rs.)
    for name in ["olm500", "rdb200l"] {
        let a = Arc::new(precsolve::load_matrix(&shared_matrix(&dir, name)).unwrap());
        let problem = Problem::new(a, None, None).unwrap();
        let params = Params {
            max_restarts: 0,
            ..thesis_params()
        };
        let run = |p| {
            solve_on_cpu(
                &problem,
                Method::Bicgstab,
                p,
                &Preconditioning::None,
                &params,
            )
            .info
        };
        let (f64_run, dd_run) = (run(WorkingPrecision::F64), run(WorkingPrecision::Dd));
        assert_solved(name, &dd_run);
        assert!(
            !f64_run.stop_reason.converged(),
            "{name}: double {:?}",
            f64_run.stop_reason
        );
        assert!(
            f64_run.true_residual > TRUE_RESIDUAL_SLACK * Params::default().tol,
            "{name}"
        );
    }
}

#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn cg_names_symmetric_indefinite_matrices() {
    let dir = shared_matrices();
    for name in ["bfwb398", "ex2", "hangGlider_1", "orbitRaising_1"] {
        let (f64_run, dd_run) = solve_both(&dir, name, Method::Cg);
        for run in [f64_run, dd_run] {
            assert_eq!(
                run.stop_reason,
                StopReason::Indefinite,
                "{name} {}",
                run.precision
            );
        }
    }
}
