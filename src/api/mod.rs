//! The library's public surface beyond the types: the [`Solver`] builder, what a solve hands
//! back, and the hooks a calling program plugs in.

mod builder;
mod hooks;
mod operator;

pub use builder::{Solved, Solver};
pub use hooks::{Control, Preconditioner};
pub use operator::LinearOperator;

use crate::error::{Error, Result};
use crate::sparse::CsrMatrix;
use std::path::Path;

/// Read a Matrix Market file (`.mtx`, or `.mtx.gz`) into a validated [`CsrMatrix`]: real,
/// integer and pattern matrices, general, symmetric and skew-symmetric (the mirror entries are
/// stored). Errors name the file, the line and the problem.
pub fn read_matrix_market(path: impl AsRef<Path>) -> Result<CsrMatrix> {
    let path = path.as_ref();
    crate::sparse::read_matrix_market(path).map_err(|source| Error::MatrixMarket {
        path: path.to_path_buf(),
        source,
    })
}
