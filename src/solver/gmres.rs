//! Restarted GMRES(m) with right preconditioning (Saad & Schultz 1986; Saad, "Iterative Methods
//! for Sparse Linear Systems", 2nd ed., Algorithms 6.9 and 9.5): the only copy of the loop,
//! written from the backend's primitives, so every backend runs it and the same primitives
//! give the same bits.
//!
//! Each iteration adds one basis vector `v_{j+1}`: `w = A M^{-1} v_j`, orthogonalised against
//! `v_1..v_j` in the working precision, by modified Gram-Schmidt or by classical Gram-Schmidt
//! with one reorthogonalisation ([`Orthogonalization`]). The Hessenberg column is reduced by
//! Givens rotations on the host, in `P`, so the residual norm of the least-squares solution,
//! `|g_{j+1}|`, is known at each iteration without forming `x`: it is the recurrence residual
//! the stopping test reads. `x` is formed at the end of a cycle (every `m` iterations, or where
//! the test is met) as `x + M^{-1} V y`, and the next cycle starts from `r = b - A x`.
//!
//! With a preconditioner, `M^{-1} v_j` is kept in double (the preconditioners work in double,
//! as for CG and BiCGStab), so the `m` vectors `z_j = M^{-1} v_j` are stored as doubles and read
//! widened (Saad's FGMRES form, which needs no second application to form `x`).

use super::monitor::{Monitor, Tracker};
use super::params::{Params, SolveInfo, StopReason};
use crate::backend::Backend;
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;

/// How GMRES orthogonalises each new vector against the basis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Orthogonalization {
    /// Modified Gram-Schmidt: `j` dependent dot-axpy pairs (default).
    #[default]
    Mgs,
    /// Classical Gram-Schmidt twice ("CGS2"): `j` independent dots, the updates, then the
    /// same again; as orthogonal as MGS or better, with dots that do not wait on each other.
    Cgs2,
}

super::params::named_choices!(Orthogonalization, "orthogonalization", {
    Mgs => "mgs",
    Cgs2 => "cgs2",
});

/// Where the basis vectors' preconditioned images live: the basis itself without a
/// preconditioner, doubles with one.
enum Images<B: Backend> {
    Basis,
    Double(Vec<B::Vector<f64>>),
}

/// Solve `A x = b` for general square `A` by GMRES(`params.gmres_restart`), starting from the
/// `x` given.
///
/// Memory traffic of iteration `j` of a cycle (`s` bytes per `P` element, `n` rows): the SpMV
/// `12 nnz + 8 n + 2 s n`, then by MGS `j` dots and `j` axpys, `5 j s n`, and the norm and
/// scaling `3 s n`: the basis makes long cycles cost more per iteration, which is why the
/// restart length is bounded (default 30, PETSc's).
pub fn gmres<B: Backend, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    b: &B::Vector<f64>,
    x: &mut B::Vector<P>,
    precond: &M,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<SolveInfo> {
    const METHOD: &str = "gmres";
    let mut tracker = Tracker::start(backend, a, b, params, monitor)?;
    let n = backend.len(b);
    let m = params.gmres_restart.max(1);
    let mut basis: Vec<B::Vector<P>> = Vec::with_capacity(m + 1);
    for _ in 0..=m {
        basis.push(backend.zeros(n)?);
    }
    let mut images = match precond.is_identity() {
        true => Images::Basis,
        false => Images::Double(
            (0..m)
                .map(|_| backend.zeros::<f64>(n))
                .collect::<Result<_>>()?,
        ),
    };
    let mut r = backend.zeros::<P>(n)?;
    let mut w = backend.zeros::<P>(n)?;
    let mut x_at = backend.zeros::<P>(n)?;
    let zero = backend.zeros::<P>(n)?;

    backend.residual(a, b, x, &mut r)?;
    let mut beta = backend.nrm2(&r)?;
    if let Some(stop) = tracker.setup_done(beta.to_f64()) {
        return tracker.finish(METHOD, 0, stop, beta.to_f64(), x);
    }
    // the Hessenberg matrix's columns, rotated to upper triangular, and the rotations
    let mut h: Vec<Vec<P>> = Vec::with_capacity(m);
    let mut rotations: Vec<(P, P)> = Vec::with_capacity(m);
    let mut g: Vec<P> = Vec::with_capacity(m + 1);
    let mut k = 0;
    loop {
        // v_1 = r / beta
        scale_into(backend, &beta, &r, &zero, &mut basis[0])?;
        h.clear();
        rotations.clear();
        g.clear();
        g.push(beta.clone());
        let mut stop = None;
        for j in 0..m {
            k += 1;
            // w = A M^{-1} v_j
            match &mut images {
                Images::Basis => backend.spmv(a, &basis[j], &mut w)?,
                Images::Double(z) => {
                    precond.apply_double(backend, &basis[j], &mut z[j])?;
                    backend.spmv_wide(a, &z[j], &mut w)?;
                }
            }
            let mut column = orthogonalize(backend, params.gmres_orthogonalization, &basis[..=j], &mut w)?;
            let h_next = backend.nrm2(&w)?;
            // the new column through the rotations so far, then its own
            for (i, (c, s)) in rotations.iter().enumerate() {
                let (upper, lower) = (column[i].clone(), column[i + 1].clone());
                column[i] = c.mul(&upper).add(&s.mul(&lower));
                column[i + 1] = c.mul(&lower).sub(&s.mul(&upper));
            }
            column.push(h_next.clone());
            let (c, s) = match givens(&column[j], &column[j + 1]) {
                Some(rotation) => rotation,
                None => {
                    stop = Some(StopReason::Breakdown {
                        what: "GMRES: the Hessenberg column is zero".into(),
                    });
                    k -= 1;
                    break;
                }
            };
            column[j] = c.mul(&column[j]).add(&s.mul(&column[j + 1]));
            column.truncate(j + 1);
            let g_j = g[j].clone();
            g[j] = c.mul(&g_j);
            g.push(s.mul(&g_j).neg());
            h.push(column);
            rotations.push((c, s));
            let estimate = g[j + 1].abs();
            let x_now = if tracker.wants_x(k) {
                backend.copy(x, &mut x_at)?;
                update(backend, &mut x_at, &h, &g, &basis, &images)?;
                Some(&x_at)
            } else {
                None
            };
            if let Some(reason) = tracker.check_in_batch(k, &estimate, x_now, true)? {
                stop = Some(reason);
                break;
            }
            if k == params.max_iter {
                stop = Some(StopReason::MaxIterations);
                break;
            }
            // v_{j+1} = w / h_{j+1,j}; a zero norm is the exact solution, met by the test above
            if j + 1 < m {
                scale_into(backend, &h_next, &w, &zero, &mut basis[j + 1])?;
            }
        }
        // x <- x + M^{-1} V y with R y = g
        update(backend, x, &h, &g, &basis, &images)?;
        let estimate = g.last().map_or(0.0, |v| v.abs().to_f64());
        if let Some(stop) = stop {
            return tracker.finish(METHOD, k, stop, estimate, x);
        }
        backend.residual(a, b, x, &mut r)?;
        beta = backend.nrm2(&r)?;
    }
}

/// `v <- (1 / alpha) u` (`zero`: a vector of zeros).
fn scale_into<B: Backend, P: Precision>(
    backend: &B,
    alpha: &P,
    u: &B::Vector<P>,
    zero: &B::Vector<P>,
    v: &mut B::Vector<P>,
) -> Result<()> {
    let inverse = P::one().div(alpha);
    backend.axpyz(&inverse, u, zero, v)
}

/// `w` orthogonalised against `basis` (orthonormal); the coefficients `h_{1..j, j}`.
fn orthogonalize<B: Backend, P: Precision>(
    backend: &B,
    how: Orthogonalization,
    basis: &[B::Vector<P>],
    w: &mut B::Vector<P>,
) -> Result<Vec<P>> {
    let mut h = Vec::with_capacity(basis.len() + 1);
    match how {
        Orthogonalization::Mgs => {
            for v in basis {
                let hv = backend.dot(w, v)?;
                backend.axpy(&hv.neg(), v, w)?;
                h.push(hv);
            }
        }
        Orthogonalization::Cgs2 => {
            h.resize(basis.len(), P::zero());
            for _ in 0..2 {
                let pass: Vec<P> = basis
                    .iter()
                    .map(|v| backend.dot(w, v))
                    .collect::<Result<_>>()?;
                for ((v, hv), total) in basis.iter().zip(&pass).zip(h.iter_mut()) {
                    backend.axpy(&hv.neg(), v, w)?;
                    *total = total.add(hv);
                }
            }
        }
    }
    Ok(h)
}

/// The rotation `(c, s)` that zeroes `b` under `a`; `None` where both are zero.
fn givens<P: Precision>(a: &P, b: &P) -> Option<(P, P)> {
    let r = a.mul(a).add(&b.mul(b)).sqrt();
    if !r.is_finite() || r == P::zero() {
        return None;
    }
    Some((a.div(&r), b.div(&r)))
}

/// `x <- x + sum_i y_i M^{-1} v_i`, `y` solving the triangle `h y = g` of the cycle so far.
fn update<B: Backend, P: Precision>(
    backend: &B,
    x: &mut B::Vector<P>,
    h: &[Vec<P>],
    g: &[P],
    basis: &[B::Vector<P>],
    images: &Images<B>,
) -> Result<()> {
    let j = h.len();
    let mut y: Vec<P> = vec![P::zero(); j];
    for i in (0..j).rev() {
        let mut sum = g[i].clone();
        for (l, y_l) in y.iter().enumerate().skip(i + 1) {
            sum = sum.sub(&h[l][i].mul(y_l));
        }
        y[i] = sum.div(&h[i][i]);
    }
    for (i, y_i) in y.iter().enumerate() {
        match images {
            Images::Basis => backend.axpy(y_i, &basis[i], x)?,
            Images::Double(z) => backend.axpy_wide(y_i, &z[i], x)?,
        }
    }
    Ok(())
}
