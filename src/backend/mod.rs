//! Compute backends: where vectors live and how the kernels under a Krylov loop run.
//!
//! A solver is written once against [`Backend`]; the CPU backend (rayon) is always present, a
//! CUDA backend implements the same trait. Every reduction is deterministic: the same inputs give
//! the same bits whatever the thread count (and, for the CUDA twin, whatever the launch shape).

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;

use crate::error::Result;
use crate::precision::Precision;
use crate::sparse::CsrMatrix;
use std::sync::Arc;

/// Threads per row of the CSR-vector SpMV (thesis ch. 3, Listing 3.1):
/// `NT = max(1, min(32, 2^ceil(log2(nnz/row))))`. The CPU backend sums each row in the same lane
/// order and reduction tree the GPU kernel uses, so both give the same bits.
pub fn spmv_lanes(a: &CsrMatrix) -> usize {
    let mean = a.nnz_per_row_mean();
    if mean <= 1.0 {
        1
    } else {
        (mean.log2().ceil().exp2() as usize).clamp(1, 32)
    }
}

pub trait Backend: Send + Sync {
    /// A vector of `P` values living on this backend.
    type Vector<P: Precision>: Send + Sync;
    /// The f64 CSR matrix as this backend stores it.
    type Matrix: Send + Sync;

    fn name(&self) -> &'static str;

    /// Make the matrix available to the kernels (the CPU shares it, a GPU copies it).
    fn matrix(&self, a: &Arc<CsrMatrix>) -> Result<Self::Matrix>;
    /// A vector of `n` zeros.
    fn zeros<P: Precision>(&self, n: usize) -> Result<Self::Vector<P>>;
    /// A vector of `P` holding these doubles exactly.
    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<Self::Vector<P>>;
    /// Copy a vector back to host memory.
    fn to_host<P: Precision>(&self, x: &Self::Vector<P>) -> Result<Vec<P>>;
    fn len<P: Precision>(&self, x: &Self::Vector<P>) -> usize;

    /// `y <- A x`, products and sums in `P`.
    fn spmv<P: Precision>(
        &self,
        a: &Self::Matrix,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<()>;
    /// `r <- b - A x`, in `P`, with `b` in double.
    fn residual<P: Precision>(
        &self,
        a: &Self::Matrix,
        b: &Self::Vector<f64>,
        x: &Self::Vector<P>,
        r: &mut Self::Vector<P>,
    ) -> Result<()>;
    /// `<x, y>` with a reduction order fixed by the vector length alone.
    fn dot<P: Precision>(&self, x: &Self::Vector<P>, y: &Self::Vector<P>) -> Result<P>;
    /// `||x||_2`.
    fn nrm2<P: Precision>(&self, x: &Self::Vector<P>) -> Result<P> {
        Ok(self.dot(x, x)?.sqrt())
    }
    /// `y <- alpha x + y`.
    fn axpy<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<()>;
    /// `y <- x + beta y`.
    fn xpay<P: Precision>(
        &self,
        x: &Self::Vector<P>,
        beta: &P,
        y: &mut Self::Vector<P>,
    ) -> Result<()>;
    /// `z <- alpha x + y`.
    fn axpyz<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &Self::Vector<P>,
        z: &mut Self::Vector<P>,
    ) -> Result<()>;
    /// `y <- x`.
    fn copy<P: Precision>(&self, x: &Self::Vector<P>, y: &mut Self::Vector<P>) -> Result<()>;
    /// `y <- x` converted between precisions through double-double (exact for f64 <-> dd).
    fn convert<P: Precision, Q: Precision>(
        &self,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<Q>,
    ) -> Result<()>;
    /// Wait for queued work (a no-op on the CPU); timings call it before reading the clock.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// BiCGStab's direction update `p <- r + beta (p - omega v)`. Backends fuse it.
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &Self::Vector<P>,
        beta: &P,
        omega: &P,
        v: &Self::Vector<P>,
        p: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.axpy(&omega.neg(), v, p)?;
        self.xpay(r, beta, p)
    }
}
