//! The GPU's side of [`BlockBackend`](crate::distributed::BlockBackend) (`--devices`): the
//! partials stay on the device, NCCL broadcasts each GPU's run of them into every GPU's copy
//! of the whole list, and the backend's own final stage sums it (the single GPU's bits); the
//! halo travels by NCCL sends and receives straight between the vectors, on the solve's stream.
//! Runs of elements are moved as bytes of each array of the layout (one for f64/dd/qd, the
//! `hi` doubles and `lo` ints of td, the limb arrays of mp).

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
use cudarc::driver::{CudaEvent, CudaStream, DevicePtr};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// NCCL communicators of the GPUs of one process, one a GPU (`ncclCommInitAll`).
pub struct NcclComms {
    comms: Vec<RawComm>,
}

/// One GPU's communicator.
struct RawComm(nccl_sys::ncclComm_t);
// SAFETY: a communicator is used by one thread at a time (its GPU's rank); NCCL allows that
// thread to be any.
unsafe impl Send for RawComm {}
unsafe impl Sync for RawComm {}

impl Drop for NcclComms {
    fn drop(&mut self) {
        for c in &self.comms {
            // SAFETY: created by ncclCommInitAll, destroyed once.
            let _ = unsafe { nccl::comm_destroy(c.0) };
        }
    }
}

fn nccl_error(context: &str) -> impl FnOnce(nccl::NcclError) -> Error + '_ {
    move |e| Error::Backend {
        backend: "cuda",
        message: format!("{context}: NCCL error {e:?}"),
    }
}

impl NcclComms {
    /// Communicators for `gpus`, in rank order; an error (not a panic) where NCCL is missing.
    pub fn new(gpus: &[CudaBackend]) -> Result<Arc<NcclComms>> {
        // SAFETY: only tries to dlopen libnccl.
        if !unsafe { nccl_sys::is_culib_present() } {
            return Err(Error::Backend {
                backend: "cuda",
                message: "several GPUs need NCCL, and libnccl could not be loaded".into(),
            });
        }
        let ordinals: Vec<i32> = gpus.iter().map(|g| g.ctx.ordinal() as i32).collect();
        let mut raw = vec![std::ptr::null_mut(); gpus.len()];
        // SAFETY: `raw` has room for one communicator a device.
        unsafe { nccl::comm_init_all(raw.as_mut_ptr(), raw.len() as i32, ordinals.as_ptr()) }
            .map_err(nccl_error("creating the GPUs' communicators"))?;
        Ok(Arc::new(NcclComms {
            comms: raw.into_iter().map(RawComm).collect(),
        }))
    }
}

/// A GPU's place among the GPUs of a block solve.
pub struct NcclLink {
    comms: Arc<NcclComms>,
    rank: usize,
    /// Events around each transfer, and their total once resolved.
    timing: Mutex<(Vec<(CudaEvent, CudaEvent)>, f64)>,
}

impl NcclLink {
    pub fn new(comms: Arc<NcclComms>, rank: usize) -> Self {
        NcclLink {
            comms,
            rank,
            timing: Mutex::new((Vec::new(), 0.0)),
        }
    }

    fn comm(&self) -> nccl_sys::ncclComm_t {
        self.comms.comms[self.rank].0
    }
}

/// The layout of a reduction's partials: td's are double-doubles.
fn partial_layout<P: Precision>() -> Layout {
    match CudaBackend::layout::<P>() {
        Layout::TdSoa => Layout::Words(2),
        other => other,
    }
}

/// Elements `range` of an array of `len` in `layout`, as (byte offset, bytes) of each of its
/// arrays.
fn segments(layout: Layout, len: usize, range: Range<usize>) -> Vec<(u64, usize)> {
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
    fn base<P>(&self, v: &CudaVector<P>) -> u64 {
        let (ptr, _sync) = v.words.device_ptr(&self.stream);
        ptr
    }

    /// Run `transfers` between NCCL's group calls, timed by events on `stream`.
    fn nccl_group(
        &self,
        link: &NcclLink,
        stream: &CudaStream,
        transfers: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.ctx.new_event(timed).map_err(driver_error("an event"))?;
        let end = self.ctx.new_event(timed).map_err(driver_error("an event"))?;
        start
            .record(stream)
            .map_err(driver_error("recording an event"))?;
        nccl::group_start().map_err(nccl_error("starting a group"))?;
        let sent = transfers();
        nccl::group_end().map_err(nccl_error("ending a group"))?;
        sent?;
        end.record(stream)
            .map_err(driver_error("recording an event"))?;
        link.timing.lock().unwrap().0.push((start, end));
        Ok(())
    }

    /// Add the transfers' times to the link's total, once the stream has run them.
    fn resolve_timing(&self, link: &NcclLink) {
        let mut timing = link.timing.lock().unwrap();
        let (pending, total) = &mut *timing;
        for (start, end) in pending.drain(..) {
            *total += start.elapsed_ms(&end).map_or(0.0, f64::from) / 1e3;
        }
    }

    /// Every GPU's run of partials (this one's `mine[runs.first..]`, of `count`) broadcast
    /// into `whole` in rank order, on the stream.
    pub(super) fn gather_runs<P: Precision>(
        &self,
        link: &NcclLink,
        mine: &CudaVector<P>,
        count: usize,
        runs: &Runs,
        whole: &CudaVector<P>,
    ) -> Result<()> {
        let total = runs.total();
        assert!(whole.len >= total, "gather_runs: the whole list's length");
        let layout = partial_layout::<P>();
        let (src, dst) = (self.base(mine), self.base(whole));
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        self.nccl_group(link, &self.stream, || {
            for (root, run) in runs.runs.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
                let to = segments(layout, whole.len, run.clone());
                let from = (root == link.rank)
                    .then(|| segments(layout, count, runs.first..runs.first + run.len()));
                for (k, &(offset, bytes)) in to.iter().enumerate() {
                    let send = from.as_ref().map_or(std::ptr::null(), |f| (src + f[k].0) as *const _);
                    // SAFETY: both runs lie inside their buffers (`segments` of their lengths),
                    // alive until the stream has run the broadcast (whoever reads `whole`
                    // next waits for it on the stream).
                    unsafe {
                        nccl::broadcast(
                            send,
                            (dst + offset) as *mut _,
                            bytes,
                            nccl_sys::ncclDataType_t::ncclUint8,
                            root as i32,
                            link.comm(),
                            self.stream_ptr(),
                        )
                    }
                    .map_err(nccl_error("broadcasting partials"))?;
                }
            }
            Ok(())
        })
    }

    fn stream_ptr(&self) -> nccl_sys::cudaStream_t {
        self.stream.cu_stream() as _
    }

    /// [`BlockKernels::exchange`] on `stream` (the solve's, or a side stream the SpMV of the
    /// interior rows does not wait for).
    pub(super) fn exchange_on<P: Precision>(
        &self,
        link: &NcclLink,
        x: &mut CudaVector<P>,
        sends: &[(usize, Range<usize>)],
        receives: &[(usize, Range<usize>)],
        stream: &CudaStream,
    ) -> Result<()> {
        let layout = Self::layout::<P>();
        let base = self.base(x);
        let on = stream.cu_stream() as nccl_sys::cudaStream_t;
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        self.nccl_group(link, stream, || {
            for (to, range) in sends {
                for (offset, bytes) in segments(layout, x.len, range.clone()) {
                    // SAFETY: a run of `x`'s own rows, alive until the stream has sent it.
                    unsafe {
                        nccl::send(
                            (base + offset) as *const _,
                            bytes,
                            nccl_sys::ncclDataType_t::ncclUint8,
                            *to as i32,
                            link.comm(),
                            on,
                        )
                    }
                    .map_err(nccl_error("sending a halo"))?;
                }
            }
            for (from, range) in receives {
                for (offset, bytes) in segments(layout, x.len, range.clone()) {
                    // SAFETY: a run of `x`'s halo rows, which no kernel reads before the
                    // stream has received them.
                    unsafe {
                        nccl::recv(
                            (base + offset) as *mut _,
                            bytes,
                            nccl_sys::ncclDataType_t::ncclUint8,
                            *from as i32,
                            link.comm(),
                            on,
                        )
                    }
                    .map_err(nccl_error("receiving a halo"))?;
                }
            }
            Ok(())
        })
    }

    /// What the fixed order is measured against (`examples/nccl_allreduce_cost.rs`): `<x, y>`
    /// of this GPU's rows summed here, then `ncclAllReduce`'s sum of one double a GPU, as
    /// codes without the same-bits guarantee reduce (the result's bits depend on the GPU
    /// count). Same partials, final stage and transfer timing as [`BlockKernels::reduce`].
    pub fn plain_all_reduce_dot(
        &self,
        link: &NcclLink,
        x: &CudaVector<f64>,
        y: &CudaVector<f64>,
    ) -> Result<f64> {
        let (partials, count) = self.partials::<f64>(x.len)?;
        self.launch_dot_partial_op("dot", x, y, &partials, count)?;
        let mut sum = self.alloc_vector::<f64>(1)?;
        self.launch_final(FinalStage::Dot, &partials, count, &mut sum, 0)?;
        let at = self.base(&sum);
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        self.nccl_group(link, &self.stream, || {
            // SAFETY: one double in `sum`, alive until the stream has run the reduction
            // (`decode` below waits for it).
            unsafe {
                nccl::all_reduce(
                    at as *const _,
                    at as *mut _,
                    1,
                    nccl_sys::ncclDataType_t::ncclFloat64,
                    nccl_sys::ncclRedOp_t::ncclSum,
                    link.comm(),
                    self.stream_ptr(),
                )
            }
            .map_err(nccl_error("an all-reduce"))?;
            Ok(())
        })?;
        let value = self.decode(&sum)?.remove(0);
        self.resolve_timing(link);
        Ok(value)
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
    type Link = NcclLink;
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
        link: &NcclLink,
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
        link: &NcclLink,
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

    fn link_time(&self, link: &NcclLink) -> Duration {
        if self.stream.synchronize().is_ok() {
            self.resolve_timing(link);
        }
        Duration::from_secs_f64(link.timing.lock().unwrap().1)
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
        link: &NcclLink,
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
        link: &NcclLink,
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
