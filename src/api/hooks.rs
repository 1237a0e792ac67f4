//! What a calling program plugs into a solve: a preconditioner of its own, and a callback that
//! watches the iterations and may stop them.

/// A preconditioner the calling program writes itself: `z = M^{-1} r`, in double.
///
/// It is applied as the built-in ILU(0) is (thesis section 4.3.2): the residual is rounded to
/// double, `apply` runs on the host, and `z` is widened back to the working precision, so the
/// solve gives the same bits on every backend and thread count as long as `apply` does.
/// With [`BackendChoice::Auto`](crate::BackendChoice::Auto) a solve with one runs on the CPU;
/// with [`BackendChoice::Cuda`](crate::BackendChoice::Cuda) it runs on the GPU and copies `r`
/// down and `z` up at every application.
///
/// ```
/// use precsolve::{Preconditioner, Solver};
///
/// /// Jacobi: `z_i = r_i / a_ii`.
/// struct Jacobi(Vec<f64>);
///
/// impl Preconditioner for Jacobi {
///     fn apply(&self, r: &[f64], z: &mut [f64]) {
///         for ((z, r), d) in z.iter_mut().zip(r).zip(&self.0) {
///             *z = r / d;
///         }
///     }
///     fn name(&self) -> &'static str {
///         "jacobi"
///     }
/// }
///
/// let a = precsolve::poisson2d(16);
/// let jacobi = Jacobi(a.diagonal());
/// let b = vec![1.0; a.nrows()];
/// let out = Solver::cg().preconditioner(jacobi).tol(1e-10).solve(&a, &b)?;
/// assert!(out.converged());
/// assert_eq!(out.info.precond, "jacobi");
/// # Ok::<(), precsolve::Error>(())
/// ```
pub trait Preconditioner: Send + Sync {
    /// `z = M^{-1} r`. Both slices have the matrix's row count; `z` arrives zeroed. A
    /// non-finite entry in `z` ends the solve with an error naming it.
    fn apply(&self, r: &[f64], z: &mut [f64]);

    /// The name reports give it (`SolveInfo::precond`).
    fn name(&self) -> &'static str {
        "user"
    }
}

/// What a callback asks of the solve after an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on iterating.
    Continue,
    /// Stop now: the solve ends with [`StopReason::Cancelled`](crate::StopReason::Cancelled),
    /// its `x` the iterate of that iteration (on the CPU; on the GPU, of the last iteration of
    /// the batch the device had already run, at most 32 later).
    Stop,
}
