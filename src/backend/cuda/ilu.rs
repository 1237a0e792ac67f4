//! ILU(0) triangular solves on the GPU (kernels/ilu0.cu), bit for bit the CPU's
//! (src/backend/cpu/trisolve.rs): the same per-row arithmetic whatever the schedule.
//!
//! Each triangle is stored in the order of its levels: position `p` holds row `row[p]`, with its
//! off-diagonal entries in the order of the arithmetic (L: increasing column, U: decreasing) and,
//! for each entry, the position of the row it reads. Consecutive threads then take consecutive
//! rows of one level, reading their entries as the CSR SpMV does, and every dependency has a
//! smaller position than its reader, which the synchronization-free schedule needs.

use super::device::{alloc_words, driver_error};
use super::{CudaBackend, CudaVector, PushVector};
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::precond::ilu0::{Ilu0Factors, OrderedTriangle};
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// How the rows of a triangle are scheduled on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IluSchedule {
    /// One launch per triangle; a row polls each dependency's {value, generation} pair (the
    /// default: 2.35 ms against 4.6 ms for `SyncFreeWarps` and 6.2 ms for `Levels` on
    /// poisson3d:200, benches/results/ilu0-h200.md).
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
}

/// Threads per block of the synchronization-free solve (a block's rows wait together).
pub const DEFAULT_BLOCK: u32 = 128;
/// Resident threads per SM of the synchronization-free solve (fewer poll less, more look
/// further ahead; measured on poisson3d:200, benches/results/ilu0-h200.md).
pub const DEFAULT_THREADS_PER_SM: u32 = 384;

/// How the triangular solves are launched; every choice gives the same bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IluConfig {
    pub schedule: IluSchedule,
    /// Threads per block: rows per chunk (sync-free) or per block (levels).
    pub block: u32,
    /// Sync-free: resident threads per SM the grid is sized for (it limits how far ahead of
    /// the finished rows the solve runs, hence how many threads poll).
    pub threads_per_sm: u32,
    /// Sync-free: nanoseconds a warp that made no progress sleeps before polling again.
    pub sleep_ns: i32,
}

impl Default for IluConfig {
    fn default() -> Self {
        IluConfig {
            schedule: IluSchedule::SyncFree,
            block: DEFAULT_BLOCK,
            threads_per_sm: DEFAULT_THREADS_PER_SM,
            sleep_ns: 0,
        }
    }
}

/// One triangle in level order on the device.
struct Triangle {
    row: CudaSlice<i32>,
    ptr: CudaSlice<i32>,
    dep: CudaSlice<i32>,
    val: CudaSlice<f64>,
    /// Level boundaries in positions (host), for the level-scheduled launches.
    levels: Vec<usize>,
}

/// ILU(0) factors on the GPU with the work space and synchronization state of an application.
pub struct CudaIlu {
    factors: Arc<Ilu0Factors>,
    n: usize,
    lower: Triangle,
    upper: Triangle,
    /// `u_ii` by backward position.
    diag: CudaSlice<f64>,
    /// Forward position of each backward position's row.
    src: CudaSlice<i32>,
    /// Forward results by forward position, backward results by backward position, each a
    /// pair {value, generation that wrote it} (2 n doubles).
    y: CudaSlice<f64>,
    x: CudaSlice<f64>,
    /// Ready flags of groups of 32 positions (ceil(n / 32) words), shared by both triangles.
    wflag: CudaSlice<u64>,
    /// The next forward solve publishes `generation`, its backward solve `generation + 1`.
    generation: u64,
    /// Blocks take their chunks from this counter; `tickets` is how many were taken so far.
    ticket: CudaSlice<u64>,
    tickets: u64,
    sm_count: u32,
    config: IluConfig,
}

impl CudaIlu {
    pub fn factors(&self) -> &Arc<Ilu0Factors> {
        &self.factors
    }
    pub fn config(&self) -> IluConfig {
        self.config
    }
    /// Choose how the solves are launched (benchmarks and tests; every choice gives the same
    /// bits).
    pub fn set_config(&mut self, config: IluConfig) {
        assert!(
            (32..=1024).contains(&config.block) && config.block.is_multiple_of(32),
            "block size must be a multiple of 32 up to 1024"
        );
        self.config = config;
    }
    /// The schedule and block size, other settings at their defaults.
    pub fn set_schedule(&mut self, schedule: IluSchedule, block: u32) {
        self.set_config(IluConfig {
            schedule,
            block,
            ..IluConfig::default()
        });
    }
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
    fn upload_triangle(&self, t: &OrderedTriangle, what: &str) -> Result<Triangle> {
        let i32s = |v: &[u32]| v.iter().map(|&x| x as i32).collect::<Vec<i32>>();
        let ptr: Vec<i32> = t.ptr.iter().map(|&x| x as i32).collect();
        Ok(Triangle {
            row: self.upload_i32(&i32s(&t.rows), what)?,
            ptr: self.upload_i32(&ptr, what)?,
            dep: self.upload_i32(&i32s(&t.deps), what)?,
            val: self.upload_f64(&t.vals, what)?,
            levels: t.level_ptr.clone(),
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
        let lower = f.lower_ordered();
        let upper = f.upper_ordered();
        let src: Vec<i32> = upper
            .rows
            .iter()
            .map(|&i| lower.position[i as usize] as i32)
            .collect();
        let sm_count = self
            .ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(driver_error("reading the SM count"))? as u32;
        let ticket = self
            .stream
            .alloc_zeros::<u64>(1)
            .map_err(driver_error("allocating ILU(0) ticket counter"))?;
        Ok(CudaIlu {
            factors: Arc::clone(factors),
            n,
            lower: self.upload_triangle(&lower, "L")?,
            upper: self.upload_triangle(&upper, "U")?,
            diag: self.upload_f64(&upper.diag, "diagonal")?,
            src: self.upload_i32(&src, "row map")?,
            wflag: self
                .stream
                .alloc_zeros::<u64>(n.div_ceil(32).max(1))
                .map_err(driver_error("allocating ILU(0) flags"))?,
            y: alloc_words(&self.stream, 2 * n)?,
            x: alloc_words(&self.stream, 2 * n)?,
            generation: 1,
            ticket,
            tickets: 0,
            sm_count: sm_count.max(1),
            config: self.ilu_config(),
        })
    }

    /// `z <- U^{-1} L^{-1} fl64(r)`, widened to `P`.
    pub(super) fn ilu_solve<P: Precision>(
        &self,
        ilu: &mut CudaIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<P>,
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
        let suffix = Self::suffix::<P>()?;
        let lower_name = format!("ilu0_lower_{suffix}");
        let upper_name = format!("ilu0_upper_{suffix}");
        let lower_f = self.kernels.function(&lower_name)?;
        let upper_f = self.kernels.function(&upper_name)?;
        let generation = ilu.generation;
        let gen_upper = generation + 1;
        ilu.generation += 2;
        let cfg = ilu.config;
        // Ranges of positions per launch: the whole triangle, or level after level.
        let ranges = |levels: &[usize]| -> Vec<(usize, usize)> {
            match cfg.schedule {
                IluSchedule::SyncFree
                | IluSchedule::SyncFreeWarps
                | IluSchedule::SyncFreeGpuScope => vec![(0, ilu.n)],
                IluSchedule::Levels => levels.windows(2).map(|w| (w[0], w[1])).collect(),
            }
        };
        let sync: i32 = match cfg.schedule {
            IluSchedule::Levels => 0,
            IluSchedule::SyncFree => 1,
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
        for (begin, end) in ranges(&ilu.lower.levels) {
            if begin == end {
                continue;
            }
            let (launch, tickets) = shape(end - begin);
            let (b, e) = (begin as i32, end as i32);
            let base = ilu.tickets;
            let t = &ilu.lower;
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
        for (begin, end) in ranges(&ilu.upper.levels) {
            if begin == end {
                continue;
            }
            let (launch, tickets) = shape(end - begin);
            let (b, e) = (begin as i32, end as i32);
            let base = ilu.tickets;
            let t = &ilu.upper;
            let mut args = self.stream.launch_builder(&upper_f);
            args.arg(&b)
                .arg(&e)
                .arg(&t.row)
                .arg(&t.ptr)
                .arg(&t.dep)
                .arg(&t.val)
                .arg(&ilu.diag)
                .arg(&ilu.src)
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
