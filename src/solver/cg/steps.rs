//! CG's iteration as steps a backend runs, and the record each iteration leaves for the loop.
//!
//! The loop (`cg`, in `mod.rs`) never computes a scalar itself: it asks the backend to run
//! iterations ([`CgSteps::cg_run`]) and reads back what they left ([`CgRecord`]), then makes
//! every decision (stop, why, at which iteration) from those records. A backend that keeps the
//! scalars on its device runs many iterations before the loop reads them; it stops changing its
//! vectors at exactly the iteration the loop will stop at, because it applies the same tests
//! ([`rho_stops`], [`pq_accepted`], [`Threshold::reached`]: the CUDA kernels of
//! `kernels/cg.cu` are their twins). [`HostCg`] is the portable implementation, one iteration at
//! a time from the backend's primitives, with the scalars on the host: the CPU backend's, and
//! the CUDA backend's for the precisions without device steps.

use crate::backend::{Backend, cg_step_accepts};
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;

/// The stopping test the tracker applies to a recurrence residual norm, as numbers a device can
/// apply too: stop where `||r|| (rounded to double) / denominator <= tol`, or where the norm is
/// not finite.
#[derive(Clone, Copy, Debug)]
pub struct Threshold {
    pub denominator: f64,
    pub tol: f64,
}

impl Threshold {
    /// Whether the norm `norm` (rounded to double) stops the solve.
    pub fn reached(&self, norm: f64) -> bool {
        !norm.is_finite() || norm / self.denominator <= self.tol
    }

    /// [`reached`](Threshold::reached) for `<r, r>`, the way the steps evaluate it.
    pub fn reached_by<P: Precision>(&self, rr: &P) -> bool {
        self.reached(rr.sqrt().to_f64())
    }
}

/// `rho` (`<r, z>`) that ends the solve before the direction update: not finite, or zero.
pub fn rho_stops<P: Precision>(rho: &P) -> bool {
    !rho.is_finite() || *rho == P::zero()
}

/// `<p, A p>` that lets the step go on: finite and positive.
pub fn pq_accepted<P: Precision>(pq: &P) -> bool {
    cg_step_accepts(pq)
}

/// What iteration `k` computed, exactly: `rho`, then `<p, A p>` unless `rho` stopped the solve,
/// then `<r, r>` after the update unless `<p, A p>` did.
#[derive(Clone, Debug, PartialEq)]
pub struct CgRecord<P> {
    pub rho: P,
    pub pq: Option<P>,
    pub rr: Option<P>,
}

/// CG's vectors (`z` only with a preconditioner: it stays in double).
pub struct CgVectors<B: Backend, P: Precision> {
    pub r: B::Vector<P>,
    pub p: B::Vector<P>,
    pub q: B::Vector<P>,
    pub z: Option<B::Vector<f64>>,
}

/// How the records came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collected {
    /// Every iteration asked for ran; none stopped the solve.
    Running,
    /// The last record is the iteration whose scalars stopped the solve: the backend has not
    /// changed its vectors since (later iterations asked for did nothing).
    Frozen,
}

/// The steps of a CG iteration, per backend.
pub trait CgSteps: super::CgKernels + Sized {
    /// The scalars between iterations, where the backend keeps them.
    type CgState<P: Precision>;

    /// The state after the initial residual: `rr0 = <r0, r0>` (the first `rho` without a
    /// preconditioner), for `n` rows.
    fn cg_start<P: Precision>(
        &self,
        n: usize,
        rr0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<Self::CgState<P>>;

    /// Iterations to run before the records are read (1: the loop decides after each).
    fn cg_batch<P: Precision>(&self, state: &Self::CgState<P>) -> usize;

    /// Run `iterations` iterations (nothing once an iteration has stopped the solve).
    fn cg_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &Self::Matrix,
        precond: &M,
        v: &mut CgVectors<Self, P>,
        x: &mut Self::Vector<P>,
        state: &mut Self::CgState<P>,
        iterations: usize,
    ) -> Result<()>;

    /// The records of the iterations run since the last call, in order, appended to `out`.
    fn cg_collect<P: Precision>(
        &self,
        state: &mut Self::CgState<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected>;

    /// Bring `x` up to date: the last step's `x <- x + alpha p` is deferred into the next
    /// direction update, which reads `p` anyway (one pass over `p` saved an iteration).
    fn cg_settle<P: Precision>(
        &self,
        state: &mut Self::CgState<P>,
        v: &CgVectors<Self, P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()>;
}

/// The scalars on the host, one iteration at a time (the portable [`CgSteps`]).
pub struct HostCg<P> {
    threshold: Threshold,
    /// `<r, r>` of the last step (the next `rho` without a preconditioner).
    rr: P,
    rho_prev: P,
    /// `alpha` of the last step, not yet added to `x`.
    pending: Option<P>,
    done: usize,
    frozen: bool,
    records: Vec<CgRecord<P>>,
}

impl<P: Precision> HostCg<P> {
    pub fn start(rr0: &P, threshold: Threshold) -> Self {
        HostCg {
            threshold,
            rr: rr0.clone(),
            rho_prev: P::zero(),
            pending: None,
            done: 0,
            frozen: false,
            records: Vec::new(),
        }
    }

    /// `iterations` iterations with the backend's primitives.
    pub fn run<B: super::CgKernels, M: Preconditioner<B>>(
        &mut self,
        backend: &B,
        a: &B::Matrix,
        precond: &M,
        v: &mut CgVectors<B, P>,
        x: &mut B::Vector<P>,
        iterations: usize,
    ) -> Result<()> {
        (0..iterations).try_for_each(|_| self.iterate(backend, a, precond, v, x))
    }

    /// One iteration with the backend's primitives.
    fn iterate<B: super::CgKernels, M: Preconditioner<B>>(
        &mut self,
        backend: &B,
        a: &B::Matrix,
        precond: &M,
        v: &mut CgVectors<B, P>,
        x: &mut B::Vector<P>,
    ) -> Result<()> {
        if self.frozen {
            return Ok(());
        }
        // z <- M^-1 r (in double) ; rho <- <r, z>
        let rho = match v.z.as_mut() {
            Some(z) => {
                precond.apply_double(backend, &v.r, z)?;
                backend.dot_wide(&v.r, z)?
            }
            None => self.rr.clone(),
        };
        if rho_stops(&rho) {
            self.freeze(rho, None, None);
            return Ok(());
        }
        if self.done == 0 {
            // p <- z
            match v.z.as_ref() {
                Some(z) => backend.convert(z, &mut v.p)?,
                None => backend.copy(&v.r, &mut v.p)?,
            }
        } else {
            // (x <- x + alpha p ;) p <- z + beta p,  beta = rho / rho_prev
            let beta = rho.div(&self.rho_prev);
            match (self.pending.take(), v.z.as_ref()) {
                (Some(alpha), Some(z)) => {
                    backend.cg_direction_wide(&alpha, z, &beta, &mut v.p, x)?
                }
                (Some(alpha), None) => backend.cg_direction(&alpha, &v.r, &beta, &mut v.p, x)?,
                (None, Some(z)) => backend.xpay_wide(z, &beta, &mut v.p)?,
                (None, None) => backend.xpay(&v.r, &beta, &mut v.p)?,
            }
        }
        // q <- A p ; alpha <- rho / <p, q> ; r <- r - alpha q ; and <r, r>, in one step (r is
        // left alone where <p, q> is not accepted)
        let (pq, rr) = backend.cg_step(a, &rho, &v.p, &mut v.q, &mut v.r)?;
        if !pq_accepted(&pq) {
            self.freeze(rho, Some(pq), None);
            return Ok(());
        }
        self.pending = Some(rho.div(&pq));
        self.rho_prev = rho.clone();
        self.rr = rr.clone();
        self.done += 1;
        self.frozen = self.threshold.reached_by(&rr);
        self.records.push(CgRecord {
            rho,
            pq: Some(pq),
            rr: Some(rr),
        });
        Ok(())
    }

    fn freeze(&mut self, rho: P, pq: Option<P>, rr: Option<P>) {
        self.frozen = true;
        self.records.push(CgRecord { rho, pq, rr });
    }

    pub fn collect(&mut self, out: &mut Vec<CgRecord<P>>) -> Collected {
        out.append(&mut self.records);
        match self.frozen {
            true => Collected::Frozen,
            false => Collected::Running,
        }
    }

    pub fn settle<B: Backend>(
        &mut self,
        backend: &B,
        p: &B::Vector<P>,
        x: &mut B::Vector<P>,
    ) -> Result<()> {
        match self.pending.take() {
            Some(alpha) => backend.axpy(&alpha, p, x),
            None => Ok(()),
        }
    }
}

/// Backends that run the portable steps (the CPU's, and a caller's operator's).
impl<B: crate::solver::HostSteps> CgSteps for B {
    type CgState<P: Precision> = HostCg<P>;

    fn cg_start<P: Precision>(
        &self,
        _n: usize,
        rr0: &P,
        threshold: Threshold,
        _identity: bool,
    ) -> Result<HostCg<P>> {
        Ok(HostCg::start(rr0, threshold))
    }

    fn cg_batch<P: Precision>(&self, _: &HostCg<P>) -> usize {
        1
    }

    fn cg_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &Self::Matrix,
        precond: &M,
        v: &mut CgVectors<Self, P>,
        x: &mut Self::Vector<P>,
        state: &mut HostCg<P>,
        iterations: usize,
    ) -> Result<()> {
        state.run(self, a, precond, v, x, iterations)
    }

    fn cg_collect<P: Precision>(
        &self,
        state: &mut HostCg<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        Ok(state.collect(out))
    }

    fn cg_settle<P: Precision>(
        &self,
        state: &mut HostCg<P>,
        v: &CgVectors<Self, P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        state.settle(self, &v.p, x)
    }
}
