//! How a GPU of a block solve reaches the other ranks ([`GpuLink`]): NCCL between the GPUs of
//! one process (`--devices`), or the ranks' [`Communicator`] through host memory (MPI ranks).
//! Runs of elements are moved as bytes of each array of the layout (one for f64/dd/qd, the
//! `hi` doubles and `lo` ints of td, the limb arrays of mp).

use super::blocks::{partial_layout, segments};
use super::device::driver_error;
use super::launch::FinalStage;
use super::{CudaBackend, CudaVector};
use crate::distributed::{Communicator, Runs, bytes_of, words_of};
use crate::error::{Error, Result};
use crate::precision::Precision;
use cudarc::driver::{CudaEvent, CudaStream};
use cudarc::nccl::{result as nccl, sys as nccl_sys};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// A GPU's place among the ranks of a block solve, and how its words reach the others.
pub struct GpuLink {
    transport: Transport,
    /// Events around each NCCL transfer, and the total of the transfers' times once resolved
    /// (the host-staged ones are timed on the host and added at once).
    timing: Mutex<(Vec<(CudaEvent, CudaEvent)>, f64)>,
}

enum Transport {
    /// The GPUs of one process (`--devices`): NCCL, straight between device buffers, on the
    /// solve's stream.
    Nccl { comms: Arc<NcclComms>, rank: usize },
    /// Ranks of separate processes (MPI, a GPU each, or several sharing one): through host
    /// memory and the ranks' [`Communicator`], each transfer waiting for its stream. NCCL
    /// would need a communicator across processes (its unique id broadcast over MPI) and
    /// GPUs of its own for each rank; this path works for any placement, and a rank's time
    /// on it is reported as communication.
    Host(Arc<dyn Communicator>),
}

impl GpuLink {
    /// GPU `rank` of the communicators of one process.
    pub fn nccl(comms: Arc<NcclComms>, rank: usize) -> Self {
        Self::of(Transport::Nccl { comms, rank })
    }

    /// This process's GPU among the ranks of `comm`.
    pub fn host(comm: Arc<dyn Communicator>) -> Self {
        Self::of(Transport::Host(comm))
    }

    fn of(transport: Transport) -> Self {
        GpuLink {
            transport,
            timing: Mutex::new((Vec::new(), 0.0)),
        }
    }

    fn nccl_comm(&self) -> Result<nccl_sys::ncclComm_t> {
        match &self.transport {
            Transport::Nccl { comms, rank } => Ok(comms.comms[*rank].0),
            Transport::Host(_) => Err(Error::Backend {
                backend: "cuda",
                message: "this GPU reaches the other ranks through the host, not NCCL".into(),
            }),
        }
    }

    fn rank(&self) -> usize {
        match &self.transport {
            Transport::Nccl { rank, .. } => *rank,
            Transport::Host(comm) => comm.rank(),
        }
    }

    /// The transfers' time so far (those NCCL ran, once resolved).
    pub(super) fn total_seconds(&self) -> f64 {
        self.timing.lock().unwrap().1
    }

    fn add_host_time(&self, spent: Duration) {
        self.timing.lock().unwrap().1 += spent.as_secs_f64();
    }
}

impl CudaBackend {
    /// Every rank's run of partials (this one's `mine[runs.first..]`, of `count`) gathered
    /// into `whole` in rank order: by the stream, or (through the host) before this returns.
    pub(super) fn gather_runs<P: Precision>(
        &self,
        link: &GpuLink,
        mine: &CudaVector<P>,
        count: usize,
        runs: &Runs,
        whole: &CudaVector<P>,
    ) -> Result<()> {
        match &link.transport {
            Transport::Nccl { .. } => self.nccl_gather_runs(link, mine, count, runs, whole),
            Transport::Host(comm) => {
                let layout = partial_layout::<P>();
                let run = runs.runs[comm.rank()].clone();
                let from = segments(layout, count, runs.first..runs.first + run.len());
                self.synchronize_stream(&self.stream)?;
                let started = Instant::now();
                let mine = self.read_segments(self.base(mine), &from, &self.stream)?;
                let all = comm.all_gather(&words_of(&mine));
                for (root, run) in runs.runs.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
                    let to = segments(layout, whole.len, run.clone());
                    let bytes = bytes_of(&all[root], to.iter().map(|s| s.1).sum());
                    self.write_segments(self.base(whole), &to, &bytes, &self.stream)?;
                }
                link.add_host_time(started.elapsed());
                Ok(())
            }
        }
    }

    /// [`BlockKernels::exchange`](crate::distributed::BlockKernels::exchange) on `stream` (the
    /// solve's, or a side stream the SpMV of the interior rows does not wait for): by the
    /// stream, or (through the host) before this returns.
    pub(super) fn exchange_on<P: Precision>(
        &self,
        link: &GpuLink,
        x: &mut CudaVector<P>,
        sends: &[(usize, Range<usize>)],
        receives: &[(usize, Range<usize>)],
        stream: &CudaStream,
    ) -> Result<()> {
        let Transport::Host(comm) = &link.transport else {
            return self.nccl_exchange(link, x, sends, receives, stream);
        };
        let layout = Self::layout::<P>();
        let (base, len) = (self.base(x), x.len);
        self.synchronize_stream(stream)?;
        let started = Instant::now();
        let sends = sends
            .iter()
            .map(|(to, range)| {
                let bytes = self.read_segments(base, &segments(layout, len, range.clone()), stream)?;
                Ok((*to, words_of(&bytes)))
            })
            .collect::<Result<Vec<_>>>()?;
        let arriving: Vec<_> = receives
            .iter()
            .map(|(_, range)| segments(layout, len, range.clone()))
            .collect();
        let mut got: Vec<(usize, Vec<u64>)> = receives
            .iter()
            .zip(&arriving)
            .map(|((from, _), segs)| (*from, vec![0; segs.iter().map(|s| s.1).sum::<usize>().div_ceil(8)]))
            .collect();
        comm.exchange(&sends, &mut got, &mut || ());
        for ((_, words), segs) in got.iter().zip(&arriving) {
            let bytes = bytes_of(words, segs.iter().map(|s| s.1).sum());
            self.write_segments(base, segs, &bytes, stream)?;
        }
        link.add_host_time(started.elapsed());
        Ok(())
    }

    fn synchronize_stream(&self, stream: &CudaStream) -> Result<()> {
        stream
            .synchronize()
            .map_err(driver_error("waiting for the GPU before a transfer"))
    }

    /// The bytes of `segs` (offsets from `base`), one after the other.
    fn read_segments(&self, base: u64, segs: &[(u64, usize)], stream: &CudaStream) -> Result<Vec<u8>> {
        let mut out = vec![0u8; segs.iter().map(|s| s.1).sum()];
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        let mut at = 0;
        for &(offset, bytes) in segs {
            // SAFETY: a run inside the vector at `base` (`segments` of its length); `out` lives
            // until the stream has copied it (synchronized below).
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut out[at..at + bytes],
                    base + offset,
                    stream.cu_stream(),
                )
            }
            .map_err(driver_error("copying a run to the host"))?;
            at += bytes;
        }
        self.synchronize_stream(stream)?;
        Ok(out)
    }

    /// `bytes` written to `segs` (offsets from `base`) in turn.
    fn write_segments(
        &self,
        base: u64,
        segs: &[(u64, usize)],
        bytes: &[u8],
        stream: &CudaStream,
    ) -> Result<()> {
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        let mut at = 0;
        for &(offset, n) in segs {
            // SAFETY: a run inside the vector at `base`; `bytes` lives until the stream has
            // copied it (synchronized below).
            unsafe {
                cudarc::driver::result::memcpy_htod_async(base + offset, &bytes[at..at + n], stream.cu_stream())
            }
            .map_err(driver_error("copying a run to the GPU"))?;
            at += n;
        }
        self.synchronize_stream(stream)
    }

    /// Run `transfers` between NCCL's group calls, timed by events on `stream`.
    fn nccl_group(
        &self,
        link: &GpuLink,
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
    pub(super) fn resolve_timing(&self, link: &GpuLink) {
        let mut timing = link.timing.lock().unwrap();
        let (pending, total) = &mut *timing;
        for (start, end) in pending.drain(..) {
            *total += start.elapsed_ms(&end).map_or(0.0, f64::from) / 1e3;
        }
    }

    /// [`gather_runs`](Self::gather_runs) by NCCL broadcasts, on the stream.
    fn nccl_gather_runs<P: Precision>(
        &self,
        link: &GpuLink,
        mine: &CudaVector<P>,
        count: usize,
        runs: &Runs,
        whole: &CudaVector<P>,
    ) -> Result<()> {
        let total = runs.total();
        assert!(whole.len >= total, "gather_runs: the whole list's length");
        let layout = partial_layout::<P>();
        let (src, dst) = (self.base(mine), self.base(whole));
        let comm = link.nccl_comm()?;
        self.ctx.bind_to_thread().map_err(driver_error("binding"))?;
        self.nccl_group(link, &self.stream, || {
            for (root, run) in runs.runs.iter().enumerate().filter(|(_, r)| !r.is_empty()) {
                let to = segments(layout, whole.len, run.clone());
                let from = (root == link.rank())
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
                            comm,
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

    /// [`exchange_on`](Self::exchange_on) by NCCL sends and receives.
    fn nccl_exchange<P: Precision>(
        &self,
        link: &GpuLink,
        x: &mut CudaVector<P>,
        sends: &[(usize, Range<usize>)],
        receives: &[(usize, Range<usize>)],
        stream: &CudaStream,
    ) -> Result<()> {
        let layout = Self::layout::<P>();
        let base = self.base(x);
        let on = stream.cu_stream() as nccl_sys::cudaStream_t;
        let comm = link.nccl_comm()?;
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
                            comm,
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
                            comm,
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
        link: &GpuLink,
        x: &CudaVector<f64>,
        y: &CudaVector<f64>,
    ) -> Result<f64> {
        let (partials, count) = self.partials::<f64>(x.len)?;
        self.launch_dot_partial_op("dot", x, y, &partials, count)?;
        let mut sum = self.alloc_vector::<f64>(1)?;
        self.launch_final(FinalStage::Dot, &partials, count, &mut sum, 0)?;
        let at = self.base(&sum);
        let comm = link.nccl_comm()?;
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
                    comm,
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
}
