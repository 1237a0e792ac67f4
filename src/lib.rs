//! Sparse Krylov solvers in double and double-double precision.

pub mod error;
pub mod precision;
pub mod sparse;

pub use error::{Error, Result};
pub use precision::{Dd, Precision};
pub use sparse::{CsrMatrix, Symmetry, load_matrix};
