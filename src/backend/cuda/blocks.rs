//! The GPU's side of [`BlockBackend`](crate::distributed::BlockBackend) (`--devices`, or a GPU
//! a rank under MPI): the partials stay on the device, each rank's run of them is gathered
//! into every rank's copy of the whole list (`link.rs`: NCCL broadcasts, or through the host),
//! and the backend's own final stage sums it (the single GPU's bits); the halo travels between
//! the vectors the same way.

use super::device::driver_error;
use super::launch::FinalStage;
use super::{CudaBackend, CudaMatrix, CudaVector, Layout, SpmvLayout};
use crate::backend::{OperandOf, TiledDots};
use super::cg::{Block, DeviceCg, Steps};
use crate::precond::Identity;
use crate::distributed::{BlockCgVectors, BlockKernels, BlockRoute, Reduction, Runs, TwoPartials};
use crate::solver::cg::{CgRecord, Collected, Threshold};
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::sparse::CsrMatrix;
use super::link::GpuLink;
use cudarc::driver::DevicePtr;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// The layout of a reduction's partials: td's are double-doubles.
pub(super) fn partial_layout<P: Precision>() -> Layout {
    match CudaBackend::layout::<P>() {
        Layout::TdSoa => Layout::Words(2),
        other => other,
    }
}

/// Elements `range` of an array of `len` in `layout`, as (byte offset, bytes) of each of its
/// arrays.
pub(super) fn segments(layout: Layout, len: usize, range: Range<usize>) -> Vec<(u64, usize)> {
    let (lo, n) = (range.start, range.len());
    match layout {
        Layout::Words(w) => vec![((8 * w * lo) as u64, 8 * w * n)],
        Layout::TdSoa => vec![((8 * lo) as u64, 8 * n), ((8 * len + 4 * lo) as u64, 4 * n)],
        Layout::MpSoa(limbs) => (0..=limbs)
            .map(|l| ((8 * (l * len + lo)) as u64, 8 * n))
            .collect(),
    }
}

/// Partials on the device and how many.
pub struct CudaPartials<P> {
    buffer: CudaVector<P>,
    count: usize,
}

impl CudaBackend {
    pub(super) fn base<P>(&self, v: &CudaVector<P>) -> u64 {
        let (ptr, _sync) = v.words.device_ptr(&self.stream);
        ptr
    }

    /// The GPU on `ordinal` (0 is [`CudaBackend::new`]'s).
    pub fn on_device(ordinal: usize) -> Result<Self> {
        if ordinal == 0 {
            return CudaBackend::new();
        }
        super::probe().map_err(|message| Error::Backend {
            backend: "cuda",
            message,
        })?;
        let ctx = cudarc::driver::CudaContext::new(ordinal).map_err(driver_error("opening a GPU"))?;
        Self::on_context(ctx)
    }

    /// How many GPUs the driver sees (0 where none can be used).
    pub fn device_count() -> usize {
        match super::probe() {
            Ok(_) => cudarc::driver::CudaContext::device_count().map_or(0, |n| n.max(0) as usize),
            Err(_) => 0,
        }
    }
}

impl BlockKernels for CudaBackend {
    type Link = GpuLink;
    type Partials<P: Precision> = CudaPartials<P>;

    fn matrix_with_lanes(&self, a: &Arc<CsrMatrix>, lanes: usize) -> Result<CudaMatrix> {
        let layout = match lanes {
            1 => SpmvLayout::for_matrix(a, self.resident_threads()?),
            _ => SpmvLayout::Csr,
        };
        self.matrix_in(a, layout, lanes)
    }

    fn dot_partials<P: Precision>(
        &self,
        x: &CudaVector<P>,
        y: OperandOf<'_, Self, P>,
    ) -> Result<CudaPartials<P>> {
        let (buffer, count) = self.partials::<P>(x.len)?;
        match y {
            crate::backend::Operand::Own(y) => {
                self.launch_dot_partial_op("dot", x, y, &buffer, count)?
            }
            crate::backend::Operand::Wide(y) => {
                let op = Self::wide_op::<P>("dot", "dot_wide")?;
                self.launch_dot_partial_op(op, x, y, &buffer, count)?
            }
        }
        Ok(CudaPartials { buffer, count })
    }

    fn axpy_norm_partials<P: Precision>(
        &self,
        alpha: &P,
        x: &CudaVector<P>,
        y: &mut CudaVector<P>,
    ) -> Result<CudaPartials<P>> {
        let (buffer, count) = CudaBackend::axpy_norm_partials(self, alpha, x, y)?;
        Ok(CudaPartials { buffer, count })
    }

    fn tile_partials<P: Precision>(
        &self,
        x: &CudaVector<P>,
        y: &CudaVector<P>,
    ) -> Result<CudaPartials<P>> {
        let (buffer, count) = self.tile_partials::<P>(x.len)?;
        self.launch_dot_partial_op("dot_tile", x, y, &buffer, count)?;
        Ok(CudaPartials { buffer, count })
    }

    fn spmv_tile_partials<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CudaVector<P>>,
        q: &mut CudaVector<P>,
    ) -> Result<TwoPartials<Self, P>> {
        let p = self.spmv_dots_partial(a, x, dots, q, true)?;
        let count = p.tiles;
        let second = p.second.map(|buffer| CudaPartials { buffer, count });
        Ok((
            CudaPartials {
                buffer: p.first,
                count,
            },
            second,
        ))
    }

    fn reduce<P: Precision>(
        &self,
        link: &GpuLink,
        kind: Reduction,
        mine: &CudaPartials<P>,
        runs: &Runs,
    ) -> Result<P> {
        let total = runs.total();
        let (whole, _) = self.partials_per::<P>(total * kind.rows(), kind.rows())?;
        self.gather_runs(link, &mine.buffer, mine.count, runs, &whole)?;
        let stage = match kind {
            Reduction::Chunks => FinalStage::Dot,
            Reduction::Tiles => FinalStage::Tiles,
        };
        let sum = self.finish_reduction(stage, &whole, total)?;
        // The stream has run everything recorded so far: its transfers' times are known.
        self.resolve_timing(link);
        Ok(sum)
    }

    fn exchange<P: Precision>(
        &self,
        link: &GpuLink,
        x: &mut CudaVector<P>,
        sends: &[(usize, Range<usize>)],
        receives: &[(usize, Range<usize>)],
    ) -> Result<()> {
        self.exchange_on(link, x, sends, receives, &self.stream)
    }

    fn copy_range<P: Precision>(
        &self,
        x: &CudaVector<P>,
        from: Range<usize>,
        y: &mut CudaVector<P>,
        at: usize,
    ) -> Result<()> {
        let layout = Self::layout::<P>();
        let n = from.len();
        let (src, dst) = (self.base(x), self.base(y));
        let parts = segments(layout, x.len, from).into_iter();
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        for ((s, bytes), (d, _)) in parts.zip(segments(layout, y.len, at..at + n)) {
            // SAFETY: runs inside both vectors (`segments` of their lengths), on their stream.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    dst + d,
                    src + s,
                    bytes,
                    self.stream.cu_stream(),
                )
            }
            .map_err(driver_error("copying rows on the GPU"))?;
        }
        Ok(())
    }

    fn read_range<P: Precision>(&self, x: &CudaVector<P>, range: Range<usize>) -> Result<Vec<P>> {
        let mut part = self.alloc_vector::<P>(range.len())?;
        self.copy_range(x, range, &mut part, 0)?;
        self.decode(&part)
    }

    fn link_time(&self, link: &GpuLink) -> Duration {
        if self.stream.synchronize().is_ok() {
            self.resolve_timing(link);
        }
        Duration::from_secs_f64(link.total_seconds())
    }

    /// f64 and dd keep CG's scalars on each GPU (`cg.rs`'s steps): every GPU runs the same
    /// steps on its rows and makes the same decisions from the same gathered sums.
    type BlockCg<P: Precision> = DeviceCg<P>;
    fn block_cg_start<P: Precision>(
        &self,
        route: &BlockRoute,
        len: usize,
        rr0: &P,
        threshold: Threshold,
    ) -> Result<Option<DeviceCg<P>>> {
        self.device_cg_of(len, rr0, threshold, true, Some(route))
    }
    fn block_cg_batch<P: Precision>(&self, state: &DeviceCg<P>) -> usize {
        state.batches.batch
    }
    fn block_cg_run<P: Precision>(
        &self,
        link: &GpuLink,
        route: &BlockRoute,
        a: &CudaMatrix,
        v: BlockCgVectors<'_, Self, P>,
        state: &mut DeviceCg<P>,
        iterations: usize,
    ) -> Result<()> {
        let BlockCgVectors { r, p, q, x } = v;
        let steps = Steps {
            r,
            p,
            q,
            z: None,
            x,
        };
        // not replayed as a graph: each GPU's thread would capture NCCL calls of its own
        let block = Some(Block { link, route });
        self.device_batch(a, &Identity, steps, state, iterations, false, block)
    }
    fn block_cg_collect<P: Precision>(
        &self,
        link: &GpuLink,
        state: &mut DeviceCg<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        let collected = self.device_records(state, out);
        // the read waited for the stream: its transfers' times are known
        self.resolve_timing(link);
        collected
    }
    fn block_cg_settle<P: Precision>(
        &self,
        state: &mut DeviceCg<P>,
        p: &CudaVector<P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        self.device_settle(state, p, x)
    }
}
