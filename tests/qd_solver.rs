//! Quad-double in the CPU solver, pinned by measurement: on ill-conditioned SPD systems CG needs
//! fewer iterations the more precision it carries (f64 > dd > qd), because the recurrences lose
//! less orthogonality; double also misses its true residual where dd and qd meet it.
//!
//! The criterion is the iteration count. The true residual of a qd solve is computed in qd
//! (`src/solver/monitor.rs`), and checked here against exact arithmetic on the returned `x`.
//!
//! Runs are bitwise reproducible (any thread count, FMA or not), so the counts are exact; the
//! asserts allow a few percent so that a deliberate change of summation order does not need new
//! pins, but keep the strict ordering with margins.

mod common;
#[path = "common/exact.rs"]
mod exact;

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

/// The true residual of a qd solve is measured in qd: on poisson2d:10 (CG, tol 1e-40) it is
/// what exact arithmetic gives for the returned `x`, far below the ~1e-31 that a residual of `x`
/// rounded to dd could show.
#[test]
fn qd_true_residual_is_measured_beyond_dd() {
    use exact::Dyadic;
    let a = precsolve::poisson2d(10);
    let b = vec![1.0; a.nrows()];
    let out = precsolve::Solver::cg()
        .precision::<precsolve::Qd>()
        .tol(1e-40)
        .solve(&a, &b)
        .unwrap();
    assert!(out.converged());
    let x: Vec<Dyadic> = out.x.iter().map(|q| Dyadic::from_qd(*q)).collect();
    let (ptr, cols, vals) = (a.row_ptr(), a.col_idx(), a.values());
    let mut squares = Dyadic::zero();
    for i in 0..a.nrows() {
        let mut r = Dyadic::from_f64(b[i]);
        for k in ptr[i]..ptr[i + 1] {
            r = r.sub(&Dyadic::from_f64(vals[k]).mul(&x[cols[k] as usize]));
        }
        squares = squares.add(&r.mul(&r));
    }
    let b_norm = (a.nrows() as f64).sqrt();
    let exact = squares.ratio_f64(&Dyadic::from_f64(1.0)).sqrt() / b_norm;
    assert!(exact < 1e-50, "exact true residual {exact:e}");
    // Both sit at qd's rounding floor, where `b - A x` in qd is accurate to its leading digits
    // only (measured: 1.4% apart); in dd the report said 6.2e-32.
    let reported = out.true_residual;
    assert!(
        (0.5..2.0).contains(&(reported / exact)),
        "reported {reported:e}, exact {exact:e}"
    );
}
