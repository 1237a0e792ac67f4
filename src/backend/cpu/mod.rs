//! CPU backend: vectors are laid out as [`Precision::Vector`] says (`Vec<P>`, or td's structure
//! of arrays), kernels run on the backend's thread team (`team.rs`, split as `tasks.rs` says).
//!
//! Reproducibility: SpMV rows are independent; dot products reduce fixed-size chunks (whose
//! boundaries depend on the length alone) in the GPU kernels' order and then reduce the chunk
//! results the same way, so the result is the same bits with 1, 2 or 64 threads, and on the GPU.

mod blocks;
mod kernels;
mod simd_dd;
mod tasks;
mod team;
pub mod trisolve;

use super::{Backend, Operand, OperandOf, TiledDots, spmv_lanes};
use crate::error::Result;
use crate::precision::{HostSlice, HostSliceMut, HostVector, Precision, SliceMutOf, SliceOf};
use crate::precond::ilu0::Ilu0Factors;
use crate::sparse::CsrMatrix;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

pub use kernels::{
    DOT_CHUNK, DOT_PER_THREAD, DOT_THREADS, TILE_ROWS, copy_chunk, finish_lanes, sum_partials,
    sum_tiles, view_rows,
};
pub use blocks::CpuLink;
pub use tasks::{element_cost, threads_for, use_threads};
pub use trisolve::CpuIlu;

/// SpMV tasks start at multiples of this many rows: whole groups of the SIMD kernel's rows at
/// once (4 or 8); for precisions with the DD SIMD layout, whole windows of its reordered rows
/// (`simd_dd::SORT_WINDOW`). How many tasks, and where they end, is the work's to say
/// (`tasks.rs`).
const SPMV_ROW_ALIGN: usize = 64;
// The fused SpMV and dot tasks start at multiples of TILE_ROWS: whole windows too.
const _: () = assert!(TILE_ROWS.is_multiple_of(simd_dd::SORT_WINDOW));
/// Elements per piece of the vector updates (pieces run on the pool when the work is worth it).
const VECTOR_CHUNK: usize = 1 << 14;

#[derive(Clone, Debug, Default)]
pub struct CpuBackend;

/// A vector on the CPU backend: `P`'s host layout ([`Precision::Vector`]: an array of values,
/// or for td the thesis's structure of arrays, a double array and an `i32` array).
#[derive(Clone, Debug, PartialEq)]
pub struct CpuVector<P: Precision>(pub P::Vector);

impl<P: Precision> CpuVector<P> {
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The values, in a new `Vec`.
    pub fn to_values(&self) -> Vec<P> {
        self.0.to_values()
    }
    /// Read view of the whole vector (what the kernels take).
    pub fn slice(&self) -> SliceOf<'_, P> {
        self.0.as_host_slice()
    }
    /// Write view of the whole vector.
    pub fn slice_mut(&mut self) -> SliceMutOf<'_, P> {
        self.0.as_host_slice_mut()
    }
}

impl<P: Precision> From<Vec<P>> for CpuVector<P> {
    fn from(values: Vec<P>) -> Self {
        CpuVector(P::Vector::from_values(values))
    }
}

/// The matrix as the CPU kernels see it: shared, plus the lane count of the row sums.
#[derive(Clone, Debug)]
pub struct CpuMatrix {
    pub csr: Arc<CsrMatrix>,
    pub lanes: usize,
    /// The entries regrouped for the SIMD double-double SpMV, built on its first use (of
    /// `csr` as it was then: the kernels check that it still is).
    sell: Arc<OnceLock<simd_dd::Sell>>,
}

impl CpuMatrix {
    pub fn new(csr: Arc<CsrMatrix>) -> Self {
        let lanes = spmv_lanes(&csr);
        Self::with_lanes(csr, lanes)
    }

    /// With the lane count of another matrix's row sums: a rank's block of rows sums them as
    /// the whole matrix does (`crate::distributed`).
    pub fn with_lanes(csr: Arc<CsrMatrix>, lanes: usize) -> Self {
        CpuMatrix {
            csr,
            lanes,
            sell: Arc::default(),
        }
    }

    /// The layout of the SIMD double-double SpMV when `P` is `Dd` and the CPU can run it.
    fn sell_for<P: Precision>(&self) -> Option<&simd_dd::Sell> {
        let level = simd_dd::level().filter(|_| simd_dd::has_kernels::<P>())?;
        let sell = self
            .sell
            .get_or_init(|| simd_dd::Sell::new(&self.csr, level.width()));
        sell.built_for(&self.csr).then_some(sell)
    }
}

impl CpuBackend {
    pub fn new() -> Self {
        CpuBackend
    }

    /// `dot`'s chunk partials, in order, before [`sum_partials`](kernels::sum_partials).
    pub fn dot_partials<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<P>) -> Vec<P::Acc> {
        dot_partials_of::<P>(x.slice(), DotOperand::Own(y.slice()))
    }

    /// `dot_wide`'s chunk partials, in order.
    pub fn dot_wide_partials<P: Precision>(
        &self,
        x: &CpuVector<P>,
        y: &CpuVector<f64>,
    ) -> Vec<P::Acc> {
        dot_partials_of::<P>(x.slice(), DotOperand::Wide(&y.0))
    }

    /// `q <- A x` with the tile partials of the dots `dots` asks for (see
    /// [`Backend::spmv_dots_tiled`]), before [`sum_tiles`](kernels::sum_tiles); `x` may be
    /// longer than `q` (a rank's rows of `A` with its halo).
    /// Only `rows` (starting a tile) are computed.
    pub fn spmv_dot_tiles<P: Precision>(
        &self,
        a: &CpuMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CpuVector<P>>,
        q: &mut CpuVector<P>,
        rows: std::ops::Range<usize>,
    ) -> [Vec<P::Acc>; 2] {
        fused::spmv_dot_tiles(a, x, dots, q, rows)
    }

    /// `dot_tiled`'s tile partials, in order, before [`sum_tiles`](kernels::sum_tiles).
    pub fn dot_tiles<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<P>) -> Vec<P::Acc> {
        fused::dot_tiles(x, y)
    }
}

impl Backend for CpuBackend {
    type Vector<P: Precision> = CpuVector<P>;
    type Matrix = CpuMatrix;
    type Ilu = CpuIlu;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn matrix(&self, a: &Arc<CsrMatrix>) -> Result<CpuMatrix> {
        Ok(CpuMatrix::new(Arc::clone(a)))
    }

    fn ilu(&self, factors: &Arc<Ilu0Factors>) -> Result<CpuIlu> {
        Ok(CpuIlu::new(Arc::clone(factors)))
    }

    fn ilu_apply<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CpuIlu,
        r: &CpuVector<P>,
        z: &mut CpuVector<Z>,
    ) -> Result<()> {
        ilu.apply::<P, Z>(r.slice(), z.slice_mut());
        Ok(())
    }

    fn zeros<P: Precision>(&self, n: usize) -> Result<CpuVector<P>> {
        Ok(CpuVector(P::Vector::filled(n, &P::zero())))
    }

    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<CpuVector<P>> {
        let bits = crate::precision::mp::current_bits();
        let values = values
            .par_iter()
            .map(|&v| crate::precision::mp::carried(bits, || P::from_f64(v)))
            .collect();
        Ok(CpuVector(P::Vector::from_values(values)))
    }

    fn upload<P: Precision>(&self, values: &[P]) -> Result<CpuVector<P>> {
        Ok(CpuVector::from(values.to_vec()))
    }

    fn to_host<P: Precision>(&self, x: &CpuVector<P>) -> Result<Vec<P>> {
        Ok(x.to_values())
    }

    fn len<P: Precision>(&self, x: &CpuVector<P>) -> usize {
        x.len()
    }

    fn spmv<P: Precision>(
        &self,
        a: &CpuMatrix,
        x: &CpuVector<P>,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        let (sell, x) = (a.sell_for::<P>(), x.slice());
        row_tasks(a, x.len(), y, "spmv", |first, out| {
            kernels::spmv_rows::<P>(&a.csr, a.lanes, sell, x, first, out, None)
        });
        Ok(())
    }

    fn residual<P: Precision>(
        &self,
        a: &CpuMatrix,
        b: &CpuVector<f64>,
        x: &CpuVector<P>,
        r: &mut CpuVector<P>,
    ) -> Result<()> {
        assert_eq!(b.len(), a.csr.nrows(), "residual: b length");
        let (sell, x) = (a.sell_for::<P>(), x.slice());
        row_tasks(a, x.len(), r, "residual", |first, out| {
            let b = &b.0[first..first + out.len()];
            kernels::spmv_rows::<P>(&a.csr, a.lanes, sell, x, first, out, Some(b))
        });
        Ok(())
    }

    fn dot_tiled<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<P>) -> Result<P> {
        Ok(P::from_acc(kernels::sum_tiles(&self.dot_tiles(x, y))))
    }

    fn spmv_dots_tiled<P: Precision>(
        &self,
        a: &CpuMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, CpuVector<P>>,
        q: &mut CpuVector<P>,
    ) -> Result<(P, P)> {
        Ok(fused::spmv_dots(a, x, dots, q))
    }

    fn dot<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<P>) -> Result<P> {
        // The partials and their sum stay in `P::Acc`; the result is rounded to `P` once.
        Ok(P::from_acc(kernels::sum_partials(&self.dot_partials(x, y))))
    }

    fn dot_wide<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<f64>) -> Result<P> {
        let partials = self.dot_wide_partials(x, y);
        Ok(P::from_acc(kernels::sum_partials(&partials)))
    }

    fn xpay_wide<P: Precision>(
        &self,
        x: &CpuVector<f64>,
        beta: &P,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        wide_update(x, y, "xpay", |x, y| {
            kernels::xpay_chunk_wide::<P>(x, beta, y)
        });
        Ok(())
    }

    fn spmv_wide<P: Precision>(
        &self,
        a: &CpuMatrix,
        x: &CpuVector<f64>,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        let sell = a.sell_for::<P>();
        row_tasks(a, x.len(), y, "spmv", |first, out| {
            kernels::spmv_rows_wide::<P>(&a.csr, a.lanes, sell, &x.0, first, out)
        });
        Ok(())
    }

    fn axpy_wide<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<f64>,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        wide_update(x, y, "axpy", |x, y| {
            kernels::axpy_chunk_wide::<P>(alpha, x, y)
        });
        Ok(())
    }

    fn axpy<P: Precision>(&self, alpha: &P, x: &CpuVector<P>, y: &mut CpuVector<P>) -> Result<()> {
        same_lengths(&[x.len(), y.len()], "axpy");
        let work = work::<P>(y.len());
        let pieces: Vec<_> = write::<P>(y).into_iter().zip(read::<P>(x)).collect();
        tasks::for_each(pieces, work, |_, (y, x)| {
            kernels::axpy_chunk::<P>(alpha, x, y)
        });
        Ok(())
    }

    fn xpay<P: Precision>(&self, x: &CpuVector<P>, beta: &P, y: &mut CpuVector<P>) -> Result<()> {
        same_lengths(&[x.len(), y.len()], "xpay");
        let work = work::<P>(y.len());
        let pieces: Vec<_> = write::<P>(y).into_iter().zip(read::<P>(x)).collect();
        tasks::for_each(pieces, work, |_, (y, x)| {
            kernels::xpay_chunk::<P>(x, beta, y)
        });
        Ok(())
    }

    fn axpyz<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
        z: &mut CpuVector<P>,
    ) -> Result<()> {
        same_lengths(&[x.len(), y.len(), z.len()], "axpyz");
        let work = work::<P>(z.len());
        let inputs = read::<P>(x).into_iter().zip(read::<P>(y));
        let pieces: Vec<_> = write::<P>(z).into_iter().zip(inputs).collect();
        tasks::for_each(pieces, work, |_, (z, (x, y))| {
            kernels::axpyz_chunk::<P>(alpha, x, y, z)
        });
        Ok(())
    }

    fn copy<P: Precision>(&self, x: &CpuVector<P>, y: &mut CpuVector<P>) -> Result<()> {
        same_lengths(&[x.len(), y.len()], "copy");
        let work = work::<P>(y.len());
        let pieces: Vec<_> = write::<P>(y).into_iter().zip(read::<P>(x)).collect();
        tasks::for_each(pieces, work, |_, (y, x)| kernels::copy_chunk::<P>(x, y));
        Ok(())
    }

    fn convert<P: Precision, Q: Precision>(
        &self,
        x: &CpuVector<P>,
        y: &mut CpuVector<Q>,
    ) -> Result<()> {
        same_lengths(&[x.len(), y.len()], "convert");
        let work = work::<Q>(y.len());
        let pieces: Vec<_> = write::<Q>(y).into_iter().zip(read::<P>(x)).collect();
        tasks::for_each(pieces, work, |_, (y, x)| {
            kernels::convert_chunk::<P, Q>(x, y)
        });
        Ok(())
    }
}

/// The other operand of a dot product: a vector of `P`, or a double vector read widened.
pub enum DotOperand<'a, P: Precision> {
    Own(SliceOf<'a, P>),
    Wide(&'a [f64]),
}

impl<P: Precision> Clone for DotOperand<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: Precision> Copy for DotOperand<'_, P> {}

impl<'a, P: Precision> DotOperand<'a, P> {
    pub fn len(self) -> usize {
        match self {
            DotOperand::Own(y) => y.len(),
            DotOperand::Wide(y) => y.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Elements `range` of the operand.
    pub fn range(self, range: std::ops::Range<usize>) -> Self {
        match self {
            DotOperand::Own(y) => {
                DotOperand::Own(y.split_at(range.start).1.split_at(range.len()).0)
            }
            DotOperand::Wide(y) => DotOperand::Wide(&y[range]),
        }
    }
}

/// The chunk partials of `<x, y>` over slices that start a chunk, in order, on the pool.
pub fn dot_partials_of<P: Precision>(x: SliceOf<'_, P>, y: DotOperand<'_, P>) -> Vec<P::Acc> {
    assert_eq!(x.len(), y.len(), "dot: lengths");
    let starts: Vec<usize> = (0..x.len()).step_by(DOT_CHUNK).collect();
    tasks::map(starts, work::<P>(x.len()), |_, start| {
        let range = start..(start + DOT_CHUNK).min(x.len());
        let xs = x.split_at(range.start).1.split_at(range.len()).0;
        match y.range(range) {
            DotOperand::Own(ys) => kernels::dot_chunk::<P>(xs, ys),
            DotOperand::Wide(ys) => kernels::dot_chunk_wide::<P>(xs, ys),
        }
    })
}

/// [`kernels::dot_lanes`] over either kind of operand.
pub fn dot_lanes_of<P: Precision>(x: SliceOf<'_, P>, y: DotOperand<'_, P>, lanes: &mut [P::Acc]) {
    match y {
        DotOperand::Own(y) => kernels::dot_lanes::<P, _>(x, kernels::Native(y), lanes),
        DotOperand::Wide(y) => kernels::dot_lanes::<P, _>(x, kernels::Widened(y), lanes),
    }
}

/// `x` in pieces of `VECTOR_CHUNK` elements for the thread pool.
fn read<P: Precision>(x: &CpuVector<P>) -> Vec<SliceOf<'_, P>> {
    x.slice().chunks(VECTOR_CHUNK)
}

/// `y` in pieces of `VECTOR_CHUNK` elements for the thread pool.
/// `update(x piece, y piece)` over `y`'s pieces with a double vector `x` read beside them, on
/// the pool where the work is worth it (`what` names the operation in a length mismatch).
fn wide_update<P: Precision>(
    x: &CpuVector<f64>,
    y: &mut CpuVector<P>,
    what: &str,
    update: impl Fn(&[f64], SliceMutOf<'_, P>) + Sync + Send,
) {
    same_lengths(&[x.len(), y.len()], what);
    let work = work::<P>(y.len());
    let pieces: Vec<_> = write::<P>(y)
        .into_iter()
        .zip(x.0.chunks(VECTOR_CHUNK))
        .collect();
    tasks::for_each(pieces, work, |_, (y, x)| update(x, y));
}

fn write<P: Precision>(y: &mut CpuVector<P>) -> Vec<SliceMutOf<'_, P>> {
    y.slice_mut().chunks_mut(VECTOR_CHUNK)
}

/// The rows of `y <- A x` (`x` of `x_len` entries) in tasks balanced by nonzeros (one, on the
/// calling thread, where the matrix is small), `rows(first, out)` computing rows
/// `first..first + out.len()`.
fn row_tasks<P: Precision>(
    a: &CpuMatrix,
    x_len: usize,
    y: &mut CpuVector<P>,
    what: &str,
    rows: impl Fn(usize, SliceMutOf<'_, P>) + Sync + Send,
) {
    assert_eq!(x_len, a.csr.ncols(), "{what}: x length");
    assert_eq!(y.len(), a.csr.nrows(), "{what}: y length");
    let work = spmv_work::<P>(&a.csr);
    // (f64 splits finer: a 256-row step cost bcsstk16's 2-thread f64 iteration about 3%)
    let align = match simd_dd::has_kernels::<P>() {
        true => simd_dd::SORT_WINDOW,
        false => SPMV_ROW_ALIGN,
    };
    let ranges = tasks::row_ranges(&a.csr, tasks::task_count(work), align);
    let pieces = tasks::split_mut(y.slice_mut(), &ranges);
    let jobs: Vec<_> = pieces.into_iter().zip(&ranges).collect();
    tasks::for_each(jobs, work, |_, (out, range)| rows(range.start, out));
}

/// The work of a vector pass over `n` elements of `P`.
fn work<P: Precision>(n: usize) -> usize {
    n.saturating_mul(tasks::cost::<P>())
}

/// The work of an SpMV of `a` with vectors of `P`: its nonzeros and its rows.
fn spmv_work<P: Precision>(a: &CsrMatrix) -> usize {
    (a.nnz() + a.nrows()).saturating_mul(tasks::cost::<P>())
}

fn same_lengths(lengths: &[usize], what: &str) {
    assert!(
        lengths.windows(2).all(|w| w[0] == w[1]),
        "{what}: lengths {lengths:?}"
    );
}

mod fused;
mod solvers;
#[cfg(test)]
mod tests;
