//! The byte scanner under the entry parsers: tokens split on ASCII whitespace, indices parsed
//! by hand while scanning, values through std's correctly rounded `f64` parser.

use super::mm::{MmError, MmErrorKind};
use super::mm_header::{Field, quote};

fn err(kind: MmErrorKind, line: usize, message: impl Into<String>) -> MmError {
    MmError::new(kind, line, message)
}

/// Byte classes of the scanner: token bytes, blanks (ASCII whitespace other than '\n', so the
/// '\r' of CRLF files is just a separator) and the line end. A table keeps the hot loops free of
/// comparison chains.
const TOKEN: u8 = 0;
const BLANK: u8 = 1;
const NEWLINE: u8 = 2;
static CLASS: [u8; 256] = {
    let mut t = [TOKEN; 256];
    t[b' ' as usize] = BLANK;
    t[b'\t' as usize] = BLANK;
    t[b'\r' as usize] = BLANK;
    t[0x0c] = BLANK;
    t[b'\n' as usize] = NEWLINE;
    t
};

#[inline]
fn class(b: u8) -> u8 {
    CLASS[usize::from(b)]
}

pub(super) struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
    /// 1-based line of `pos`.
    pub line: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(buf: &'a [u8], line: usize) -> Self {
        Scanner { buf, pos: 0, line }
    }

    #[inline]
    fn skip_blanks(&mut self) {
        while self.pos < self.buf.len() && class(self.buf[self.pos]) == BLANK {
            self.pos += 1;
        }
    }

    /// Skips blank and comment lines; true when positioned on an entry line.
    #[inline]
    pub fn next_entry(&mut self) -> bool {
        loop {
            self.skip_blanks();
            match self.buf.get(self.pos) {
                None => return false,
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                }
                Some(b'%') => self.skip_line(),
                Some(_) => return true,
            }
        }
    }

    pub fn skip_line(&mut self) {
        match self.buf[self.pos..].iter().position(|&b| b == b'\n') {
            Some(n) => {
                self.pos += n + 1;
                self.line += 1;
            }
            None => self.pos = self.buf.len(),
        }
    }

    /// The next token on the current line; `None` at its end (the '\n' is not consumed).
    #[inline]
    pub fn token(&mut self) -> Option<&'a [u8]> {
        self.skip_blanks();
        let (buf, start) = (self.buf, self.pos);
        let mut p = start;
        while p < buf.len() && class(buf[p]) == TOKEN {
            p += 1;
        }
        self.pos = p;
        (p > start).then(|| &buf[start..p])
    }

    /// The next token as a 1-based index within `1..=dim`, returned 0-based. The digits are
    /// parsed while scanning: indices are two thirds of a coordinate file's tokens.
    #[inline]
    pub fn index(&mut self, what: &str, dim: usize, line: usize) -> Result<u32, MmError> {
        self.skip_blanks();
        let (buf, start) = (self.buf, self.pos);
        let mut p = start;
        let mut v = 0u64;
        while p < buf.len() {
            let d = buf[p].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(u64::from(d));
            p += 1;
        }
        // Ten digits hold every valid index (dims fit i32) and cannot wrap the u64.
        let ends = p == buf.len() || class(buf[p]) != TOKEN;
        if ends && p - start <= 10 && v >= 1 && v <= dim as u64 {
            self.pos = p;
            return Ok((v - 1) as u32);
        }
        Err(self.index_failed(what, dim, line))
    }

    #[cold]
    #[inline(never)]
    fn index_failed(&mut self, what: &str, dim: usize, line: usize) -> MmError {
        match self.token() {
            Some(tok) => index_error(tok, what, dim, line),
            None => err(
                MmErrorKind::MissingValue,
                line,
                format!("the entry has a row index but no {what} index"),
            ),
        }
    }

    /// Like `token`, for a value: eight bytes at a time until a byte <= b' ' (every separator
    /// is one), then byte by byte, which also steps over control bytes that are not separators.
    #[inline]
    pub fn value_token(&mut self) -> Option<&'a [u8]> {
        self.skip_blanks();
        let (buf, start) = (self.buf, self.pos);
        let mut p = start;
        while let Some(chunk) = buf[p..].first_chunk::<8>() {
            let w = u64::from_le_bytes(*chunk);
            // High bit set in each byte below 0x21; the lowest flag is exact (no borrow below it).
            let low = w.wrapping_sub(0x2121_2121_2121_2121) & !w & 0x8080_8080_8080_8080;
            if low != 0 {
                p += (low.trailing_zeros() / 8) as usize;
                break;
            }
            p += 8;
        }
        while p < buf.len() && class(buf[p]) == TOKEN {
            p += 1;
        }
        self.pos = p;
        (p > start).then(|| &buf[start..p])
    }

    /// Ends an entry line: `Err(token)` if one is left over, else moves to the next line.
    #[inline]
    pub fn finish_line(&mut self) -> Result<(), &'a [u8]> {
        self.skip_blanks();
        match self.buf.get(self.pos) {
            None => Ok(()),
            Some(b'\n') => {
                self.pos += 1;
                self.line += 1;
                Ok(())
            }
            Some(_) => Err(self.token().unwrap_or_default()),
        }
    }
}

#[cold]
fn index_error(tok: &[u8], what: &str, dim: usize, line: usize) -> MmError {
    let unsigned = |t: &[u8]| !t.is_empty() && t.iter().all(u8::is_ascii_digit);
    if !(unsigned(tok) || tok.first() == Some(&b'-') && unsigned(&tok[1..])) {
        return err(
            MmErrorKind::BadNumber,
            line,
            format!("{what} index {} is not an integer", quote(tok)),
        );
    }
    let range = if dim == 0 {
        format!("the matrix has no {what}s")
    } else {
        format!("valid {what} indices are 1..={dim}")
    };
    let hint = if tok.iter().all(|&b| b == b'0') {
        " (indices are 1-based)"
    } else {
        ""
    };
    err(
        MmErrorKind::IndexOutOfRange,
        line,
        format!("{what} index {} is out of range: {range}{hint}", quote(tok)),
    )
}

/// A value token of an integer or real file; integers keep their exact value (correctly rounded
/// above 2^53), reals go through std's correctly rounded parser.
#[inline]
pub(super) fn value(tok: &[u8], field: Field, line: usize) -> Result<f64, MmError> {
    let parsed = match field {
        Field::Integer => parse_integer(tok),
        _ => parse_real(tok),
    };
    match parsed {
        Some(v) if v.is_finite() => Ok(v),
        _ => Err(value_error(tok, field, line)),
    }
}

#[cold]
#[inline(never)]
fn value_error(tok: &[u8], field: Field, line: usize) -> MmError {
    let parsed = match field {
        Field::Integer => parse_integer(tok),
        _ => parse_real(tok),
    };
    match parsed {
        Some(_) => err(
            MmErrorKind::NonFinite,
            line,
            format!("value {} is not finite", quote(tok)),
        ),
        None => err(
            MmErrorKind::BadNumber,
            line,
            format!(
                "value {} is not {}",
                quote(tok),
                if field == Field::Integer {
                    "an integer"
                } else {
                    "a real number"
                }
            ),
        ),
    }
}

#[inline]
fn parse_real(tok: &[u8]) -> Option<f64> {
    std::str::from_utf8(tok).ok()?.parse().ok()
}

fn parse_integer(tok: &[u8]) -> Option<f64> {
    let negative = tok.first() == Some(&b'-');
    let digits = match tok.first() {
        Some(b'-' | b'+') => &tok[1..],
        _ => tok,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = if digits.len() <= 18 {
        let m = digits
            .iter()
            .fold(0u64, |acc, &b| acc * 10 + u64::from(b - b'0')) as f64;
        if negative { -m } else { m }
    } else {
        parse_real(tok)?
    };
    // An integer zero is +0.0 even when written "-0".
    Some(v + 0.0)
}
