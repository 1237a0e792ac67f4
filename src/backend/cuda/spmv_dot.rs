//! SpMVs fused with dot products of their result in the tiled order (`kernels/common/reduce.cuh`,
//! `kernels::TILE_ROWS` on the CPU): CG's `q = A p` with `<p, q>`, BiCGStab's `v = A p^` with
//! `<r~, v>` and `t = A s^` with `<t, t>` and `<t, s>`. Tiles of `TILE_ROWS` consecutive rows,
//! whose products are summed by the halving tree of a dot product's block (one product a lane);
//! the tile sums are then summed by `TILE_FINAL_THREADS` lanes and two trees. Where the SpMV
//! gives each row one thread (the sliced layout, or CSR with NT = 1) a block of the SpMV is a
//! tile (`spmv_dot{,2}_{p}_{sell,nt1}`, `kernels/spmv_csr.cu` and `xprec.cu`), so the dots'
//! separate pass over `q` goes away. Elsewhere (CSR with several threads a row, and qd) `spmv`
//! then `dot_tile_{p}_partial` give the same bits. The CPU's `fused::spmv_dots` is the twin,
//! checked in `tests/gpu.rs`.
//!
//! CG has its own order because `dot`'s (each thread summing 32 elements 256 apart) would leave
//! a thread 32 rows in series, or the rows staged through shared memory for a whole 8192-row
//! chunk: both were tried and were no faster than `spmv` then `dot`. Of the tilings tried, the
//! block's halving tree was the fastest: a shuffle tree within each warp costs five DD
//! additions per row in every lane, one warp summing the staged products of its block makes
//! the block wait on that warp, and one warp computing a whole tile's rows in series leaves
//! warps idle (`benches/results/h200.md` has the figures).

use super::device::driver_error;
use super::launch::FinalStage;
use super::sell::SELL_ROWS;
use super::{CudaBackend, CudaMatrix, CudaVector, Layout, PushVector, push_scalar};
use crate::backend::{Operand, OperandOf, TiledDots, spmv_operand};
use crate::error::Result;
use crate::precision::Precision;
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};
use std::ops::Range;

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

/// The tile partials of one fused SpMV: `first` for `<w, q>` (or `<q, q>`), `second` for
/// `<q, w>` where [`TiledDots::SelfAnd`] asked for it; `tiles` of each.
pub(super) struct TilePartials<P: Precision> {
    pub first: CudaVector<P>,
    pub second: Option<CudaVector<P>>,
    pub tiles: usize,
}

impl CudaBackend {
    /// The fused kernel for `a`, `P` and the kind of `x`, if there is one: one thread per row,
    /// `x` of `P` (with `x` of doubles widened, BiCGStab's preconditioned directions, the fused
    /// DD kernels gained least and BiCGStab keeps `dot`'s order: `backend::bicgstab_spmv_dots`),
    /// and not qd, whose SpMV is bound by its arithmetic: the tile's tree in the SpMV cost more
    /// there than the dot's pass saved (`benches/results/h200.md`).
    fn spmv_dot_kernel<P: Precision>(a: &CudaMatrix, two: bool, wide: bool) -> Option<String> {
        // f64's own kernel reads a double x: it has nothing to widen
        let x_ok = !wide || P::KERNEL_SUFFIX == "f64";
        let fused = a.lanes == 1 && a.nrows == a.ncols && !matches!(P::KERNEL_SUFFIX, "qd" | "mp") && x_ok;
        let layout = if a.slice_ptr.is_some() { "sell" } else { "nt1" };
        let dots = if two { "dot2" } else { "dot" };
        fused.then(|| format!("spmv_{dots}_{}_{layout}", P::KERNEL_SUFFIX))
    }

    /// The one block that sums the tile partials (`dot_tile_{p}_final`, `cg_alpha_{p}`,
    /// `bicg_alpha_{p}`).
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

    /// Tile partials for the dots beside an SpMV of `n` rows: one, or with `two` two.
    pub(super) fn tile_partials_for<P: Precision>(
        &self,
        n: usize,
        two: bool,
    ) -> Result<TilePartials<P>> {
        let (first, tiles) = self.tile_partials::<P>(n)?;
        let second = match two {
            true => Some(self.tile_partials::<P>(n)?.0),
            false => None,
        };
        Ok(TilePartials {
            first,
            second,
            tiles,
        })
    }

    /// `q <- A x` and the tile partials of the dots `dots` asks for: fused where
    /// [`Self::spmv_dot_kernel`] has a kernel and `fuse` is set, otherwise `spmv` then
    /// `dot_tile_{p}_partial` (the same bits).
    pub(super) fn spmv_dots_partial<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CudaVector<P>>,
        q: &mut CudaVector<P>,
        fuse: bool,
    ) -> Result<TilePartials<P>> {
        let out = self.tile_partials_for::<P>(q.len, matches!(dots, TiledDots::SelfAnd(_)))?;
        self.spmv_dots_partial_into(a, x, dots, q, fuse, &out)?;
        Ok(out)
    }

    /// [`Self::spmv_dots_partial`] into partials allocated by the caller (`second` present
    /// where `dots` asks for two).
    pub(super) fn spmv_dots_partial_into<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CudaVector<P>>,
        q: &mut CudaVector<P>,
        fuse: bool,
        out: &TilePartials<P>,
    ) -> Result<()> {
        let (x_len, wide) = match x {
            Operand::Own(x) => (x.len, false),
            Operand::Wide(x) => (x.len, true),
        };
        let w = dots.other();
        assert!(
            x_len == a.ncols && q.len == a.nrows && w.len == q.len && a.nrows == a.ncols,
            "spmv_dots: a square matrix and vectors of its size"
        );
        let two = matches!(dots, TiledDots::SelfAnd(_));
        assert_eq!(
            two,
            out.second.is_some(),
            "spmv_dots: partials for the dots asked"
        );
        let tiles = out.tiles;
        let kernel = Self::spmv_dot_kernel::<P>(a, two, wide).filter(|_| fuse && a.nrows > 0);
        let Some(name) = kernel else {
            spmv_operand(self, a, x, q)?;
            let tile = |x: &CudaVector<P>, y: &CudaVector<P>, partial: &CudaVector<P>| {
                self.launch_dot_partial_op("dot_tile", x, y, partial, tiles)
            };
            match (dots, &out.second) {
                (TiledDots::With(w), _) => tile(w, q, &out.first)?,
                (TiledDots::SelfAnd(w), second) => {
                    tile(q, q, &out.first)?;
                    tile(q, w, second.as_ref().expect("a second partial"))?;
                }
            }
            return Ok(());
        };
        let f = self.kernels.function(&name)?;
        let nrows = a.nrows as i32;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&nrows).arg(&a.row_ptr);
        if let Some(slice_ptr) = &a.slice_ptr {
            args.arg(slice_ptr);
        }
        args.arg(&a.col_idx).arg(&a.values);
        match x {
            Operand::Own(x) => args.vec(x),
            Operand::Wide(x) => args.vec(x),
        };
        args.vec(w).vec(q).vec(&out.first);
        if let Some(second) = &out.second {
            args.vec(second);
        }
        // SAFETY: spmv_dot{,2}_{p}_sell(int nrows, const int* row_ptr, const int* slice_ptr,
        // const int* col_idx, const double* val, const T* x, const T* w, T* q, A* partial[,
        // A* partial2]) for a sliced matrix, _nt1 (no slice_ptr) for CSR with one thread per row,
        // in kernels/spmv_csr.cu and xprec.cu (x is a T: f64's own when read "widened"); one
        // block of TILE_ROWS threads per tile (the reduction launch: TILE_ROWS == BLOCK), one A
        // per block in each partial.
        unsafe { args.launch(Self::reduction(tiles)) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// The fused kernel [`Self::spmv_dot_tiles`] launches for `a` and `P`, and the words of an
    /// element, where it can.
    pub(super) fn ranged_spmv_dot<P: Precision>(a: &CudaMatrix) -> Option<(String, usize)> {
        match (Self::spmv_dot_kernel::<P>(a, false, false), Self::layout::<P>()) {
            (Some(name), Layout::Words(words)) => Some((name, words)),
            _ => None,
        }
    }

    /// `q <- A p` with `<p, q>`'s tile partials over the tiles `tiles` only (rows from
    /// `TILE_ROWS * tiles.start`; the partials at their tiles' places), by the fused kernel on
    /// the arrays' addresses moved to the first row: a block solve computes the rows that read
    /// no halo while it travels. `false` (nothing launched) where `a` has no fused kernel or
    /// `P` is not one array of words.
    pub(super) fn spmv_dot_tiles<P: Precision>(
        &self,
        a: &CudaMatrix,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        out: &TilePartials<P>,
        tiles: Range<usize>,
    ) -> Result<bool> {
        let Some((name, words)) = Self::ranged_spmv_dot::<P>(a) else {
            return Ok(false);
        };
        assert!(p.len == a.ncols && q.len == a.nrows && tiles.end <= out.tiles, "spmv_dot_tiles");
        let first = tiles.start * TILE_ROWS;
        let rows = (tiles.end * TILE_ROWS).min(a.nrows).saturating_sub(first);
        if rows == 0 {
            return Ok(true);
        }
        let at = |base: u64, index: usize, bytes: usize| base + (index * bytes) as u64;
        let element = 8 * words;
        let f = self.kernels.function(&name)?;
        let nrows = rows as i32;
        let row_ptr = at(a.row_ptr.device_ptr(&self.stream).0, first, 4);
        let mut args = self.stream.launch_builder(&f);
        args.arg(&nrows).arg(&row_ptr);
        let slice_ptr = a
            .slice_ptr
            .as_ref()
            .map(|s| at(s.device_ptr(&self.stream).0, first / SELL_ROWS, 4));
        if let Some(slice_ptr) = &slice_ptr {
            args.arg(slice_ptr);
        }
        let w = at(p.words.device_ptr(&self.stream).0, first, element);
        let q_at = at(q.words.device_ptr(&self.stream).0, first, element);
        let partial = at(out.first.words.device_ptr(&self.stream).0, tiles.start, element);
        args.arg(&a.col_idx).arg(&a.values);
        args.vec(p).arg(&w).arg(&q_at).arg(&partial);
        // SAFETY: spmv_dot_{p}_{sell,nt1} as in `spmv_dots_partial_into`, over the rows from
        // `first` (a multiple of TILE_ROWS and of the slices' SELL_ROWS): row_ptr, slice_ptr, w,
        // q and the partials moved there, the entries and x addressed as before.
        unsafe { args.launch(Self::reduction(tiles.len())) }.map_err(driver_error(&name))?;
        Ok(true)
    }

    /// `{op}_{p}(m, partial, rho, out)`: `alpha = rho / s` from the tile partials of `s`
    /// (`cg_alpha`: CG's `<p, q>`; `bicg_alpha`: BiCGStab's `<r~, v>`) into `out[0..3]`.
    pub(super) fn launch_alpha<P: Precision>(
        &self,
        op: &str,
        partials: &TilePartials<P>,
        rho: &P,
        out: &mut CudaVector<P>,
    ) -> Result<()> {
        let (f, name) = self.kernel::<P>(op)?;
        let rho = Self::scalar(rho);
        let m = partials.tiles as i32;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&m).vec(&partials.first);
        push_scalar(&mut args, &rho);
        args.vec(out);
        // SAFETY: {cg,bicg}_alpha_{p}(int m, const A* partial, S rho, T* out), one block of
        // TILE_FINAL_THREADS over the m tile partials; out holds at least three T.
        unsafe { args.launch(Self::tile_final()) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// `q <- A x` with the dots `dots` asks for, in the tiled order (one transfer): fused
    /// where a kernel exists and `fuse` is set. `Backend::spmv_dots_tiled`, and for
    /// `solver bench` and the GPU tests with `fuse` either way.
    pub fn spmv_dots<P: Precision>(
        &self,
        a: &CudaMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CudaVector<P>>,
        q: &mut CudaVector<P>,
        fuse: bool,
    ) -> Result<(P, P)> {
        let partials = self.spmv_dots_partial(a, x, dots, q, fuse)?;
        let first = self.finish_reduction(FinalStage::Tiles, &partials.first, partials.tiles)?;
        let second = match &partials.second {
            Some(second) => self.finish_reduction(FinalStage::Tiles, second, partials.tiles)?,
            None => P::zero(),
        };
        Ok((first, second))
    }

    /// `q <- A p`, returning `<p, q>` in the tiled order (CG's step, for `solver bench`).
    pub fn spmv_dot<P: Precision>(
        &self,
        a: &CudaMatrix,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        fuse: bool,
    ) -> Result<P> {
        let dots = TiledDots::With(p);
        Ok(self.spmv_dots(a, Operand::Own(p), dots, q, fuse)?.0)
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
