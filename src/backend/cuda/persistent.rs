//! Whole batches of iterations as one kernel (`kernels/cg_persistent.cu`,
//! `kernels/bicgstab_persistent.cu`): for matrices whose tiles fit in one wave of resident
//! blocks, the phases of an iteration are separated by grid-wide barriers instead of kernel
//! launches. A grid of several blocks is launched cooperatively (every block resident); one
//! block is launched as any kernel, so it can run beside other solves. Where it applies and
//! whether it is on is decided here; the solver files launch it.

use super::device::driver_error;
use super::{CudaBackend, CudaMatrix};
use crate::backend::{ONE_BLOCK_MAX_TILES, persistent_reach};
use crate::precision::Precision;
use crate::precond::Preconditioner;
use crate::error::Result;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchArgs, LaunchConfig};

/// Where solves run as one persistent kernel a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistent {
    /// Never: the step kernels (with CUDA graphs where they are on).
    Off,
    /// Where it was measured faster than the step kernels (`backend::persistent_reach`).
    Measured,
    /// Wherever it can run (one wave, CSR): for the tests, and for measuring.
    Everywhere,
    /// One block a solve, up to `ONE_BLOCK_MAX_TILES`: for solves beside others on their own
    /// streams (`solver batch`), where a cooperative launch would wait for the whole device
    /// and stall them and itself (`benches/results/gpu-study.md`).
    OneBlock,
}

impl Persistent {
    /// `PRECSOLVE_PERSISTENT`: `0` off, `all` everywhere, `one` one block a solve (as beside
    /// others, for measuring it alone), otherwise (and unset) measured.
    pub fn from_env() -> Self {
        match std::env::var("PRECSOLVE_PERSISTENT").as_deref() {
            Ok("0") => Persistent::Off,
            Ok("all") => Persistent::Everywhere,
            Ok("one") => Persistent::OneBlock,
            _ => Persistent::Measured,
        }
    }
}

/// A solver's kernels that run whole batches: `{persistent}_{p}` without a preconditioner,
/// `{ilu_block}_{p}` as one block with ILU(0).
pub(super) struct SolverKernels {
    pub persistent: &'static str,
    pub ilu_block: &'static str,
}

/// Threads a block of a persistent kernel: DOT_THREADS, one tile of TILE_ROWS rows at a time.
const THREADS: u32 = crate::backend::PERSISTENT_TILE_ROWS as u32;
const _: () = assert!(THREADS as usize == super::spmv_dot::TILE_ROWS);

/// The grid of a solve's persistent kernel: one block a tile (every block resident), and the
/// arrival count of its grid barrier.
pub(super) struct PersistentGrid {
    blocks: u32,
    pub barrier: CudaSlice<u64>,
}

impl PersistentGrid {
    pub fn launch(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Launch `args` (a persistent kernel's): cooperatively where the grid has several blocks
    /// (their barriers need every block resident), as any kernel where it has one.
    pub fn launch_on(&self, args: &mut LaunchArgs<'_>, name: &str) -> Result<()> {
        // SAFETY (both): the caller built `args` for a persistent kernel of this grid.
        let launched = match self.blocks {
            1 => unsafe { args.launch(self.launch()) },
            _ => unsafe { args.launch_cooperative(self.launch()) },
        };
        launched.map(drop).map_err(driver_error(name))
    }
}

/// How a batch of a solver's iterations is launched (CG's and BiCGStab's device-resident
/// solves), chosen by [`CudaBackend::solver_schedule`].
pub(super) enum Schedule {
    /// The step kernels: several launches an iteration, and the preconditioner's.
    Steps,
    /// Without a preconditioner, one launch a batch (`kernels/cg_persistent.cu`,
    /// `kernels/bicgstab_persistent.cu`).
    Persistent(PersistentGrid),
    /// With ILU(0), one launch of one block a batch (`kernels/cg_ilu_block.cu`,
    /// `kernels/bicgstab_ilu_block.cu`): its kernel, allowed the shared memory the factors
    /// need, and its name.
    IluBlock(CudaFunction, String),
}

/// Launch `args`, a solver kernel's of one block that applies ILU(0) itself
/// ([`CudaBackend::ilu_block_kernel`]), with `shared` bytes of dynamic shared memory.
///
/// # Safety
/// `args` are the kernel's arguments, and `shared` the factors' need, which
/// [`CudaBackend::ilu_block_kernel`] checked fit beside the kernel's own.
pub(super) unsafe fn launch_ilu_block(
    args: &mut LaunchArgs<'_>,
    shared: u32,
    name: &str,
) -> Result<()> {
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: shared,
    };
    // SAFETY: as the caller promises.
    unsafe { args.launch(config) }
        .map(drop)
        .map_err(driver_error(name))
}

impl CudaBackend {
    /// Whether a solve on `a` may run as one block that iterates whole batches and applies
    /// ILU(0) itself, before its factors are weighed ([`Self::ilu_block_kernel`]): CSR, and
    /// where [`Self::persistent`] says where measured or one block, within
    /// `backend::one_block_reach` (no row too long: one thread sums a row, in the SpMV and in
    /// the triangular solves, and adder_dcop_05's iteration took 1.8x the step kernels');
    /// never where it says off.
    pub(super) fn one_block_solve_wanted(&self, a: &CudaMatrix) -> bool {
        let small = crate::backend::one_block_reach(a.nrows, a.longest_row);
        let wanted = match self.persistent() {
            Persistent::Off => false,
            Persistent::Everywhere => true,
            Persistent::Measured | Persistent::OneBlock => small,
        };
        wanted && a.slice_ptr.is_none() && a.nrows > 0
    }

    /// `{kernel}_{p}`, a solver kernel of one block that applies `precond`'s ILU(0) factors
    /// itself (kernels/bicgstab_ilu_block.cu, kernels/cg_ilu_block.cu), allowed the shared
    /// memory they need, and its name, where it should run on `a`: where
    /// [`Self::one_block_solve_wanted`], the factors fit, and by [`Self::persistent`]: alone
    /// where `alone` takes them (rows, entries, levels), beside other solves where
    /// [`crate::backend::ilu_in_block_beside_others`] does (it leaves the driver and the host
    /// to them), everywhere for the tests.
    pub(super) fn ilu_block_kernel<P: Precision, M: Preconditioner<Self>>(
        &self,
        kernel: &str,
        a: &CudaMatrix,
        precond: &M,
        alone: fn(usize, usize, usize) -> bool,
    ) -> Result<Option<(CudaFunction, String)>> {
        if !self.one_block_solve_wanted(a) {
            return Ok(None);
        }
        let choose: fn(usize, usize, usize) -> bool = match self.persistent() {
            Persistent::Everywhere => |_, _, _| true,
            Persistent::OneBlock => crate::backend::ilu_in_block_beside_others,
            Persistent::Measured | Persistent::Off => alone,
        };
        let (f, name) = self.kernel::<P>(kernel)?;
        let own = f
            .get_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
            )
            .map_err(driver_error(&name))? as usize;
        let allowed = precond.with_backend_ilu(|ilu| self.ilu_in_block(ilu, own, choose));
        let Some(allowed) = allowed.transpose()?.flatten() else {
            return Ok(None);
        };
        let f = self.kernels.function_opted_in(&name, allowed)?;
        Ok(Some((f, name)))
    }

    /// The schedule of a solve on `a` with `precond`, of a solver whose kernels are `kernels`:
    /// without a preconditioner the persistent kernel where its grid fits
    /// ([`Self::persistent_grid`]); with ILU(0) the one block where [`Self::ilu_block_kernel`]
    /// takes it (`alone`: where alone); else the step kernels.
    pub(super) fn solver_schedule<P: Precision, M: Preconditioner<Self>>(
        &self,
        kernels: SolverKernels,
        a: &CudaMatrix,
        precond: &M,
        identity: bool,
        alone: fn(usize, usize, usize) -> bool,
    ) -> Result<Schedule> {
        if identity {
            let kernel = self.kernel::<P>(kernels.persistent)?.0;
            let grid = self.persistent_grid(&kernel, a)?;
            return Ok(grid.map_or(Schedule::Steps, Schedule::Persistent));
        }
        let block = self.ilu_block_kernel::<P, M>(kernels.ilu_block, a, precond, alone)?;
        Ok(block.map_or(Schedule::Steps, |(f, name)| Schedule::IluBlock(f, name)))
    }

    /// Where the persistent kernels run ([`Persistent::from_env`] by default).
    pub fn set_persistent(&self, mode: Persistent) {
        *self.persistent.lock().unwrap_or_else(|e| e.into_inner()) = mode;
    }

    pub fn persistent(&self) -> Persistent {
        *self.persistent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The grid for `kernel` on `a` where the persistent kernel applies: `a` in CSR (the sliced
    /// layout is for matrices larger than one wave anyway), one block a tile all resident at
    /// once (a cooperative launch needs every block resident) or one block in all
    /// ([`Persistent::OneBlock`]), and where [`Self::persistent`] says.
    pub(super) fn persistent_grid(
        &self,
        kernel: &CudaFunction,
        a: &CudaMatrix,
    ) -> Result<Option<PersistentGrid>> {
        let tiles = a.nrows.div_ceil(THREADS as usize);
        let wanted = match self.persistent() {
            Persistent::Off => false,
            Persistent::Measured => persistent_reach(a.nrows, a.lanes, a.longest_row),
            Persistent::Everywhere => true,
            Persistent::OneBlock => tiles <= ONE_BLOCK_MAX_TILES,
        };
        if !wanted || a.slice_ptr.is_some() || a.nrows == 0 {
            return Ok(None);
        }
        let blocks = match self.persistent() {
            Persistent::OneBlock => 1,
            _ => tiles as u32,
        };
        let per_sm = kernel
            .occupancy_max_active_blocks_per_multiprocessor(THREADS, 0, None)
            .map_err(driver_error("reading a persistent kernel's occupancy"))?;
        let sms = self.attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "reading the SM count",
        )?;
        if blocks > 1 && tiles > per_sm as usize * sms {
            return Ok(None);
        }
        let barrier = self
            .stream
            .alloc_zeros::<u64>(1)
            .map_err(driver_error("allocating a grid barrier"))?;
        Ok(Some(PersistentGrid { blocks, barrier }))
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::persistent_reach;

    /// The choices behind the constants: the solves measured on an H200 and an H100
    /// (`benches/results/gpu-resident.md`, "Where a persistent iteration goes", item 4, "Rows
    /// in registers" and "BiCGStab's rows in registers"), in f64 and dd, CG and BiCGStab alike.
    #[test]
    fn the_persistent_kernel_runs_where_it_was_measured_faster() {
        // (rows, lanes, longest row): faster as the persistent kernel
        let faster = [
            (48, 1, 12),       // bcsstk01
            (1_138, 1, 18),    // 1138_bus
            (2_500, 1, 5),     // cryg2500
            (3_312, 1, 21),    // sherman5
            (8_081, 1, 5),     // Pd
            (8_000, 1, 7),     // poisson3d:20
            (15_625, 1, 7),    // poisson3d:25
        ];
        // slower, or not measured faster: the step kernels
        let slower = [
            (4_884, 4, 81),    // bcsstk16: several lanes a row
            (1_813, 1, 1_310), // adder_dcop_05: one long row
            (27_000, 1, 7),    // poisson3d:30: past the tiles measured
        ];
        for (rows, lanes, longest) in faster {
            assert!(persistent_reach(rows, lanes, longest), "{rows} rows");
        }
        for (rows, lanes, longest) in slower {
            assert!(!persistent_reach(rows, lanes, longest), "{rows} rows");
        }
    }
}
