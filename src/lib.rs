//! Sparse Krylov solvers (CG, BiCGStab) whose vectors and scalars run in double, triple,
//! double-double or quad-double precision (and MPFR's, feature `mpfr`), on the CPU and on
//! NVIDIA GPUs, with the same bits on both; and the report of what the extra precision bought:
//! iterations, the true residual `||b - A x|| / ||b||`, time.
//!
//! # Load, solve, read the report
//!
//! ```
//! use precsolve::{Dd, Solver};
//!
//! // A Matrix Market file: precsolve::read_matrix_market("A.mtx")?
//! let a = precsolve::read_matrix_market("matrices/graded_spd_400.mtx")?;
//! let b = vec![1.0; a.nrows()];
//! let out = Solver::cg().precision::<Dd>().tol(1e-12).solve(&a, &b)?;
//! println!(
//!     "{}: {} iterations, true residual {:e}, {:.3} ms",
//!     out.stop_reason,
//!     out.iterations,
//!     out.true_residual,
//!     out.times.total * 1e3
//! );
//! assert!(out.converged());
//! let x: Vec<f64> = out.x_f64(); // out.x: Vec<Dd>, the solution as computed
//! # assert_eq!(x.len(), 400);
//! # Ok::<(), precsolve::Error>(())
//! ```
//!
//! A solve that runs but does not converge is not an error: [`SolveInfo::stop_reason`] says
//! why it stopped (iteration limit, breakdown, an indefinite matrix for CG...), and
//! [`SolveInfo::true_residual`] is always recomputed from `x` (in double-double, or in the
//! working precision where that is more precise: qd, mp), so a
//! recurrence residual that lies is visible. Errors ([`Error`]) are bad input, a zero ILU(0)
//! pivot, and backend failures; a file's errors name its line.
//!
//! # Choose the precision
//!
//! The matrix and `b` stay in double; the Krylov vectors and scalars are in the solver's
//! precision type: `f64`, [`Td`] (triple, 12 bytes an element), [`Dd`] (double-double, about
//! 106 bits) or [`Qd`] (quad-double, about 212 bits). Where it is known only at run time (a
//! command-line flag), parse a [`WorkingPrecision`] and call [`Solver::solve_in`]: `x` comes back
//! as a [`SolutionVector`] in that precision. On ill-conditioned matrices each extra word
//! shows in the iteration count and in the true residual reached:
//!
//! ```
//! use precsolve::{Solver, WorkingPrecision};
//!
//! let a = precsolve::read_matrix_market("matrices/graded_spd_400.mtx")?;
//! let b = vec![1.0; a.nrows()];
//! for p in [WorkingPrecision::F64, WorkingPrecision::Dd, WorkingPrecision::Qd] {
//!     let out = Solver::cg().tol(1e-12).solve_in(p, &a, &b)?;
//!     println!("{}: {} iterations, true residual {:.1e}", p.name(), out.info.iterations,
//!              out.info.true_residual);
//! }
//! # Ok::<(), precsolve::Error>(())
//! ```
//!
//! Not knowing in advance which matrices need the extra words, solve in
//! [`WorkingPrecision::Ladder`] (`"auto"`, or `"ladder:f64,dd"`): the solve starts in double
//! and goes on from its iterate in the next precision where the one before stops making
//! progress, by [`Escalation`]'s rules ([`Solver::escalation`]); [`SolveInfo::phases`] reports
//! each precision's part.
//!
//! # Preconditioner, method, backend
//!
//! - [`Solver::ilu0`] factors ILU(0) on `A`'s pattern and applies it in double in every
//!   precision (thesis section 4.3.2), past a zero pivot or a missing diagonal entry by a
//!   row permutation that puts a maximum product matching on the diagonal (not for CG) and a
//!   growing diagonal shift ([`SolveInfo::ilu_remedy`]); [`Solver::ilu0_shifted`] fixes the
//!   shift.
//! - [`Solver::preconditioner`] takes a [`Preconditioner`] of your own, applied in double.
//! - [`Solver::cg`] for symmetric positive definite matrices, [`Solver::bicgstab`] and
//!   [`Solver::gmres`] (restarted, right-preconditioned) for general ones, [`Solver::auto`] for CG where the matrix was declared symmetric
//!   ([`CsrMatrix::with_symmetry`]).
//! - [`Solver::backend`]: [`BackendChoice::Auto`] (default) runs where it estimates the solve
//!   faster: on the GPU where one is usable (the `cuda` feature, default; the CUDA libraries
//!   are loaded at run time, so a build without them runs on the CPU) and the matrix is large
//!   enough, else on the CPU's rayon threads.
//! - [`Solver::on_iteration`] watches every iteration and can stop the solve.
//!
//! # Matrices a program applies itself
//!
//! A [`LinearOperator`] is `y = A x` written by the program (a stencil, a product, a matrix in
//! another library's format), generic over the working precision so the products are computed
//! in it. [`Solver::solve_operator`] and [`Solver::solve_operator_in`] solve with it by every
//! method, in every precision and ladder, on the CPU, with your own [`Preconditioner`] (ILU(0)
//! needs the entries); an `apply` that sums rows as the CSR kernel does gives the CSR solve's
//! bits. `cargo run --example matrix_free` shows one.
//!
//! # Matrices a program already holds
//!
//! [`CsrView`] borrows a program's CSR arrays without copying them: raw slices with any
//! integer column index ([`CsrView::new`]), an `sprs` view (feature `sprs`, a slice of rows
//! included), an `nalgebra_sparse::CsrMatrix` (feature `nalgebra`); checked as a matrix is, and
//! solved through [`Solver::solve_operator`] with the bits of the copied matrix. The GPU and
//! ILU(0) read the crate's own layout, [`CsrMatrix`] (`i32` column indices):
//! [`CsrMatrix::from_slices`] validates and copies raw arrays; `TryFrom` takes an owned
//! `sprs::CsMatI<f64, i32>` without copying and an owned `nalgebra_sparse::CsrMatrix<f64>`
//! keeping its offsets and values. [`poisson2d`] and [`poisson3d`] generate test problems.
//!
//! # Features
//!
//! `cuda` (default): the GPU backend. `cli` (default): the `solver` command line and what only
//! it needs (studies, plots, configuration); an embedding program can depend on
//! `precsolve = { version = "0.1", default-features = false, features = ["cuda"] }` and
//! compile none of it. `mpfr`: `mp:<bits>` through MPFR (needs m4 and a C compiler).
//! `serde`: `Serialize` for the reports. `sprs`, `nalgebra`: the conversions above.
//! `internals`: the crate's modules, for its own binary, tests and benches (no semver promise).
#![deny(missing_docs)]

/// Declares the crate's internal modules: private to embedders, public (but hidden from the
/// docs, with no semver promise) under the `internals` feature, which the `solver` binary, the
/// tests and the benches use to reach the kernels one by one.
macro_rules! internal_modules {
    ($($(#[$attr:meta])* $name:ident;)*) => {$(
        $(#[$attr])*
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        $(#[$attr])*
        #[cfg(not(feature = "internals"))]
        #[allow(dead_code, unused_imports)]
        mod $name;
    )*};
}

mod api;

internal_modules! {
    backend;
    distributed;
    escape;
    precision;
    precond;
    solver;
    sparse;
}

/// The command line's own modules (feature `cli`): studies, reports, configuration, `bench`.
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod batch;
#[cfg(all(feature = "cli", feature = "cuda"))]
#[doc(hidden)]
pub mod bench;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod config;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod output;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod report;

mod error;

pub use api::{Control, LinearOperator, Preconditioner, Solved, Solver, read_matrix_market};
pub use error::{Error, Result};
#[cfg(feature = "mpfr")]
pub use precision::Mpfr;
pub use precision::mpfloat::MpVector;
pub use precision::{Dd, MpFloat, Precision, Qd, Td};
pub use precond::ilu0::IluRemedy;
pub use solver::bicgstab::Shadow;
pub use solver::dispatch::{BackendChoice, Method, Solution, SolutionVector, WorkingPrecision};
pub use solver::{Escalation, Ladder, Orthogonalization, Phase};
pub use solver::{HistoryPoint, Iteration, ResidualNorm, SolveInfo, SolveTimes, StopReason};
pub use sparse::{ColumnIndex, CsrView};
pub use sparse::{CsrError, CsrMatrix, MmError, MmErrorKind, Symmetry, load_matrix};
pub use sparse::{poisson2d, poisson3d};

/// Short for [`CsrMatrix`].
pub type Csr = CsrMatrix;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctests {}
