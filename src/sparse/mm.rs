//! Matrix Market reader: coordinate and array files, fields real, integer and pattern, symmetry
//! general, symmetric and skew-symmetric, plain or gzip-compressed (`*.gz`).
//!
//! Hand-written because none of the available readers can be trusted with user files (see
//! `DEPENDENCIES.md`): matrix-market-rs, the crate the design named, silently corrupts data (a
//! blank line becomes a phantom entry, a missing value reads as 1.0, index 0 wraps around);
//! `sprs::io` hangs on a file that ends before its size line and panics on a bad index;
//! nalgebra-sparse's reader is correct but far too slow (23 s for 10 M entries), so it only
//! cross-checks this one in the tests.
//!
//! What is accepted: banner words in any case; comment lines (`%`) and blank lines anywhere,
//! including between entries; spaces, tabs and CRLF line endings. Duplicate entries are summed
//! (in file order, so the sum is reproducible), explicit zeros are kept as stored entries, and a
//! symmetric file's strict lower triangle is mirrored (negated for skew-symmetric).
//!
//! Everything else is an [`MmError`] carrying a [`MmErrorKind`] and the 1-based line at fault
//! (the last line for a file that ends too early); nothing on user input panics. The file is read
//! into memory whole and scanned byte by byte; large bodies are parsed in parallel
//! (`mm_body.rs`).

use super::mm_body::{self, Coo};
use super::mm_header::{self, Field, Format, Header};
use super::{CsrError, CsrMatrix};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// What went wrong; each has a fixture in `matrices/bad/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MmErrorKind {
    /// The file could not be opened or read (including a corrupt `.gz` stream).
    Io,
    /// Missing or malformed `%%MatrixMarket` banner, or a combination the format forbids.
    BadBanner,
    /// A valid Matrix Market file this reader does not handle (complex, hermitian, or a pattern
    /// file used as a vector).
    Unsupported,
    /// The file ends before the size line.
    MissingSize,
    /// The size line has the wrong count of numbers, a non-number, a negative or too large size.
    BadSize,
    /// A symmetric or skew-symmetric matrix that is not square.
    NotSquare,
    /// Fewer entries than declared before the end of the file, or more after them.
    EntryCount,
    /// An index of 0 or beyond the declared size.
    IndexOutOfRange,
    /// An entry line without its column index or value.
    MissingValue,
    /// Something after the last expected token of an entry line.
    ExtraToken,
    /// A token that should be a number and is not (or a fraction in an integer file).
    BadNumber,
    /// An entry above the diagonal of a (skew-)symmetric file.
    UpperTriangle,
    /// A diagonal entry in a skew-symmetric file.
    SkewDiagonal,
    /// NaN or infinity, written or reached by summing duplicates.
    NonFinite,
    /// `read_vector` on a file with more than one column.
    NotAVector,
}

impl std::fmt::Display for MmErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MmErrorKind::Io => "i/o error",
            MmErrorKind::BadBanner => "bad banner",
            MmErrorKind::Unsupported => "unsupported",
            MmErrorKind::MissingSize => "missing size line",
            MmErrorKind::BadSize => "bad size line",
            MmErrorKind::NotSquare => "not square",
            MmErrorKind::EntryCount => "wrong entry count",
            MmErrorKind::IndexOutOfRange => "index out of range",
            MmErrorKind::MissingValue => "missing value",
            MmErrorKind::ExtraToken => "extra token",
            MmErrorKind::BadNumber => "bad number",
            MmErrorKind::UpperTriangle => "entry in upper triangle",
            MmErrorKind::SkewDiagonal => "diagonal entry in skew-symmetric matrix",
            MmErrorKind::NonFinite => "non-finite value",
            MmErrorKind::NotAVector => "not a vector",
        })
    }
}

/// A Matrix Market file that cannot be used. `line` is 1-based; 0 only for an I/O error before
/// anything was read (the file cannot be opened), and then Display leaves the line out. The
/// caller adds the path: `Error::MatrixMarket` prints `{path}: line {line}: {kind}: {message}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmError {
    pub kind: MmErrorKind,
    pub line: usize,
    pub message: String,
}

impl MmError {
    pub fn new(kind: MmErrorKind, line: usize, message: impl Into<String>) -> Self {
        MmError {
            kind,
            line,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for MmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for MmError {}

/// Read a `.mtx` file, or a gzip-compressed one when the name ends in `.gz`.
pub fn read_matrix_market(path: &Path) -> Result<CsrMatrix, MmError> {
    parse_bytes(&read_file(path)?)
}

/// Parse an uncompressed Matrix Market stream (wrap a `.gz` stream in a `GzDecoder` first).
pub fn parse_matrix_market<R: BufRead>(reader: R) -> Result<CsrMatrix, MmError> {
    parse_bytes(&read_all(reader)?)
}

/// A right-hand side or initial guess: an `n x 1` array, or an `n x 1` coordinate file whose
/// missing entries are zero (duplicates summed); real or integer.
pub fn read_vector(path: &Path) -> Result<Vec<f64>, MmError> {
    let data = read_file(path)?;
    let hdr = mm_header::parse_header(&data)?;
    if hdr.field == Field::Pattern {
        return Err(MmError::new(
            MmErrorKind::Unsupported,
            hdr.banner_line,
            "a pattern file has no values to read as a vector",
        ));
    }
    if hdr.ncols != 1 {
        return Err(MmError::new(
            MmErrorKind::NotAVector,
            hdr.size_line,
            format!(
                "a vector must have one column, but this is a {} x {} matrix",
                hdr.nrows, hdr.ncols
            ),
        ));
    }
    let m = build(&data, &hdr)?;
    let mut x = vec![0.0; m.nrows()];
    for (i, xi) in x.iter_mut().enumerate() {
        if let Some(&v) = m.row(i).1.first() {
            *xi = v;
        }
    }
    Ok(x)
}

/// The whole file in memory: one read, no per-line allocation.
fn read_file(path: &Path) -> Result<Vec<u8>, MmError> {
    let file = File::open(path).map_err(|e| MmError::new(MmErrorKind::Io, 0, e.to_string()))?;
    if path.extension().is_some_and(|ext| ext == "gz") {
        // Multi-member: concatenated gzip streams (as `cat a.gz b.gz`) are one valid file.
        return read_all(BufReader::new(flate2::read::MultiGzDecoder::new(file)));
    }
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if let Some(data) = read_parallel(&file, size) {
        return Ok(data);
    }
    let mut data = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    match (&file).read_to_end(&mut data) {
        Ok(_) => Ok(data),
        Err(e) => Err(read_error(&data, e)),
    }
}

/// Large files are read by all rayon threads at once, each into its own slice: the kernel's
/// copy and the page faults of the fresh buffer are most of a read's time. `None` (read again
/// sequentially) for small files, other platforms, or any surprise (the file changed).
#[cfg(unix)]
fn read_parallel(file: &File, size: u64) -> Option<Vec<u8>> {
    use rayon::prelude::*;
    use std::os::unix::fs::FileExt;
    const CHUNK: usize = 8 << 20;
    let size = usize::try_from(size).ok()?;
    if size < 4 * CHUNK || rayon::current_num_threads() < 2 {
        return None;
    }
    // Zeroed memory comes from fresh pages: the threads' writes are the first touch.
    let mut data = vec![0u8; size];
    data.par_chunks_mut(CHUNK)
        .enumerate()
        .try_for_each(|(k, chunk)| file.read_exact_at(chunk, (k * CHUNK) as u64))
        .ok()?;
    // A file that grew since its size was taken is read sequentially.
    let mut probe = [0u8; 1];
    (file.read_at(&mut probe, size as u64).ok()? == 0).then_some(data)
}

#[cfg(not(unix))]
fn read_parallel(_file: &File, _size: u64) -> Option<Vec<u8>> {
    None
}

fn read_all<R: Read>(mut reader: R) -> Result<Vec<u8>, MmError> {
    let mut data = Vec::new();
    match reader.read_to_end(&mut data) {
        Ok(_) => Ok(data),
        Err(e) => Err(read_error(&data, e)),
    }
}

/// A read that failed part way (a truncated `.gz`): the line being read when it failed, or 0
/// when nothing could be read (a directory, say).
fn read_error(partial: &[u8], e: std::io::Error) -> MmError {
    let line = if partial.is_empty() {
        0
    } else {
        mm_header::eof_line(partial)
    };
    MmError::new(
        MmErrorKind::Io,
        line,
        format!("read failed after {} bytes: {e}", partial.len()),
    )
}

fn parse_bytes(data: &[u8]) -> Result<CsrMatrix, MmError> {
    let hdr = mm_header::parse_header(data)?;
    build(data, &hdr)
}

fn build(data: &[u8], hdr: &Header) -> Result<CsrMatrix, MmError> {
    let coo = match hdr.format {
        Format::Coordinate => mm_body::coordinate(data, hdr)?,
        Format::Array => mm_body::array(data, hdr)?,
    };
    CsrMatrix::from_coo(
        hdr.nrows,
        hdr.ncols,
        &coo.rows,
        &coo.cols,
        &coo.vals,
        hdr.symmetry,
    )
    .map_err(|e| match e {
        // Each value was checked while parsing, so this is a sum of duplicates that overflowed.
        CsrError::NonFinite { row, col } => overflow_error(data, hdr, &coo, row, col as u32),
        e => csr_error(e, hdr),
    })
}

/// The reader checks sizes, indices and values first, so these are a safety net.
fn csr_error(e: CsrError, hdr: &Header) -> MmError {
    let kind = match e {
        CsrError::TooLarge { .. } => MmErrorKind::BadSize,
        CsrError::EntryOutOfRange { .. } | CsrError::ColumnOutOfRange { .. } => {
            MmErrorKind::IndexOutOfRange
        }
        CsrError::NonFinite { .. } => MmErrorKind::NonFinite,
        CsrError::Allocation { .. } => MmErrorKind::BadSize,
        CsrError::RowPtrLength { .. }
        | CsrError::RowPtrNotMonotone { .. }
        | CsrError::RowPtrEnd { .. }
        | CsrError::ColumnsNotSorted { .. } => MmErrorKind::BadSize,
    };
    MmError::new(kind, hdr.size_line, e.to_string())
}

/// The duplicates of `(row, col)` summed to NaN or infinity: name the entry line where their
/// running sum (in file order, as from_coo adds) first stopped being finite.
#[cold]
fn overflow_error(data: &[u8], hdr: &Header, coo: &Coo, row: usize, col: u32) -> MmError {
    let mut sum = 0.0;
    let mut line = hdr.size_line;
    for q in 0..coo.len() {
        if coo.rows[q] as usize == row && coo.cols[q] == col {
            sum += coo.vals[q];
            if !sum.is_finite() {
                let entry = mm_body::source_entry(coo, q, hdr.symmetry);
                line = mm_body::entry_line(data, hdr, entry);
                break;
            }
        }
    }
    MmError::new(
        MmErrorKind::NonFinite,
        line,
        format!(
            "duplicate entries of ({}, {}) sum to {sum}",
            row + 1,
            col + 1,
        ),
    )
}
