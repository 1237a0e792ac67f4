//! ILU(0) triangular solves on the GPU (kernels/ilu0.cu), bit for bit the CPU's
//! (src/backend/cpu/trisolve.rs): the same per-row arithmetic whatever the schedule.
//!
//! Each triangle is stored in the order of its levels: position `p` holds row `row[p]`, with its
//! off-diagonal entries in the order of the arithmetic (L: increasing column, U: decreasing) and,
//! for each entry, the position of the row it reads. Consecutive threads then take consecutive
//! rows of one level, reading their entries as the CSR SpMV does, and every dependency has a
//! smaller position than its reader, which the synchronization-free schedule needs.

use super::device::{alloc_words, driver_error};
use super::ilu_host::HostIlu;
use crate::backend::cpu::CpuIlu;
use super::{CudaBackend, CudaVector, PushVector};
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::precond::ilu0::{Ilu0Factors, OrderedTriangle};
use cudarc::driver::{CudaEvent, CudaSlice, LaunchArgs, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// How the rows of a triangle are scheduled on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IluSchedule {
    /// The default: `OneBlock` (with [`ONE_BLOCK_THREADS`] threads) where the factors' results
    /// fit in one block's shared memory, `Partitioned` above. On small factors the parts are a
    /// few rows each and every level waits on another block's part: one block is 1.4x to 8.5x
    /// faster on 9 of the 10 small factors measured (bcsstk13: 0.93 ms against 7.95; Pd the
    /// exception, 38 us against 35), and the fastest device schedule on 6 of the 8 where the
    /// sync-free kernels were timed too (benches/results/ilu0-h200.md, "Small factors").
    BySize,
    /// One launch per triangle on the partitioned order (kernels/ilu0_parts.cu): one part of
    /// consecutive rows per block (`SMs * threads_per_sm / block` parts and blocks), solved
    /// level by level with barriers; only dependencies on earlier parts are polled. The
    /// fastest of these schedules on poisson3d:200, as it does not pay a hop between SMs at
    /// every level (benches/results/ilu0-h200.md). Blocks of at most 512 threads.
    Partitioned,
    /// One launch per triangle over the level order; a row polls each dependency's
    /// {value, generation} pair.
    SyncFree,
    /// One launch per triangle; a row waits on a ready flag per group of 32 rows (a warp's),
    /// or on the row's own pair within its warp: fewer polls, but a hop costs a fence and one
    /// more round trip, which measured slower.
    SyncFreeWarps,
    /// As `SyncFree`, polling and publishing with relaxed GPU-scope accesses instead of
    /// volatile (system-scope) ones.
    SyncFreeGpuScope,
    /// One launch per level; no waiting.
    Levels,
    /// Both triangles in one launch of one block (kernels/ilu0_block.cu), every result
    /// published in shared memory: a level costs a poll there instead of a hop between SMs.
    /// For factors whose results fit in a block's shared memory ([`one_block_fits`]); others
    /// fall back to `Partitioned`.
    OneBlock,
}

/// Dynamic shared memory of the one-block solve: a double and a flag byte a row.
fn one_block_shared_bytes(n: usize) -> usize {
    9 * n
}

/// Whether the one-block solve can hold `n` rows' results, given the device's opt-in shared
/// memory per block.
pub fn one_block_fits(n: usize, shared_optin: usize) -> bool {
    one_block_shared_bytes(n) <= shared_optin
}

/// Threads per block of the partitioned solve: 384 rows of a level at once, about
/// the widest level of a part of poisson3d:200, and no slower than the other block sizes the
/// bench sweeps (benches/results/ilu0-h200.md).
pub const DEFAULT_BLOCK: u32 = 384;
/// Threads per SM the grid is sized for: one block, so one part, per SM. (Sync-free: resident
/// threads per SM; fewer poll less, more look further ahead; the sweep in
/// benches/results/ilu0-h200.md found its best at 128 x 3 per SM.)
pub const DEFAULT_THREADS_PER_SM: u32 = 384;

/// Where ILU(0) is applied. On small matrices the triangular solves are a chain of levels,
/// each a step the kernels pay microseconds for, where the host solves a whole triangle in
/// less (`benches/results/gpu-study.md`): there the vector goes to the host and back. The
/// same arithmetic either way (the host runs the CPU backend's solve, the kernels' twin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IluPlacement {
    /// The host where [`crate::backend::ilu_application_seconds`] says it is faster.
    Measured,
    Device,
    Host,
}

/// How the triangular solves are launched; every choice gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IluConfig {
    pub placement: IluPlacement,
    /// The kernels' schedule, where they apply it.
    pub schedule: IluSchedule,
    /// Threads per block: rows per chunk (sync-free), per level step (partitioned) or per
    /// block (levels).
    pub block: u32,
    /// Threads per SM the grid is sized for. Partitioned: `SMs * threads_per_sm / block`
    /// parts, one block each. Sync-free: resident threads (it limits how far ahead of the
    /// finished rows the solve runs, hence how many threads poll).
    pub threads_per_sm: u32,
    /// Sync-free: nanoseconds a warp that made no progress sleeps before polling again.
    pub sleep_ns: i32,
    /// Partitioned: a dependency on another block's part counts as this many of a block's
    /// level steps when the parts are ordered (`Ilu0Factors::lower_partitioned`).
    pub hop: u32,
}

/// Threads of the one-block solve that [`IluSchedule::BySize`] picks: 256 was faster than 1024
/// on 9 of the 10 small factors measured (fewer threads polling), and than 128 where levels
/// are wide (Pd) (benches/results/ilu0-h200.md, "Small factors").
pub const ONE_BLOCK_THREADS: u32 = 256;

/// The default `IluConfig::hop` (2 and 8 measured the same with one part per SM; with more
/// parts 2 was faster).
pub const DEFAULT_HOP: u32 = 2;

impl IluConfig {
    /// `BySize` made concrete for `n` rows on a device with `shared_optin` bytes of shared
    /// memory a block; a `OneBlock` that does not fit made `Partitioned`; others as they are.
    fn resolved(self, n: usize, shared_optin: usize) -> IluConfig {
        let fits = one_block_fits(n, shared_optin);
        match self.schedule {
            IluSchedule::BySize if fits => IluConfig {
                schedule: IluSchedule::OneBlock,
                block: ONE_BLOCK_THREADS,
                sleep_ns: 0,
                ..self
            },
            IluSchedule::BySize => IluConfig {
                schedule: IluSchedule::Partitioned,
                ..self
            },
            IluSchedule::OneBlock if !fits => IluConfig {
                schedule: IluSchedule::Partitioned,
                block: DEFAULT_BLOCK,
                ..self
            },
            _ => self,
        }
    }

    /// The parts of the partitioned order this setting solves on (one per resident block), or
    /// `None` for the level order.
    fn parts(&self, sm_count: u32) -> Option<(usize, u32)> {
        (self.schedule == IluSchedule::Partitioned).then(|| {
            let threads = sm_count as usize * self.threads_per_sm as usize;
            ((threads / self.block as usize).max(1), self.hop)
        })
    }
}

impl Default for IluConfig {
    fn default() -> Self {
        IluConfig {
            placement: IluPlacement::Measured,
            schedule: IluSchedule::BySize,
            block: DEFAULT_BLOCK,
            threads_per_sm: DEFAULT_THREADS_PER_SM,
            sleep_ns: 0,
            hop: DEFAULT_HOP,
        }
    }
}

/// One triangle in level order (or partitioned) on the device.
struct Triangle {
    row: CudaSlice<i32>,
    ptr: CudaSlice<i32>,
    dep: CudaSlice<i32>,
    val: CudaSlice<f64>,
    /// Level boundaries in positions (host), for the level-scheduled launches.
    levels: Vec<usize>,
    /// The same on the device, and each part's first level (partitioned kernels).
    seg_ptr: CudaSlice<i32>,
    part_seg: CudaSlice<i32>,
    parts: i32,
    /// Partitioned: each position's first `HEAD` entries (dependency -1 past the row's end).
    hdep: CudaSlice<i32>,
    hval: CudaSlice<f64>,
}

impl Triangle {
    /// The partitioned kernels' first arguments: nparts, part_seg, seg_ptr, ptr, dep, val,
    /// hdep, hval.
    fn push_parts<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        args.arg(&self.parts)
            .arg(&self.part_seg)
            .arg(&self.seg_ptr)
            .arg(&self.ptr)
            .arg(&self.dep)
            .arg(&self.val)
            .arg(&self.hdep)
            .arg(&self.hval);
    }
}

/// Row numbers or positions as the kernels' 32-bit indices (`ilu_upload` checked they fit).
fn i32s(v: &[u32]) -> Vec<i32> {
    v.iter().map(|&x| x as i32).collect()
}

/// Entries per position in `Triangle::hdep`/`hval` (kernels/common/ilu.cuh, `ILU_CHUNK`).
const HEAD: usize = 4;

/// Both triangles in one order on the device, with the maps between them.
struct DeviceOrder {
    /// `None`: level order; `Some((q, hop))`: partitioned into `q` parts with that hop weight.
    parts: Option<(usize, u32)>,
    lower: Triangle,
    upper: Triangle,
    /// `u_ii` by backward position.
    diag: CudaSlice<f64>,
    /// Forward position of each backward position's row.
    src: CudaSlice<i32>,
    /// Partitioned: backward position of each forward position's row (the inverse of `src`).
    up: CudaSlice<i32>,
}

/// ILU(0) factors on the GPU with the work space and synchronization state of an application.
pub struct CudaIlu {
    factors: Arc<Ilu0Factors>,
    n: usize,
    /// The order the last solve used (uploaded again when the schedule wants another).
    order: DeviceOrder,
    /// Forward results by forward position, backward results by backward position, each a
    /// pair {value, generation that wrote it} (2 n doubles).
    y: CudaSlice<f64>,
    x: CudaSlice<f64>,
    /// Partitioned: the forward right-hand side by forward position and the backward one by
    /// backward position (n doubles each), so a row's loads are in the order of the rows.
    rp: CudaSlice<f64>,
    yu: CudaSlice<f64>,
    /// Ready flags of groups of 32 positions (ceil(n / 32) words), shared by both triangles.
    wflag: CudaSlice<u64>,
    /// The next forward solve publishes `generation`, its backward solve `generation + 1`.
    generation: u64,
    /// Blocks take their chunks from this counter; `tickets` is how many were taken so far.
    ticket: CudaSlice<u64>,
    tickets: u64,
    sm_count: u32,
    /// The device's opt-in shared memory per block, in bytes (the one-block solve's limit).
    shared_optin: usize,
    config: IluConfig,
    /// The host's solve, where the placement (resolved at upload) is the host.
    host: Option<HostIlu>,
    /// Events around each application not read yet, and the seconds of those read but not
    /// reported yet (`Backend::ilu_seconds`).
    timing: Vec<(CudaEvent, CudaEvent)>,
    timed: f64,
    /// Pairs already read, recorded again by later applications: creating and destroying
    /// events each application cost solves beside others on the GPU (`solver batch`) several
    /// times the application itself (`benches/results/gpu-study.md`).
    spare: Vec<(CudaEvent, CudaEvent)>,
    /// Nanoseconds solver kernels that apply the factors themselves spent in them
    /// (kernels/bicgstab_ilu_block.cu), allocated by the first.
    in_kernel_ns: Option<CudaSlice<u64>>,
}

/// Applications whose events are kept before the oldest half are read (long done by then).
const TIMING_EVENTS: usize = 256;

impl CudaIlu {
    pub fn factors(&self) -> &Arc<Ilu0Factors> {
        &self.factors
    }
    pub fn config(&self) -> IluConfig {
        self.config
    }
    /// Whether [`IluSchedule::OneBlock`] can solve these factors on this device.
    pub fn fits_one_block(&self) -> bool {
        one_block_fits(self.n, self.shared_optin)
    }
    /// Choose how the solves are launched (benchmarks and tests; every choice gives the same
    /// bits).
    pub fn set_config(&mut self, config: IluConfig) {
        let config = config.resolved(self.n, self.shared_optin);
        let most = if config.schedule == IluSchedule::Partitioned {
            512
        } else {
            1024
        };
        assert!(
            (32..=most).contains(&config.block) && config.block.is_multiple_of(32),
            "block size must be a multiple of 32 up to {most}"
        );
        self.config = config;
        let host = match config.placement {
            IluPlacement::Measured => host_is_faster(&self.factors),
            IluPlacement::Device => false,
            IluPlacement::Host => true,
        };
        self.host = match (host, self.host.take()) {
            (true, Some(h)) => Some(h),
            (true, None) => Some(HostIlu::new(CpuIlu::new(self.factors.clone()))),
            (false, _) => None,
        };
    }
    /// The schedule and block size, other settings at their defaults.
    pub fn set_schedule(&mut self, schedule: IluSchedule, block: u32) {
        self.set_config(IluConfig {
            placement: IluPlacement::Device,
            schedule,
            block,
            ..IluConfig::default()
        });
    }
}

/// [`IluPlacement::Measured`]'s choice for these factors.
fn host_is_faster(f: &Ilu0Factors) -> bool {
    crate::backend::ilu_application_seconds(f.n(), f.nnz(), f.level_count()).host_is_faster()
}

impl CudaBackend {
    /// The launch setting that ILU(0) factors uploaded from now on start with.
    pub fn set_ilu_config(&self, config: IluConfig) {
        *self.ilu_config.lock().unwrap_or_else(|e| e.into_inner()) = config;
    }
    pub fn ilu_config(&self) -> IluConfig {
        *self.ilu_config.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Set a vector to zeros (benchmarks clear outputs before checking them).
    pub fn memset_zero<P: Precision>(&self, v: &mut CudaVector<P>) -> Result<()> {
        self.stream
            .memset_zeros(&mut v.words)
            .map_err(driver_error("clearing a vector on the GPU"))
    }

    fn upload_i32(&self, host: &[i32], what: &str) -> Result<CudaSlice<i32>> {
        let host: &[i32] = if host.is_empty() { &[0] } else { host };
        self.stream
            .clone_htod(host)
            .map_err(driver_error(&format!("copying ILU(0) {what} to the GPU")))
    }

    fn upload_f64(&self, host: &[f64], what: &str) -> Result<CudaSlice<f64>> {
        let host: &[f64] = if host.is_empty() { &[0.0] } else { host };
        self.stream
            .clone_htod(host)
            .map_err(driver_error(&format!("copying ILU(0) {what} to the GPU")))
    }

    /// A level-ordered triangle with 32-bit indices (the caller checked that they fit).
    fn upload_triangle(&self, t: &OrderedTriangle, heads: bool, what: &str) -> Result<Triangle> {
        let usizes = |v: &[usize]| v.iter().map(|&x| x as i32).collect::<Vec<i32>>();
        let n = if heads { t.rows.len() } else { 0 };
        let (mut hdep, mut hval) = (vec![-1i32; HEAD * n], vec![0.0f64; HEAD * n]);
        for p in 0..n {
            for (c, k) in (t.ptr[p]..t.ptr[p + 1]).take(HEAD).enumerate() {
                hdep[HEAD * p + c] = t.deps[k] as i32;
                hval[HEAD * p + c] = t.vals[k];
            }
        }
        Ok(Triangle {
            hdep: self.upload_i32(&hdep, what)?,
            hval: self.upload_f64(&hval, what)?,
            row: self.upload_i32(&i32s(&t.rows), what)?,
            ptr: self.upload_i32(&usizes(&t.ptr), what)?,
            dep: self.upload_i32(&i32s(&t.deps), what)?,
            val: self.upload_f64(&t.vals, what)?,
            levels: t.level_ptr.clone(),
            seg_ptr: self.upload_i32(&usizes(&t.level_ptr), what)?,
            part_seg: self.upload_i32(&usizes(&t.part_ptr), what)?,
            parts: (t.part_ptr.len() - 1) as i32,
        })
    }

    /// Both triangles in level order (`parts` = `None`) or partitioned.
    fn upload_order(&self, f: &Ilu0Factors, parts: Option<(usize, u32)>) -> Result<DeviceOrder> {
        let (lower, upper) = match parts {
            None => (f.lower_ordered(), f.upper_ordered()),
            Some((q, hop)) => (f.lower_partitioned(q, hop), f.upper_partitioned(q, hop)),
        };
        let src = i32s(&upper.positions_in(&lower));
        // only the partitioned forward solve writes the backward right-hand side
        let up = if parts.is_some() {
            i32s(&lower.positions_in(&upper))
        } else {
            vec![]
        };
        Ok(DeviceOrder {
            up: self.upload_i32(&up, "row map")?,
            parts,
            lower: self.upload_triangle(&lower, parts.is_some(), "L")?,
            upper: self.upload_triangle(&upper, parts.is_some(), "U")?,
            diag: self.upload_f64(&upper.diag, "diagonal")?,
            src: self.upload_i32(&src, "row map")?,
        })
    }

    pub(super) fn ilu_upload(&self, factors: &Arc<Ilu0Factors>) -> Result<CudaIlu> {
        let f = &**factors;
        let n = f.n();
        if f.nnz() > i32::MAX as usize || n > i32::MAX as usize {
            return Err(Error::Backend {
                backend: "cuda",
                message: format!(
                    "ILU(0) with {} nonzeros exceeds the GPU kernels' 32-bit indices",
                    f.nnz()
                ),
            });
        }
        let sm_count = self.attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "reading the SM count",
        )? as u32;
        let ticket = self
            .stream
            .alloc_zeros::<u64>(1)
            .map_err(driver_error("allocating ILU(0) ticket counter"))?;
        let sm_count = sm_count.max(1);
        let shared_optin = self.attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            "reading the shared memory per block",
        )?;
        let config = self.ilu_config().resolved(n, shared_optin);
        let mut ilu = CudaIlu {
            factors: Arc::clone(factors),
            n,
            order: self.upload_order(f, config.parts(sm_count))?,
            wflag: self
                .stream
                .alloc_zeros::<u64>(n.div_ceil(32).max(1))
                .map_err(driver_error("allocating ILU(0) flags"))?,
            y: alloc_words(&self.stream, 2 * n)?,
            x: alloc_words(&self.stream, 2 * n)?,
            rp: alloc_words(&self.stream, n)?,
            yu: alloc_words(&self.stream, n)?,
            generation: 1,
            ticket,
            tickets: 0,
            sm_count,
            shared_optin,
            config,
            host: None,
            timing: Vec::new(),
            timed: 0.0,
            spare: Vec::new(),
            in_kernel_ns: None,
        };
        ilu.set_config(config);
        Ok(ilu)
    }

    /// `z <- U^{-1} L^{-1} fl64(r)`, widened to `Z`, between two events on the stream.
    pub(super) fn ilu_solve<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        let (start, end) = match ilu.spare.pop() {
            Some(pair) => pair,
            None => {
                let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
                let event = || self.ctx.new_event(timed).map_err(driver_error("an event"));
                (event()?, event()?)
            }
        };
        let record = |e: &CudaEvent| {
            e.record(&self.stream)
                .map_err(driver_error("recording an event"))
        };
        record(&start)?;
        self.ilu_solve_untimed(ilu, r, z)?;
        record(&end)?;
        ilu.timing.push((start, end));
        if ilu.timing.len() >= TIMING_EVENTS {
            let oldest: Vec<_> = ilu.timing.drain(..TIMING_EVENTS / 2).collect();
            ilu.timed += Self::read_events(&oldest)?;
            ilu.spare.extend(oldest);
        }
        Ok(())
    }

    /// The seconds between each pair of events, once the second has happened.
    fn read_events(pairs: &[(CudaEvent, CudaEvent)]) -> Result<f64> {
        let mut seconds = 0.0;
        for (start, end) in pairs {
            end.synchronize()
                .map_err(driver_error("waiting for an event"))?;
            let ms = start
                .elapsed_ms(end)
                .map_err(driver_error("reading an event"))?;
            seconds += f64::from(ms) / 1e3;
        }
        Ok(seconds)
    }

    /// Seconds of the applications since the last call (`Backend::ilu_seconds`).
    pub(super) fn ilu_collect_seconds(&self, ilu: &mut CudaIlu) -> Result<f64> {
        let pending = std::mem::take(&mut ilu.timing);
        let mut seconds = ilu.timed + Self::read_events(&pending)?;
        ilu.spare.extend(pending);
        ilu.timed = 0.0;
        if let Some(ns) = ilu.in_kernel_ns.as_mut() {
            let read = self
                .stream
                .clone_dtoh(ns)
                .map_err(driver_error("reading ILU(0)'s time in a solver kernel"))?;
            seconds += read[0] as f64 * 1e-9;
            self.stream
                .memset_zeros(ns)
                .map_err(driver_error("clearing ILU(0)'s time in a solver kernel"))?;
        }
        Ok(seconds)
    }

    /// Whether a solver kernel of one block can apply `ilu` itself, beside `static_shared`
    /// bytes of its own shared memory (kernels/bicgstab_ilu_block.cu, kernels/cg_ilu_block.cu):
    /// the one-block schedule, not placed on the host by the caller's choice, the results fit,
    /// and `choose` (of rows, entries and levels) takes it. If it can, the dynamic shared memory the kernel may be
    /// allowed (the device's opt-in less its own); the factors are put in level order for it.
    pub(super) fn ilu_in_block(
        &self,
        ilu: &mut CudaIlu,
        static_shared: usize,
        choose: fn(usize, usize, usize) -> bool,
    ) -> Result<Option<usize>> {
        let f = &*ilu.factors;
        let faster = choose(f.n(), f.nnz(), f.level_count());
        let fits = ilu.n > 0 && one_block_shared_bytes(ilu.n) + static_shared <= ilu.shared_optin;
        let wanted = ilu.config.schedule == IluSchedule::OneBlock
            && ilu.config.placement != IluPlacement::Host;
        if !(faster && fits && wanted) {
            return Ok(None);
        }
        if ilu.order.parts.is_some() {
            ilu.order = self.upload_order(&ilu.factors, None)?;
        }
        Ok(Some(ilu.shared_optin - static_shared))
    }

    /// Push the factors' arguments of a solver kernel that applies them itself
    /// (kernels/bicgstab_ilu_block.cu's `bgi_factors`, then its time counter): both triangles
    /// in level order, `u_ii`, the row map, the forward results' space, the sleep, and the
    /// nanoseconds spent in them. Returns the dynamic shared memory the solves need. For
    /// factors [`Self::ilu_in_block`] accepted.
    pub(super) fn push_ilu_in_block<'a>(
        &self,
        ilu: &'a mut CudaIlu,
        args: &mut LaunchArgs<'a>,
    ) -> Result<u32> {
        if ilu.in_kernel_ns.is_none() {
            let ns = self
                .stream
                .alloc_zeros::<u64>(1)
                .map_err(driver_error("allocating ILU(0)'s time counter"))?;
            ilu.in_kernel_ns = Some(ns);
        }
        let shared = one_block_shared_bytes(ilu.n) as u32;
        let CudaIlu {
            order,
            rp,
            config,
            in_kernel_ns,
            ..
        } = ilu;
        let (l, u) = (&order.lower, &order.upper);
        args.arg(&l.row).arg(&l.ptr).arg(&l.dep).arg(&l.val);
        args.arg(&u.row).arg(&u.ptr).arg(&u.dep).arg(&u.val);
        args.arg(&order.diag).arg(&order.src).arg(rp);
        args.arg(&config.sleep_ns);
        args.arg(in_kernel_ns.as_mut().expect("allocated above"));
        Ok(shared)
    }

    fn ilu_solve_untimed<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        assert!(
            r.len == ilu.n && z.len == ilu.n,
            "ilu_apply: lengths {} and {} for {} rows",
            r.len,
            z.len,
            ilu.n
        );
        if ilu.n == 0 {
            return Ok(());
        }
        if ilu.host.is_none() && (P::KERNEL_SUFFIX == "mp" || Z::KERNEL_SUFFIX == "mp") {
            // no mp kernels for the triangular solves: the CPU's solve, between two copies
            ilu.host = Some(HostIlu::new(CpuIlu::new(ilu.factors.clone())));
        }
        if let Some(host) = ilu.host.as_mut() {
            return self.ilu_solve_on_host(host, r, z);
        }
        let parts = ilu.config.parts(ilu.sm_count);
        if ilu.order.parts != parts {
            ilu.order = self.upload_order(&ilu.factors, parts)?;
        }
        if parts.is_some() {
            self.ilu_solve_parts(ilu, r, z)
        } else if ilu.config.schedule == IluSchedule::OneBlock {
            self.ilu_solve_block(ilu, r, z)
        } else {
            self.ilu_solve_levels(ilu, r, z)
        }
    }

    /// The partitioned schedule: a gather of `r` into the forward order, then one launch per
    /// triangle, a block per part.
    fn ilu_solve_parts<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        let (suffix, z_suffix) = (Self::suffix::<P>()?, Self::suffix::<Z>()?);
        let gather_name = format!("ilu0p_gather_{suffix}");
        let upper_name = format!("ilu0p_upper_{z_suffix}");
        let gather_f = self.kernels.function(&gather_name)?;
        let lower_f = self.kernels.function("ilu0p_lower")?;
        let upper_f = self.kernels.function(&upper_name)?;
        let (gen_lower, gen_upper) = (ilu.generation, ilu.generation + 1);
        ilu.generation += 2;
        let order = &ilu.order;
        let n = ilu.n as i32;
        let mut args = self.stream.launch_builder(&gather_f);
        args.arg(&n).arg(&order.lower.row).vec(r).arg(&mut ilu.rp);
        // SAFETY: ilu0p_gather_{p}(int n, const int* row, const T* r, double* rp) in
        // kernels/ilu0_parts.cu: row holds n rows < n, r n elements of T, rp n doubles.
        unsafe { args.launch(LaunchConfig::for_num_elems(n as u32)) }
            .map_err(driver_error(&gather_name))?;
        let launch = |parts: i32| LaunchConfig {
            grid_dim: (parts as u32, 1, 1),
            block_dim: (ilu.config.block, 1, 1),
            shared_mem_bytes: 0,
        };
        let t = &order.lower;
        let base = ilu.tickets;
        let mut args = self.stream.launch_builder(&lower_f);
        t.push_parts(&mut args);
        args.arg(&ilu.rp)
            .arg(&mut ilu.y)
            .arg(&mut ilu.yu)
            .arg(&order.up)
            .arg(&gen_lower)
            .arg(&mut ilu.ticket)
            .arg(&base);
        // SAFETY: ilu0p_lower(int nparts, const int* part_seg, const int* seg_ptr,
        // const int* ptr, const int* dep, const double* val, const int4* hdep,
        // const double2* hval, const double* rp, double* y, double* yu, const int* up,
        // unsigned long long gen, unsigned long long* ticket, unsigned long long ticket_base)
        // in kernels/ilu0_parts.cu: part_seg has nparts + 1 entries indexing seg_ptr, whose
        // entries are positions <= n; ptr/dep/val describe n rows (dep entries are positions
        // < n), hdep/hval 4 n entries (positions < n or -1), rp and yu hold n doubles, y 2 n,
        // up n positions < n. The blocks take tickets base.. (nparts + blocks of them) and a
        // part waits only on parts taken before it, by blocks that are running.
        unsafe { args.launch(launch(t.parts)) }.map_err(driver_error("ilu0p_lower"))?;
        ilu.tickets += 2 * t.parts as u64;
        let t = &order.upper;
        let base = ilu.tickets;
        let mut args = self.stream.launch_builder(&upper_f);
        t.push_parts(&mut args);
        args.arg(&t.row)
            .arg(&order.diag)
            .arg(&ilu.yu)
            .arg(&mut ilu.x)
            .vec(z)
            .arg(&gen_upper)
            .arg(&mut ilu.ticket)
            .arg(&base);
        // SAFETY: ilu0p_upper_{p}(nparts, part_seg, seg_ptr, ptr, dep, val, hdep, hval,
        // const int* row, const double* diag, const double* yu, double* x, T* z, gen, ticket,
        // ticket_base): as the forward launch, with row/diag/yu n entries (rows < n), x 2 n
        // doubles and z n elements of T.
        unsafe { args.launch(launch(t.parts)) }.map_err(driver_error(&upper_name))?;
        ilu.tickets += 2 * t.parts as u64;
        Ok(())
    }

    /// The one-block solve: both triangles in one launch (kernels/ilu0_block.cu).
    fn ilu_solve_block<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        let name = format!("ilu0b_{}_{}", Self::suffix::<P>()?, Self::suffix::<Z>()?);
        let f = self.kernels.function_opted_in(&name, ilu.shared_optin)?;
        let shared = one_block_shared_bytes(ilu.n) as u32;
        let threads = (ilu.n.div_ceil(32) * 32).min(ilu.config.block as usize) as u32;
        let sleep = ilu.config.sleep_ns;
        let n = ilu.n as i32;
        let (order, l, u) = (&ilu.order, &ilu.order.lower, &ilu.order.upper);
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n)
            .arg(&l.row)
            .arg(&l.ptr)
            .arg(&l.dep)
            .arg(&l.val)
            .arg(&u.row)
            .arg(&u.ptr)
            .arg(&u.dep)
            .arg(&u.val)
            .arg(&order.diag)
            .arg(&order.src)
            .vec(r)
            .arg(&mut ilu.rp)
            .vec(z)
            .arg(&sleep);
        // SAFETY: ilu0b_{p}_{z}(int n, const int* lrow, const int* lptr, const int* ldep,
        // const double* lval, const int* urow, const int* uptr, const int* udep,
        // const double* uval, const double* diag, const int* src, const T* r, double* yg, Z* z,
        // int sleep_ns) in kernels/ilu0_block.cu: both triangles in level order describe n rows
        // (ptr n + 1 entries, dep entries positions < n, rows < n), diag and src n entries (src
        // positions < n), r and z n elements, yg (rp) n doubles; one block with 9 n bytes of
        // dynamic shared memory, which `set_config` checked the device allows.
        unsafe {
            args.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: shared,
            })
        }
        .map_err(driver_error(&name))?;
        Ok(())
    }

    /// The level-order schedules: one launch per triangle (sync-free) or per level.
    fn ilu_solve_levels<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        let (suffix, z_suffix) = (Self::suffix::<P>()?, Self::suffix::<Z>()?);
        let lower_name = format!("ilu0_lower_{suffix}");
        let upper_name = format!("ilu0_upper_{z_suffix}");
        let lower_f = self.kernels.function(&lower_name)?;
        let upper_f = self.kernels.function(&upper_name)?;
        let generation = ilu.generation;
        let gen_upper = generation + 1;
        ilu.generation += 2;
        let cfg = ilu.config;
        // Ranges of positions per launch: the whole triangle, or level after level.
        let ranges = |levels: &[usize]| -> Vec<(usize, usize)> {
            match cfg.schedule {
                IluSchedule::BySize
                | IluSchedule::OneBlock
                | IluSchedule::Partitioned
                | IluSchedule::SyncFree
                | IluSchedule::SyncFreeWarps
                | IluSchedule::SyncFreeGpuScope => vec![(0, ilu.n)],
                IluSchedule::Levels => levels.windows(2).map(|w| (w[0], w[1])).collect(),
            }
        };
        let sync: i32 = match cfg.schedule {
            IluSchedule::Levels => 0,
            IluSchedule::BySize
            | IluSchedule::OneBlock
            | IluSchedule::Partitioned
            | IluSchedule::SyncFree => 1,
            IluSchedule::SyncFreeWarps => 2,
            IluSchedule::SyncFreeGpuScope => 3,
        };
        let sleep = cfg.sleep_ns;
        let resident =
            (ilu.sm_count as u64 * (cfg.threads_per_sm / cfg.block).max(1) as u64).max(1);
        // Launch shape and the tickets the launch takes (sync-free: one per chunk, plus the
        // one each block takes to learn that none is left).
        let shape = |len: usize| -> (LaunchConfig, u64) {
            let chunks = (len as u64).div_ceil(cfg.block as u64);
            let blocks = if sync != 0 {
                chunks.min(resident)
            } else {
                chunks
            };
            let launch = LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (cfg.block, 1, 1),
                shared_mem_bytes: 0,
            };
            (launch, if sync != 0 { chunks + blocks } else { 0 })
        };
        for (begin, end) in ranges(&ilu.order.lower.levels) {
            if begin == end {
                continue;
            }
            let (launch, tickets) = shape(end - begin);
            let (b, e) = (begin as i32, end as i32);
            let base = ilu.tickets;
            let t = &ilu.order.lower;
            let mut args = self.stream.launch_builder(&lower_f);
            args.arg(&b)
                .arg(&e)
                .arg(&t.row)
                .arg(&t.ptr)
                .arg(&t.dep)
                .arg(&t.val)
                .vec(r)
                .arg(&mut ilu.y)
                .arg(&mut ilu.wflag)
                .arg(&generation)
                .arg(&mut ilu.ticket)
                .arg(&base)
                .arg(&sync)
                .arg(&sleep);
            // SAFETY: ilu0_lower_{p}(int begin, int end, const int* row, const int* ptr,
            // const int* dep, const double* val, const T* r, double* y,
            // unsigned long long* wflag, unsigned long long gen, unsigned long long* ticket,
            // unsigned long long ticket_base, int sync, int sleep_ns) in kernels/ilu0.cu.
            // row/ptr/dep/val describe n rows (ptr has n + 1 entries, dep entries are
            // positions < n), r holds n elements of T, y 2 n doubles, wflag ceil(n / 32) words;
            // the kernel touches positions in [begin, end) only. With sync the blocks take
            // chunks base.. in start order, `tickets` in all, and only wait on rows of chunks
            // taken before theirs, by blocks that are running.
            unsafe { args.launch(launch) }.map_err(driver_error(&lower_name))?;
            // Counted once launched: a launch that failed took no tickets.
            ilu.tickets += tickets;
        }
        for (begin, end) in ranges(&ilu.order.upper.levels) {
            if begin == end {
                continue;
            }
            let (launch, tickets) = shape(end - begin);
            let (b, e) = (begin as i32, end as i32);
            let base = ilu.tickets;
            let t = &ilu.order.upper;
            let mut args = self.stream.launch_builder(&upper_f);
            args.arg(&b)
                .arg(&e)
                .arg(&t.row)
                .arg(&t.ptr)
                .arg(&t.dep)
                .arg(&t.val)
                .arg(&ilu.order.diag)
                .arg(&ilu.order.src)
                .arg(&ilu.y)
                .arg(&mut ilu.x)
                .vec(z)
                .arg(&mut ilu.wflag)
                .arg(&gen_upper)
                .arg(&mut ilu.ticket)
                .arg(&base)
                .arg(&sync)
                .arg(&sleep);
            // SAFETY: ilu0_upper_{p}(int begin, int end, const int* row, const int* ptr,
            // const int* dep, const double* val, const double* diag, const int* src,
            // const double* y, double* x, T* z, unsigned long long* wflag, unsigned long long gen,
            // unsigned long long* ticket, unsigned long long ticket_base, int sync,
            // int sleep_ns): as the forward launch, with diag/src n entries, x 2 n doubles and
            // z n elements of T.
            unsafe { args.launch(launch) }.map_err(driver_error(&upper_name))?;
            ilu.tickets += tickets;
        }
        Ok(())
    }
}
