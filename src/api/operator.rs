//! [`LinearOperator`]: a matrix the calling program applies itself (matrix-free).

use crate::precision::Precision;
use crate::sparse::{ColumnIndex, CsrView, Symmetry};
use rayon::prelude::*;

/// A square matrix `A` the calling program applies itself, `y = A x`, in the solve's working
/// precision: a stencil, a matrix held in another library's format, a product of operators.
/// [`Solver::solve_operator`](crate::Solver::solve_operator) solves `A x = b` with it, by any
/// method and in any precision, with a [`Preconditioner`](crate::Preconditioner) of your own.
///
/// `apply` is generic over the working precision, so one implementation serves `f64`, td, dd,
/// qd and mp: write it with [`Precision`]'s operations (`add`, `mul`, `mul_f64`,
/// `add_mul_f64`...) and the products are computed in that precision, as the built-in SpMV
/// computes them. An operator that rounds to double on the way (a double-precision library
/// call, say) caps the true residual at double's level, whatever the working precision.
///
/// What a matrix-free solve gives up, and why:
/// - It runs on the CPU backend. `apply` is host code; the CUDA backend would need the operator
///   as a device kernel, so [`BackendChoice::Cuda`](crate::BackendChoice::Cuda) is an error and
///   `Auto` takes the CPU. For the GPU, hand the solver the matrix as a [`CsrMatrix`](crate::CsrMatrix).
/// - ILU(0) needs the matrix's entries: with an operator, precondition with your own
///   [`Preconditioner`](crate::Preconditioner).
/// - Each iteration runs its steps one at a time (the CSR path fuses the SpMV with the dot
///   products that follow it), with the same bits as the fused steps.
/// - Triple precision (td) stores its vectors as two arrays; `apply` gets a copy of `x` as
///   [`Td`](crate::Td) values and `y` is copied back, one copy each way per application.
///
/// A solve's results depend only on `apply`'s bits: an `apply` that sums each row in the
/// order the CSR path does (entries in column order, from zero, with `add_mul_f64`, for
/// matrices of up to 15 entries per row on average) gives the bits of the CSR solve.
///
/// ```
/// use precsolve::{Dd, LinearOperator, Precision, Solver};
///
/// /// The 1-D Laplacian `tridiag(-1, 2, -1)`, never stored.
/// struct Laplacian1d(usize);
///
/// impl LinearOperator for Laplacian1d {
///     fn nrows(&self) -> usize {
///         self.0
///     }
///     fn apply<P: Precision>(&self, x: &[P], y: &mut [P]) {
///         for (i, y) in y.iter_mut().enumerate() {
///             let mut sum = P::zero();
///             if i > 0 {
///                 sum = sum.add_mul_f64(-1.0, &x[i - 1]);
///             }
///             sum = sum.add_mul_f64(2.0, &x[i]);
///             if i + 1 < self.0 {
///                 sum = sum.add_mul_f64(-1.0, &x[i + 1]);
///             }
///             *y = sum;
///         }
///     }
///     fn symmetric(&self) -> bool {
///         true
///     }
/// }
///
/// let b = vec![1.0; 100];
/// let out = Solver::auto().precision::<Dd>().tol(1e-25).solve_operator(&Laplacian1d(100), &b)?;
/// assert_eq!(out.info.method, "cg");
/// assert!(out.converged() && out.true_residual <= 1e-25);
/// # Ok::<(), precsolve::Error>(())
/// ```
pub trait LinearOperator: Send + Sync {
    /// The number of rows, and of columns: the solvers need a square operator.
    fn nrows(&self) -> usize;

    /// `y = A x` in the precision `P`. Both slices have `nrows` entries; write every entry of
    /// `y` (it arrives holding an earlier vector, not zeros). A non-finite entry ends the solve
    /// as a non-finite matrix entry would: with [`StopReason::NonFinite`](crate::StopReason).
    fn apply<P: Precision>(&self, x: &[P], y: &mut [P]);

    /// Whether `A` is symmetric: [`Solver::auto`](crate::Solver::auto) then takes CG, otherwise
    /// BiCGStab. Default `false`.
    fn symmetric(&self) -> bool {
        false
    }
}

/// A borrowed CSR matrix applied row by row in the CSR kernels' order: each row's entries dealt
/// to the lanes the kernels use for its density (entry `k` to lane `k mod lanes`, each lane
/// summing from zero with `add_mul_f64`), then the lanes added by the halving tree. Rows are
/// independent, so they are spread over the thread pool without changing a bit.
impl<I: ColumnIndex> LinearOperator for CsrView<'_, I> {
    fn nrows(&self) -> usize {
        CsrView::nrows(self)
    }

    fn apply<P: Precision>(&self, x: &[P], y: &mut [P]) {
        const ROWS_PER_TASK: usize = 2048;
        let lanes = crate::backend::spmv_lanes_for(self.nnz(), CsrView::nrows(self));
        y.par_chunks_mut(ROWS_PER_TASK)
            .enumerate()
            .for_each(|(task, rows)| {
                crate::backend::cpu::view_rows(self, lanes, x, task * ROWS_PER_TASK, rows)
            });
    }

    fn symmetric(&self) -> bool {
        self.symmetry() == Symmetry::Symmetric
    }
}
