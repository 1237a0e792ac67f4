//! BiCGStab(l) with right preconditioning (G. L. G. Sleijpen, D. R. Fokkema, "BiCGstab(l) for
//! linear equations involving unsymmetric matrices with complex spectrum", ETNA 1, 1993,
//! Algorithm 3.1, with the modified Gram-Schmidt minimal-residual part): the only copy of the
//! loop, written from the backend's primitives like GMRES, so every backend runs it with the
//! same bits.
//!
//! A cycle makes `l` BiCG steps and then minimises the residual over the `l`-dimensional
//! polynomial space at once, where BiCGStab (l = 1) takes one degree at a time: on matrices
//! with eigenvalues far off the real axis BiCGStab's degree-1 steps stagnate (`omega` near 0)
//! and the degree-`l` step does not. A cycle counts as `l` iterations (each with two
//! matrix-vector products, as a BiCGStab iteration), and the stopping test, the history and the
//! callback see the residual at the end of each cycle.
//!
//! Right preconditioning replaces `A` by `A M^{-1}`: the cycle's update of `x` is gathered in
//! `y` and `x <- x + M^{-1} y` at its end (one application more per cycle).

use super::monitor::{Monitor, Tracker};
use super::params::{Params, SolveInfo, StopReason};
use crate::backend::Backend;
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;

/// Solve `A x = b` for general square `A` by BiCGStab(`params.bicgstab_l`), starting from the
/// `x` given, with the shadow residual `params.shadow`. A zero `rho`, `<u_{j+1}, r~>`,
/// `sigma_j` or `omega` restarts the solve from the current iterate with a fresh shadow
/// residual, as BiCGStab does, up to `params.max_restarts` times; the breakdown after that
/// ends it as [`StopReason::Breakdown`]. The iterations count the BiCG steps made, those of a
/// cycle a breakdown interrupted included.
pub fn bicgstab_l<B: Backend, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    b: &B::Vector<f64>,
    x: &mut B::Vector<P>,
    precond: &M,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<SolveInfo> {
    const METHOD: &str = "bicgstab-l";
    let mut tracker = Tracker::start(backend, a, b, params, monitor)?;
    tracker.recurrence_may_stagnate();
    let n = backend.len(b);
    let l = params.bicgstab_l.max(1);
    let vectors = |count: usize| -> Result<Vec<B::Vector<P>>> {
        (0..count).map(|_| backend.zeros::<P>(n)).collect()
    };
    let (mut r, mut u) = (vectors(l + 1)?, vectors(l + 1)?);
    let mut r_tilde = backend.zeros::<P>(n)?;
    let zero = backend.zeros::<P>(n)?;
    let mut preconditioned: Preconditioned<B, P> = match precond.is_identity() {
        true => None,
        false => Some((backend.zeros::<P>(n)?, backend.zeros::<f64>(n)?)),
    };

    backend.residual(a, b, x, &mut r[0])?;
    params.shadow.fill(backend, 0, &r[0], b, &mut r_tilde)?;
    let mut r_norm = backend.nrm2(&r[0])?;
    if let Some(stop) = tracker.setup_done(r_norm.to_f64()) {
        return tracker.finish(METHOD, 0, stop, r_norm.to_f64(), x);
    }
    let (mut rho0, mut alpha, mut omega) = (P::one(), P::zero(), P::one());
    let mut k = 0;
    while k + l <= params.max_iter {
        // A breakdown: what broke down and the BiCG steps the cycle had made.
        let broke: Option<(&str, usize)> = 'cycle: {
            rho0 = omega.mul(&rho0).neg();
            // the BiCG part: l steps
            for j in 0..l {
                let rho1 = backend.dot(&r[j], &r_tilde)?;
                if rho1 == P::zero() || rho0 == P::zero() {
                    break 'cycle Some(("rho = 0", j));
                }
                let beta = alpha.mul(&rho1).div(&rho0);
                rho0 = rho1;
                for i in 0..=j {
                    backend.xpay(&r[i], &beta.neg(), &mut u[i])?;
                }
                let (head, tail) = u.split_at_mut(j + 1);
                apply_operator(backend, a, precond, &head[j], &mut tail[0], &mut preconditioned)?;
                let gamma = backend.dot(&u[j + 1], &r_tilde)?;
                if gamma == P::zero() {
                    break 'cycle Some(("<u, r~> = 0", j));
                }
                alpha = rho0.div(&gamma);
                for i in 0..=j {
                    backend.axpy(&alpha.neg(), &u[i + 1], &mut r[i])?;
                }
                let (head, tail) = r.split_at_mut(j + 1);
                apply_operator(backend, a, precond, &head[j], &mut tail[0], &mut preconditioned)?;
                update_x(backend, &alpha, &u[0], x, &mut preconditioned)?;
            }
            // the minimal-residual part: modified Gram-Schmidt on r_1..r_l
            let mut tau = vec![vec![P::zero(); l + 1]; l + 1];
            let mut sigma = vec![P::zero(); l + 1];
            let mut gamma_1 = vec![P::zero(); l + 1];
            for j in 1..=l {
                let (head, tail) = r.split_at_mut(j);
                let r_j = &mut tail[0];
                for i in 1..j {
                    tau[i][j] = backend.dot(r_j, &head[i])?.div(&sigma[i]);
                    backend.axpy(&tau[i][j].neg(), &head[i], r_j)?;
                }
                sigma[j] = backend.dot(r_j, r_j)?;
                if sigma[j] == P::zero() {
                    break 'cycle Some(("sigma = 0", l));
                }
                gamma_1[j] = backend.dot(&head[0], r_j)?.div(&sigma[j]);
            }
            let mut gamma = vec![P::zero(); l + 1];
            gamma[l] = gamma_1[l].clone();
            omega = gamma[l].clone();
            for j in (1..l).rev() {
                let mut g = gamma_1[j].clone();
                for i in j + 1..=l {
                    g = g.sub(&tau[j][i].mul(&gamma[i]));
                }
                gamma[j] = g;
            }
            let mut gamma_2 = vec![P::zero(); l + 1];
            for j in 1..l {
                let mut g = gamma[j + 1].clone();
                for i in j + 1..l {
                    g = g.add(&tau[j][i].mul(&gamma[i + 1]));
                }
                gamma_2[j] = g;
            }
            // x += gamma_1 r_0; r_0 -= gamma'_l r_l; u_0 -= gamma_l u_l; then j = 1..l-1
            update_x(backend, &gamma[1], &r[0], x, &mut preconditioned)?;
            let (r0, rest) = r.split_at_mut(1);
            backend.axpy(&gamma_1[l].neg(), &rest[l - 1], &mut r0[0])?;
            let (u0, urest) = u.split_at_mut(1);
            backend.axpy(&gamma[l].neg(), &urest[l - 1], &mut u0[0])?;
            for j in 1..l {
                backend.axpy(&gamma[j].neg(), &urest[j - 1], &mut u0[0])?;
                update_x(backend, &gamma_2[j], &rest[j - 1], x, &mut preconditioned)?;
                backend.axpy(&gamma_1[j].neg(), &rest[j - 1], &mut r0[0])?;
            }
            settle(backend, precond, x, &zero, &mut preconditioned)?;
            k += l;
            r_norm = backend.nrm2(&r[0])?;
            if let Some(stop) = tracker.check_in_batch(k, &r_norm, Some(&*x), true)? {
                return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
            }
            (omega == P::zero()).then_some(("omega = 0", 0))
        };
        let Some((what, steps)) = broke else {
            continue;
        };
        // x, with the steps the cycle made, is the iterate whose residual r_0 tracked: go on
        // from it with a fresh shadow residual, as BiCGStab does, while restarts are left
        settle(backend, precond, x, &zero, &mut preconditioned)?;
        k += steps;
        if !tracker.may_restart() {
            let stop = StopReason::Breakdown { what: what.into() };
            return tracker.finish(METHOD, k, stop, r_norm.to_f64(), x);
        }
        let restarts = tracker.count_restart();
        log::info!("bicgstab-l: {what} after iteration {k}: restart {restarts} from x");
        backend.residual(a, b, x, &mut r[0])?;
        params
            .shadow
            .fill(backend, restarts as u64, &r[0], b, &mut r_tilde)?;
        backend.copy(&zero, &mut u[0])?;
        (rho0, alpha, omega) = (P::one(), P::zero(), P::one());
        r_norm = backend.nrm2(&r[0])?;
    }
    tracker.finish(METHOD, k, StopReason::MaxIterations, r_norm.to_f64(), x)
}

/// With a preconditioner, `x <- x + M^{-1} y` and `y <- 0`: the cycle's update of `x` (or the
/// part of it made before a breakdown).
fn settle<B: Backend, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    precond: &M,
    x: &mut B::Vector<P>,
    zero: &B::Vector<P>,
    preconditioned: &mut Preconditioned<B, P>,
) -> Result<()> {
    if let Some((y, z)) = preconditioned {
        precond.apply_double(backend, y, z)?;
        backend.axpy_wide(&P::one(), z, x)?;
        backend.copy(zero, y)?;
    }
    Ok(())
}

/// With a preconditioner: the cycle's update of `x` before `M^{-1}` (`y`), and a double vector
/// for `M^{-1}` of a vector; `None` without one.
type Preconditioned<B, P> = Option<(<B as Backend>::Vector<P>, <B as Backend>::Vector<f64>)>;

/// `out <- A M^{-1} v` (`A v` without a preconditioner).
fn apply_operator<B: Backend, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    precond: &M,
    v: &B::Vector<P>,
    out: &mut B::Vector<P>,
    preconditioned: &mut Preconditioned<B, P>,
) -> Result<()> {
    match preconditioned {
        None => backend.spmv(a, v, out),
        Some((_, z)) => {
            precond.apply_double(backend, v, z)?;
            backend.spmv_wide(a, z, out)
        }
    }
}

/// `x <- x + alpha v`, or with a preconditioner `y <- y + alpha v` (`x` gets `M^{-1} y` at the
/// cycle's end).
fn update_x<B: Backend, P: Precision>(
    backend: &B,
    alpha: &P,
    v: &B::Vector<P>,
    x: &mut B::Vector<P>,
    preconditioned: &mut Preconditioned<B, P>,
) -> Result<()> {
    match preconditioned {
        None => backend.axpy(alpha, v, x),
        Some((y, _)) => backend.axpy(alpha, v, y),
    }
}
