//! Sparse matrices: the validated CSR type, its sliced-ELLPACK copy for the SpMV kernels, the Matrix Market reader, and generated test problems.

mod csr;
mod generate;
mod mm;
mod mm_body;
mod mm_header;
mod mm_scan;
mod sell;

pub use csr::{CsrError, CsrMatrix, Symmetry};
pub use generate::{GeneratedMatrix, poisson2d, poisson3d};
pub use mm::{MmError, MmErrorKind, parse_matrix_market, read_matrix_market, read_vector};
pub use sell::{PADDING_COL, SellEntries};

use crate::error::{Error, Result};
use std::path::Path;

/// Load a matrix from a path (`.mtx` or `.mtx.gz`) or a generator spec (`poisson2d:N`,
/// `poisson3d:N`): every command accepts both wherever it takes a matrix.
pub fn load_matrix(spec: &str) -> Result<CsrMatrix> {
    if let Some(generated) = GeneratedMatrix::parse(spec)? {
        return Ok(generated.build());
    }
    let path = Path::new(spec);
    read_matrix_market(path).map_err(|source| Error::MatrixMarket {
        path: path.to_path_buf(),
        source,
    })
}
