//! BiCGStab past its first breakdown: restarts from the current iterate with a fresh shadow
//! residual, and the shadow residual choices, on the shared matrices where they matter. Pinned
//! by `cargo bench --bench bicgstab_shadow` (benches/results/bicgstab-shadow.md).
//! Skipped, with the reason, where `../shared` does not exist.

mod common;

use common::matrices::{shared_matrices, shared_matrix};
use common::outcomes::{solve_on_cpu, thesis_params};
use precsolve::SolutionVector;
use precsolve::precond::Preconditioning;
use precsolve::solver::bicgstab::Shadow;
use precsolve::solver::dispatch::{Method, Problem, Solution, WorkingPrecision};
use precsolve::solver::{Params, ResidualNorm, StopReason};
use std::sync::Arc;

fn problem(name: &str, x0: Option<Vec<f64>>) -> Problem {
    let dir = shared_matrices();
    let a = Arc::new(precsolve::load_matrix(&shared_matrix(&dir, name)).unwrap());
    Problem::new(a, None, x0).unwrap()
}

fn run(problem: &Problem, p: WorkingPrecision, params: &Params) -> Solution {
    solve_on_cpu(problem, Method::Bicgstab, p, &Preconditioning::None, params)
}

fn f64_x(s: &Solution) -> Vec<f64> {
    match &s.x {
        SolutionVector::F64(x) => x.clone(),
        other => panic!("an f64 solve gave {other:?}"),
    }
}

/// cage8 (column sums 1): with `b = r~ = ones`, `<r~, A p> = <ones, p>`, and double breaks down
/// in iteration 6 as the issue reports (SciPy converges in 29). One restart, or a random
/// shadow from the start, solves it.
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn a_restart_or_a_random_shadow_solves_cage8_in_double() {
    let p = problem("cage8", None);
    let tol = Params::default().tol;
    let without = run(
        &p,
        WorkingPrecision::F64,
        &Params {
            max_restarts: 0,
            ..thesis_params()
        },
    );
    assert_eq!(
        without.info.stop_reason,
        StopReason::Breakdown {
            what: "<r~, v> = 0".into()
        }
    );
    assert_eq!(without.info.iterations, 5);
    let restarted = run(&p, WorkingPrecision::F64, &thesis_params());
    assert!(
        restarted.info.stop_reason.converged(),
        "{:?}",
        restarted.info.stop_reason
    );
    assert_eq!(
        (restarted.info.iterations, restarted.info.restarts),
        (12, 1)
    );
    assert!(
        restarted.info.true_residual <= tol,
        "{}",
        restarted.info.true_residual
    );
    let random = Params {
        shadow: Shadow::Random,
        ..thesis_params()
    };
    let random = run(&p, WorkingPrecision::F64, &random);
    assert_eq!((random.info.iterations, random.info.restarts), (13, 0));
    assert!(random.info.true_residual <= tol);
}

/// A restart is a fresh BiCGStab from the iterate it restarts at: the restarted solve's
/// `x` equals, bit for bit, that of a new solve started from the breakdown's `x` (with the
/// stopping test on `||b||`, which both share), and their iterations add up.
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn a_restart_is_a_new_solve_from_the_iterate() {
    for name in ["cage8", "rdb200l"] {
        let params = Params {
            criterion: ResidualNorm::Rhs,
            ..thesis_params()
        };
        let p = problem(name, None);
        let broken = run(
            &p,
            WorkingPrecision::F64,
            &Params {
                max_restarts: 0,
                ..params.clone()
            },
        );
        assert!(
            matches!(broken.info.stop_reason, StopReason::Breakdown { .. }),
            "{name}"
        );
        let restarted = run(&p, WorkingPrecision::F64, &params);
        assert_eq!(restarted.info.restarts, 1, "{name}");
        let fresh = run(
            &problem(name, Some(f64_x(&broken))),
            WorkingPrecision::F64,
            &Params {
                max_restarts: 0,
                ..params.clone()
            },
        );
        assert_eq!(fresh.info.stop_reason, restarted.info.stop_reason, "{name}");
        assert_eq!(
            broken.info.iterations + fresh.info.iterations,
            restarted.info.iterations,
            "{name}"
        );
        let bits = |x: Vec<f64>| x.into_iter().map(f64::to_bits).collect::<Vec<_>>();
        assert_eq!(bits(f64_x(&fresh)), bits(f64_x(&restarted)), "{name}");
    }
}

/// rdb200l: double breaks down on `rho` after 45 iterations; restarted, it is solved in 48.
/// After the restarts run out, the breakdown is the outcome again.
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn restarts_turn_rdb200l_s_breakdown_into_convergence_and_are_bounded() {
    let p = problem("rdb200l", None);
    let restarted = run(&p, WorkingPrecision::F64, &thesis_params());
    assert!(restarted.info.stop_reason.converged());
    assert_eq!(
        (restarted.info.iterations, restarted.info.restarts),
        (48, 1)
    );
    assert!(restarted.info.true_residual <= Params::default().tol);
    // str_0 breaks down again after each of its 5 restarts (measured).
    let q = problem("str_0", None);
    let bounded = run(&q, WorkingPrecision::F64, &thesis_params());
    assert_eq!(bounded.info.restarts, 5);
    assert!(matches!(
        bounded.info.stop_reason,
        StopReason::Breakdown { .. }
    ));
}
