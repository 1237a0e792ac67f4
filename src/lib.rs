//! Sparse Krylov solvers in double and double-double precision.

pub mod backend;
pub mod batch;
pub mod config;
pub mod error;
pub mod escape;
pub mod output;
pub mod precision;
pub mod precond;
pub mod report;
pub mod solver;
pub mod sparse;

pub use error::{Error, Result};
#[cfg(feature = "mpfr")]
pub use precision::Mp;
pub use precision::{Dd, Precision, Qd};
pub use sparse::{CsrMatrix, Symmetry, load_matrix};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctests {}
