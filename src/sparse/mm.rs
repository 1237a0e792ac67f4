//! Matrix Market reader (placeholder API: the full reader lands with its own commit).

use super::CsrMatrix;
use std::io::BufRead;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmErrorKind {
    Io,
    Unsupported,
}

#[derive(Debug, thiserror::Error)]
#[error("line {line}: {kind:?}: {message}")]
pub struct MmError {
    pub kind: MmErrorKind,
    pub line: usize,
    pub message: String,
}

pub fn read_matrix_market(_path: &Path) -> Result<CsrMatrix, MmError> {
    Err(MmError {
        kind: MmErrorKind::Unsupported,
        line: 0,
        message: "not implemented yet".into(),
    })
}

pub fn parse_matrix_market<R: BufRead>(_reader: R) -> Result<CsrMatrix, MmError> {
    Err(MmError {
        kind: MmErrorKind::Unsupported,
        line: 0,
        message: "not implemented yet".into(),
    })
}

pub fn read_vector(_path: &Path) -> Result<Vec<f64>, MmError> {
    Err(MmError {
        kind: MmErrorKind::Unsupported,
        line: 0,
        message: "not implemented yet".into(),
    })
}
