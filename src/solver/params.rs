//! What a solve is asked to do (`Params`) and what it reports back (`SolveInfo`).

use crate::precond::ilu0::IluRemedy;
use super::bicgstab::Shadow;
use super::escalation::{Escalation, Phase};
use super::gmres::Orthogonalization;
use std::time::Duration;

/// Gives a unit-only enum its written names: `ALL` (every value, in order), `name()` (the name
/// on the command line, in reports and in `solver.toml`) and `FromStr` (any case).
macro_rules! named_choices {
    ($t:ty, $what:literal, { $($variant:ident => $name:literal),* $(,)? }) => {
        impl $t {
            /// Every value, in the order the help lists them.
            pub const ALL: &'static [$t] = &[$(<$t>::$variant),*];

            /// The name on the command line and in reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(<$t>::$variant => $name),*
                }
            }
        }

        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                let s = s.trim();
                <$t>::ALL
                    .iter()
                    .copied()
                    .find(|v| v.name().eq_ignore_ascii_case(s))
                    .ok_or_else(|| {
                        let names: Vec<&str> = <$t>::ALL.iter().map(|v| v.name()).collect();
                        format!("unknown {} `{s}` (known: {})", $what, names.join(", "))
                    })
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}
pub(crate) use named_choices;

/// Denominator of the relative residual the stopping test uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum ResidualNorm {
    /// `||r_k|| / ||r_0||` (the thesis's criterion and the default).
    Initial,
    /// `||r_k|| / ||b||`.
    Rhs,
}

named_choices!(ResidualNorm, "criterion", { Initial => "initial", Rhs => "rhs" });

#[derive(Clone, Debug)]
pub struct Params {
    /// Stop when the relative recurrence residual is at or below this.
    pub tol: f64,
    pub max_iter: usize,
    pub criterion: ResidualNorm,
    /// Recompute the true residual `||b - A x|| / ||b||` every this many iterations into the
    /// history (0: only at the end).
    pub true_residual_every: usize,
    /// With `true_residual_every`: after this many periodic true residuals the spacing doubles
    /// each time the iterations do, so that a run adds about `points / 2` of them a doubling
    /// however long it is (a study keeps 250 a run: `batch::SERIES_POINTS`); 0 (the default):
    /// every `true_residual_every` iterations throughout. Even, so that the spacings' borders
    /// fall on checks of both.
    pub true_residual_points: usize,
    /// Keep one history point per iteration in [`SolveInfo::history`].
    pub record_history: bool,
    /// Stop with [`StopReason::TimeLimit`] after this much wall time.
    pub time_limit: Option<Duration>,
    /// BiCGStab's shadow residual `r~` (default `r0`, the thesis's).
    pub shadow: Shadow,
    /// BiCGStab: restarts from the current iterate, with a fresh shadow residual, after a
    /// breakdown of `rho` or `<r~, v>` (default 5); the breakdown after the last one ends the
    /// solve as [`StopReason::Breakdown`].
    pub max_restarts: usize,
    /// BiCGStab(l)'s `l`: BiCG steps per minimal-residual step (default 2).
    pub bicgstab_l: usize,
    /// GMRES: iterations between restarts (the basis size `m`; default 30, PETSc's).
    pub gmres_restart: usize,
    /// GMRES: how each new basis vector is orthogonalised (default modified Gram-Schmidt).
    pub gmres_orthogonalization: Orthogonalization,
    /// When a precision ladder's rung gives way to the next (`WorkingPrecision::Ladder`).
    pub escalation: Escalation,
    /// Apply `escalation`'s stagnation rules, ending with [`StopReason::Stagnated`] (set by
    /// the ladder on every rung but the last).
    pub watch_stagnation: bool,
    /// The stopping test's denominator, when a solve continues another (a ladder's later
    /// rungs keep the first's `||r0||`); `None` takes it from `criterion`.
    pub denominator: Option<f64>,
}

impl Default for Params {
    /// The thesis's evaluation setting (section 4.4): tol 1e-8 on `||r||/||r0||`, 30,000 iterations.
    fn default() -> Self {
        Params {
            tol: 1e-8,
            max_iter: 30_000,
            criterion: ResidualNorm::Initial,
            true_residual_every: 0,
            true_residual_points: 0,
            record_history: false,
            time_limit: None,
            shadow: Shadow::Random,
            max_restarts: 5,
            bicgstab_l: 2,
            gmres_restart: 30,
            gmres_orthogonalization: Orthogonalization::Mgs,
            escalation: Escalation::default(),
            watch_stagnation: false,
            denominator: None,
        }
    }
}

/// Why a solve ended, named after PETSc's converged reasons. A numerical failure is an outcome.
/// `Deserialize` lets batch studies read their stored results back.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "kebab-case"))]
pub enum StopReason {
    /// The relative recurrence residual reached the tolerance.
    ConvergedRtol,
    /// The right-hand side (or the initial residual) is exactly zero: `x` is the solution.
    ConvergedZeroResidual,
    /// The iteration limit was reached first.
    MaxIterations,
    /// A recurrence coefficient became zero (`rho`, `<r~, v>`, `omega`...).
    Breakdown {
        /// Which.
        what: String,
    },
    /// A scalar became NaN or infinite.
    NonFinite {
        /// Which.
        what: String,
    },
    /// CG found `<p, A p> <= 0`: the matrix is not positive definite.
    Indefinite,
    /// A precision ladder's rung stopped making progress ([`Escalation`]'s rules): the next
    /// rung takes over. Only a rung other than the last ends so.
    Stagnated {
        /// What the rules saw.
        what: String,
    },
    /// The time limit was reached first.
    TimeLimit,
    /// The callback (or a progress monitor) asked to stop.
    Cancelled,
}

impl StopReason {
    /// Whether the stopping test was met (or there was nothing to solve).
    pub fn converged(&self) -> bool {
        matches!(
            self,
            StopReason::ConvergedRtol | StopReason::ConvergedZeroResidual
        )
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StopReason::ConvergedRtol => f.write_str("converged"),
            StopReason::ConvergedZeroResidual => f.write_str("converged (zero residual)"),
            StopReason::MaxIterations => f.write_str("max iterations"),
            StopReason::Breakdown { what } => write!(f, "breakdown ({what})"),
            StopReason::NonFinite { what } => write!(f, "non-finite {what}"),
            StopReason::Indefinite => f.write_str("indefinite matrix"),
            StopReason::Stagnated { what } => write!(f, "stagnated ({what})"),
            StopReason::TimeLimit => f.write_str("time limit"),
            StopReason::Cancelled => f.write_str("cancelled"),
        }
    }
}

/// Wall-clock seconds.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SolveTimes {
    /// Work vectors, the initial residual (and, from dispatch, moving the problem to the backend).
    pub setup: f64,
    /// The iteration loop, without the true-residual checks requested into the history.
    pub iterations: f64,
    /// Periodic and final true-residual computations.
    pub true_residual: f64,
    /// Everything: setup, loop, checks.
    pub total: f64,
    /// Of `iterations`: applying the preconditioner (the thesis's "Precond [%]" numerator).
    pub precond: f64,
    /// Of `setup`: building the preconditioner (ILU(0) factorization and its upload).
    pub precond_setup: f64,
    /// Of `total`: moving words between the ranks of a distributed solve (the halo exchanges
    /// and the gathers of reduction partials, waiting included); 0 in one process.
    pub communication: f64,
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
/// One point of a solve's convergence history.
pub struct HistoryPoint {
    /// Iterations done.
    pub iteration: usize,
    /// BiCGStab's half step (the residual `s` after `x + alpha p`, before the `omega` step)
    /// rather than a whole iteration; false for every point of CG.
    pub half_step: bool,
    /// Relative recurrence residual by the chosen criterion.
    pub recurrence_residual: f64,
    /// `||b - A x|| / ||b||` in DD, where it was computed at this iteration.
    pub true_residual: Option<f64>,
    /// Seconds since the solve started, true-residual checks excluded.
    pub elapsed: f64,
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
/// What a solve did: the report the command line prints, one per precision.
pub struct SolveInfo {
    /// `cg`, `bicgstab`, `bicgstab-l` or `gmres`.
    pub method: &'static str,
    /// The working precision's name (`f64`, `dd`, `mp:256`...).
    pub precision: &'static str,
    /// `none`, `ilu0`, or the name of the caller's preconditioner.
    pub precond: &'static str,
    /// `cpu` or `cuda`.
    pub backend: &'static str,
    /// Iterations done.
    pub iterations: usize,
    /// Why the solve ended.
    pub stop_reason: StopReason,
    /// Final relative recurrence residual by the chosen criterion.
    pub recurrence_residual: f64,
    /// Final `||b - A x|| / ||b||`, with the residual formed in double-double.
    pub true_residual: f64,
    /// Where the time went.
    pub times: SolveTimes,
    /// Seconds (setup and loop, checks excluded) until the true residual first reached `tol`:
    /// at the first history check that showed it, else the end of the solve if the final true
    /// residual meets it; `None` if it never did.
    pub time_to_target: Option<f64>,
    /// Per-iteration residuals, when asked for (`record_history`).
    pub history: Vec<HistoryPoint>,
    /// BiCGStab's restarts after breakdowns (0 for CG).
    pub restarts: usize,
    /// ILU(0)'s `sigma`, where the factors are those of `A + sigma I` (a shift given, or the
    /// automatic one of [`SolveInfo::ilu_remedy`]); `None` where `A` itself was factored.
    pub ilu_shift: Option<f64>,
    /// Where `A` itself had no ILU(0) and the automatic shift found one: why, and which.
    pub ilu_remedy: Option<IluRemedy>,
    /// The denominator of the relative recurrence residual: `||r0||` or `||b||` by the
    /// criterion (for a ladder, the first rung's).
    pub denominator: f64,
    /// A precision ladder's rungs, in the order they ran (empty for a solve in one precision).
    pub phases: Vec<Phase>,
    /// The processes (MPI ranks) the solve's rows were spread over: 1 in one process.
    pub ranks: usize,
    /// The GPUs of one process the rows were spread over (`--devices`): 1 otherwise.
    pub devices: usize,
}

impl SolveInfo {
    /// Seconds per iteration of the loop (0 without iterations).
    pub fn time_per_iteration(&self) -> f64 {
        if self.iterations == 0 {
            0.0
        } else {
            self.times.iterations / self.iterations as f64
        }
    }

    /// Fraction of the loop's time spent applying the preconditioner (0 without one).
    pub fn precond_share(&self) -> f64 {
        if self.times.iterations > 0.0 {
            (self.times.precond / self.times.iterations).min(1.0)
        } else {
            0.0
        }
    }
}
