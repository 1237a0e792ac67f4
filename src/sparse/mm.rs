//! Matrix Market reader: coordinate and array files, fields real, integer and pattern, symmetry
//! general, symmetric and skew-symmetric, plain or gzip-compressed (`*.gz`).
//!
//! Hand-written because none of the available readers can be trusted with user files (see
//! `DEPENDENCIES.md`): matrix-market-rs, the crate the design named, silently corrupts data (a
//! blank line becomes a phantom entry, a missing value reads as 1.0, index 0 wraps around);
//! `sprs::io` hangs on a file that ends before its size line and panics on a bad index;
//! nalgebra-sparse's reader is correct but far slower than this one (`benches/results/cpu.md`,
//! "Matrix Market loading"), so it only cross-checks this one in the tests.
//!
//! What is accepted: banner words in any case; comment lines (`%`) and blank lines anywhere,
//! including between entries; spaces, tabs and CRLF line endings. Duplicate entries are summed
//! (in file order, so the sum is reproducible), explicit zeros are kept as stored entries, and a
//! symmetric file's strict lower triangle is mirrored (negated for skew-symmetric).
//!
//! Everything else is an [`MmError`] carrying a [`MmErrorKind`] and the 1-based line at fault
//! (the last line for a file that ends too early); nothing on user input panics. The file is read
//! into memory whole, within [`ReadLimits`] (`mm_source.rs`: regular files only by default, the
//! banner checked first, streams bounded by their declared entries), and what the matrix will
//! cost is checked from the header before the body is parsed (`check_cost`). The body is scanned
//! byte by byte; large bodies are parsed in parallel (`mm_body.rs`).

use super::mm_body::{self, Coo};
use super::mm_header::{self, Field, Format, Header};
use super::mm_source::{self, ReadLimits};
use super::{CsrError, CsrMatrix, Symmetry};
use std::io::Read;
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
    /// A vector whose length is not the matrix's row count.
    WrongLength,
    /// A FIFO, device or directory where a file was expected (see `ReadLimits`); its fixture
    /// is made by the test (git stores no FIFOs).
    NotAFile,
    /// More memory than the file's content justifies or than is available (see `ReadLimits`).
    TooLarge,
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
            MmErrorKind::WrongLength => "wrong vector length",
            MmErrorKind::NotAFile => "not a regular file",
            MmErrorKind::TooLarge => "too large",
        })
    }
}

/// A Matrix Market file that cannot be used. `line` is 1-based; 0 only for an I/O error before
/// anything was read (the file cannot be opened), and then Display leaves the line out. The
/// caller adds the path: `Error::MatrixMarket` prints `{path}: line {line}: {kind}: {message}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MmError {
    /// The class of problem.
    pub kind: MmErrorKind,
    /// 1-based line (0: before anything was read).
    pub line: usize,
    /// What is wrong, with the offending text quoted (escaped).
    pub message: String,
}

impl MmError {
    /// An error of `kind` at `line`.
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

/// Read a `.mtx` file, or a gzip-compressed one when the name ends in `.gz`, within the
/// default [`ReadLimits`] (the memory available now; regular files only).
pub fn read_matrix_market(path: &Path) -> Result<CsrMatrix, MmError> {
    read_matrix_market_with(path, &ReadLimits::default())
}

/// [`read_matrix_market`] within the given limits.
pub fn read_matrix_market_with(path: &Path, limits: &ReadLimits) -> Result<CsrMatrix, MmError> {
    parse_bytes(&mm_source::read_source(path, limits)?, limits)
}

/// Parse an uncompressed Matrix Market stream (wrap a `.gz` stream in a `GzDecoder` first),
/// bounded as a gzip file is (see [`ReadLimits`]).
pub fn parse_matrix_market<R: Read>(reader: R) -> Result<CsrMatrix, MmError> {
    let limits = ReadLimits::default();
    parse_bytes(&mm_source::read_stream(reader, &limits)?, &limits)
}

/// A right-hand side or initial guess: an `n x 1` array, or an `n x 1` coordinate file whose
/// missing entries are zero (duplicates summed); real or integer.
pub fn read_vector(path: &Path) -> Result<Vec<f64>, MmError> {
    read_vector_with(path, &ReadLimits::default(), None)
}

/// [`read_vector`] within the given limits; with `expected_len`, a vector of another length is
/// an error naming both lengths (a sparse coordinate vector of that length may then have as few
/// entries as it likes).
pub fn read_vector_with(
    path: &Path,
    limits: &ReadLimits,
    expected_len: Option<usize>,
) -> Result<Vec<f64>, MmError> {
    let data = mm_source::read_source(path, limits)?;
    let hdr = vector_header(&data, limits, expected_len)?;
    let m = build(&data, &hdr)?;
    let mut x = vec![0.0; m.nrows()];
    for (i, xi) in x.iter_mut().enumerate() {
        if let Some(&v) = m.row(i).1.first() {
            *xi = v;
        }
    }
    Ok(x)
}

/// A vector file's values as written (see [`read_vector_text_with`]).
pub struct VectorText {
    data: Vec<u8>,
    len: usize,
    integer: bool,
    tokens: Vec<mm_body::VectorToken>,
}

impl VectorText {
    /// The vector's length (the declared rows).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the file's field is `integer` (whose `-0` is `+0`, as [`read_vector`] reads it).
    pub fn is_integer(&self) -> bool {
        self.integer
    }

    /// The entries in file order: `(row, line, text)`, the row 0-based, the line 1-based, the
    /// text a finite decimal number as written (a coordinate file may repeat a row, whose
    /// entries then add up, and leave rows out, which are zero).
    pub fn entries(&self) -> impl Iterator<Item = (usize, usize, &str)> {
        self.tokens.iter().map(|t| {
            let text = std::str::from_utf8(&self.data[t.start..t.end])
                .expect("a token that parsed as a number is ASCII");
            (t.row as usize, t.line, text)
        })
    }
}

/// Reads a right-hand side or initial guess as [`read_vector_with`] does (the same files, the
/// same checks and errors) but keeps each value's decimal text instead of rounding it to a
/// double, for a reader that converts it exactly into a wider precision.
pub fn read_vector_text_with(
    path: &Path,
    limits: &ReadLimits,
    expected_len: Option<usize>,
) -> Result<VectorText, MmError> {
    let data = mm_source::read_source(path, limits)?;
    let hdr = vector_header(&data, limits, expected_len)?;
    let tokens = mm_body::vector_tokens(&data, &hdr)?;
    Ok(VectorText {
        len: hdr.nrows,
        integer: hdr.field == Field::Integer,
        tokens,
        data,
    })
}

/// The header of an `n x 1` file with values, checked for length and cost.
fn vector_header(
    data: &[u8],
    limits: &ReadLimits,
    expected_len: Option<usize>,
) -> Result<Header, MmError> {
    let hdr = mm_header::parse_header(data)?;
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
    if let Some(n) = expected_len
        && hdr.nrows != n
    {
        return Err(MmError::new(
            MmErrorKind::WrongLength,
            hdr.size_line,
            format!(
                "the vector has {} entries but the matrix has {n} rows",
                hdr.nrows
            ),
        ));
    }
    check_cost(&hdr, data.len(), limits, expected_len)?;
    Ok(hdr)
}

/// Rows or columns beyond twice the declared entries plus this many are empty ones that cost
/// memory (row pointers, solver vectors) which nothing in the file pays for: a 75-byte file
/// can declare two billion rows.
const SPARE_ROWS: usize = 1 << 20;

/// Refuses, from the header alone, a matrix whose size its entries cannot justify (more rows or
/// columns than `2 entries + SPARE_ROWS`, a length the caller vouches for excepted), or whose
/// reading would take more memory than the budget: the file, its entries (16 bytes each), the
/// CSR arrays and the sort's scratch (28 bytes per stored entry) and three row arrays.
fn check_cost(
    hdr: &Header,
    file_bytes: usize,
    limits: &ReadLimits,
    vouched_rows: Option<usize>,
) -> Result<(), MmError> {
    let entries = hdr.entries;
    let most = entries.saturating_mul(2).saturating_add(SPARE_ROWS);
    // a header may declare any count: saturate rather than overflow
    let stored = if hdr.symmetry == Symmetry::General {
        entries as u64
    } else {
        (entries as u64).saturating_mul(2)
    };
    let rows = (hdr.nrows as u64).saturating_add(1);
    let need = (file_bytes as u64)
        .saturating_add(stored.saturating_mul(44))
        .saturating_add(rows.saturating_mul(24));
    let shape = format!(
        "a {} x {} matrix with {entries} declared entries",
        hdr.nrows, hdr.ncols
    );
    let unjustified = (hdr.nrows > most && vouched_rows != Some(hdr.nrows)) || hdr.ncols > most;
    if unjustified {
        return Err(MmError::new(
            MmErrorKind::TooLarge,
            hdr.size_line,
            format!(
                "{shape} would need {} for its rows alone, which its entries cannot justify: refused (at most 2 x entries + {SPARE_ROWS} rows and columns)",
                mm_source::format_bytes(rows.saturating_mul(24)),
            ),
        ));
    }
    if need > limits.budget() {
        return Err(MmError::new(
            MmErrorKind::TooLarge,
            hdr.size_line,
            format!(
                "{shape} needs about {} to read, more than the {} of memory available",
                mm_source::format_bytes(need),
                mm_source::format_bytes(limits.budget())
            ),
        ));
    }
    Ok(())
}

fn parse_bytes(data: &[u8], limits: &ReadLimits) -> Result<CsrMatrix, MmError> {
    let hdr = mm_header::parse_header(data)?;
    check_cost(&hdr, data.len(), limits, None)?;
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
        | CsrError::ColumnsNotSorted { .. }
        | CsrError::ColumnMajor => MmErrorKind::BadSize,
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
