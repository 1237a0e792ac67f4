//! Per-iteration bookkeeping shared by every solver loop: the stopping test, the history,
//! periodic true residuals, time limits and the user's [`Monitor`].

use super::cg::Threshold;
use super::escalation::StallWatch;
use super::params::{HistoryPoint, Params, SolveInfo, SolveTimes, StopReason};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::precision::{Dd, Precision};
use std::time::{Duration, Instant};

/// Where a solve stands after one of its iterations (or BiCGStab's half step), as a
/// callback sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Iteration {
    /// Iterations done (1 after the first).
    pub iteration: usize,
    /// BiCGStab's half step (the residual `s`, before the `omega` step); false for CG.
    pub half_step: bool,
    /// The relative recurrence residual, by the stopping test's criterion.
    pub recurrence_residual: f64,
    /// `||b - A x|| / ||b||`, computed in double-double, at the iterations where it was asked
    /// for (`true_residual_every`).
    pub true_residual: Option<f64>,
}

/// Called once per iteration; return `false` to stop the solve (it ends with
/// [`StopReason::Cancelled`]). Progress bars, batch time limits and the library's callbacks use it.
pub trait Monitor {
    /// After each iteration (and BiCGStab's half steps).
    fn iteration(&mut self, at: &Iteration) -> bool;
}

/// A monitor that never interferes.
pub struct NoMonitor;

impl Monitor for NoMonitor {
    fn iteration(&mut self, _: &Iteration) -> bool {
        true
    }
}

impl<F: FnMut(&Iteration) -> bool> Monitor for F {
    fn iteration(&mut self, at: &Iteration) -> bool {
        self(at)
    }
}

/// Scratch for `||b - A x|| / ||b||`, computed in double-double (allocated once per solve), or
/// in the working precision itself where that is more precise (qd, mp beyond 106 bits): a
/// residual of `x` rounded to dd would stop near dd's level however far qd had gone.
struct TrueResidual<B: Backend> {
    x_dd: B::Vector<Dd>,
    r_dd: B::Vector<Dd>,
    b_norm: f64,
}

impl<B: Backend> TrueResidual<B> {
    fn compute<P: Precision>(
        &mut self,
        backend: &B,
        a: &B::Matrix,
        b: &B::Vector<f64>,
        x: &B::Vector<P>,
    ) -> Result<f64> {
        if P::unit_roundoff() < Dd::EPSILON {
            let mut r = backend.zeros::<P>(backend.len(x))?;
            backend.residual(a, b, x, &mut r)?;
            return Ok(backend.nrm2(&r)?.to_f64() / self.b_norm);
        }
        backend.convert(x, &mut self.x_dd)?;
        backend.residual(a, b, &self.x_dd, &mut self.r_dd)?;
        Ok(backend.nrm2(&self.r_dd)?.to_f64() / self.b_norm)
    }
}

pub(crate) struct Tracker<'a, B: Backend> {
    backend: &'a B,
    a: &'a B::Matrix,
    b: &'a B::Vector<f64>,
    params: &'a Params,
    monitor: &'a mut dyn Monitor,
    start: Instant,
    setup: Duration,
    checks: Duration,
    denominator: f64,
    history: Vec<HistoryPoint>,
    time_to_target: Option<f64>,
    true_residual: TrueResidual<B>,
    /// The monitor asked to stop (in a batch, taking effect at its last iteration).
    cancelled: bool,
    /// Over several ranks: the first iteration at which they next agree on the stops one rank
    /// decides alone ([`RANKS_AGREE_EVERY`]).
    next_agreement: usize,
    /// A ladder rung's stagnation rules (`Params::watch_stagnation`).
    stall: Option<StallWatch>,
    /// Restarts after a breakdown so far (BiCGStab, BiCGStab(l)), which the report counts.
    restarts: usize,
}

impl<'a, B: Backend> Tracker<'a, B> {
    /// Start the clock: call before allocating the solver's work vectors.
    pub fn start(
        backend: &'a B,
        a: &'a B::Matrix,
        b: &'a B::Vector<f64>,
        params: &'a Params,
        monitor: &'a mut dyn Monitor,
    ) -> Result<Self> {
        let start = Instant::now();
        let n = backend.len(b);
        let b_norm = backend.nrm2(b)?;
        let true_residual = TrueResidual {
            x_dd: backend.zeros(n)?,
            r_dd: backend.zeros(n)?,
            b_norm,
        };
        Ok(Tracker {
            backend,
            a,
            b,
            params,
            monitor,
            start,
            setup: Duration::ZERO,
            checks: Duration::ZERO,
            denominator: f64::NAN,
            history: Vec::new(),
            time_to_target: None,
            true_residual,
            cancelled: false,
            next_agreement: 0,
            stall: params
                .watch_stagnation
                .then(|| StallWatch::new(params.escalation, n)),
            restarts: 0,
        })
    }

    /// A precision ladder's rung also judges the recurrence residual's stagnation (for
    /// methods whose recurrence residual stops falling when rounding takes over).
    pub fn recurrence_may_stagnate(&mut self) {
        if let Some(stall) = &mut self.stall {
            stall.watch_recurrence();
        }
    }

    pub fn b_norm(&self) -> f64 {
        self.true_residual.b_norm
    }

    /// End of setup: fixes the stopping test's denominator from `||r_0||`.
    /// Returns a stop reason when there is nothing to iterate on.
    /// Whether a breakdown may still restart the solve (`Params::max_restarts`).
    pub fn may_restart(&self) -> bool {
        self.restarts < self.params.max_restarts
    }

    /// Count a restart; its ordinal (1, 2...), which seeds the fresh shadow residual.
    pub fn count_restart(&mut self) -> usize {
        self.restarts += 1;
        self.restarts
    }

    pub fn setup_done(&mut self, r0_norm: f64) -> Option<StopReason> {
        self.setup = self.start.elapsed();
        self.denominator = match (self.params.denominator, self.params.criterion) {
            (Some(given), _) => given,
            (None, super::ResidualNorm::Initial) => r0_norm,
            (None, super::ResidualNorm::Rhs) => self.b_norm(),
        };
        if !r0_norm.is_finite() {
            return Some(StopReason::NonFinite {
                what: "initial residual".into(),
            });
        }
        if r0_norm == 0.0 || self.b_norm() == 0.0 {
            return Some(StopReason::ConvergedZeroResidual);
        }
        self.record_point(0, false, r0_norm / self.denominator, None);
        if let Some(stall) = &mut self.stall {
            stall.observe(r0_norm / self.denominator);
        }
        None
    }

    fn loop_elapsed(&self) -> f64 {
        (self.start.elapsed() - self.checks).as_secs_f64()
    }

    fn record_point(
        &mut self,
        iteration: usize,
        half_step: bool,
        relative: f64,
        true_residual: Option<f64>,
    ) {
        if self.params.record_history {
            let elapsed = self.loop_elapsed();
            self.history.push(HistoryPoint {
                iteration,
                half_step,
                recurrence_residual: relative,
                true_residual,
                elapsed,
            });
        }
    }

    /// Whether [`check_in_batch`](Tracker::check_in_batch) at iteration `k` reads `x` (a
    /// periodic true residual, a stagnation check): a solver that defers its `x` update brings
    /// `x` up to date first.
    pub fn wants_x(&self, k: usize) -> bool {
        true_residual_due(self.params, k)
            || self.stall.as_ref().is_some_and(|stall| stall.checks_at(k))
    }

    /// After iteration `k` with recurrence residual norm `norm`: the stopping test, history,
    /// monitor and time limit. `x` must be the iterate of this residual where the tracker reads
    /// it ([`wants_x`](Tracker::wants_x)). Iterations are read back in batches (one, on the
    /// CPU): a cancellation or the time limit, which the backend could not see, stops the solve
    /// only at the batch's `last` iteration, where its vectors are.
    pub fn check_in_batch<P: Precision>(
        &mut self,
        k: usize,
        norm: &P,
        x: Option<&B::Vector<P>>,
        last: bool,
    ) -> Result<Option<StopReason>> {
        self.check_step(k, false, norm, x, last)
    }

    /// The stopping test on the recurrence residual, for steps that apply it where the scalars
    /// are (after `setup_done`).
    pub fn threshold(&self) -> Threshold {
        Threshold {
            denominator: self.denominator,
            tol: self.params.tol,
        }
    }

    /// [`check_in_batch`](Tracker::check_in_batch) for BiCGStab's half step: recorded in the
    /// history as such.
    pub fn check_half_step_in_batch<P: Precision>(
        &mut self,
        k: usize,
        norm: &P,
        last: bool,
    ) -> Result<Option<StopReason>> {
        self.check_step(k, true, norm, None, last)
    }

    fn check_step<P: Precision>(
        &mut self,
        k: usize,
        half_step: bool,
        norm: &P,
        x: Option<&B::Vector<P>>,
        may_cancel: bool,
    ) -> Result<Option<StopReason>> {
        let norm = norm.to_f64();
        if !norm.is_finite() {
            return Ok(Some(StopReason::NonFinite {
                what: "residual norm".into(),
            }));
        }
        let relative = norm / self.denominator;
        let true_residual = match x {
            Some(x) if self.wants_x(k) => Some(self.timed_true_residual(x, k)?),
            _ => None,
        };
        self.record_point(k, half_step, relative, true_residual);
        if self.threshold().reached(norm) {
            return Ok(Some(StopReason::ConvergedRtol));
        }
        let b_norm = self.b_norm();
        if let Some(stall) = &mut self.stall {
            stall.observe(relative);
            // Checks fall where batches end (`next_batch`), so a device has stopped there too.
            if let Some(true_residual) = true_residual.filter(|_| !half_step && may_cancel)
                && stall.checks_at(k)
                && let Some(what) = stall.check(k, norm, true_residual * b_norm)
            {
                return Ok(Some(StopReason::Stagnated { what }));
            }
        }
        let at = Iteration {
            iteration: k,
            half_step,
            recurrence_residual: relative,
            true_residual,
        };
        if !self.monitor.iteration(&at) {
            self.cancelled = true;
        }
        if !may_cancel {
            return Ok(None);
        }
        let timed_out = self
            .params
            .time_limit
            .is_some_and(|limit| self.start.elapsed() >= limit);
        let mine = (self.cancelled as u64 * CANCELLED) | (timed_out as u64 * TIMED_OUT);
        // A monitor (rank 0's alone) or a clock stops one rank: every rank must stop at the same
        // iteration or the others wait forever in their next reduction. They agree every few
        // iterations (the iterations are the same on every rank), not at each, which would add
        // a round trip to every iteration.
        let stops = match self.backend.ranks() {
            1 => mine,
            _ if k < self.next_agreement => return Ok(None),
            _ => {
                self.next_agreement = k + RANKS_AGREE_EVERY;
                self.backend.any_rank(mine)?
            }
        };
        if stops & CANCELLED != 0 {
            return Ok(Some(StopReason::Cancelled));
        }
        if stops & TIMED_OUT != 0 {
            return Ok(Some(StopReason::TimeLimit));
        }
        Ok(None)
    }

    fn timed_true_residual<P: Precision>(&mut self, x: &B::Vector<P>, _k: usize) -> Result<f64> {
        let at = self.loop_elapsed();
        let t0 = Instant::now();
        let value = self
            .true_residual
            .compute(self.backend, self.a, self.b, x)?;
        self.backend.synchronize()?;
        self.checks += t0.elapsed();
        if value <= self.params.tol && self.time_to_target.is_none() {
            self.time_to_target = Some(at);
        }
        Ok(value)
    }

    /// Close the solve: final true residual in DD and the timings.
    pub fn finish<P: Precision>(
        mut self,
        method: &'static str,
        iterations: usize,
        stop_reason: StopReason,
        final_norm: f64,
        x: &B::Vector<P>,
    ) -> Result<SolveInfo> {
        self.backend.synchronize()?;
        let loop_end = self.loop_elapsed();
        let t0 = Instant::now();
        let true_residual = if self.b_norm() == 0.0 {
            0.0
        } else {
            self.true_residual
                .compute(self.backend, self.a, self.b, x)?
        };
        self.checks += t0.elapsed();
        if self.time_to_target.is_none() && true_residual <= self.params.tol {
            self.time_to_target = Some(loop_end);
        }
        let setup = self.setup.as_secs_f64();
        let recurrence_residual = if self.denominator > 0.0 {
            final_norm / self.denominator
        } else {
            0.0
        };
        Ok(SolveInfo {
            method,
            precision: P::NAME,
            precond: "none",
            backend: self.backend.name(),
            iterations,
            stop_reason,
            recurrence_residual,
            true_residual,
            times: SolveTimes {
                setup,
                iterations: (loop_end - setup).max(0.0),
                true_residual: self.checks.as_secs_f64(),
                total: self.start.elapsed().as_secs_f64(),
                precond: 0.0,
                precond_setup: 0.0,
                communication: 0.0,
            },
            time_to_target: self.time_to_target,
            history: self.history,
            restarts: self.restarts,
            ilu_shift: None,
            ilu_remedy: None,
            denominator: self.denominator,
            phases: Vec::new(),
            ranks: 1,
            devices: 1,
        })
    }
}

/// A scalar that must be finite before the loop uses it as a divisor or coefficient.
pub(crate) fn finite_or<P: Precision>(value: &P, what: &str) -> Option<StopReason> {
    (!value.is_finite()).then(|| StopReason::NonFinite { what: what.into() })
}

/// Iterations to run before the next read: the steps' batch `proposed`, ended at `max_iter` and
/// where the tracker reads `x` (a periodic true residual, a ladder rung's stagnation check),
/// `k` iterations done.
/// Over several ranks, how many iterations may pass between their agreements on a cancellation
/// or a time limit: how late a stop may come, against a round trip between the ranks.
const RANKS_AGREE_EVERY: usize = 8;
/// The stops one rank may decide alone, as the bits the ranks or together.
const CANCELLED: u64 = 1;
const TIMED_OUT: u64 = 2;

pub(crate) fn next_batch(proposed: usize, k: usize, params: &Params) -> usize {
    let batch = proposed.clamp(1, params.max_iter - k);
    let stall_window = match params.watch_stagnation {
        true => params.escalation.window,
        false => 0,
    };
    // (the spacing of the iterations after k: its next check is in its own span)
    [true_residual_spacing(params, k + 1), stall_window]
        .into_iter()
        .filter(|&every| every > 0)
        .fold(batch, |batch, every| batch.min(every - k % every))
}

/// Whether iteration `k` has a periodic true residual.
pub(crate) fn true_residual_due(params: &Params, k: usize) -> bool {
    let every = true_residual_spacing(params, k);
    every > 0 && k.is_multiple_of(every)
}

/// The periodic true residual's spacing at iteration `k` (0: none): `true_residual_every` for
/// the first `true_residual_points` checks, then twice that up to twice as many iterations,
/// and so on (`Params::true_residual_points`). Each span ends on a multiple of its spacing and
/// of the next one's, so the checks of one span lead into the next's.
pub(crate) fn true_residual_spacing(params: &Params, k: usize) -> usize {
    let (every, points) = (params.true_residual_every, params.true_residual_points);
    if every == 0 || points == 0 {
        return every;
    }
    let mut spacing = every;
    let mut end = every.saturating_mul(points);
    while k > end {
        spacing = spacing.saturating_mul(2);
        end = end.saturating_mul(2);
    }
    spacing
}

/// `rho` (CG's `<r, z>`, BiCGStab's `<r~, r>`) that ends the solve before the direction update.
pub(crate) fn rho_stop<P: Precision>(rho: &P) -> Option<StopReason> {
    match finite_or(rho, "rho") {
        Some(stop) => Some(stop),
        None if *rho == P::zero() => Some(StopReason::Breakdown {
            what: "rho = 0".into(),
        }),
        None => None,
    }
}

/// After a batch the loop went through to iteration `k`: the steps must have run to `last`
/// and still be running (had their tests stopped the solve, the loop would have too).
pub(crate) fn batch_done(
    method: &str,
    backend: &'static str,
    k: usize,
    last: usize,
    collected: crate::solver::cg::Collected,
) -> crate::error::Result<()> {
    if collected == crate::solver::cg::Collected::Frozen || k != last {
        return Err(disagree(
            method,
            backend,
            k,
            "the steps stopped where the loop goes on",
        ));
    }
    Ok(())
}

/// The steps and the loop of `method` disagree about iteration `k`: the steps' tests are not
/// the loop's.
pub(crate) fn disagree(method: &str, backend: &'static str, k: usize, what: &str) -> Error {
    Error::Backend {
        backend,
        message: format!(
            "{method}, iteration {k}: {what}: the steps' tests and the loop's disagree"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(every: usize, points: usize, max_iter: usize) -> Params {
        Params {
            true_residual_every: every,
            true_residual_points: points,
            max_iter,
            ..Params::default()
        }
    }

    fn checks(p: &Params) -> Vec<usize> {
        (1..=p.max_iter).filter(|&k| true_residual_due(p, k)).collect()
    }

    #[test]
    fn thinned_true_residuals_double_their_spacing_with_the_iterations() {
        let p = params(3, 4, 60);
        assert_eq!(checks(&p), [3, 6, 9, 12, 18, 24, 36, 48]);
        // unthinned: every `every`
        let fixed = params(3, 0, 20);
        assert_eq!(checks(&fixed), [3, 6, 9, 12, 15, 18]);
        // a long run adds about points / 2 a doubling
        let long = params(1, 256, 30_000);
        let n = checks(&long).len();
        assert!((1_000..1_300).contains(&n), "{n} checks");
        assert_eq!(true_residual_spacing(&long, 30_000), 128);
        assert!(checks(&params(0, 256, 100)).is_empty());
    }

    #[test]
    fn batches_end_at_every_thinned_check() {
        for (every, points) in [(1, 256), (3, 4), (10, 2), (7, 0)] {
            let p = params(every, points, 5_000);
            let mut ends = vec![];
            let mut k = 0;
            while k < p.max_iter {
                k += next_batch(32, k, &p);
                ends.push(k);
            }
            for c in checks(&p) {
                assert!(ends.contains(&c), "every {every}, points {points}: check {c}");
            }
            // and nowhere else but the full batches
            let extra = ends.windows(2).filter(|w| w[1] - w[0] < 32).count();
            assert!(extra <= checks(&p).len() + 1, "every {every}, points {points}");
        }
    }
}
