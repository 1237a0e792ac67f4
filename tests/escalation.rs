//! Precision escalation (`--precision auto`, `ladder:...`): a solve that starts in double and
//! goes on in the next precision from its iterate where double stops making progress. Checked
//! against independent solves: a rung is a plain solve of its precision started from the
//! previous rung's `x`, bit for bit. Pinned by `bash benches/cpu/escalation.sh`
//! (benches/results/escalation.md). The shared-matrix cases are skipped, with the reason,
//! where `../shared` does not exist.

mod common;

use common::cli::{EXIT_OK, EXIT_USAGE, solver};
use common::matrices::{shared_matrices, shared_matrix};
use precsolve::{
    Control, Escalation, ResidualNorm, SolutionVector, Solver, StopReason, WorkingPrecision,
};
use std::path::Path;

const GRADED: &str = "matrices/graded_spd_400.mtx";

fn parse(p: &str) -> WorkingPrecision {
    p.parse().unwrap()
}

fn ones(n: usize) -> Vec<f64> {
    vec![1.0; n]
}

/// graded_spd_400 (CG, tol 1e-12): double's recurrence residual meets the tolerance at
/// iteration 3642 while its true residual stays near 1.6e-11; dd finishes from there.
#[test]
fn auto_goes_on_in_dd_where_double_s_true_residual_misses() {
    let a = precsolve::read_matrix_market(GRADED).unwrap();
    let b = ones(a.nrows());
    let mut cg = Solver::cg().tol(1e-12);
    let double = cg.solve_in(WorkingPrecision::F64, &a, &b).unwrap().info;
    assert_eq!(double.stop_reason, StopReason::ConvergedRtol);
    assert!(double.true_residual > 1e-11, "{}", double.true_residual);

    let out = cg.solve_in(parse("auto"), &a, &b).unwrap();
    let info = &out.info;
    assert_eq!(info.precision, "auto");
    let phases: Vec<(&str, usize)> = info
        .phases
        .iter()
        .map(|p| (p.precision, p.iterations))
        .collect();
    assert_eq!(phases, [("f64", 3642), ("dd", 11)]);
    // the f64 rung is the plain f64 solve
    assert_eq!(info.phases[0].iterations, double.iterations);
    assert_eq!(info.phases[0].true_residual, double.true_residual);
    assert_eq!(info.iterations, 3642 + 11);
    assert_eq!(info.stop_reason, StopReason::ConvergedRtol);
    assert!(info.true_residual <= 1e-12, "{}", info.true_residual);
    assert!(matches!(out.x, SolutionVector::Dd(_)));
    // the times add up (the rungs' totals are the ladder's)
    let rungs: f64 = info.phases.iter().map(|p| p.seconds).sum();
    assert!((info.times.total - rungs).abs() <= 1e-9 * rungs.max(1.0));
}

/// A rung is a plain solve of its precision from the previous rung's `x`: on `||r||/||b||`
/// (one denominator for both) the ladder's dd rung equals a dd solve started from the f64
/// rung's solution, iterations and every bit of `x`.
#[test]
fn a_rung_equals_a_solve_from_the_previous_rung_s_x() {
    let a = precsolve::read_matrix_market(GRADED).unwrap();
    let b = ones(a.nrows());
    let ladder = Solver::cg()
        .tol(1e-12)
        .criterion(ResidualNorm::Rhs)
        .solve_in(parse("ladder:f64,dd"), &a, &b)
        .unwrap();
    let [first, second] = &ladder.info.phases[..] else {
        panic!("two rungs: {:?}", ladder.info.phases);
    };
    let double = Solver::cg()
        .tol(1e-12)
        .criterion(ResidualNorm::Rhs)
        .max_iter(first.iterations)
        .solve_in(WorkingPrecision::F64, &a, &b)
        .unwrap();
    let x_double = double.x.to_f64();
    let dd = Solver::cg()
        .tol(1e-12)
        .criterion(ResidualNorm::Rhs)
        .x0(&x_double)
        .solve_in(WorkingPrecision::Dd, &a, &b)
        .unwrap();
    assert_eq!(dd.info.iterations, second.iterations);
    assert_eq!(dd.info.true_residual, second.true_residual);
    assert_eq!(dd.x, ladder.x);
}

/// The callback sees one solve: iterations numbered on across the rungs, and a stop in the
/// first rung ends the ladder there.
#[test]
fn the_callback_numbers_iterations_across_rungs_and_can_stop_the_ladder() {
    let a = precsolve::read_matrix_market(GRADED).unwrap();
    let b = ones(a.nrows());
    let mut seen = Vec::new();
    let out = Solver::cg()
        .tol(1e-12)
        .on_iteration(|at| {
            seen.push(at.iteration);
            Control::Continue
        })
        .solve_in(parse("auto"), &a, &b)
        .unwrap();
    // every iteration once, numbered on across the rungs (the one where a rung's test is met,
    // 3642 and the last, ends the rung before the callback is asked)
    let expected: Vec<usize> = (1..out.info.iterations).filter(|&k| k != 3642).collect();
    assert!(
        seen == expected,
        "saw {} iterations up to {:?}",
        seen.len(),
        seen.last()
    );

    let stopped = Solver::cg()
        .tol(1e-12)
        .on_iteration(|at| match at.iteration {
            1000 => Control::Stop,
            _ => Control::Continue,
        })
        .solve_in(parse("auto"), &a, &b)
        .unwrap();
    assert_eq!(stopped.info.stop_reason, StopReason::Cancelled);
    assert_eq!(stopped.info.iterations, 1000);
    assert_eq!(stopped.info.phases.len(), 1);
}

/// `max_iter` counts every rung; a rung limit (`rung_max_iter`, LIS's `-switch_maxiter`) hands
/// over after that many iterations.
#[test]
fn iteration_limits_count_every_rung() {
    let a = precsolve::read_matrix_market(GRADED).unwrap();
    let b = ones(a.nrows());
    let limited = Solver::cg()
        .tol(1e-12)
        .max_iter(3000)
        .solve_in(parse("auto"), &a, &b)
        .unwrap();
    assert_eq!(limited.info.iterations, 3000);
    assert_eq!(limited.info.stop_reason, StopReason::MaxIterations);

    let rungs = Solver::cg()
        .tol(1e-12)
        .escalation(Escalation {
            rung_max_iter: 500,
            ..Escalation::default()
        })
        .solve_in(parse("auto"), &a, &b)
        .unwrap();
    let phases: Vec<(&str, usize)> = rungs
        .info
        .phases
        .iter()
        .map(|p| (p.precision, p.iterations))
        .collect();
    assert_eq!(phases[..2], [("f64", 500), ("dd", 500)]);
    assert_eq!(phases[2].0, "qd");
    assert!(rungs.info.true_residual <= 1e-12);

    let bad = Solver::cg()
        .escalation(Escalation {
            progress: 1.5,
            ..Escalation::default()
        })
        .solve_in(parse("auto"), &a, &b);
    assert!(bad.unwrap_err().to_string().contains("progress"));
}

/// fs_183_4 (BiCGStab, tol 1e-12): double makes no progress in 10,000 iterations; dd solves
/// it in 745. The ladder leaves double after 200 iterations (as many as the matrix's 183 rows
/// and no progress) and dd finishes.
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's SuiteSparse files)"
)]
#[test]
fn bicgstab_leaves_a_double_that_makes_no_progress() {
    let a = precsolve::load_matrix(&shared_matrix(&shared_matrices(), "fs_183_4")).unwrap();
    let b = ones(a.nrows());
    let out = Solver::bicgstab()
        .tol(1e-12)
        .solve_in(parse("auto"), &a, &b)
        .unwrap();
    let first = &out.info.phases[0];
    assert_eq!((first.precision, first.iterations), ("f64", 200));
    assert!(
        matches!(&first.stop_reason, StopReason::Stagnated { what } if what.contains("fell only")),
        "{:?}",
        first.stop_reason
    );
    assert_eq!(out.info.phases[1].precision, "dd");
    assert_eq!(out.info.phases.len(), 2);
    assert!(out.info.true_residual <= 1e-12);
}

#[test]
fn command_line_reports_each_rung() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = solver(
        &[
            "solve",
            GRADED,
            "--precision",
            "f64,auto",
            "--tol",
            "1e-12",
            "--backend",
            "cpu",
        ],
        root,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{text}");
    assert!(text.contains("f64 3642 > dd 11"), "{text}");
    assert!(text.contains("auto: each precision in turn"), "{text}");

    let json = solver(
        &[
            "solve",
            GRADED,
            "--precision",
            "ladder:f64,dd",
            "--tol",
            "1e-12",
            "--backend",
            "cpu",
            "--format",
            "json",
        ],
        root,
    );
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let run = &report["runs"][0];
    assert_eq!(run["precision"], "ladder:f64,dd");
    assert_eq!(run["phases"][1]["precision"], "dd");
    assert_eq!(run["phases"][0]["stop_reason"]["kind"], "converged-rtol");

    for (args, why) in [
        (
            vec!["--precision", "ladder:dd,f64"],
            "more precise than the one before",
        ),
        (
            vec!["--escalate-progress", "1.5"],
            "strictly between 0 and 1",
        ),
        (vec!["--escalate-window", "0"], "at least 1"),
    ] {
        let mut all = vec!["solve", GRADED];
        all.extend(args);
        let out = solver(&all, root);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{err}");
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn solver_toml_sets_the_rules() {
    let dir = tempfile::tempdir().unwrap();
    let graded = Path::new(env!("CARGO_MANIFEST_DIR")).join(GRADED);
    let graded = graded.to_str().unwrap();
    let args = [
        "solve",
        graded,
        "--precision",
        "auto",
        "--tol",
        "1e-12",
        "--backend",
        "cpu",
    ];
    std::fs::write(
        dir.path().join("solver.toml"),
        "[escalation]\nrung_max_iter = 500\n",
    )
    .unwrap();
    let out = solver(&args, dir.path());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("f64 500 > dd 500 > qd"), "{text}");

    std::fs::write(
        dir.path().join("solver.toml"),
        "[escalation]\nwindows = 5\n",
    )
    .unwrap();
    let out = solver(&args, dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("windows") && err.contains("line 2"), "{err}");
}
