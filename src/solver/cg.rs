//! Preconditioned conjugate gradients (thesis Fig. 4.1): the only copy of the CG loop.

use super::monitor::{Monitor, Tracker, finite_or};
use super::params::{Params, SolveInfo, StopReason};
use crate::backend::Backend;
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
pub fn cg<B: Backend, P: Precision, M: Preconditioner<B>>(
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
    let mut r = backend.zeros::<P>(n)?;
    let mut p = backend.zeros::<P>(n)?;
    let mut q = backend.zeros::<P>(n)?;
    let mut z = if identity {
        None
    } else {
        Some(backend.zeros::<f64>(n)?)
    };

    // r <- b - A x0
    backend.residual(a, b, x, &mut r)?;
    let mut rr = backend.dot(&r, &r)?;
    let mut r_norm = rr.sqrt();
    if let Some(stop) = tracker.setup_done(r_norm.to_f64()) {
        return tracker.finish(METHOD, 0, stop, r_norm.to_f64(), x);
    }

    let mut rho_prev = P::zero();
    // `x <- x + alpha p` of the last step, not applied yet: it rides on the next direction
    // update, which reads `p` anyway (one pass over `p` saved per iteration), or is applied
    // before anything reads `x`.
    let mut pending_alpha: Option<P> = None;
    // Apply the deferred update (same bits as applying it in the step).
    let settle = |x: &mut B::Vector<P>, p: &B::Vector<P>, pending: &mut Option<P>| -> Result<()> {
        match pending.take() {
            Some(alpha) => backend.axpy(&alpha, p, x),
            None => Ok(()),
        }
    };
    for k in 1..=params.max_iter {
        // z <- M^-1 r (in double) ; rho <- <r, z>
        let rho = match z.as_mut() {
            Some(z) => {
                precond.apply_double(backend, &r, z)?;
                backend.dot_wide(&r, z)?
            }
            None => rr.clone(),
        };
        let stop = match finite_or(&rho, "rho") {
            Some(stop) => Some(stop),
            None if rho == P::zero() => Some(StopReason::Breakdown {
                what: "rho = 0".into(),
            }),
            None => None,
        };
        if let Some(stop) = stop {
            settle(x, &p, &mut pending_alpha)?;
            return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
        }
        if k == 1 {
            // p <- z
            match z.as_ref() {
                Some(z) => backend.convert(z, &mut p)?,
                None => backend.copy(&r, &mut p)?,
            }
        } else {
            // (x <- x + alpha p ;) p <- z + beta p,  beta = rho / rho_prev
            let beta = rho.div(&rho_prev);
            match (pending_alpha.take(), z.as_ref()) {
                (Some(alpha), Some(z)) => backend.cg_direction_wide(&alpha, z, &beta, &mut p, x)?,
                (Some(alpha), None) => backend.cg_direction(&alpha, &r, &beta, &mut p, x)?,
                (None, Some(z)) => backend.xpay_wide(z, &beta, &mut p)?,
                (None, None) => backend.xpay(&r, &beta, &mut p)?,
            }
        }
        // q <- A p ; alpha <- rho / <p, q> ; r <- r - alpha q ; and <r, r>, in one step with
        // one transfer to the host (r is left alone where <p, q> is not positive and finite)
        let (pq, new_rr) = backend.cg_step(a, &rho, &p, &mut q, &mut r)?;
        if let Some(stop) = finite_or(&pq, "<p, Ap>") {
            return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
        }
        if pq.to_f64() <= 0.0 {
            return tracker.finish(METHOD, k - 1, StopReason::Indefinite, r_norm.to_f64(), x);
        }
        pending_alpha = Some(rho.div(&pq));
        // <r, r> is sqrt(rho) of the next step when M = I
        rr = new_rr;
        r_norm = rr.sqrt();
        rho_prev = rho;
        if tracker.wants_x(k) {
            settle(x, &p, &mut pending_alpha)?;
        }
        if let Some(stop) = tracker.check(k, &r_norm, Some(&*x))? {
            settle(x, &p, &mut pending_alpha)?;
            return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
        }
    }
    settle(x, &p, &mut pending_alpha)?;
    let iterations = params.max_iter;
    tracker.finish(
        METHOD,
        iterations,
        StopReason::MaxIterations,
        r_norm.to_f64(),
        x,
    )
}
