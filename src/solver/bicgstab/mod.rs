//! Preconditioned BiCGStab (thesis Fig. 4.2): the only copy of the BiCGStab loop. The
//! iteration's steps are the backend's (`steps`); every decision is made here, from the
//! records the steps leave.

mod kernels;
mod shadow;
mod steps;

pub use shadow::Shadow;
pub use kernels::BicgstabKernels;
pub use steps::{BicgstabRecord, BicgstabSteps, BicgstabVectors, HostBicgstab, rv_accepted};

use super::monitor::{Monitor, Tracker, batch_done, disagree, finite_or, next_batch, rho_stop};
use super::params::{Params, SolveInfo, StopReason};
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;

/// Solve `A x = b` for general square `A`, starting from the `x` given.
///
/// Memory traffic per iteration, unpreconditioned, with `s` bytes per `P` element, `n` rows:
/// two SpMVs `2 (12 nnz + 8 n + 2 s n)` with `<r~, v>` and `<t, t>`, `<t, s>` summed beside
/// them (`2 s n` more for `r~` and `s`), direction update `4 s n`, `s` update with `||s||`
/// `3 s n`, `x` update `4 s n`, `r` update with `||r||` and the next `<r~, r>` `4 s n`: about
/// `24 nnz + 16 n + 21 s n` bytes where the backend fuses the dots into the SpMVs.
/// As CG's loop, a backend whose steps keep the scalars on its device runs
/// `BicgstabSteps::bicgstab_batch` iterations before the records come back.
pub fn bicgstab<B: BicgstabSteps, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    b: &B::Vector<f64>,
    x: &mut B::Vector<P>,
    precond: &M,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<SolveInfo> {
    const METHOD: &str = "bicgstab";
    let mut tracker = Tracker::start(backend, a, b, params, monitor)?;
    // BiCGStab's recurrence residual stagnates where rounding takes over (CG's goes on falling)
    tracker.recurrence_may_stagnate();
    let n = backend.len(b);
    let identity = precond.is_identity();
    let wide = |backend: &B| -> Result<Option<B::Vector<f64>>> {
        match identity {
            true => Ok(None),
            false => Ok(Some(backend.zeros::<f64>(n)?)),
        }
    };
    let mut v = BicgstabVectors::<B, P> {
        r: backend.zeros(n)?,
        r_tilde: backend.zeros(n)?,
        p: backend.zeros(n)?,
        v: backend.zeros(n)?,
        s: backend.zeros(n)?,
        t: backend.zeros(n)?,
        p_hat: wide(backend)?,
        s_hat: wide(backend)?,
    };

    // r <- b - A x0 ; r~ by the shadow choice (r itself by default)
    backend.residual(a, b, x, &mut v.r)?;
    params.shadow.fill(backend, 0, &v.r, b, &mut v.r_tilde)?;
    let mut r_norm = backend.nrm2(&v.r)?;
    if let Some(stop) = tracker.setup_done(r_norm.to_f64()) {
        return tracker.finish(METHOD, 0, stop, r_norm.to_f64(), x);
    }
    // rho <- <r~, r> (later iterations get it from the previous step)
    let rho = backend.dot(&v.r_tilde, &v.r)?;
    let mut state = backend.bicgstab_start(n, &rho, tracker.threshold(), identity)?;
    let mut records = Vec::new();
    let mut k = 0;
    while k < params.max_iter {
        let batch = next_batch(backend.bicgstab_batch(&state), k, params);
        backend.bicgstab_run(a, precond, &mut v, x, &mut state, batch)?;
        let last = k + batch;
        let collected = backend.bicgstab_collect(&mut state, &mut records)?;
        // A breakdown of `rho` or `<r~, v>` in iteration k leaves x and r as iteration k - 1
        // left them: the solve restarts there while it has restarts left.
        let may_restart = tracker.may_restart();
        let mut restart_at = None;
        for record in records.drain(..) {
            k += 1;
            if let Some(stop) = rho_stop(&record.rho) {
                if may_restart && matches!(stop, StopReason::Breakdown { .. }) {
                    restart_at = Some((k - 1, "rho = 0"));
                    break;
                }
                return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
            }
            let rv = record
                .rv
                .ok_or_else(|| disagree(METHOD, backend.name(), k, "no <r~, v>"))?;
            if let Some(stop) = finite_or(&rv, "<r~, v>") {
                return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
            }
            if rv == P::zero() {
                if may_restart {
                    restart_at = Some((k - 1, "<r~, v> = 0"));
                    break;
                }
                let stop = StopReason::Breakdown {
                    what: "<r~, v> = 0".into(),
                };
                return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
            }
            let ss = record
                .ss
                .ok_or_else(|| disagree(METHOD, backend.name(), k, "no <s, s>"))?;
            let s_norm = ss.sqrt();
            if let Some(stop) = tracker.check_half_step_in_batch(k, &s_norm, k == last)? {
                // Converged on the half step: x got x + alpha p^ only. (Stopped for another
                // reason here, x holds the whole step.)
                return tracker.finish(METHOD, k, stop, s_norm.to_f64(), x);
            }
            let omega = record
                .omega
                .ok_or_else(|| disagree(METHOD, backend.name(), k, "no omega"))?;
            if let Some(stop) = finite_or(&omega, "omega") {
                return tracker.finish(METHOD, k - 1, stop, s_norm.to_f64(), x);
            }
            let rr = record
                .rr
                .ok_or_else(|| disagree(METHOD, backend.name(), k, "no <r, r>"))?;
            r_norm = rr.sqrt();
            if let Some(stop) = tracker.check_in_batch(k, &r_norm, Some(&*x), k == last)? {
                return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
            }
            if omega == P::zero() {
                let stop = StopReason::Breakdown {
                    what: "omega = 0".into(),
                };
                return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
            }
        }
        if let Some((at, what)) = restart_at {
            // r <- b - A x, a fresh r~, rho <- <r~, r>, and the steps begin again (p <- r).
            k = at;
            let restarts = tracker.count_restart();
            log::info!("bicgstab: {what} in iteration {}: restart {restarts} from x", k + 1);
            backend.residual(a, b, x, &mut v.r)?;
            params
                .shadow
                .fill(backend, restarts as u64, &v.r, b, &mut v.r_tilde)?;
            r_norm = backend.nrm2(&v.r)?;
            let rho = backend.dot(&v.r_tilde, &v.r)?;
            state = backend.bicgstab_start(n, &rho, tracker.threshold(), identity)?;
            continue;
        }
        batch_done(METHOD, backend.name(), k, last, collected)?;
    }
    let stop = StopReason::MaxIterations;
    tracker.finish(METHOD, params.max_iter, stop, r_norm.to_f64(), x)
}
