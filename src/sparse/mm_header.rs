//! The banner and size line of a Matrix Market file: everything before the entries.

use super::Symmetry;
use super::mm::{MmError, MmErrorKind};
pub(super) use crate::escape::quote;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    Coordinate,
    Array,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Real,
    Integer,
    Pattern,
}

/// What the banner and size line declare, plus where the entries start.
#[derive(Clone, Debug)]
pub(super) struct Header {
    pub format: Format,
    pub field: Field,
    pub symmetry: Symmetry,
    pub nrows: usize,
    pub ncols: usize,
    /// Entry lines the body must hold: `nnz` for coordinate, the stored values for array.
    pub entries: usize,
    pub banner_line: usize,
    pub size_line: usize,
    /// Byte offset and 1-based line number of the first line after the size line.
    pub body_start: usize,
    pub body_line: usize,
}

/// `(line without its '\n', offset of the next line)`.
fn next_line(data: &[u8], pos: usize) -> (&[u8], usize) {
    match data[pos..].iter().position(|&b| b == b'\n') {
        Some(n) => (&data[pos..pos + n], pos + n + 1),
        None => (&data[pos..], data.len()),
    }
}

fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty())
}

fn first_byte(line: &[u8]) -> Option<u8> {
    line.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// Line number reported for a file that ends too early: its last line (a final line without
/// '\n' counts), or 1 for an empty file.
pub(super) fn eof_line(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    let unterminated = usize::from(data.last().is_some_and(|&b| b != b'\n'));
    (newlines + unterminated).max(1)
}

fn err(kind: MmErrorKind, line: usize, message: impl Into<String>) -> MmError {
    MmError::new(kind, line, message)
}

const BANNER_FORM: &str = "%%MatrixMarket matrix <coordinate|array> <real|integer|pattern> \
                           <general|symmetric|skew-symmetric>";

pub(super) fn parse_header(data: &[u8]) -> Result<Header, MmError> {
    // A UTF-8 byte order mark (left by some Windows editors) is skipped, not taken as text.
    let mut pos = if data.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let mut line = 0;
    // Blank lines before the banner are tolerated like blank lines anywhere else.
    let banner = loop {
        if pos >= data.len() {
            let what = if data.is_empty() {
                "the file is empty"
            } else {
                "the file has only blank lines"
            };
            return Err(err(
                MmErrorKind::BadBanner,
                line.max(1),
                format!("{what}; expected the banner `{BANNER_FORM}`"),
            ));
        }
        let (text, next) = next_line(data, pos);
        (pos, line) = (next, line + 1);
        if first_byte(text).is_some() {
            break text;
        }
    };
    let banner_line = line;
    let (format, field, symmetry) = parse_banner(data, banner, banner_line)?;

    let size = loop {
        if pos >= data.len() {
            return Err(err(
                MmErrorKind::MissingSize,
                eof_line(data),
                "the file ends before the size line",
            ));
        }
        let (text, next) = next_line(data, pos);
        (pos, line) = (next, line + 1);
        if !matches!(first_byte(text), None | Some(b'%')) {
            break text;
        }
    };
    let size_line = line;
    let (nrows, ncols, entries) = parse_size(size, size_line, format, symmetry)?;
    Ok(Header {
        format,
        field,
        symmetry,
        nrows,
        ncols,
        entries,
        banner_line,
        size_line,
        body_start: pos,
        body_line: size_line + 1,
    })
}

fn parse_banner(
    data: &[u8],
    text: &[u8],
    line: usize,
) -> Result<(Format, Field, Symmetry), MmError> {
    let bad = |message: String| err(MmErrorKind::BadBanner, line, message);
    let w: Vec<&[u8]> = words(text).collect();
    if !w[0].eq_ignore_ascii_case(b"%%MatrixMarket") {
        let hint = if data.starts_with(&[0x1f, 0x8b]) {
            " (this looks gzip-compressed: name it *.gz)"
        } else {
            ""
        };
        return Err(bad(format!(
            "missing banner: the first line must be `{BANNER_FORM}`{hint}"
        )));
    }
    if w.len() != 5 {
        return Err(bad(format!(
            "the banner has {} words, expected 5: `{BANNER_FORM}`",
            w.len()
        )));
    }
    let lower: Vec<String> = w[1..]
        .iter()
        .map(|s| String::from_utf8_lossy(s).to_ascii_lowercase())
        .collect();
    if lower[0] != "matrix" {
        return Err(bad(format!(
            "object {} is not supported; only 'matrix' is",
            quote(w[1])
        )));
    }
    let format = match lower[1].as_str() {
        "coordinate" => Format::Coordinate,
        "array" => Format::Array,
        _ => return Err(bad(format!("unknown format {}", quote(w[2])))),
    };
    let field = match lower[2].as_str() {
        "real" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        "complex" => {
            return Err(err(
                MmErrorKind::Unsupported,
                line,
                "complex matrices are not supported (values must be real)",
            ));
        }
        _ => return Err(bad(format!("unknown field {}", quote(w[3])))),
    };
    let symmetry = match lower[3].as_str() {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => {
            return Err(err(
                MmErrorKind::Unsupported,
                line,
                "hermitian matrices are not supported (values must be real)",
            ));
        }
        _ => return Err(bad(format!("unknown symmetry {}", quote(w[4])))),
    };
    // Combinations the Matrix Market specification (and mmio.c's mm_is_valid) rejects.
    if field == Field::Pattern && format == Format::Array {
        return Err(bad("an array file cannot have field 'pattern'".into()));
    }
    if field == Field::Pattern && symmetry == Symmetry::SkewSymmetric {
        return Err(bad("a pattern file cannot be skew-symmetric".into()));
    }
    Ok((format, field, symmetry))
}

fn parse_size(
    text: &[u8],
    line: usize,
    format: Format,
    symmetry: Symmetry,
) -> Result<(usize, usize, usize), MmError> {
    let bad = |message: String| err(MmErrorKind::BadSize, line, message);
    let w: Vec<&[u8]> = words(text).collect();
    let (want, form) = match format {
        Format::Coordinate => (3, "rows columns entries"),
        Format::Array => (2, "rows columns"),
    };
    if w.len() != want {
        return Err(bad(format!(
            "the size line of {} file needs {want} numbers ({form}), found {}",
            if format == Format::Coordinate {
                "a coordinate"
            } else {
                "an array"
            },
            w.len()
        )));
    }
    let mut numbers = [0usize; 3];
    for (slot, word) in numbers.iter_mut().zip(&w) {
        *slot = parse_count(word).ok_or_else(|| {
            let why = if word.first() == Some(&b'-') {
                "is negative"
            } else if word.iter().all(u8::is_ascii_digit) {
                "is too large"
            } else {
                "is not a non-negative integer"
            };
            bad(format!("size {} {why}", quote(word)))
        })?;
    }
    let [nrows, ncols, nnz] = numbers;
    // CsrMatrix stores i32 column indices; checking here avoids allocating for a hopeless file.
    for (dim, what) in [(nrows, "rows"), (ncols, "columns")] {
        if dim > i32::MAX as usize {
            return Err(bad(format!(
                "{dim} {what} exceed the limit of {} (i32 indices)",
                i32::MAX
            )));
        }
    }
    if symmetry != Symmetry::General && nrows != ncols {
        return Err(err(
            MmErrorKind::NotSquare,
            line,
            format!("a {symmetry} matrix must be square, but it is {nrows} x {ncols}"),
        ));
    }
    let entries = match (format, symmetry) {
        (Format::Coordinate, _) => Some(nnz),
        (Format::Array, Symmetry::General) => nrows.checked_mul(ncols),
        (Format::Array, Symmetry::Symmetric) => nrows.checked_mul(nrows + 1).map(|x| x / 2),
        (Format::Array, Symmetry::SkewSymmetric) => {
            nrows.checked_mul(nrows.saturating_sub(1)).map(|x| x / 2)
        }
    };
    let entries = entries.ok_or_else(|| bad(format!("{nrows} x {ncols} is too large")))?;
    Ok((nrows, ncols, entries))
}

/// A plain decimal count (digits only, no sign), `None` if malformed or beyond `usize`.
fn parse_count(word: &[u8]) -> Option<usize> {
    if word.is_empty() || !word.iter().all(u8::is_ascii_digit) {
        return None;
    }
    word.iter().try_fold(0usize, |acc, &b| {
        acc.checked_mul(10)?.checked_add(usize::from(b - b'0'))
    })
}
