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
/// SpMV `12 nnz + 8 n + 2 s n` (plus the gather of `x`), `<p, q>` `2 s n`, the `x` update `3 s n`,
/// the `r` update fused with `<r, r>` `3 s n`, xpay `3 s n`: about `12 nnz + 8 n + 13 s n` bytes.
/// `<r, r>` serves both as the residual norm and as the next `rho`, so the identity case makes
/// no separate norm pass.
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
        Some(backend.zeros::<P>(n)?)
    };

    // r <- b - A x0
    backend.residual(a, b, x, &mut r)?;
    let mut rr = backend.dot(&r, &r)?;
    let mut r_norm = rr.sqrt();
    if let Some(stop) = tracker.setup_done(r_norm.to_f64()) {
        return tracker.finish(METHOD, 0, stop, r_norm.to_f64(), x);
    }

    let mut rho_prev = P::zero();
    for k in 1..=params.max_iter {
        // z <- M^-1 r ; rho <- <r, z>
        let rho = match z.as_mut() {
            Some(z) => {
                precond.apply(backend, &r, z)?;
                backend.dot(&r, z)?
            }
            None => rr.clone(),
        };
        let z_ref = z.as_ref().unwrap_or(&r);
        if let Some(stop) = finite_or(&rho, "rho") {
            return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
        }
        if rho == P::zero() {
            let stop = StopReason::Breakdown {
                what: "rho = 0".into(),
            };
            return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
        }
        if k == 1 {
            // p <- z
            backend.copy(z_ref, &mut p)?;
        } else {
            // p <- z + beta p,  beta = rho / rho_prev
            let beta = rho.div(&rho_prev);
            backend.xpay(z_ref, &beta, &mut p)?;
        }
        // q <- A p ; alpha <- rho / <p, q> ; x <- x + alpha p ; r <- r - alpha q ; and <r, r>,
        // in one step with one transfer to the host (x and r are left alone where <p, q> is not
        // positive and finite)
        let (pq, new_rr) = backend.cg_step(a, &rho, &p, &mut q, x, &mut r)?;
        if let Some(stop) = finite_or(&pq, "<p, Ap>") {
            return tracker.finish(METHOD, k - 1, stop, r_norm.to_f64(), x);
        }
        if pq.to_f64() <= 0.0 {
            return tracker.finish(METHOD, k - 1, StopReason::Indefinite, r_norm.to_f64(), x);
        }
        // <r, r> is sqrt(rho) of the next step when M = I
        rr = new_rr;
        r_norm = rr.sqrt();
        rho_prev = rho;
        if let Some(stop) = tracker.check(k, &r_norm, Some(&*x))? {
            return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
        }
    }
    let iterations = params.max_iter;
    tracker.finish(
        METHOD,
        iterations,
        StopReason::MaxIterations,
        r_norm.to_f64(),
        x,
    )
}
