//! How ILU(0) meets a zero pivot or a missing diagonal entry: the user's choice
//! ([`IluShift`]), what the automatic remedy did ([`IluRemedy`]), and why a factorization
//! failed.

use crate::error::Error;

/// How ILU(0) meets a zero pivot or a missing diagonal entry (`--ilu-shift`, `ilu_shift`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum IluShift {
    /// Factor `A`; where that fails (a missing diagonal entry, a zero or non-finite pivot, a
    /// non-finite factor entry, a solve with the factors that overflows), and the method is
    /// not CG (whose matrix must stay symmetric), permute the rows by a maximum product
    /// matching ([`Match`](IluShift::Match)); where that fails too, or cannot run, factor
    /// `A + s max|a_ij| I` (of the scaled, permuted matrix after a matching) for `s` =
    /// [`AUTO_SHIFT_START`], then `s` times [`AUTO_SHIFT_GROWTH`] after each failure, up to
    /// [`AUTO_SHIFT_MAX`].
    #[default]
    Auto,
    /// Permute the rows so that a maximum product matching lies on the diagonal (MC64 job 5,
    /// `precond::matching`) and factor the permuted matrix, scaled so that its entries are at
    /// most about 1, with the growing shift where it still fails; the solve iterates on the
    /// permuted system, which has `A x = b`'s residual norm and solution.
    Match,
    /// The growing shift alone, no matching: factor `A`, and where that fails
    /// `A + s max|a_ij| I` for the growing `s`.
    Shift,
    /// Factor `A` only: a zero pivot or a missing diagonal entry is an error naming the row.
    None,
    /// Factor `A + s max|a_ij| I` with this `s > 0` (missing diagonal entries inserted).
    Fixed(f64),
}

/// The automatic shift's first `s` (`sigma = s max|a_ij|`).
pub const AUTO_SHIFT_START: f64 = 1e-10;
/// The factor `s` grows by after each failed factorization.
pub const AUTO_SHIFT_GROWTH: f64 = 10.0;
/// The largest `s` tried; past it the automatic remedy gives up with the error.
pub const AUTO_SHIFT_MAX: f64 = 1e2;

impl IluShift {
    /// Parse `auto`, `none`, `0` (= `none`) or a positive number `s`.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        match text.trim() {
            "auto" => Ok(IluShift::Auto),
            "match" => Ok(IluShift::Match),
            "shift" => Ok(IluShift::Shift),
            "none" => Ok(IluShift::None),
            t => match t.parse::<f64>() {
                Ok(s) => Self::from_number(s),
                Err(_) => Err(format!(
                    "'{t}' is not auto, match, shift, none or a number (0: none, s > 0: A + s max|a_ij| I)"
                )),
            },
        }
    }

    /// `0` is `None`, `s > 0` is `Fixed(s)`; anything else is an error.
    pub fn from_number(s: f64) -> std::result::Result<Self, String> {
        if s == 0.0 {
            Ok(IluShift::None)
        } else if s.is_finite() && s > 0.0 {
            Ok(IluShift::Fixed(s))
        } else {
            Err(format!(
                "{s} must be auto, 0 or none (no shift) or a positive number"
            ))
        }
    }

    /// The fixed `s`, if one is given.
    pub fn fixed(self) -> Option<f64> {
        match self {
            IluShift::Fixed(s) => Some(s),
            IluShift::Auto | IluShift::Match | IluShift::Shift | IluShift::None => None,
        }
    }

    /// True for the default, [`IluShift::Auto`].
    pub fn is_auto(&self) -> bool {
        *self == IluShift::Auto
    }
}

impl std::fmt::Display for IluShift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IluShift::Auto => f.write_str("auto"),
            IluShift::Match => f.write_str("match"),
            IluShift::Shift => f.write_str("shift"),
            IluShift::None => f.write_str("none"),
            IluShift::Fixed(s) => write!(f, "{s:e}"),
        }
    }
}

/// `auto` and `none` as strings, a fixed shift as its number (as older files wrote it).
#[cfg(feature = "serde")]
impl serde::Serialize for IluShift {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            IluShift::Fixed(s) => ser.serialize_f64(*s),
            other => ser.serialize_str(&other.to_string()),
        }
    }
}

/// `"auto"`, `"none"`, `0` (none) or a positive number.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for IluShift {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(de)? {
            Raw::Number(s) => IluShift::from_number(s),
            Raw::Text(t) => IluShift::parse(&t),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// What the automatic shift did where `A` itself did not factor.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IluRemedy {
    /// Why `A` itself did not factor: `zero pivot in row 17`, `row 3 has no diagonal entry
    /// (...)` (rows 1-based).
    pub cause: String,
    /// The `s` of the factorization used: `A + s max|a_ij| I` (of the scaled, permuted
    /// matrix after a matching); 0 where no shift was needed.
    pub s: f64,
    /// Factorizations tried, the failed one of `A` and the one used included.
    pub attempts: u32,
    /// Rows a matching moved (0: no matching ran).
    #[cfg_attr(feature = "serde", serde(default))]
    pub permuted_rows: usize,
}

impl std::fmt::Display for IluRemedy {
    /// `zero pivot in row 3: rows permuted by a matching (12 moved), scaled; shift s = 1e-8 (4
    /// factorizations)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.cause)?;
        if self.permuted_rows > 0 {
            write!(f, "rows permuted by a matching ({} moved), scaled", self.permuted_rows)?;
            if self.s > 0.0 {
                f.write_str("; ")?;
            }
        }
        if self.s > 0.0 {
            write!(f, "shift s = {:e} x max|a_ij|", self.s)?;
        }
        let plural = if self.attempts == 1 { "" } else { "s" };
        write!(f, " ({} factorization{plural})", self.attempts)
    }
}

/// Why one factorization failed (rows 0-based).
#[derive(Clone, Debug)]
pub(super) enum Failure {
    NoDiagonal {
        row: usize,
        missing: usize,
        n: usize,
    },
    Pivot {
        row: usize,
        zero: bool,
    },
    Entry {
        row: usize,
    },
    /// The factors are finite but `(LU)^{-1}` of a vector of ones is not.
    Overflow,
    /// Not a failure: the user chose the matching (`--ilu-shift match`).
    Chosen,
}

impl Failure {
    /// The cause in words, rows 1-based.
    pub(super) fn cause(&self) -> String {
        match *self {
            Failure::NoDiagonal { row, missing, n } => format!(
                "row {} has no diagonal entry ({missing} of {n} rows have none)",
                row + 1
            ),
            Failure::Pivot { row, zero } => {
                let what = if zero { "zero" } else { "non-finite" };
                format!("{what} pivot in row {}", row + 1)
            }
            Failure::Entry { row } => format!("non-finite factor entry in row {}", row + 1),
            Failure::Overflow => "a solve with the factors overflows".into(),
            Failure::Chosen => "matching chosen (--ilu-shift match)".into(),
        }
    }

    /// The error of a factorization of `A` (`sigma` = 0) or of a fixed shift, as before the
    /// automatic remedy.
    pub(super) fn error(&self, sigma: f64) -> Error {
        let cause = self.cause();
        let hint = match self {
            Failure::NoDiagonal { .. } => {
                "; ILU(0) needs every diagonal in the pattern (--ilu-shift auto or S inserts them)"
                    .to_string()
            }
            _ if sigma > 0.0 => {
                format!(" even with the diagonal shifted by {sigma:e}; try a larger --ilu-shift")
            }
            _ => "; --ilu-shift S factors A + S max|a_ij| I instead (--ilu-shift auto finds S)"
                .into(),
        };
        Error::Preconditioner(format!("ILU(0): {cause}{hint}"))
    }
}
