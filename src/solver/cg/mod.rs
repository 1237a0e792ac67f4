//! Preconditioned conjugate gradients (thesis Fig. 4.1): the only copy of the CG loop. The
//! iteration's steps are the backend's (`steps`); every decision is made here, from the
//! records the steps leave.

mod kernels;
mod steps;

pub use kernels::CgKernels;
pub use steps::{
    CgRecord, CgSteps, CgVectors, Collected, HostCg, Threshold, pq_accepted, rho_stops,
};

use super::monitor::{Monitor, Tracker, batch_done, disagree, finite_or, next_batch, rho_stop};
use super::params::{Params, SolveInfo, StopReason};
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;

/// Solve `A x = b` for symmetric positive definite `A`, starting from the `x` given.
///
/// Memory traffic per iteration, unpreconditioned, with `s` bytes per `P` element, `n` rows:
/// SpMV `12 nnz + 8 n + 2 s n` (plus the gather of `x`) with `<p, q>` summed inside it where the
/// backend can (`Backend::cg_step`; the CPU and the GPU's one-thread-a-row SpMVs do, otherwise
/// `2 s n` more), the `r` update fused with `<r, r>` `3 s n`, and the direction update `p <- r +
/// beta p` carrying the previous step's `x <- x + alpha p` (both read the old `p`) `5 s n`:
/// about `12 nnz + 8 n + 10 s n` bytes. `<r, r>` serves both as the residual norm and as the
/// next `rho`, so the identity case makes no separate norm pass. Preconditioned, `z` stays a double vector (the preconditioner
/// works in double, so its result widened to `P` has nothing below the double): `<r, z>` reads
/// `(s + 8) n` bytes and the direction update `(4 s + 8) n`, plus the preconditioner's own
/// traffic, which writes `8 n` for `z` instead of `s n`.
/// A backend whose steps keep the scalars on its device runs `CgSteps::cg_batch` iterations
/// before the records come back (one transfer); the loop then goes through them in order as if
/// it had seen each at once. Only a cancellation and the time limit, which no device can see,
/// take effect at the end of such a batch, at its last iteration.
pub fn cg<B: CgSteps, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    b: &B::Vector<f64>,
    x: &mut B::Vector<P>,
    precond: &M,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<SolveInfo> {
    const METHOD: &str = "cg";
    let mut tracker = Tracker::start(backend, a, b, params, monitor)?;
    let n = backend.len(b);
    let identity = precond.is_identity();
    let mut v = CgVectors::<B, P> {
        r: backend.zeros(n)?,
        p: backend.zeros(n)?,
        q: backend.zeros(n)?,
        z: match identity {
            true => None,
            false => Some(backend.zeros(n)?),
        },
    };

    // r <- b - A x0
    backend.residual(a, b, x, &mut v.r)?;
    let rr = backend.dot(&v.r, &v.r)?;
    let mut r_norm = rr.sqrt();
    if let Some(stop) = tracker.setup_done(r_norm.to_f64()) {
        return tracker.finish(METHOD, 0, stop, r_norm.to_f64(), x);
    }
    let mut state = backend.cg_start(n, &rr, tracker.threshold(), identity)?;
    let mut records = Vec::new();
    let mut k = 0;
    while k < params.max_iter {
        let batch = next_batch(backend.cg_batch(&state), k, params);
        backend.cg_run(a, precond, &mut v, x, &mut state, batch)?;
        let last = k + batch;
        let collected = backend.cg_collect(&mut state, &mut records)?;
        for record in records.drain(..) {
            k += 1;
            if let Some(stop) = rho_stop(&record.rho) {
                backend.cg_settle(&mut state, &v, x)?;
                return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
            }
            let pq = record
                .pq
                .ok_or_else(|| disagree(METHOD, backend.name(), k, "no <p, Ap>"))?;
            if let Some(stop) = finite_or(&pq, "<p, Ap>") {
                return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
            }
            if pq.to_f64() <= 0.0 {
                return tracker.finish(METHOD, k - 1, StopReason::Indefinite, r_norm.to_f64(), x);
            }
            let rr = record
                .rr
                .ok_or_else(|| disagree(METHOD, backend.name(), k, "no <r, r>"))?;
            r_norm = rr.sqrt();
            if tracker.wants_x(k) {
                backend.cg_settle(&mut state, &v, x)?;
            }
            if let Some(stop) = tracker.check_in_batch(k, &r_norm, Some(&*x), k == last)? {
                backend.cg_settle(&mut state, &v, x)?;
                return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
            }
        }
        batch_done(METHOD, backend.name(), k, last, collected)?;
    }
    backend.cg_settle(&mut state, &v, x)?;
    tracker.finish(
        METHOD,
        params.max_iter,
        StopReason::MaxIterations,
        r_norm.to_f64(),
        x,
    )
}
