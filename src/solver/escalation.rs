//! Precision escalation (`--precision auto`, `ladder:f64,dd,qd`): a solve starts in the
//! ladder's cheapest precision and, when that stops making progress, goes on in the next one
//! from the iterate it reached, up to the last. LIS's `-f switch` does this for double then DD
//! on an iteration count or a residual; here any ladder, either method, with any
//! preconditioner, and the switch is decided by [`Escalation`]'s rules.
//!
//! The rules are read only where both backends stop anyway: at every `window`-th iteration
//! (where the loop ends its device batch and computes the true residual) and at a rung's end.
//! So a ladder's phases, like any solve, are the same bits on the CPU and the GPU.

use super::dispatch::{Lane, Recipe, exact_initial_guess, solve_on};
use super::monitor::{Iteration, Monitor};
use super::params::{HistoryPoint, Params, SolveInfo, StopReason};
use super::{BackendChoice, Ladder, ResolvedBackend, Solution, SolutionVector};
use crate::error::Result;
use crate::precision::exact_values::ExactValues;
use crate::precond::Preconditioning;
use std::time::Instant;

/// When a rung of a precision ladder gives way to the next. A rung other than the last ends
/// and the next takes over from its iterate when:
/// - **stagnation** (BiCGStab): at a check (every `window` iterations, at iteration `k` of the
///   rung) the best recurrence residual of the rung's second half, iterations `k/2..k` (`k/2`
///   rounded down to a check), is above `progress` times the best of its first half. A
///   plateau is judged against how long the rung has run. The rule waits until the rung has
///   made progress (its best residual at most `progress` times its first) or has run as many
///   iterations as the matrix has rows (where a Krylov method in exact arithmetic would have
///   converged): a residual that has not fallen yet is not blamed on the precision. CG is
///   exempt: its recurrence residual goes on falling in finite precision (its rounding shows
///   as the gap below), and its plateaus, hundreds of iterations long on ill-conditioned
///   matrices, are slow convergence that no precision removes;
/// - **the true residual stops following**: at a check the true residual `||b - A x||` is more
///   than `gap` times the recurrence residual and above `progress` times its value at the
///   previous check;
/// - **false convergence**: the recurrence residual met the tolerance but the true residual,
///   on the same scale, did not;
/// - a **breakdown** (after BiCGStab's restarts), a non-finite scalar, CG's `<p, Ap> <= 0`;
/// - the rung used up `rung_max_iter` iterations (LIS's `-switch_maxiter`), where set.
///
/// The last rung runs to the ordinary end; `max_iter` and the time limit count all rungs.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields, default))]
pub struct Escalation {
    /// Iterations between two checks; each check computes the true residual in double-double
    /// (or qd, mp: one extra SpMV). Default 100.
    pub window: usize,
    /// A window makes progress when it brings the best residual down to at most this
    /// fraction of the best before it. Default 0.9.
    pub progress: f64,
    /// The true residual no longer follows the recurrence residual when it is more than this
    /// many times larger. Default 10.
    pub gap: f64,
    /// Iterations a rung other than the last may take before the next takes over; 0 for no
    /// limit (default).
    pub rung_max_iter: usize,
}

impl Default for Escalation {
    fn default() -> Self {
        Escalation {
            window: 100,
            progress: 0.9,
            gap: 10.0,
            rung_max_iter: 0,
        }
    }
}

impl Escalation {
    /// The rules' ranges: `window >= 1`, `0 < progress < 1`, `gap > 1`.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.window == 0 {
            return Err("the escalation window must be at least 1 iteration".into());
        }
        if !(self.progress > 0.0 && self.progress < 1.0) {
            return Err(format!(
                "escalation progress {} must lie strictly between 0 and 1",
                self.progress
            ));
        }
        if !(self.gap > 1.0 && self.gap.is_finite()) {
            return Err(format!(
                "escalation gap {} must be a finite number above 1",
                self.gap
            ));
        }
        Ok(())
    }
}

/// One rung's part of a ladder solve.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Phase {
    /// The rung's precision (`f64`, `dd`...).
    pub precision: &'static str,
    /// Iterations in this precision.
    pub iterations: usize,
    /// Why the rung ended: for every rung but the one that ended the solve, what made it
    /// give way ([`StopReason::Stagnated`], a breakdown, a false convergence...).
    pub stop_reason: StopReason,
    /// Relative recurrence residual at the rung's end.
    pub recurrence_residual: f64,
    /// `||b - A x|| / ||b||` at the rung's end: where the next rung starts.
    pub true_residual: f64,
    /// Seconds the rung took, setup included.
    pub seconds: f64,
    /// BiCGStab's restarts in this rung.
    pub restarts: usize,
}

/// The stagnation rules as a loop applies them, fed every residual it tests.
#[derive(Clone, Debug)]
pub(crate) struct StallWatch {
    rules: Escalation,
    /// The matrix's rows: no progress after as many iterations is stagnation.
    rows: usize,
    /// Apply the stagnation rule to the recurrence residual (BiCGStab; not CG).
    recurrence: bool,
    /// The best residual up to each check, the rung's first residual at index 0.
    best_at_check: Vec<f64>,
    /// The best residual so far.
    best: f64,
    /// The true residual norm at the last check.
    true_before: Option<f64>,
}

impl StallWatch {
    pub fn new(rules: Escalation, rows: usize) -> Self {
        StallWatch {
            rules,
            rows,
            recurrence: false,
            best_at_check: Vec::new(),
            best: f64::INFINITY,
            true_before: None,
        }
    }

    /// Apply the stagnation rule to the recurrence residual too: for methods whose recurrence
    /// residual stops falling when rounding takes over (BiCGStab).
    pub fn watch_recurrence(&mut self) {
        self.recurrence = true;
    }

    /// Whether iteration `k` is a check.
    pub fn checks_at(&self, k: usize) -> bool {
        k > 0 && k.is_multiple_of(self.rules.window)
    }

    /// Every relative recurrence residual the loop tests (the initial one first).
    pub fn observe(&mut self, relative: f64) {
        if self.best_at_check.is_empty() {
            self.best_at_check.push(relative);
        }
        self.best = self.best.min(relative);
    }

    /// At a check: the recurrence and true residual norms (on one scale, `||.||`), and why the
    /// rung should give way, if it should.
    pub fn check(&mut self, k: usize, recurrence: f64, true_norm: f64) -> Option<String> {
        let rules = self.rules;
        let first = self.best_at_check.first().copied().unwrap_or(self.best);
        // the check at the rung's half way (index 0: its start)
        let half = (k / rules.window) / 2;
        let best_half = self.best_at_check.get(half).copied().unwrap_or(first);
        let progressed = best_half <= rules.progress * first || k >= self.rows;
        let why = if self.recurrence && progressed && self.best > rules.progress * best_half {
            Some(format!(
                "the best recurrence residual fell only from {best_half:.3e} to {:.3e} in \
                 iterations {}-{k}",
                self.best,
                half * rules.window + 1
            ))
        } else if true_norm > rules.gap * recurrence
            && self
                .true_before
                .is_some_and(|before| true_norm > rules.progress * before)
        {
            Some(format!(
                "at iteration {k} the true residual is {:.1e} times the recurrence residual and \
                 fell less than {:.0}% in {} iterations",
                true_norm / recurrence,
                100.0 * (1.0 - rules.progress),
                rules.window
            ))
        } else {
            None
        };
        self.best_at_check.push(self.best);
        self.true_before = Some(true_norm);
        why
    }
}

/// Solve `problem` up `ladder` (see the module docs): one [`Solution`] whose report adds up the
/// rungs that ran ([`SolveInfo::phases`]) and whose `x` is in the last one's precision.
pub(crate) fn solve_ladder(
    lane: &Lane,
    problem: &super::Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    ladder: Ladder,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    let rungs: Vec<_> = ladder.rungs().collect();
    let method = recipe.method.resolve(&problem.a);
    // one backend for every rung, chosen for them together
    let (resolved, why) =
        backend.resolve_for_problem(&problem.a, method, recipe.precond, &rungs)?;
    if let Some(why) = why {
        log::info!("{why}");
    }
    let backend = match resolved {
        ResolvedBackend::Cpu => BackendChoice::Cpu,
        #[cfg(feature = "cuda")]
        ResolvedBackend::Cuda => BackendChoice::Cuda,
    };
    let recipe = Recipe { method, ..recipe };
    climb(ladder, &problem.b, recipe, params, monitor, |step, x0, p, m| {
        let current = super::Problem {
            x0: x0.or_else(|| problem.x0.clone()),
            ..problem.clone()
        };
        solve_on(lane, &current, backend, step, p, m)
    })
}

/// The rungs of `ladder` one after another, each solved by `rung(recipe, x0, params, monitor)`
/// (`x0`: the previous rung's solution, `None` for the first rung, which starts from the
/// system's own initial guess), for a system with right-hand side `b`; `recipe.method` is
/// resolved. Whatever the system (a CSR matrix, a caller's operator), the ladder is this.
pub(crate) fn climb(
    ladder: Ladder,
    b: &[f64],
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
    mut rung: impl FnMut(Recipe<'_>, Option<ExactValues>, &Params, &mut dyn Monitor) -> Result<Solution>,
) -> Result<Solution> {
    let rungs: Vec<_> = ladder.rungs().collect();
    let b_norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    let start = Instant::now();
    let mut x0 = None;
    let mut infos: Vec<SolveInfo> = Vec::new();
    let mut x = SolutionVector::F64(Vec::new());
    for (i, &precision) in rungs.iter().enumerate() {
        let last_rung = i + 1 == rungs.len();
        let used: usize = infos.iter().map(|info| info.iterations).sum();
        let remaining = params.max_iter - used;
        let mut rung_params = params.clone();
        rung_params.max_iter = match params.escalation.rung_max_iter {
            limit if limit > 0 && !last_rung => remaining.min(limit),
            _ => remaining,
        };
        rung_params.watch_stagnation = !last_rung;
        rung_params.denominator = infos.first().map(|info| info.denominator);
        rung_params.time_limit = params
            .time_limit
            .map(|limit| limit.saturating_sub(start.elapsed()));
        let mut numbered = |at: &Iteration| {
            monitor.iteration(&Iteration {
                iteration: at.iteration + used,
                ..*at
            })
        };
        let step = Recipe {
            precision,
            ..recipe
        };
        let solution = rung(step, x0.take(), &rung_params, &mut numbered)?;
        log::info!(
            "{}: {} ended after {} iterations: {}",
            ladder.name(),
            precision.name(),
            solution.info.iterations,
            solution.info.stop_reason
        );
        let go_on = !last_rung
            && used + solution.info.iterations < params.max_iter
            && gives_way(&solution.info, params.tol, b_norm);
        infos.push(solution.info);
        x = solution.x;
        if !go_on {
            break;
        }
        // exact: the next rung is more precise, and mp:<bits> is only ever the last
        x0 = Some(exact_initial_guess(&x).expect("mp:<bits> is a ladder's last rung"));
    }
    Ok(Solution {
        info: combine(ladder, infos, recipe.precond),
        x,
    })
}

/// Whether a rung that ended so makes way for the next.
fn gives_way(info: &SolveInfo, tol: f64, b_norm: f64) -> bool {
    match info.stop_reason {
        StopReason::Stagnated { .. }
        | StopReason::Breakdown { .. }
        | StopReason::NonFinite { .. }
        | StopReason::Indefinite
        | StopReason::MaxIterations => true,
        // the recurrence met tol * denominator; the true residual, on that scale, did not
        StopReason::ConvergedRtol => info.true_residual * b_norm > tol * info.denominator,
        StopReason::ConvergedZeroResidual | StopReason::TimeLimit | StopReason::Cancelled => {
            false
        }
    }
}

/// The ladder's report: the last rung's outcome, every rung's iterations, times and history
/// (numbered and timed from the ladder's start), and the phases.
fn combine(ladder: Ladder, infos: Vec<SolveInfo>, precond: &Preconditioning) -> SolveInfo {
    let phases: Vec<Phase> = infos
        .iter()
        .map(|info| Phase {
            precision: info.precision,
            iterations: info.iterations,
            stop_reason: info.stop_reason.clone(),
            recurrence_residual: info.recurrence_residual,
            true_residual: info.true_residual,
            seconds: info.times.total,
            restarts: info.restarts,
        })
        .collect();
    // The factorization is done once for every rung, but each rung's report counts it.
    let refactored = match precond {
        Preconditioning::Ilu0(factors) => factors.setup_seconds(),
        _ => 0.0,
    };
    let mut infos = infos.into_iter();
    let mut out = infos.next().expect("a ladder runs its first rung");
    let (mut iterations, mut elapsed) = (out.iterations, out.times.total);
    for info in infos {
        let mut history: Vec<HistoryPoint> = info.history;
        for point in &mut history {
            point.iteration += iterations;
            point.elapsed += elapsed;
        }
        out.history.append(&mut history);
        if out.time_to_target.is_none() {
            out.time_to_target = info.time_to_target.map(|t| t + elapsed - refactored);
        }
        let (t, u) = (&mut out.times, &info.times);
        t.setup += u.setup - refactored;
        t.iterations += u.iterations;
        t.true_residual += u.true_residual;
        t.total += u.total - refactored;
        t.precond += u.precond;
        t.precond_setup += u.precond_setup - refactored;
        iterations += info.iterations;
        elapsed += info.times.total - refactored;
        out.restarts += info.restarts;
        out.method = info.method;
        out.backend = info.backend;
        out.stop_reason = info.stop_reason;
        out.recurrence_residual = info.recurrence_residual;
        out.true_residual = info.true_residual;
    }
    out.iterations = iterations;
    out.precision = super::WorkingPrecision::Ladder(ladder).name();
    out.phases = phases;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch() -> StallWatch {
        let mut w = StallWatch::new(
            Escalation {
                window: 10,
                ..Escalation::default()
            },
            1000,
        );
        w.watch_recurrence();
        w
    }

    #[test]
    fn a_second_half_without_progress_is_stagnation() {
        let mut w = watch();
        w.observe(1.0);
        // a residual that has not fallen yet is not stagnation, however long
        for k in [10, 20, 30] {
            (0..10).for_each(|_| w.observe(2.0));
            assert_eq!(w.check(k, 2.0, 2.0), None, "{k}");
        }
        assert!(w.checks_at(40) && !w.checks_at(45) && !w.checks_at(0));
        // falls from iteration 31 to 60
        for k in [40, 50, 60] {
            (0..10).for_each(|i| w.observe(0.5f64.powi(k as i32 - 40 + i)));
            assert_eq!(w.check(k, 1e-3, 1e-3), None, "{k}");
        }
        // a plateau from 61 on: while the rung's half-way check (k/2) lies in the fall, the
        // second half holds part of the fall, which is progress
        let low = 0.5f64.powi(29);
        for k in [70, 80, 90, 100, 110] {
            (0..10).for_each(|_| w.observe(low * 1.01));
            assert_eq!(w.check(k, 1e-3, 1e-3), None, "{k}");
        }
        for k in (120..=200).step_by(10) {
            (0..10).for_each(|_| w.observe(low * 1.01));
            if let Some(why) = w.check(k, 1e-3, 1e-3) {
                assert!(why.contains("fell only from"), "{why}");
                // at 120 the half-way check is 60, where the plateau began
                assert_eq!(k, 120, "{why}");
                return;
            }
        }
        panic!("a plateau twice as long as the fall before it is stagnation");
    }

    #[test]
    fn no_progress_in_as_many_iterations_as_rows_is_stagnation() {
        let rules = Escalation {
            window: 10,
            ..Escalation::default()
        };
        let mut w = StallWatch::new(rules, 25);
        w.watch_recurrence();
        w.observe(1.0);
        for k in [10, 20] {
            (0..10).for_each(|_| w.observe(3.0));
            assert_eq!(w.check(k, 3.0, 3.0), None, "{k}");
        }
        (0..10).for_each(|_| w.observe(3.0));
        assert!(w.check(30, 3.0, 3.0).is_some());
        // CG's recurrence residual is not judged
        let mut cg = StallWatch::new(rules, 25);
        cg.observe(1.0);
        for k in [10, 20, 30, 40] {
            (0..10).for_each(|_| cg.observe(3.0));
            assert_eq!(cg.check(k, 3.0, 3.0), None, "{k}");
        }
    }

    #[test]
    fn a_true_residual_that_stops_following_is_stagnation() {
        let mut w = watch();
        w.observe(1.0);
        w.observe(0.1);
        // the first check has no earlier true residual to compare with
        assert_eq!(w.check(10, 1e-3, 1.0), None);
        w.observe(0.01);
        // the recurrence went on falling; the true residual is 100x it and stayed
        let why = w.check(20, 1e-4, 0.95).expect("the true residual stopped");
        assert!(why.contains("true residual"), "{why}");
        w.observe(0.001);
        // a true residual still falling, however far above, is progress
        assert_eq!(w.check(30, 1e-5, 0.5), None);
    }

    #[test]
    fn rules_are_checked() {
        assert!(Escalation::default().check().is_ok());
        for bad in [
            Escalation { window: 0, ..Default::default() },
            Escalation { progress: 1.0, ..Default::default() },
            Escalation { progress: 0.0, ..Default::default() },
            Escalation { gap: 1.0, ..Default::default() },
            Escalation { gap: f64::NAN, ..Default::default() },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
