//! Assertions on solve outcomes shared by the shared-matrix tests.

use precsolve::solver::{Params, SolveInfo, StopReason};

/// The defaults with the thesis's shadow residual `r~ = r0` (the default until the study
/// records' format 4; `random` now): the pinned BiCGStab measurements of the shared-matrix tests
/// were taken with it, and the breakdowns they pin are those of `r~ = r0`.
pub fn thesis_params() -> Params {
    Params {
        shadow: precsolve::solver::bicgstab::Shadow::R0,
        ..Params::default()
    }
}

/// The true residual may exceed the recurrence's tolerance by this factor and still count.
pub const TRUE_RESIDUAL_SLACK: f64 = 10.0;

/// Converged on the recurrence at the default tolerance (1e-8), with the true residual within
/// [`TRUE_RESIDUAL_SLACK`] of it.
pub fn assert_solved(name: &str, info: &SolveInfo) {
    let tol = Params::default().tol;
    assert_eq!(
        info.stop_reason,
        StopReason::ConvergedRtol,
        "{name} {}: {info:?}",
        info.precision
    );
    assert!(
        info.true_residual <= TRUE_RESIDUAL_SLACK * tol,
        "{name} {}: true residual {:e}",
        info.precision,
        info.true_residual
    );
}

/// One solve on the CPU backend.
pub fn solve_on_cpu(
    problem: &precsolve::solver::dispatch::Problem,
    method: precsolve::solver::dispatch::Method,
    precision: precsolve::solver::dispatch::WorkingPrecision,
    precond: &precsolve::precond::Preconditioning,
    params: &Params,
) -> precsolve::solver::dispatch::Solution {
    use precsolve::solver::dispatch::{BackendChoice, Recipe, solve};
    let recipe = Recipe {
        method,
        precision,
        precond,
    };
    let mut monitor = precsolve::solver::NoMonitor;
    solve(problem, BackendChoice::Cpu, recipe, params, &mut monitor).unwrap()
}
