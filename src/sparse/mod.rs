//! Sparse matrices: the validated CSR type, its sliced-ELLPACK copy for the SpMV kernels, the Matrix Market reader, and generated test problems.

mod csr;
mod generate;
mod interop;
mod mm;
mod mm_body;
mod mm_header;
mod mm_scan;
mod mm_source;
mod sell;
mod view;

pub use csr::{CsrError, CsrMatrix, Symmetry};
pub use generate::{GeneratedMatrix, poisson2d, poisson3d};
pub use mm::{
    MmError, MmErrorKind, VectorText, parse_matrix_market, read_matrix_market,
    read_matrix_market_with, read_vector, read_vector_text_with, read_vector_with,
};
pub use mm_source::{ReadLimits, available_memory, format_bytes};
pub use sell::{PADDING_COL, SellEntries};
pub use view::{ColumnIndex, CsrView};

use crate::error::{Error, Result};
use std::path::Path;

/// Load a matrix from a path (`.mtx` or `.mtx.gz`) or a generator spec (`poisson2d:N`,
/// `poisson3d:N`): every command accepts both wherever it takes a matrix.
pub fn load_matrix(spec: &str) -> Result<CsrMatrix> {
    load_matrix_with(spec, &ReadLimits::default())
}

/// [`load_matrix`] within the given limits on reading a file.
pub fn load_matrix_with(spec: &str, limits: &ReadLimits) -> Result<CsrMatrix> {
    if let Some(generated) = GeneratedMatrix::parse(spec)? {
        if let Some(budget) = limits.memory_budget
            && generated.bytes() > budget
        {
            return Err(Error::InvalidInput(format!(
                "generated matrix '{spec}' ({} rows) needs {}, more than the {} of memory available",
                generated.rows(),
                format_bytes(generated.bytes()),
                format_bytes(budget)
            )));
        }
        return Ok(generated.build());
    }
    let path = Path::new(spec);
    read_matrix_market_with(path, limits).map_err(|source| Error::MatrixMarket {
        path: path.to_path_buf(),
        source,
    })
}
