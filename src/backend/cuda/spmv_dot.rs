//! CG's `q = A p` fused with `<p, q>` (`spmv_dot_{p}_r{R}` in `kernels/spmv_csr.cu`): with one
//! thread per row, each thread of a dot-product block computes the rows whose products its lane
//! of the dot sums, so the partials come out in the dot's layout and the pass of the dot over
//! `p` and `q` goes away. Same bits as `spmv` then `dot` (the CPU's `fused::spmv_dot` is the
//! twin, checked in `tests/gpu.rs`).
//!
//! An experiment that lost: `solver bench` times it against `spmv` then `dot`, and the fused
//! kernel is slower (0.68x in f64, 0.86x in dd on poisson3d:200, `benches/results/h200.md`):
//! one block per dot chunk leaves each thread 32 dependent row sums in series, against one row
//! per thread for the SpMV. The staged variant (`rows = STAGED`: 1024 threads a chunk, two
//! coalesced rows each per quarter, products summed from shared memory in the dot's order) ties
//! with `spmv` then `dot` (1.00x f64, 0.99x dd): the barriers and the lower occupancy cost what
//! the dot's pass saved. `Backend::cg_step` uses neither.

use super::device::driver_error;
use super::{CudaBackend, CudaMatrix, CudaVector, PushVector};
use crate::backend::Backend;
use crate::error::Result;
use crate::precision::Precision;
use cudarc::driver::PushKernelArg;

/// `rows` that selects `spmv_dot_{p}_staged`: products staged in shared memory, summed in the
/// dot's order by its lanes (1024 threads per block, two rows each per quarter of a chunk).
pub const STAGED: usize = 8;
const STAGED_THREADS: u32 = 1024;

impl CudaBackend {
    /// The fused kernel for `a` and `P` with `rows` side by side, if there is one: `a` is CSR
    /// with one thread per row, `P` is f64 or dd (td and qd go through `spmv` and `dot`).
    fn spmv_dot_kernel<P: Precision>(a: &CudaMatrix, rows: usize) -> Option<String> {
        let fused = a.lanes == 1
            && a.slice_ptr.is_none()
            && a.nrows == a.ncols
            && matches!(P::KERNEL_SUFFIX, "f64" | "dd")
            && matches!(rows, 1 | 2 | 4 | STAGED);
        fused.then(|| match rows {
            STAGED => format!("spmv_dot_{}_staged", P::KERNEL_SUFFIX),
            _ => format!("spmv_dot_{}_r{rows}", P::KERNEL_SUFFIX),
        })
    }

    /// `q <- A p` and the per-block partials of `<p, q>` in the dot product's layout (`blocks`
    /// of them, as [`CudaBackend::partials`] gives), fused with `rows` side by side where
    /// [`Self::spmv_dot_kernel`] has a kernel, otherwise `spmv` then the dot's first stage.
    pub(super) fn spmv_dot_partial<P: Precision>(
        &self,
        a: &CudaMatrix,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        partial: &mut CudaVector<P>,
        blocks: usize,
        rows: usize,
    ) -> Result<()> {
        assert!(
            p.len == a.ncols && q.len == a.nrows && a.nrows == a.ncols,
            "spmv_dot: a square matrix and vectors of its size"
        );
        let Some(name) = Self::spmv_dot_kernel::<P>(a, rows) else {
            self.spmv(a, p, q)?;
            return self.launch_dot_partial(p, q, partial, blocks);
        };
        let f = self.kernels.function(&name)?;
        let nrows = a.nrows as i32;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&nrows)
            .arg(&a.row_ptr)
            .arg(&a.col_idx)
            .arg(&a.values)
            .vec(p)
            .vec(q)
            .vec(partial);
        // SAFETY: spmv_dot_{f64,dd}_r{R} / _staged(int nrows, const int* row_ptr,
        // const int* col_idx, const double* val, const T* p, T* q, T* partial) in
        // kernels/spmv_csr.cu: one block per DOT_CHUNK rows (DOT_THREADS threads, or
        // STAGED_THREADS for _staged), one T per block.
        let mut launch = Self::reduction(blocks);
        if rows == STAGED {
            launch.block_dim = (STAGED_THREADS, 1, 1);
        }
        unsafe { args.launch(launch) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// `q <- A p`, returning `<p, q>` (one transfer): fused with `rows` side by side where a
    /// kernel exists, `rows = 0` for `spmv` then `dot`. For `solver bench` and the GPU tests.
    pub fn spmv_dot<P: Precision>(
        &self,
        a: &CudaMatrix,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        rows: usize,
    ) -> Result<P> {
        let (mut partial, blocks) = self.partials::<P>(p.len)?;
        self.spmv_dot_partial(a, p, q, &mut partial, blocks, rows)?;
        self.finish_reduction(&partial, blocks)
    }
}
