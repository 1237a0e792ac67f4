//! Quad-double in the CPU solver, pinned by measurement: on ill-conditioned SPD systems CG needs
//! fewer iterations the more precision it carries (f64 > dd > qd), because the recurrences lose
//! less orthogonality; double also misses its true residual where dd and qd meet it.
//!
//! The criterion is the iteration count, not the attainable true residual: the true residual is
//! computed in double-double (`src/solver/monitor.rs`: x rounded to DD, `b - A x` in DD), so
//! below about `2^-106 ||A|| ||x|| / ||b||` it cannot tell qd from dd (measured on nos1 at tol
//! 1e-28: dd 1.8e-25, qd 3.9e-27, the latter near that floor).
//!
//! Runs are bitwise reproducible (any thread count, FMA or not), so the counts are exact; the
//! asserts allow a few percent so that a deliberate change of summation order does not need new
//! pins, but keep the strict ordering with margins.

mod common;

use common::matrices::{shared_matrices, shared_matrix};
use common::outcomes::solve_on_cpu;
use precsolve::precond::Preconditioning;
use precsolve::solver::dispatch::{Method, Problem, WorkingPrecision};
use precsolve::solver::{Params, SolveInfo, StopReason};
use std::sync::Arc;

fn solve_all(path: &str, tol: f64) -> [SolveInfo; 3] {
    let a = Arc::new(precsolve::load_matrix(path).unwrap());
    let problem = Problem::new(a, None, None).unwrap(); // b = 1, x0 = 0
    let params = Params {
        tol,
        ..Params::default()
    };
    [
        WorkingPrecision::F64,
        WorkingPrecision::Dd,
        WorkingPrecision::Qd,
    ]
    .map(|precision| {
        solve_on_cpu(
            &problem,
            Method::Cg,
            precision,
            &Preconditioning::None,
            &params,
        )
        .info
    })
}

/// `got` within 3% of the measured count.
fn near(name: &str, info: &SolveInfo, measured: usize) {
    let (lo, hi) = (measured * 97 / 100, measured * 103 / 100);
    assert!(
        (lo..=hi).contains(&info.iterations),
        "{name} {}: {} iterations, measured {measured}",
        info.precision,
        info.iterations
    );
}

fn check(name: &str, runs: &[SolveInfo; 3], measured: [usize; 3], tol: f64) {
    let [f64_run, dd_run, qd_run] = runs;
    for (run, m) in runs.iter().zip(measured) {
        assert_eq!(
            run.stop_reason,
            StopReason::ConvergedRtol,
            "{name}: {run:?}"
        );
        near(name, run, m);
    }
    assert_eq!(qd_run.precision, "qd");
    // more precision, fewer iterations: each step at least a fifth fewer
    assert!(
        dd_run.iterations * 5 < f64_run.iterations * 4,
        "{name}: dd {} vs f64 {}",
        dd_run.iterations,
        f64_run.iterations
    );
    assert!(
        qd_run.iterations * 5 < dd_run.iterations * 4,
        "{name}: qd {} vs dd {}",
        qd_run.iterations,
        dd_run.iterations
    );
    // dd and qd meet the tolerance in the true residual, double does not
    for run in [dd_run, qd_run] {
        assert!(run.true_residual <= 2.0 * tol, "{name}: {run:?}");
    }
    assert!(f64_run.true_residual > 10.0 * tol, "{name}: {f64_run:?}");
}

/// The bundled graded SPD matrix (n = 400), tol 1e-12. Measured: f64 3642 iterations (true
/// residual 1.5e-11), dd 2629 (5.5e-13), qd 1644 (9.7e-13).
#[test]
fn graded_spd_400_cg_needs_fewer_iterations_with_each_precision() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices/graded_spd_400.mtx");
    let tol = 1e-12;
    let runs = solve_all(path, tol);
    check("graded_spd_400", &runs, [3642, 2629, 1644], tol);
}

/// nos1 (SuiteSparse, n = 237, condition ~2e7), tol 1e-12. Measured: f64 2252 iterations (true
/// residual 2.6e-9), dd 1248 (8.1e-13), qd 610 (9.0e-13).
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn nos1_cg_needs_fewer_iterations_with_each_precision() {
    let dir = shared_matrices();
    let tol = 1e-12;
    let runs = solve_all(&shared_matrix(&dir, "nos1"), tol);
    check("nos1", &runs, [2252, 1248, 610], tol);
}
