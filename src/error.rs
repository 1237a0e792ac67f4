//! One error type for the library, wrapping each layer's own error.

use crate::sparse::{CsrError, MmError};
use std::path::PathBuf;

/// The library's `Result`: [`Error`] unless said otherwise.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong before or around a solve. A solve that runs but does not
/// converge is not an error: its [`StopReason`](crate::StopReason) says why it stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Matrix Market file (or a vector file in that format) could not be read.
    #[error("{}: {source}", path.display())]
    MatrixMarket {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where in the file.
        #[source]
        source: MmError,
    },
    /// Arrays that do not make a valid CSR matrix.
    #[error("invalid matrix: {0}")]
    Csr(#[from] CsrError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A configuration file or option is wrong; the message names the key (and line/column).
    #[error("configuration: {0}")]
    Config(String),
    /// Input that parses but cannot be used (mismatched sizes, unknown generated matrix...).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A preconditioner cannot be built for this matrix (ILU(0): zero pivot, missing diagonal).
    #[error("{0}")]
    Preconditioner(String),
    /// A resource another process holds (a study directory that another `solver batch` writes).
    #[error("{0}")]
    InUse(String),
    /// A device or feature this machine or build lacks, asked for explicitly (`--backend cuda`
    /// without a usable GPU, `mp` without the `mpfr` feature): a usage problem, not bad data.
    #[error("{0}")]
    Unavailable(String),
    /// A compute backend failed (device errors, out of memory).
    #[error("backend {backend}: {message}")]
    Backend {
        /// `cpu` or `cuda`.
        backend: &'static str,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// True when the error is the user's input (exit code for bad input), not an internal failure.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Error::Backend { .. } | Error::Unavailable(_))
    }
}
