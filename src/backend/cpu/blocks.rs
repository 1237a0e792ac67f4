//! The CPU's side of [`BlockBackend`](crate::distributed::BlockBackend): partials are values on
//! the host, and a [`Communicator`] moves them and the halos. It lets the tests check the
//! block layout (extended vectors, runs of partials) on any machine; the GPUs run the same
//! code with NCCL (`backend/cuda/blocks.rs`).

use super::{DotOperand, dot_partials_of};
use super::{CpuBackend, CpuMatrix, CpuVector, copy_chunk, sum_partials, sum_tiles};
use crate::backend::{Operand, OperandOf, TiledDots};
use crate::distributed::{
    BlockCgVectors, BlockKernels, BlockRoute, CommClock, Communicator, Reduction, Runs,
    TwoPartials, decode, encode, receive_buffers, write_received,
};
use crate::solver::cg::{CgRecord, Collected, Threshold};
use std::convert::Infallible;
use crate::error::Result;
use crate::precision::{HostSlice, HostSliceMut, Precision};
use crate::sparse::CsrMatrix;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// The ranks of a block solve on CPUs.
pub struct CpuLink {
    pub comm: Arc<dyn Communicator>,
    clock: CommClock,
}

impl CpuLink {
    pub fn new(comm: Arc<dyn Communicator>) -> Self {
        CpuLink {
            comm,
            clock: CommClock::default(),
        }
    }
}

impl BlockKernels for CpuBackend {
    type Link = CpuLink;
    type Partials<P: Precision> = Vec<P::Acc>;

    fn matrix_with_lanes(&self, a: &Arc<CsrMatrix>, lanes: usize) -> Result<CpuMatrix> {
        Ok(CpuMatrix::with_lanes(a.clone(), lanes))
    }

    fn dot_partials<P: Precision>(
        &self,
        x: &CpuVector<P>,
        y: OperandOf<'_, Self, P>,
    ) -> Result<Vec<P::Acc>> {
        let y = match y {
            Operand::Own(y) => DotOperand::Own(y.slice()),
            Operand::Wide(y) => DotOperand::Wide(&y.0),
        };
        Ok(dot_partials_of::<P>(x.slice(), y))
    }

    fn axpy_norm_partials<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &mut CpuVector<P>,
    ) -> Result<Vec<P::Acc>> {
        // One pass: each chunk's norm partial while the chunk is in cache.
        let partials = super::fused::axpyz_norm_partials(alpha, x, None, y, None);
        Ok(partials.into_iter().map(|(yy, _)| yy).collect())
    }

    fn tile_partials<P: Precision>(
        &self,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
    ) -> Result<Vec<P::Acc>> {
        Ok(self.dot_tiles(x, y))
    }

    fn spmv_tile_partials<P: Precision>(
        &self,
        a: &CpuMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CpuVector<P>>,
        q: &mut CpuVector<P>,
    ) -> Result<TwoPartials<Self, P>> {
        let rows = 0..q.len();
        let [first, second] = self.spmv_dot_tiles(a, x, dots, q, rows);
        Ok((first, matches!(dots, TiledDots::SelfAnd(_)).then_some(second)))
    }

    fn reduce<P: Precision>(
        &self,
        link: &CpuLink,
        kind: Reduction,
        mine: &Vec<P::Acc>,
        runs: &Runs,
    ) -> Result<P> {
        let (first, runs) = (runs.first, &runs.runs);
        let run = &mine[first..first + runs[link.comm.rank()].len()];
        let all = link
            .clock
            .time(|| link.comm.all_gather(&encode(run.iter().cloned())));
        let whole: Vec<P::Acc> = decode(&all.concat());
        assert_eq!(whole.len(), runs.iter().map(Range::len).sum::<usize>(), "partials");
        Ok(P::from_acc(match kind {
            Reduction::Chunks => sum_partials(&whole),
            Reduction::Tiles => sum_tiles(&whole),
        }))
    }

    fn exchange<P: Precision>(
        &self,
        link: &CpuLink,
        x: &mut CpuVector<P>,
        sends: &[(usize, Range<usize>)],
        receives: &[(usize, Range<usize>)],
    ) -> Result<()> {
        let values = x.slice();
        let sends: Vec<(usize, Vec<u64>)> = sends
            .iter()
            .map(|(to, r)| (*to, encode(r.clone().map(|i| values.get(i).into_owned()))))
            .collect();
        let mut got = receive_buffers::<P>(receives);
        link.clock
            .time(|| link.comm.exchange(&sends, &mut got, &mut || ()));
        write_received::<P>(&mut x.slice_mut(), receives, &got);
        Ok(())
    }

    fn copy_range<P: Precision>(
        &self,
        x: &CpuVector<P>,
        from: Range<usize>,
        y: &mut CpuVector<P>,
        at: usize,
    ) -> Result<()> {
        let xs = x.slice().split_at(from.start).1.split_at(from.len()).0;
        let ys = y.slice_mut().split_at_mut(at).1.split_at_mut(from.len()).0;
        copy_chunk::<P>(xs, ys);
        Ok(())
    }

    fn read_range<P: Precision>(&self, x: &CpuVector<P>, range: Range<usize>) -> Result<Vec<P>> {
        let values = x.slice();
        Ok(range.map(|i| values.get(i).into_owned()).collect())
    }

    fn link_time(&self, link: &CpuLink) -> Duration {
        link.clock.total()
    }

    /// The CPU keeps CG's scalars on the host ([`HostCg`](crate::solver::cg::HostCg)).
    type BlockCg<P: Precision> = Infallible;
    fn block_cg_start<P: Precision>(
        &self,
        _: &BlockRoute,
        _: usize,
        _: &P,
        _: Threshold,
    ) -> Result<Option<Infallible>> {
        Ok(None)
    }
    fn block_cg_batch<P: Precision>(&self, state: &Infallible) -> usize {
        match *state {}
    }
    fn block_cg_run<P: Precision>(
        &self,
        _: &CpuLink,
        _: &BlockRoute,
        _: &CpuMatrix,
        _: BlockCgVectors<'_, Self, P>,
        state: &mut Infallible,
        _: usize,
    ) -> Result<()> {
        match *state {}
    }
    fn block_cg_collect<P: Precision>(
        &self,
        _: &CpuLink,
        state: &mut Infallible,
        _: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        match *state {}
    }
    fn block_cg_settle<P: Precision>(
        &self,
        state: &mut Infallible,
        _: &CpuVector<P>,
        _: &mut CpuVector<P>,
    ) -> Result<()> {
        match *state {}
    }
}
