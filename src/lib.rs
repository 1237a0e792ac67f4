//! Sparse Krylov solvers in double and double-double precision.

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

pub use api::{Control, Preconditioner, Solved, Solver, read_matrix_market};
pub use error::{Error, Result};
#[cfg(feature = "mpfr")]
pub use precision::Mp;
pub use precision::{Dd, Precision, Qd, Td};
pub use solver::dispatch::{BackendChoice, Method, Solution, SolutionVector, WorkingPrecision};
pub use solver::{HistoryPoint, Iteration, ResidualNorm, SolveInfo, SolveTimes, StopReason};
pub use sparse::{CsrError, CsrMatrix, MmError, MmErrorKind, Symmetry, load_matrix};
pub use sparse::{poisson2d, poisson3d};

/// Short for [`CsrMatrix`].
pub type Csr = CsrMatrix;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctests {}
