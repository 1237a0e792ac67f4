//! CPU backend: vectors are `Vec<P>`, kernels run on rayon's thread pool.
//!
//! Reproducibility: SpMV rows are independent; dot products reduce fixed-size chunks (whose
//! boundaries depend on the length alone) in the GPU kernels' order and then reduce the chunk
//! results the same way, so the result is the same bits with 1, 2 or 64 threads, and on the GPU.

mod kernels;
mod simd_dd;
pub mod trisolve;

use super::{Backend, spmv_lanes};
use crate::error::Result;
use crate::precision::Precision;
use crate::precond::ilu0::Ilu0Factors;
use crate::sparse::CsrMatrix;
use rayon::prelude::*;
use std::sync::{Arc, OnceLock};

pub use kernels::{DOT_CHUNK, DOT_PER_THREAD, DOT_THREADS};
pub use trisolve::CpuIlu;

/// Rows per parallel task in SpMV: large enough to amortise scheduling, small enough to balance;
/// a multiple of the SIMD kernel's rows at once (4 or 8), so that tasks hold whole groups of rows.
const SPMV_ROWS_PER_TASK: usize = 4096;
/// Elements per parallel task in the vector updates.
const VECTOR_CHUNK: usize = 1 << 14;

#[derive(Clone, Debug, Default)]
pub struct CpuBackend;

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
        CpuMatrix {
            csr,
            lanes,
            sell: Arc::default(),
        }
    }

    /// The layout of the SIMD double-double SpMV when `P` is `Dd` and the CPU can run it.
    fn sell_for<P: Precision>(&self) -> Option<&simd_dd::Sell> {
        let dd = simd_dd::as_dd::<P>(&[]).is_some();
        let level = simd_dd::level().filter(|_| dd)?;
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
}

impl Backend for CpuBackend {
    type Vector<P: Precision> = Vec<P>;
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

    fn ilu_apply<P: Precision>(&self, ilu: &mut CpuIlu, r: &Vec<P>, z: &mut Vec<P>) -> Result<()> {
        ilu.apply(r, z);
        Ok(())
    }

    fn zeros<P: Precision>(&self, n: usize) -> Result<Vec<P>> {
        Ok(vec![P::zero(); n])
    }

    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<Vec<P>> {
        Ok(values.par_iter().map(|&v| P::from_f64(v)).collect())
    }

    fn upload<P: Precision>(&self, values: &[P]) -> Result<Vec<P>> {
        Ok(values.to_vec())
    }

    fn to_host<P: Precision>(&self, x: &Vec<P>) -> Result<Vec<P>> {
        Ok(x.clone())
    }

    fn len<P: Precision>(&self, x: &Vec<P>) -> usize {
        x.len()
    }

    fn spmv<P: Precision>(&self, a: &CpuMatrix, x: &Vec<P>, y: &mut Vec<P>) -> Result<()> {
        let csr = &*a.csr;
        assert_eq!(x.len(), csr.ncols(), "spmv: x length");
        assert_eq!(y.len(), csr.nrows(), "spmv: y length");
        let sell = a.sell_for::<P>();
        y.par_chunks_mut(SPMV_ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, out)| {
                let first = task * SPMV_ROWS_PER_TASK;
                kernels::spmv_rows(csr, a.lanes, sell, x, first, out, None)
            });
        Ok(())
    }

    fn residual<P: Precision>(
        &self,
        a: &CpuMatrix,
        b: &Vec<f64>,
        x: &Vec<P>,
        r: &mut Vec<P>,
    ) -> Result<()> {
        let csr = &*a.csr;
        assert_eq!(x.len(), csr.ncols(), "residual: x length");
        assert_eq!(b.len(), csr.nrows(), "residual: b length");
        assert_eq!(r.len(), csr.nrows(), "residual: r length");
        let sell = a.sell_for::<P>();
        r.par_chunks_mut(SPMV_ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, out)| {
                let first = task * SPMV_ROWS_PER_TASK;
                let b = &b[first..first + out.len()];
                kernels::spmv_rows(csr, a.lanes, sell, x, first, out, Some(b))
            });
        Ok(())
    }

    fn dot<P: Precision>(&self, x: &Vec<P>, y: &Vec<P>) -> Result<P> {
        assert_eq!(x.len(), y.len(), "dot: lengths");
        // The partials and their sum stay in `P::Acc`; the result is rounded to `P` once.
        let partials: Vec<P::Acc> = x
            .par_chunks(DOT_CHUNK)
            .zip(y.par_chunks(DOT_CHUNK))
            .map(|(x, y)| kernels::dot_chunk(x, y))
            .collect();
        Ok(P::from_acc(kernels::sum_partials(&partials)))
    }

    fn axpy<P: Precision>(&self, alpha: &P, x: &Vec<P>, y: &mut Vec<P>) -> Result<()> {
        assert_eq!(x.len(), y.len(), "axpy: lengths");
        y.par_chunks_mut(VECTOR_CHUNK)
            .zip(x.par_chunks(VECTOR_CHUNK))
            .for_each(|(y, x)| kernels::axpy_chunk(alpha, x, y));
        Ok(())
    }

    fn xpay<P: Precision>(&self, x: &Vec<P>, beta: &P, y: &mut Vec<P>) -> Result<()> {
        assert_eq!(x.len(), y.len(), "xpay: lengths");
        y.par_chunks_mut(VECTOR_CHUNK)
            .zip(x.par_chunks(VECTOR_CHUNK))
            .for_each(|(y, x)| kernels::xpay_chunk(x, beta, y));
        Ok(())
    }

    fn axpyz<P: Precision>(&self, alpha: &P, x: &Vec<P>, y: &Vec<P>, z: &mut Vec<P>) -> Result<()> {
        assert!(x.len() == y.len() && y.len() == z.len(), "axpyz: lengths");
        z.par_chunks_mut(VECTOR_CHUNK)
            .zip(x.par_chunks(VECTOR_CHUNK).zip(y.par_chunks(VECTOR_CHUNK)))
            .for_each(|(z, (x, y))| kernels::axpyz_chunk(alpha, x, y, z));
        Ok(())
    }

    fn copy<P: Precision>(&self, x: &Vec<P>, y: &mut Vec<P>) -> Result<()> {
        assert_eq!(x.len(), y.len(), "copy: lengths");
        y.par_chunks_mut(VECTOR_CHUNK)
            .zip(x.par_chunks(VECTOR_CHUNK))
            .for_each(|(y, x)| y.clone_from_slice(x));
        Ok(())
    }

    fn convert<P: Precision, Q: Precision>(&self, x: &Vec<P>, y: &mut Vec<Q>) -> Result<()> {
        assert_eq!(x.len(), y.len(), "convert: lengths");
        y.par_chunks_mut(VECTOR_CHUNK)
            .zip(x.par_chunks(VECTOR_CHUNK))
            .for_each(|(y, x)| {
                for (yi, xi) in y.iter_mut().zip(x) {
                    *yi = Q::from_dd(xi.to_dd());
                }
            });
        Ok(())
    }

    fn bicgstab_direction<P: Precision>(
        &self,
        r: &Vec<P>,
        beta: &P,
        omega: &P,
        v: &Vec<P>,
        p: &mut Vec<P>,
    ) -> Result<()> {
        assert!(
            r.len() == v.len() && v.len() == p.len(),
            "bicgstab_direction: lengths"
        );
        p.par_chunks_mut(VECTOR_CHUNK)
            .zip(r.par_chunks(VECTOR_CHUNK).zip(v.par_chunks(VECTOR_CHUNK)))
            .for_each(|(p, (r, v))| kernels::bicgstab_direction_chunk(r, beta, omega, v, p));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
