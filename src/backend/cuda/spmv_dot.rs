//! CG's `q = A p` fused with `<p, q>` in the tiled order (`kernels/common/reduce.cuh`,
//! `kernels::TILE_ROWS` on the CPU): tiles of `TILE_ROWS` consecutive rows, whose products are
//! summed by the halving tree of a dot product's block (one product a lane); the tile sums are
//! then summed by `TILE_FINAL_THREADS` lanes and two trees. Where the SpMV gives each row one
//! thread (the sliced layout, or CSR with NT = 1) a block of the SpMV is a tile
//! (`spmv_dot_{p}_{sell,nt1}`, `kernels/spmv_csr.cu` and `xprec.cu`), so the separate pass of
//! the dot over `p` and `q` goes away. Elsewhere (CSR with several threads a row, and qd) `spmv`
//! then `dot_tile_{p}_partial` give the same bits. The CPU's `fused::spmv_dot` is the twin, checked
//! in `tests/gpu.rs`.
//!
//! CG has its own order because `dot`'s (each thread summing 32 elements 256 apart) would leave
//! a thread 32 rows in series, or the rows staged through shared memory for a whole 8192-row
//! chunk: both were tried and were no faster than `spmv` then `dot` (`benches/results/h200.md`).
//! Three other tilings were measured on poisson3d:200 (`benches/results/h200.md`): a shuffle
//! tree within each warp (five DD additions per row in every lane), one warp summing the
//! staged products of its block (the block waits on that warp), and one warp computing a whole
//! tile's rows in series: their fused DD kernels took 262, 273 and 328 us, this one 258.

use super::device::driver_error;
use super::launch::FinalStage;
use super::{CudaBackend, CudaMatrix, CudaVector, PushVector};
use crate::backend::Backend;
use crate::error::Result;
use crate::precision::Precision;
use cudarc::driver::{LaunchConfig, PushKernelArg};

/// Rows a tile of the tiled order: TILE_ROWS in kernels/common/reduce.cuh and the CPU's
/// `kernels::TILE_ROWS`; one block of this many threads per tile.
pub(super) const TILE_ROWS: usize = 256;
const _: () = assert!(
    TILE_ROWS == super::BLOCK as usize,
    "a tile is one reduction block"
);
/// Threads of the block that sums the tile partials: TILE_FINAL_THREADS in reduce.cuh, the CPU's
/// `kernels::TILE_FINAL_LANES`.
const TILE_FINAL_THREADS: u32 = 1024;

impl CudaBackend {
    /// The fused kernel for `a` and `P`, if there is one: one thread per row, and not qd,
    /// whose SpMV is bound by its arithmetic: the tile's tree in the SpMV cost more there than
    /// the dot's pass saved (CG iteration 2.83 against 2.73 ms on poisson3d:200).
    fn spmv_dot_kernel<P: Precision>(a: &CudaMatrix) -> Option<String> {
        let fused = a.lanes == 1 && a.nrows == a.ncols && P::KERNEL_SUFFIX != "qd";
        let layout = if a.slice_ptr.is_some() { "sell" } else { "nt1" };
        fused.then(|| format!("spmv_dot_{}_{layout}", P::KERNEL_SUFFIX))
    }

    /// The one block that sums the tile partials (`dot_tile_{p}_final`, `cg_alpha_{p}`).
    pub(super) fn tile_final() -> LaunchConfig {
        LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (TILE_FINAL_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Scratch for the tile partials of a vector of `n` elements, and their number.
    pub(super) fn tile_partials<P: Precision>(&self, n: usize) -> Result<(CudaVector<P>, usize)> {
        self.partials_per::<P>(n, TILE_ROWS)
    }

    /// `q <- A p` and the tile partials of `<p, q>` (`blocks` of them, from
    /// [`Self::tile_partials`]): fused where [`Self::spmv_dot_kernel`] has a kernel and `fuse`
    /// is set, otherwise `spmv` then `dot_tile_{p}_partial` (the same bits).
    pub(super) fn spmv_dot_partial<P: Precision>(
        &self,
        a: &CudaMatrix,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        partial: &mut CudaVector<P>,
        blocks: usize,
        fuse: bool,
    ) -> Result<()> {
        assert!(
            p.len == a.ncols && q.len == a.nrows && a.nrows == a.ncols,
            "spmv_dot: a square matrix and vectors of its size"
        );
        let kernel = Self::spmv_dot_kernel::<P>(a).filter(|_| fuse && a.nrows > 0);
        let Some(name) = kernel else {
            self.spmv(a, p, q)?;
            return self.launch_dot_partial_op("dot_tile", p, q, partial, blocks);
        };
        let f = self.kernels.function(&name)?;
        let nrows = a.nrows as i32;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&nrows).arg(&a.row_ptr);
        if let Some(slice_ptr) = &a.slice_ptr {
            args.arg(slice_ptr);
        }
        args.arg(&a.col_idx)
            .arg(&a.values)
            .vec(p)
            .vec(q)
            .vec(partial);
        // SAFETY: spmv_dot_{f64,dd}_sell(int nrows, const int* row_ptr, const int* slice_ptr,
        // const int* col_idx, const double* val, const T* p, T* q, T* partial) for a sliced
        // matrix, spmv_dot_{f64,dd}_nt1 (no slice_ptr) for CSR with one thread per row, in
        // kernels/spmv_csr.cu (td: xprec.cu): one block of TILE_ROWS threads per tile (the
        // reduction launch: TILE_ROWS == BLOCK), one T per block.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// `q <- A p`, returning `<p, q>` in the tiled order (one transfer): fused where a kernel
    /// exists and `fuse` is set. For `solver bench` and the GPU tests.
    pub fn spmv_dot<P: Precision>(
        &self,
        a: &CudaMatrix,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        fuse: bool,
    ) -> Result<P> {
        let (mut partial, blocks) = self.tile_partials::<P>(p.len)?;
        self.spmv_dot_partial(a, p, q, &mut partial, blocks, fuse)?;
        self.finish_reduction(FinalStage::Tiles, &partial, blocks)
    }

    /// `<x, y>` in the tiled order of CG's `<p, q>` (`Backend::dot_tiled`).
    pub(super) fn tiled_dot<P: Precision>(
        &self,
        x: &CudaVector<P>,
        y: &CudaVector<P>,
    ) -> Result<P> {
        assert_eq!(x.len, y.len, "dot_tiled: lengths");
        let (partial, blocks) = self.tile_partials::<P>(x.len)?;
        self.launch_dot_partial_op("dot_tile", x, y, &partial, blocks)?;
        self.finish_reduction(FinalStage::Tiles, &partial, blocks)
    }
}
