//! Entry lines: the coordinate and array bodies.
//!
//! The scanner (`mm_scan.rs`) walks the in-memory file once, byte by byte; no line is copied or
//! turned into a `String`. Large coordinate bodies are cut at line boundaries and parsed on the
//! rayon pool. If anything is wrong there (an error, or a wrong entry count) the body is parsed
//! again sequentially, which finds the *first* error in file order and its line number; the fast
//! path never has to track absolute lines.

use super::Symmetry;
use super::mm::{MmError, MmErrorKind};
use super::mm_header::{Field, Format, Header, eof_line, quote};
use super::mm_scan::{Scanner, value};
use rayon::prelude::*;

/// Below this many body bytes the parallel split is not worth a thread hand-off.
const PARALLEL_MIN_BYTES: usize = 1 << 20;

/// 0-based entries in file order; a symmetric file's mirror follows its original.
#[derive(Default)]
pub(super) struct Coo {
    pub rows: Vec<u32>,
    pub cols: Vec<u32>,
    pub vals: Vec<f64>,
}

impl Coo {
    fn with_capacity(n: usize) -> Self {
        Coo {
            rows: Vec::with_capacity(n),
            cols: Vec::with_capacity(n),
            vals: Vec::with_capacity(n),
        }
    }

    #[inline]
    fn push(&mut self, r: u32, c: u32, v: f64) {
        self.rows.push(r);
        self.cols.push(c);
        self.vals.push(v);
    }

    pub fn len(&self) -> usize {
        self.vals.len()
    }
}

fn err(kind: MmErrorKind, line: usize, message: impl Into<String>) -> MmError {
    MmError::new(kind, line, message)
}

/// One coordinate entry line (the scanner is on its first token).
#[inline]
fn coordinate_entry(sc: &mut Scanner, hdr: &Header, coo: &mut Coo) -> Result<(), MmError> {
    let line = sc.line;
    let r = sc.index("row", hdr.nrows, line)?;
    let c = sc.index("column", hdr.ncols, line)?;
    let v = if hdr.field == Field::Pattern {
        1.0
    } else {
        let tok = sc.value_token().ok_or_else(|| {
            err(
                MmErrorKind::MissingValue,
                line,
                format!("entry ({}, {}) has no value", r + 1, c + 1),
            )
        })?;
        value(tok, hdr.field, line)?
    };
    if let Err(extra) = sc.finish_line() {
        let form = if hdr.field == Field::Pattern {
            "a pattern entry is a row and a column index only"
        } else {
            "an entry is a row index, a column index and a value"
        };
        return Err(err(
            MmErrorKind::ExtraToken,
            line,
            format!("unexpected {} after the entry: {form}", quote(extra)),
        ));
    }
    if hdr.symmetry != Symmetry::General {
        check_lower(r as usize, c as usize, hdr.symmetry, line)?;
    }
    push_mirrored(coo, r, c, v, hdr.symmetry);
    Ok(())
}

/// (Skew-)symmetric files store the lower triangle only; skew ones not even the diagonal.
fn check_lower(r: usize, c: usize, symmetry: Symmetry, line: usize) -> Result<(), MmError> {
    if r < c {
        return Err(err(
            MmErrorKind::UpperTriangle,
            line,
            format!(
                "entry ({}, {}) lies above the diagonal; a {symmetry} file stores only the lower \
                 triangle",
                r + 1,
                c + 1
            ),
        ));
    }
    if r == c && symmetry == Symmetry::SkewSymmetric {
        return Err(err(
            MmErrorKind::SkewDiagonal,
            line,
            format!(
                "diagonal entry ({}, {}) in a skew-symmetric file, whose diagonal is zero",
                r + 1,
                c + 1
            ),
        ));
    }
    Ok(())
}

/// The stored entry, then for a (skew-)symmetric file its mirror (negated for skew-symmetric;
/// the diagonal once).
#[inline(always)]
fn push_mirrored(coo: &mut Coo, r: u32, c: u32, v: f64, symmetry: Symmetry) {
    coo.push(r, c, v);
    match symmetry {
        Symmetry::General => {}
        _ if r == c => {}
        Symmetry::Symmetric => coo.push(c, r, v),
        Symmetry::SkewSymmetric => coo.push(c, r, -v),
    }
}

/// Parses entry lines to the end of `buf`; an entry line beyond `limit` entries is an error.
/// Returns the number of entries read.
fn scan_coordinate(
    buf: &[u8],
    first_line: usize,
    hdr: &Header,
    limit: usize,
    coo: &mut Coo,
) -> Result<usize, MmError> {
    let mut sc = Scanner::new(buf, first_line);
    let mut n = 0;
    while sc.next_entry() {
        if n == limit {
            return Err(err(
                MmErrorKind::EntryCount,
                sc.line,
                format!(
                    "more entries than the {limit} declared on the size line (line {})",
                    hdr.size_line
                ),
            ));
        }
        coordinate_entry(&mut sc, hdr, coo)?;
        n += 1;
    }
    Ok(n)
}

/// Stored entries expected from `bytes` of body, never trusting a huge declared count with memory.
fn capacity(hdr: &Header, bytes: usize, body_bytes: usize) -> usize {
    let share = (hdr.entries as u128 * bytes as u128 / body_bytes.max(1) as u128) as usize;
    let mirror = if hdr.symmetry == Symmetry::General {
        1
    } else {
        2
    };
    // An entry line takes at least 4 bytes ("1 1\n"); 1/8 slack spares a piece a regrowth.
    (share + share / 8).min(bytes / 4 + 1) * mirror + 16
}

/// All entries of a coordinate file.
pub(super) fn coordinate(data: &[u8], hdr: &Header) -> Result<Coo, MmError> {
    let body = &data[hdr.body_start..];
    let threads = rayon::current_num_threads();
    if threads > 1
        && body.len() >= PARALLEL_MIN_BYTES
        && let Some(coo) = coordinate_parallel(body, hdr, threads)
    {
        return Ok(coo);
    }
    let mut coo = Coo::with_capacity(capacity(hdr, body.len(), body.len()));
    let n = scan_coordinate(body, hdr.body_line, hdr, hdr.entries, &mut coo)?;
    if n < hdr.entries {
        return Err(err(
            MmErrorKind::EntryCount,
            eof_line(data),
            format!(
                "the file ends after {n} of the {} entries declared on the size line (line {})",
                hdr.entries, hdr.size_line
            ),
        ));
    }
    Ok(coo)
}

/// `None` when a piece fails or the count is off: the caller's sequential pass reports it.
fn coordinate_parallel(body: &[u8], hdr: &Header, threads: usize) -> Option<Coo> {
    // A few pieces per thread even out pieces that parse slower (longer numbers, comments).
    let pieces = split_at_lines(body, threads * 4);
    let parts: Vec<(Coo, usize)> = pieces
        .par_iter()
        .map(|piece| {
            let mut coo = Coo::with_capacity(capacity(hdr, piece.len(), body.len()));
            // Line numbers are unused here: errors are re-found by the sequential pass.
            scan_coordinate(piece, 1, hdr, usize::MAX, &mut coo).map(|n| (coo, n))
        })
        .collect::<Result<_, _>>()
        .ok()?;
    if parts.iter().map(|p| p.1).sum::<usize>() != hdr.entries {
        return None;
    }
    Some(concat(parts.into_iter().map(|p| p.0).collect()))
}

/// Joins the pieces' entries in order. The copies run in parallel: first-touch page faults of
/// the fresh arrays cost as much as the copy itself.
fn concat(parts: Vec<Coo>) -> Coo {
    let total = parts.iter().map(Coo::len).sum();
    // Zeroed vectors come from fresh zero pages, so they cost nothing before they are written.
    let mut out = Coo {
        rows: vec![0; total],
        cols: vec![0; total],
        vals: vec![0.0; total],
    };
    let (mut rows, mut cols, mut vals) = (&mut out.rows[..], &mut out.cols[..], &mut out.vals[..]);
    let mut jobs = Vec::with_capacity(parts.len());
    for part in &parts {
        let n = part.len();
        let (r, rest_r) = std::mem::take(&mut rows).split_at_mut(n);
        let (c, rest_c) = std::mem::take(&mut cols).split_at_mut(n);
        let (v, rest_v) = std::mem::take(&mut vals).split_at_mut(n);
        (rows, cols, vals) = (rest_r, rest_c, rest_v);
        jobs.push((part, r, c, v));
    }
    jobs.into_par_iter().for_each(|(part, r, c, v)| {
        r.copy_from_slice(&part.rows);
        c.copy_from_slice(&part.cols);
        v.copy_from_slice(&part.vals);
    });
    out
}

/// Cuts `body` into about `pieces` slices, each ending just after a '\n' (or at the end).
fn split_at_lines(body: &[u8], pieces: usize) -> Vec<&[u8]> {
    let target = body.len() / pieces.max(1) + 1;
    let mut out = Vec::with_capacity(pieces + 1);
    let mut rest = body;
    while !rest.is_empty() {
        let cut = match rest
            .get(target..)
            .and_then(|t| t.iter().position(|&b| b == b'\n'))
        {
            Some(n) => target + n + 1,
            None => rest.len(),
        };
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

/// All values of an array file: column-major; (skew-)symmetric files hold the (strict) lower
/// triangle column by column.
pub(super) fn array(data: &[u8], hdr: &Header) -> Result<Coo, MmError> {
    let body = &data[hdr.body_start..];
    let mut sc = Scanner::new(body, hdr.body_line);
    let mut coo = Coo::with_capacity(capacity(hdr, body.len(), body.len()));
    let first_row = |j: usize| match hdr.symmetry {
        Symmetry::General => 0,
        Symmetry::Symmetric => j,
        Symmetry::SkewSymmetric => j + 1,
    };
    let (mut i, mut j) = (first_row(0), 0);
    for k in 0..hdr.entries {
        let (_, v, _) = array_value(&mut sc, data, hdr, k)?;
        push_mirrored(&mut coo, i as u32, j as u32, v, hdr.symmetry);
        i += 1;
        if i >= hdr.nrows {
            j += 1;
            i = first_row(j);
        }
    }
    no_more_values(&mut sc, hdr)?;
    Ok(coo)
}

/// The `k`-th (0-based) value of an array file: its token, value and line. The file ending
/// first, or a second token on the line, is an error naming the line.
fn array_value<'a>(
    sc: &mut Scanner<'a>,
    data: &[u8],
    hdr: &Header,
    k: usize,
) -> Result<(&'a [u8], f64, usize), MmError> {
    if !sc.next_entry() {
        return Err(err(
            MmErrorKind::EntryCount,
            eof_line(data),
            format!(
                "the file ends after {k} of the {} values of a {} x {} {} array",
                hdr.entries, hdr.nrows, hdr.ncols, hdr.symmetry
            ),
        ));
    }
    let line = sc.line;
    let tok = sc.token().unwrap_or_default();
    let v = value(tok, hdr.field, line)?;
    if let Err(extra) = sc.finish_line() {
        return Err(err(
            MmErrorKind::ExtraToken,
            line,
            format!(
                "unexpected {} after the value: an array file has one value per line",
                quote(extra)
            ),
        ));
    }
    Ok((tok, v, line))
}

/// After an array file's declared values: anything more is an error naming its line.
fn no_more_values(sc: &mut Scanner, hdr: &Header) -> Result<(), MmError> {
    if sc.next_entry() {
        return Err(err(
            MmErrorKind::EntryCount,
            sc.line,
            format!(
                "more values than the {} of a {} x {} {} array",
                hdr.entries, hdr.nrows, hdr.ncols, hdr.symmetry
            ),
        ));
    }
    Ok(())
}

/// Line of the `k`-th (0-based) entry line of the body.
pub(super) fn entry_line(data: &[u8], hdr: &Header, k: usize) -> usize {
    let mut sc = Scanner::new(&data[hdr.body_start..], hdr.body_line);
    let mut seen = 0;
    while sc.next_entry() {
        if seen == k {
            return sc.line;
        }
        seen += 1;
        sc.skip_line();
    }
    eof_line(data)
}

/// Entry line (0-based) that produced stored entry `q`, undoing the mirroring.
pub(super) fn source_entry(coo: &Coo, q: usize, symmetry: Symmetry) -> usize {
    if symmetry == Symmetry::General {
        return q;
    }
    let (mut i, mut e) = (0, 0);
    while i < coo.len() {
        let step = if coo.rows[i] != coo.cols[i] { 2 } else { 1 };
        if q < i + step {
            break;
        }
        i += step;
        e += 1;
    }
    e
}

/// One value of a vector file as written: its 0-based row, its 1-based line, and the byte
/// range of its token in the file.
pub(super) struct VectorToken {
    pub row: u32,
    pub line: usize,
    pub start: usize,
    pub end: usize,
}

/// The value tokens of an `n x 1` file (array or coordinate) in file order, checked as
/// [`array`] and [`coordinate`] check them: a token that is not a finite number, a bad index,
/// a missing or extra token and a wrong entry count are errors naming the line.
pub(super) fn vector_tokens(data: &[u8], hdr: &Header) -> Result<Vec<VectorToken>, MmError> {
    let body = &data[hdr.body_start..];
    let mut sc = Scanner::new(body, hdr.body_line);
    let mut tokens = Vec::with_capacity(capacity(hdr, body.len(), body.len()));
    let mut push = |tok: &[u8], row: u32, line: usize| {
        let start = tok.as_ptr() as usize - data.as_ptr() as usize;
        tokens.push(VectorToken {
            row,
            line,
            start,
            end: start + tok.len(),
        });
    };
    match hdr.format {
        Format::Coordinate => {
            let mut n = 0;
            while sc.next_entry() {
                let line = sc.line;
                if n == hdr.entries {
                    return Err(err(
                        MmErrorKind::EntryCount,
                        line,
                        format!(
                            "more entries than the {} declared on the size line (line {})",
                            hdr.entries, hdr.size_line
                        ),
                    ));
                }
                let r = sc.index("row", hdr.nrows, line)?;
                let c = sc.index("column", hdr.ncols, line)?;
                let tok = sc.value_token().ok_or_else(|| {
                    err(
                        MmErrorKind::MissingValue,
                        line,
                        format!("entry ({}, {}) has no value", r + 1, c + 1),
                    )
                })?;
                value(tok, hdr.field, line)?;
                if let Err(extra) = sc.finish_line() {
                    return Err(err(
                        MmErrorKind::ExtraToken,
                        line,
                        format!(
                            "unexpected {} after the entry: an entry is a row index, a column \
                             index and a value",
                            quote(extra)
                        ),
                    ));
                }
                if hdr.symmetry != Symmetry::General {
                    // One column: only a 1 x 1 (skew-)symmetric file gets here, mirroring nothing.
                    check_lower(r as usize, c as usize, hdr.symmetry, line)?;
                }
                push(tok, r, line);
                n += 1;
            }
            if n < hdr.entries {
                return Err(err(
                    MmErrorKind::EntryCount,
                    eof_line(data),
                    format!(
                        "the file ends after {n} of the {} entries declared on the size line \
                         (line {})",
                        hdr.entries, hdr.size_line
                    ),
                ));
            }
        }
        Format::Array => {
            // One column: row k is the k-th value (a 1 x 1 skew-symmetric file has none).
            let first_row = match hdr.symmetry {
                Symmetry::SkewSymmetric => 1,
                _ => 0,
            };
            for k in 0..hdr.entries {
                let (tok, _, line) = array_value(&mut sc, data, hdr, k)?;
                push(tok, (first_row + k) as u32, line);
            }
            no_more_values(&mut sc, hdr)?;
        }
    }
    Ok(tokens)
}
