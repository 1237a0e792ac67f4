//! BiCGStab's iteration as steps a backend runs, and the record each iteration leaves for the
//! loop (the pattern of `solver::cg::steps`: the loop decides from records; a backend that
//! keeps the scalars on its device runs many iterations before they are read, and stops
//! changing its vectors at the iteration the loop stops at, by the tests below, whose CUDA
//! twins are in `kernels/bicgstab.cu`).

use crate::backend::{BICGSTAB_BLOCK, Backend, Operand};
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;
use crate::solver::cg::{Collected, Threshold, rho_stops};

/// What iteration `k` computed: `rho`, then `<r~, v>` unless `rho` stopped the solve, then
/// `<s, s>` and `omega` unless `<r~, v>` did, then `<r, r>` unless the half step or `omega` did.
#[derive(Clone, Debug, PartialEq)]
pub struct BicgstabRecord<P> {
    pub rho: P,
    pub rv: Option<P>,
    pub ss: Option<P>,
    pub omega: Option<P>,
    pub rr: Option<P>,
}

/// BiCGStab's vectors (`p_hat`, `s_hat` only with a preconditioner: they stay in double).
pub struct BicgstabVectors<B: Backend, P: Precision> {
    pub r: B::Vector<P>,
    pub r_tilde: B::Vector<P>,
    pub p: B::Vector<P>,
    pub v: B::Vector<P>,
    pub s: B::Vector<P>,
    pub t: B::Vector<P>,
    pub p_hat: Option<B::Vector<f64>>,
    pub s_hat: Option<B::Vector<f64>>,
}

/// `<r~, v>` that lets the step go on: finite and non-zero.
pub fn rv_accepted<P: Precision>(rv: &P) -> bool {
    rv.is_finite() && *rv != P::zero()
}

/// The steps of a BiCGStab iteration, per backend.
pub trait BicgstabSteps: super::BicgstabKernels + Sized {
    /// The scalars between iterations, where the backend keeps them.
    type BicgstabState<P: Precision>;

    /// The state after the initial residual, with `rho0 = <r~, r0>`.
    fn bicgstab_start<P: Precision>(
        &self,
        n: usize,
        rho0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<Self::BicgstabState<P>>;

    /// Iterations to run before the records are read (1: the loop decides after each).
    fn bicgstab_batch<P: Precision>(&self, state: &Self::BicgstabState<P>) -> usize;

    /// Run `iterations` iterations (nothing once an iteration has stopped the solve).
    fn bicgstab_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &Self::Matrix,
        precond: &M,
        v: &mut BicgstabVectors<Self, P>,
        x: &mut Self::Vector<P>,
        state: &mut Self::BicgstabState<P>,
        iterations: usize,
    ) -> Result<()>;

    /// The records of the iterations run since the last call, in order, appended to `out`.
    fn bicgstab_collect<P: Precision>(
        &self,
        state: &mut Self::BicgstabState<P>,
        out: &mut Vec<BicgstabRecord<P>>,
    ) -> Result<Collected>;
}

/// The scalars on the host, one iteration at a time (the portable [`BicgstabSteps`]), with the
/// backend's fused half and finishing steps.
pub struct HostBicgstab<B: Backend, P: Precision> {
    threshold: Threshold,
    rho: P,
    rho_prev: P,
    alpha: P,
    omega: P,
    done: usize,
    frozen: bool,
    records: Vec<BicgstabRecord<P>>,
    /// The fused steps' scalars on the backend (read once an iteration).
    block: B::Vector<P>,
}

impl<B: super::BicgstabKernels, P: Precision> HostBicgstab<B, P> {
    pub fn start(backend: &B, rho0: &P, threshold: Threshold) -> Result<Self> {
        Ok(HostBicgstab {
            threshold,
            rho: rho0.clone(),
            rho_prev: P::one(),
            alpha: P::one(),
            omega: P::one(),
            done: 0,
            frozen: false,
            records: Vec::new(),
            block: backend.zeros::<P>(BICGSTAB_BLOCK)?,
        })
    }

    pub fn run<M: Preconditioner<B>>(
        &mut self,
        backend: &B,
        a: &B::Matrix,
        precond: &M,
        v: &mut BicgstabVectors<B, P>,
        x: &mut B::Vector<P>,
        iterations: usize,
    ) -> Result<()> {
        (0..iterations).try_for_each(|_| self.iterate(backend, a, precond, v, x))
    }

    fn iterate<M: Preconditioner<B>>(
        &mut self,
        backend: &B,
        a: &B::Matrix,
        precond: &M,
        v: &mut BicgstabVectors<B, P>,
        x: &mut B::Vector<P>,
    ) -> Result<()> {
        if self.frozen {
            return Ok(());
        }
        let rho = self.rho.clone();
        let mut record = BicgstabRecord {
            rho: rho.clone(),
            rv: None,
            ss: None,
            omega: None,
            rr: None,
        };
        if rho_stops(&rho) {
            return self.freeze(record);
        }
        if self.done == 0 {
            // p <- r
            backend.copy(&v.r, &mut v.p)?;
        } else {
            // p <- r + beta (p - omega v),  beta = (rho / rho_prev) (alpha / omega)
            let beta = rho.div(&self.rho_prev).mul(&self.alpha.div(&self.omega));
            backend.bicgstab_direction(&v.r, &beta, &self.omega, &v.v, &mut v.p)?;
        }
        // p^ <- M^-1 p ; v <- A p^ ; alpha <- rho / <r~, v> ; s <- r - alpha v with <s, s>
        let p_hat = match v.p_hat.as_mut() {
            Some(ph) => {
                precond.apply_double(backend, &v.p, ph)?;
                Operand::Wide(&*ph)
            }
            None => Operand::Own(&v.p),
        };
        backend.bicgstab_half(
            a,
            p_hat,
            &rho,
            &v.r_tilde,
            &mut v.v,
            &v.r,
            &mut v.s,
            &mut self.block,
        )?;
        // s^ <- M^-1 s (before the half-step test, whose scalars are not on the host yet:
        // wasted only on the iteration that stops there)
        let s_hat = match v.s_hat.as_mut() {
            Some(sh) => {
                precond.apply_double(backend, &v.s, sh)?;
                Operand::Wide(&*sh)
            }
            None => Operand::Own(&v.s),
        };
        // t <- A s^ with <t, t> and <t, s> ; omega ; x <- x + alpha p^ (+ omega s^ unless ||s||
        // converged) ; r <- s - omega t with <r, r> and the next rho: the one transfer
        let step = backend.bicgstab_finish(
            self.threshold.denominator,
            self.threshold.tol,
            a,
            p_hat,
            s_hat,
            &mut v.t,
            &v.s,
            &v.r_tilde,
            x,
            &mut v.r,
            &mut self.block,
        )?;
        record.rv = Some(step.rv.clone());
        if !rv_accepted(&step.rv) {
            return self.freeze(record);
        }
        record.ss = Some(step.ss.clone());
        record.omega = Some(step.omega.clone());
        if self.threshold.reached_by(&step.ss) {
            self.done += 1;
            return self.freeze(record);
        }
        if !step.omega.is_finite() {
            return self.freeze(record);
        }
        record.rr = Some(step.rr.clone());
        self.done += 1;
        if self.threshold.reached_by(&step.rr) || step.omega == P::zero() {
            return self.freeze(record);
        }
        self.alpha = step.alpha;
        self.omega = step.omega;
        self.rho_prev = rho;
        self.rho = step.rho_next;
        self.records.push(record);
        Ok(())
    }

    fn freeze(&mut self, record: BicgstabRecord<P>) -> Result<()> {
        self.frozen = true;
        self.records.push(record);
        Ok(())
    }

    pub fn collect(&mut self, out: &mut Vec<BicgstabRecord<P>>) -> Collected {
        out.append(&mut self.records);
        match self.frozen {
            true => Collected::Frozen,
            false => Collected::Running,
        }
    }
}

/// Backends that run the portable steps (the CPU's, a caller's operator's, a block solve's).
impl<B: crate::solver::HostBicgstabSteps> BicgstabSteps for B {
    type BicgstabState<P: Precision> = HostBicgstab<B, P>;

    fn bicgstab_start<P: Precision>(
        &self,
        _n: usize,
        rho0: &P,
        threshold: Threshold,
        _identity: bool,
    ) -> Result<Self::BicgstabState<P>> {
        HostBicgstab::start(self, rho0, threshold)
    }

    fn bicgstab_batch<P: Precision>(&self, _: &Self::BicgstabState<P>) -> usize {
        1
    }

    fn bicgstab_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &Self::Matrix,
        precond: &M,
        v: &mut BicgstabVectors<Self, P>,
        x: &mut Self::Vector<P>,
        state: &mut Self::BicgstabState<P>,
        iterations: usize,
    ) -> Result<()> {
        state.run(self, a, precond, v, x, iterations)
    }

    fn bicgstab_collect<P: Precision>(
        &self,
        state: &mut Self::BicgstabState<P>,
        out: &mut Vec<BicgstabRecord<P>>,
    ) -> Result<Collected> {
        Ok(state.collect(out))
    }
}
