//! The solvers' steps on a [`BlockBackend`]: CG's scalars on the backend's devices where it
//! keeps them there ([`BlockKernels::BlockCg`]), else on the host; BiCGStab's on the host.

use super::{BlockBackend, BlockCgVectors, BlockKernels};
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::Preconditioner;
use crate::solver::HostBicgstabSteps;
use crate::solver::cg::{CgRecord, CgSteps, CgVectors, Collected, HostCg, Threshold};

/// CG's scalars on the host, or on the backend's devices where it keeps them there.
pub enum BlockCgState<B: BlockKernels, P: Precision> {
    Host(HostCg<P>),
    Device(B::BlockCg<P>),
}

impl<B: BlockKernels> CgSteps for BlockBackend<B> {
    type CgState<P: Precision> = BlockCgState<B, P>;

    fn cg_start<P: Precision>(
        &self,
        _n: usize,
        rr0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<BlockCgState<B, P>> {
        let len = self.extended_len();
        let device = match identity {
            true => self.inner.block_cg_start(&self.route, len, rr0, threshold)?,
            false => None,
        };
        Ok(match device {
            Some(d) => BlockCgState::Device(d),
            None => BlockCgState::Host(HostCg::start(rr0, threshold)),
        })
    }

    fn cg_batch<P: Precision>(&self, state: &BlockCgState<B, P>) -> usize {
        match state {
            BlockCgState::Host(_) => 1,
            BlockCgState::Device(d) => self.inner.block_cg_batch(d),
        }
    }

    fn cg_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &Self::Matrix,
        precond: &M,
        v: &mut CgVectors<Self, P>,
        x: &mut Self::Vector<P>,
        state: &mut BlockCgState<B, P>,
        iterations: usize,
    ) -> Result<()> {
        match state {
            BlockCgState::Host(h) => h.run(self, a, precond, v, x, iterations),
            BlockCgState::Device(d) => {
                let v = BlockCgVectors {
                    r: v.r.local_mut(),
                    p: v.p.local_mut(),
                    q: v.q.local_mut(),
                    x: x.local_mut(),
                };
                self.inner
                    .block_cg_run(&self.link, &self.route, &a.local, v, d, iterations)
            }
        }
    }

    fn cg_collect<P: Precision>(
        &self,
        state: &mut BlockCgState<B, P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        match state {
            BlockCgState::Host(h) => Ok(h.collect(out)),
            BlockCgState::Device(d) => self.inner.block_cg_collect(&self.link, d, out),
        }
    }

    fn cg_settle<P: Precision>(
        &self,
        state: &mut BlockCgState<B, P>,
        v: &CgVectors<Self, P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        match state {
            BlockCgState::Host(h) => h.settle(self, &v.p, x),
            BlockCgState::Device(d) => {
                self.inner
                    .block_cg_settle(d, v.p.local(), x.local_mut())
            }
        }
    }
}

/// BiCGStab's scalars on the host (the portable steps).
impl<B: BlockKernels> HostBicgstabSteps for BlockBackend<B> {}
