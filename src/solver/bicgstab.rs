//! Preconditioned BiCGStab (thesis Fig. 4.2): the only copy of the BiCGStab loop.

use super::monitor::{Monitor, Tracker, finite_or};
use super::params::{Params, SolveInfo, StopReason};
use crate::backend::{BICGSTAB_BLOCK, Backend, Operand};
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
pub fn bicgstab<B: Backend, P: Precision, M: Preconditioner<B>>(
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
    let n = backend.len(b);
    let mut r = backend.zeros::<P>(n)?;
    let mut r_tilde = backend.zeros::<P>(n)?;
    let mut p = backend.zeros::<P>(n)?;
    let mut v = backend.zeros::<P>(n)?;
    let mut s = backend.zeros::<P>(n)?;
    let mut t = backend.zeros::<P>(n)?;
    // p^ = M^-1 p and s^ = M^-1 s stay in double (the preconditioner works in double, so
    // widening them to P would store zeros below the double); the SpMVs and the x update read
    // them widened, with the bits of the widened vectors.
    let (mut p_hat, mut s_hat) = if precond.is_identity() {
        (None, None)
    } else {
        (
            Some(backend.zeros::<f64>(n)?),
            Some(backend.zeros::<f64>(n)?),
        )
    };

    // r <- b - A x0 ; r~ <- r
    backend.residual(a, b, x, &mut r)?;
    backend.copy(&r, &mut r_tilde)?;
    let mut r_norm = backend.nrm2(&r)?;
    if let Some(stop) = tracker.setup_done(r_norm.to_f64()) {
        return tracker.finish(METHOD, 0, stop, r_norm.to_f64(), x);
    }

    // The step's scalars stay on the backend in `block` until one transfer per iteration.
    let mut block = backend.zeros::<P>(BICGSTAB_BLOCK)?;
    // rho <- <r~, r> (later iterations get it from the previous step)
    let mut rho = backend.dot(&r_tilde, &r)?;
    let (mut rho_prev, mut alpha, mut omega) = (P::one(), P::one(), P::one());
    for k in 1..=params.max_iter {
        let fail = |stop: StopReason| (k - 1, stop);
        if let Some(stop) = finite_or(&rho, "rho") {
            let (it, stop) = fail(stop);
            return tracker.finish(METHOD, it, stop, r_norm.to_f64(), x);
        }
        if rho == P::zero() {
            let (it, stop) = fail(StopReason::Breakdown {
                what: "rho = 0".into(),
            });
            return tracker.finish(METHOD, it, stop, r_norm.to_f64(), x);
        }
        if k == 1 {
            // p <- r
            backend.copy(&r, &mut p)?;
        } else {
            // p <- r + beta (p - omega v),  beta = (rho / rho_prev) (alpha / omega)
            let beta = rho.div(&rho_prev).mul(&alpha.div(&omega));
            backend.bicgstab_direction(&r, &beta, &omega, &v, &mut p)?;
        }
        // p^ <- M^-1 p ; v <- A p^ ; alpha <- rho / <r~, v> ; s <- r - alpha v with <s, s>,
        // on the backend
        let p_hat_ref = match p_hat.as_mut() {
            Some(ph) => {
                precond.apply_double(backend, &p, ph)?;
                Operand::Wide(&*ph)
            }
            None => Operand::Own(&p),
        };
        backend.bicgstab_half(a, p_hat_ref, &rho, &r_tilde, &mut v, &r, &mut s, &mut block)?;
        // s^ <- M^-1 s (before the half-step test, whose scalars are not on the host yet:
        // wasted only on the iteration that stops there)
        let s_hat_ref = match s_hat.as_mut() {
            Some(sh) => {
                precond.apply_double(backend, &s, sh)?;
                Operand::Wide(&*sh)
            }
            None => Operand::Own(&s),
        };
        // t <- A s^ with <t, t> and <t, s> ; omega <- <t, s> / <t, t> ; x <- x + alpha p^
        // (+ omega s^ unless ||s|| converged) ; r <- s - omega t with <r, r> and the next rho:
        // the iteration's one transfer
        let step = backend.bicgstab_finish(
            tracker.denominator(),
            params.tol,
            a,
            p_hat_ref,
            s_hat_ref,
            &mut t,
            &s,
            &r_tilde,
            x,
            &mut r,
            &mut block,
        )?;
        if let Some(stop) = finite_or(&step.rv, "<r~, v>") {
            let (it, stop) = fail(stop);
            return tracker.finish(METHOD, it, stop, r_norm.to_f64(), x);
        }
        if step.rv == P::zero() {
            let (it, stop) = fail(StopReason::Breakdown {
                what: "<r~, v> = 0".into(),
            });
            return tracker.finish(METHOD, it, stop, r_norm.to_f64(), x);
        }
        alpha = step.alpha;
        let s_norm = step.ss.sqrt();
        if let Some(stop) = tracker.check_half_step(k, &s_norm)? {
            // Converged on the half step: x got x + alpha p^ only. (Stopped for another reason
            // here, x holds the whole step.)
            debug_assert!(stop != StopReason::ConvergedRtol || step.half_converged);
            return tracker.finish(METHOD, k, stop, s_norm.to_f64(), x);
        }
        omega = step.omega;
        if let Some(stop) = finite_or(&omega, "omega") {
            let (it, stop) = fail(stop);
            return tracker.finish(METHOD, it, stop, s_norm.to_f64(), x);
        }
        r_norm = step.rr.sqrt();
        if let Some(stop) = tracker.check(k, &r_norm, Some(&*x))? {
            return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
        }
        if omega == P::zero() {
            let stop = StopReason::Breakdown {
                what: "omega = 0".into(),
            };
            return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
        }
        rho_prev = rho;
        rho = step.rho_next;
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
