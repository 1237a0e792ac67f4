//! ILU(0) in double: `A ~ L U` on the sparsity pattern of `A` (explicit zeros included), computed
//! once per matrix on the CPU, then applied by each backend's triangular solves (thesis 4.3.2).
//!
//! The factors live in `A`'s CSR pattern: the strictly lower entries hold `L` (unit diagonal, not
//! stored), the diagonal and upper entries hold `U`, as cuSPARSE's `csrilu02` leaves them.
//!
//! The arithmetic of an application, which every backend follows operation for operation so that
//! all give the same bits (one `f64` multiply and one subtract per entry, never fused):
//! - forward: `y_i = fl(r_i)`, then for the strictly lower entries of row `i` in increasing column
//!   order `y_i = y_i - l_ij * y_j`;
//! - backward: `x_i = y_i`, then for the strictly upper entries in decreasing column order
//!   `x_i = x_i - u_ij * x_j`, then `x_i = x_i / u_ii`; `z_i = x_i` in the working precision.
//!
//! Each row's sum runs from the entry farthest from the diagonal towards it: in a parallel solve
//! those are the values that are ready first.

use super::matching::{Matched, RowOrder};
use crate::error::{Error, Result};
use crate::sparse::CsrMatrix;
use std::sync::Arc;
use std::time::Instant;

/// ILU(0) factors and the level structure of their two triangles.
#[derive(Clone, Debug)]
pub struct Ilu0Factors {
    n: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<i32>,
    values: Vec<f64>,
    diag: Vec<usize>,
    lower: Levels,
    upper: Levels,
    shift: f64,
    remedy: Option<IluRemedy>,
    attempts: u32,
    seconds: f64,
    /// Where the factors are of `P A`, a row permutation of `A` (a matching): the system the
    /// solve iterates on.
    order: Option<Arc<RowOrder>>,
}

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
enum Failure {
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
    fn cause(&self) -> String {
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
    fn error(&self, sigma: f64) -> Error {
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

/// Rows grouped by level: a row's dependencies all lie in earlier levels, so the rows of one
/// level can be solved at the same time. Within a level rows are in increasing order.
#[derive(Clone, Debug, Default)]
pub struct Levels {
    /// Rows, level after level.
    pub rows: Vec<u32>,
    /// `rows[ptr[l]..ptr[l + 1]]` is level `l`.
    pub ptr: Vec<usize>,
}

impl Levels {
    pub fn count(&self) -> usize {
        self.ptr.len().saturating_sub(1)
    }
    pub fn level(&self, l: usize) -> &[u32] {
        &self.rows[self.ptr[l]..self.ptr[l + 1]]
    }
    /// Mean rows per level: the parallelism a level-scheduled solve can use.
    pub fn mean_width(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.rows.len() as f64 / self.count() as f64
        }
    }
}

impl Ilu0Factors {
    /// Factor `a`. Without a shift a missing diagonal entry or a zero pivot is an error naming
    /// the row (1-based, as in the Matrix Market file). With `shift = s > 0` the factorization is
    /// of `A + sigma I`, `sigma = s * max |a_ij|`, with missing diagonal entries inserted; a pivot
    /// that still comes out zero is an error.
    pub fn new(a: &CsrMatrix, shift: Option<f64>) -> Result<Self> {
        let start = Instant::now();
        check_square(a)?;
        if let Some(s) = shift {
            check_shift(s)?;
        }
        let sigma = shift.map_or(0.0, |s| shift_sigma(a, s));
        let mut f = Self::attempt(a, shift, false).map_err(|failure| failure.error(sigma))?;
        f.seconds = start.elapsed().as_secs_f64();
        Ok(f)
    }

    /// Factor `a` as `shift` says: [`IluShift::None`] and [`IluShift::Fixed`] as [`Self::new`];
    /// [`IluShift::Auto`] factors `A`, and where that fails (a missing diagonal entry, a zero
    /// or non-finite pivot, a non-finite factor entry, an overflowing solve of `L U x = 1`)
    /// `A + s max|a_ij| I` for `s` from
    /// [`AUTO_SHIFT_START`], times [`AUTO_SHIFT_GROWTH`] after each failure, until one succeeds
    /// ([`Self::remedy`] says which) or `s` passes [`AUTO_SHIFT_MAX`] (the error names the last
    /// `s` tried). The factors of a remedy are those of `Self::new(a, Some(s))`, bit for bit.
    pub fn with_shift(a: &CsrMatrix, shift: IluShift) -> Result<Self> {
        Self::with_remedy(a, shift, true)
    }

    /// [`with_shift`](Self::with_shift), where [`IluShift::Auto`] permutes rows only if
    /// `may_permute` (not for CG, which needs the symmetric `A`).
    pub fn with_remedy(a: &CsrMatrix, shift: IluShift, may_permute: bool) -> Result<Self> {
        match shift {
            IluShift::None => Self::new(a, None),
            IluShift::Fixed(s) => Self::new(a, Some(s)),
            IluShift::Auto => Self::auto(a, may_permute, false),
            IluShift::Match => Self::auto(a, true, true),
            IluShift::Shift => Self::auto(a, false, false),
        }
    }

    /// `A`'s factors, or where they fail (or `always_match`) a remedy's: the matching first
    /// where `may_permute`, then the growing shift (of the matched matrix where the matching
    /// ran).
    fn auto(a: &CsrMatrix, may_permute: bool, always_match: bool) -> Result<Self> {
        let start = Instant::now();
        check_square(a)?;
        let first = match always_match {
            true => Failure::Chosen,
            false => match Self::attempt(a, None, true) {
                Ok(mut f) => {
                    f.seconds = start.elapsed().as_secs_f64();
                    return Ok(f);
                }
                Err(failure) => failure,
            },
        };
        let attempts = u32::from(!always_match);
        let matched = match may_permute {
            true => Matched::new(a).map_err(|singular| {
                log::info!(
                    "ILU(0): no matching (row {} has no column left): shifting A instead",
                    singular.row + 1
                )
            }),
            false => Err(()),
        };
        let (mut f, s, attempts) = match &matched {
            Ok(m) => {
                let scaled = &m.scaled;
                let (mut f, s, attempts) = match Self::attempt(scaled, None, true) {
                    Ok(f) => (f, 0.0, attempts + 1),
                    Err(_) => Self::grow_shift(scaled, &first, attempts + 1)?,
                };
                m.unscale(&f.row_ptr, &f.col_idx, &mut f.values, &f.diag);
                f.order = Some(Arc::new(m.order.clone()));
                (f, s, attempts)
            }
            Err(()) => Self::grow_shift(a, &first, attempts)?,
        };
        f.remedy = Some(IluRemedy {
            cause: first.cause(),
            s,
            attempts,
            permuted_rows: f.order.as_ref().map_or(0, |o| o.moved_rows()),
        });
        f.attempts = attempts;
        f.seconds = start.elapsed().as_secs_f64();
        Ok(f)
    }

    /// Factor `m + s max|m_ij| I` for the growing `s` until one succeeds: the factors, `s` and
    /// the factorizations tried in all (`attempts` before these).
    fn grow_shift(m: &CsrMatrix, first: &Failure, mut attempts: u32) -> Result<(Self, f64, u32)> {
        let mut s = AUTO_SHIFT_START;
        loop {
            attempts += 1;
            match Self::attempt(m, Some(s), true) {
                Ok(f) => return Ok((f, s, attempts)),
                Err(last) => {
                    let next = next_shift(s);
                    if next > AUTO_SHIFT_MAX * (1.0 + 1e-12) {
                        return Err(Error::Preconditioner(format!(
                            "ILU(0): {}; the automatic shift tried {attempts} factorizations up \
                             to s = {s:e} (sigma = {:e}), the last ended at: {}",
                            first.cause(),
                            shift_sigma(m, s),
                            last.cause()
                        )));
                    }
                    s = next;
                }
            }
        }
    }

    /// One factorization of `A` (`shift` `None`) or of `A + s max|a_ij| I`; `strict` also
    /// fails on a non-finite entry of the factors.
    fn attempt(
        a: &CsrMatrix,
        shift: Option<f64>,
        strict: bool,
    ) -> std::result::Result<Self, Failure> {
        let (row_ptr, col_idx, mut values, diag, sigma) = match shift {
            None => {
                let diag = diagonal_positions(a)?;
                (
                    a.row_ptr().to_vec(),
                    a.col_idx().to_vec(),
                    a.values().to_vec(),
                    diag,
                    0.0,
                )
            }
            Some(s) => shifted_pattern(a, s),
        };
        factor(&row_ptr, &col_idx, &mut values, &diag, strict)?;
        if strict && !solves_finitely(&row_ptr, &col_idx, &values, &diag) {
            return Err(Failure::Overflow);
        }
        let lower = levels(&row_ptr, &col_idx, &diag, Triangle::Lower);
        let upper = levels(&row_ptr, &col_idx, &diag, Triangle::Upper);
        Ok(Ilu0Factors {
            n: a.nrows(),
            row_ptr,
            col_idx,
            values,
            diag,
            lower,
            upper,
            shift: sigma,
            remedy: None,
            attempts: 1,
            seconds: 0.0,
            order: None,
        })
    }

    pub fn n(&self) -> usize {
        self.n
    }
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }
    pub fn col_idx(&self) -> &[i32] {
        &self.col_idx
    }
    /// `L` (strictly lower) and `U` (diagonal and upper) in the pattern.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// Position of each row's diagonal entry in `values`.
    pub fn diag(&self) -> &[usize] {
        &self.diag
    }
    /// Levels of both triangular solves together: the chain a level-scheduled application
    /// waits through.
    pub fn level_count(&self) -> usize {
        self.lower.count() + self.upper.count()
    }
    /// Levels of the forward (`L`) solve.
    pub fn lower_levels(&self) -> &Levels {
        &self.lower
    }
    /// Levels of the backward (`U`) solve; level 0 holds the last rows.
    pub fn upper_levels(&self) -> &Levels {
        &self.upper
    }
    /// The `sigma` added to the diagonal (0 where `A` itself was factored; of the scaled,
    /// permuted matrix after a matching).
    pub fn sigma(&self) -> f64 {
        self.shift
    }
    /// Where the factors are of a row permutation `P A` (a matching ran): the permutation and
    /// `P A`, the system a solve with these factors iterates on.
    pub fn row_order(&self) -> Option<&Arc<RowOrder>> {
        self.order.as_ref()
    }
    /// What the automatic shift did, where `A` itself did not factor ([`IluShift::Auto`]).
    pub fn remedy(&self) -> Option<&IluRemedy> {
        self.remedy.as_ref()
    }
    /// Factorizations tried (1 unless the automatic shift ran).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
    /// Wall seconds the factorization and level analysis took.
    pub fn setup_seconds(&self) -> f64 {
        self.seconds
    }

    /// Bytes one application reads and writes, for bandwidth figures: each entry's value and
    /// column, the row pointers and diagonal positions twice, the gathered values, and the
    /// vectors (`in_bytes`/`out_bytes` per element of the working precision).
    pub fn apply_bytes(&self, in_bytes: usize, out_bytes: usize) -> f64 {
        let n = self.n as f64;
        let nnz = self.nnz() as f64;
        // values + columns + gathers of the other rows' results: 8 + 4 + 8 per off-diagonal
        // entry; diagonal 8; row pointer, diagonal index: 2 x 16 per row; y written and read
        // twice (8 x 3); input and output.
        20.0 * (nnz - n) + 8.0 * n + 32.0 * n + 24.0 * n + (in_bytes + out_bytes) as f64 * n
    }
}

/// One triangle renumbered in the order of its levels: what the CPU's level schedule and the GPU
/// kernels walk. Position `p` holds row `rows[p]`; its off-diagonal entries are
/// `ptr[p]..ptr[p + 1]` of `deps` and `vals`, in the order of the arithmetic (L: increasing
/// column, U: decreasing), each dependency given as its row's position in this same order
/// (always smaller than `p`), so each level is a contiguous block of positions.
///
/// In the partitioned order (`lower_partitioned`) the levels are those of each part's own
/// dependency graph, part after part; a row's dependencies are still all in earlier levels, so
/// everything that walks levels in order works on either.
#[derive(Clone, Debug)]
pub struct OrderedTriangle {
    pub rows: Vec<u32>,
    /// Level `l` is positions `level_ptr[l]..level_ptr[l + 1]`.
    pub level_ptr: Vec<usize>,
    /// Part `q` is levels `part_ptr[q]..part_ptr[q + 1]` (the level order is one part).
    pub part_ptr: Vec<usize>,
    pub ptr: Vec<usize>,
    pub deps: Vec<u32>,
    pub vals: Vec<f64>,
    /// `u_ii` by position (the upper triangle; empty for the lower).
    pub diag: Vec<f64>,
    /// The position of each row.
    pub position: Vec<u32>,
}

impl OrderedTriangle {
    /// For each position of this triangle, the position of its row in `other` (the map between
    /// the forward and the backward order of the same rows).
    pub fn positions_in(&self, other: &OrderedTriangle) -> Vec<u32> {
        self.rows
            .iter()
            .map(|&i| other.position[i as usize])
            .collect()
    }
}

impl Ilu0Factors {
    /// `L` (strictly lower entries, unit diagonal) in the order of its levels.
    pub fn lower_ordered(&self) -> OrderedTriangle {
        self.ordered(&self.lower, false, vec![0, self.lower.count()])
    }

    /// `U` (diagonal and strictly upper entries) in the order of its levels.
    pub fn upper_ordered(&self) -> OrderedTriangle {
        self.ordered(&self.upper, true, vec![0, self.upper.count()])
    }

    /// `L` cut into `parts` runs of consecutive rows (as equal as can be) for a GPU block each,
    /// each run in the order of its rows' "arrival": the longest dependency path to the row,
    /// counting a dependency in the same run as 1 and one in an earlier run as `hop` (the
    /// cost of hearing from another block, in a block's own level steps). A block solves its
    /// run arrival by arrival with a barrier between them, so a row whose dependency comes from
    /// another block is placed `hop` steps after it, and the rows that need nothing from
    /// outside go first instead of waiting behind it. (Counting only a run's own
    /// dependencies, `hop` = 0, makes each run wait for most of the one before:
    /// `benches/results/ilu0-h200.md`.)
    pub fn lower_partitioned(&self, parts: usize, hop: u32) -> OrderedTriangle {
        self.partitioned(false, parts, hop)
    }

    /// `U` likewise, its runs taken from the last row backwards (the order of its solve).
    pub fn upper_partitioned(&self, parts: usize, hop: u32) -> OrderedTriangle {
        self.partitioned(true, parts, hop)
    }

    fn partitioned(&self, upper: bool, parts: usize, hop: u32) -> OrderedTriangle {
        let n = self.n;
        let parts = parts.clamp(1, n.max(1));
        let hop = hop.max(1);
        let (row_ptr, cols, diag) = (&self.row_ptr, &self.col_idx, &self.diag);
        // `t`: a row's index in the order of the solve (L forward, U backward)
        let step = |t: usize| if upper { n - 1 - t } else { t };
        let mut level = vec![0u32; n];
        let mut rows = vec![0u32; n];
        let mut level_ptr = vec![0usize];
        let mut part_ptr = vec![0usize];
        for q in 0..parts {
            let (t0, t1) = (q * n / parts, (q + 1) * n / parts);
            let mut count = 0usize;
            for t in t0..t1 {
                let i = step(t);
                let deps = if upper {
                    diag[i] + 1..row_ptr[i + 1]
                } else {
                    row_ptr[i]..diag[i]
                };
                let l = deps
                    .map(|k| cols[k] as usize)
                    .map(|j| level[j] + if step(j) >= t0 { 1 } else { hop })
                    .max()
                    .unwrap_or(0);
                level[i] = l;
                count = count.max(l as usize + 1);
            }
            // counting sort of the run by arrival, in the order of the solve within one; the
            // arrivals no row of the run has are no levels
            let low = (t0..t1).map(|t| level[step(t)]).min().unwrap_or(0) as usize;
            let mut next = vec![0usize; count - low + 1];
            for t in t0..t1 {
                next[level[step(t)] as usize - low + 1] += 1;
            }
            next[0] = t0;
            for l in 1..next.len() {
                next[l] += next[l - 1];
            }
            let mut ends: Vec<usize> = next[1..].to_vec();
            ends.dedup();
            level_ptr.extend_from_slice(&ends);
            for t in t0..t1 {
                let i = step(t);
                let slot = &mut next[level[i] as usize - low];
                rows[*slot] = i as u32;
                *slot += 1;
            }
            part_ptr.push(level_ptr.len() - 1);
        }
        let levels = Levels {
            rows,
            ptr: level_ptr,
        };
        self.ordered(&levels, upper, part_ptr)
    }

    fn ordered(&self, levels: &Levels, upper: bool, part_ptr: Vec<usize>) -> OrderedTriangle {
        let mut position = vec![0u32; self.n];
        for (p, &i) in levels.rows.iter().enumerate() {
            position[i as usize] = p as u32;
        }
        let (row_ptr, cols, values, diag) =
            (&self.row_ptr, &self.col_idx, &self.values, &self.diag);
        let entries = if upper {
            self.nnz() - diag.len() - (0..self.n).map(|i| diag[i] - row_ptr[i]).sum::<usize>()
        } else {
            (0..self.n).map(|i| diag[i] - row_ptr[i]).sum::<usize>()
        };
        let mut ptr = Vec::with_capacity(self.n + 1);
        let mut deps = Vec::with_capacity(entries);
        let mut vals = Vec::with_capacity(entries);
        let mut pivots = Vec::with_capacity(if upper { self.n } else { 0 });
        ptr.push(0);
        for &i in &levels.rows {
            let i = i as usize;
            let mut push = |k: usize| {
                deps.push(position[cols[k] as usize]);
                vals.push(values[k]);
            };
            if upper {
                (diag[i] + 1..row_ptr[i + 1]).rev().for_each(&mut push);
                pivots.push(values[diag[i]]);
            } else {
                (row_ptr[i]..diag[i]).for_each(&mut push);
            }
            ptr.push(deps.len());
        }
        OrderedTriangle {
            rows: levels.rows.clone(),
            level_ptr: levels.ptr.clone(),
            part_ptr,
            ptr,
            deps,
            vals,
            diag: pivots,
            position,
        }
    }
}

/// `s` if it is a valid `--ilu-shift` (finite and positive), else the error saying so.
pub fn check_shift(s: f64) -> Result<f64> {
    if s.is_finite() && s > 0.0 {
        Ok(s)
    } else {
        Err(Error::Config(format!(
            "ilu-shift must be a positive number, not {s}"
        )))
    }
}

/// The automatic shift's `s` after `s`: times [`AUTO_SHIFT_GROWTH`], kept to 6 significant
/// digits so that the reported values read as written (`1e-9`, not `1.0000000000000001e-9`).
fn next_shift(s: f64) -> f64 {
    let grown = s * AUTO_SHIFT_GROWTH;
    format!("{grown:.6e}").parse().unwrap_or(grown)
}

/// `a` is square, else the error saying so.
fn check_square(a: &CsrMatrix) -> Result<()> {
    if a.is_square() {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "ILU(0) needs a square matrix, this one is {} x {}",
            a.nrows(),
            a.ncols()
        )))
    }
}

/// `sigma = s max|a_ij|` (`s` itself for a zero matrix).
fn shift_sigma(a: &CsrMatrix, s: f64) -> f64 {
    let max_abs = a.values().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    s * if max_abs > 0.0 { max_abs } else { 1.0 }
}

/// Index of every row's diagonal entry, or the first row without one.
fn diagonal_positions(a: &CsrMatrix) -> std::result::Result<Vec<usize>, Failure> {
    let mut diag = Vec::with_capacity(a.nrows());
    for i in 0..a.nrows() {
        let (cols, _) = a.row(i);
        match cols.binary_search(&(i as i32)) {
            Ok(k) => diag.push(a.row_ptr()[i] + k),
            Err(_) => {
                return Err(Failure::NoDiagonal {
                    row: i,
                    missing: a.rows_missing_diagonal().len(),
                    n: a.nrows(),
                });
            }
        }
    }
    Ok(diag)
}

/// `A + sigma I` in `A`'s pattern plus every missing diagonal entry; returns the CSR arrays, the
/// diagonal positions and `sigma`.
fn shifted_pattern(a: &CsrMatrix, s: f64) -> (Vec<usize>, Vec<i32>, Vec<f64>, Vec<usize>, f64) {
    let sigma = shift_sigma(a, s);
    let n = a.nrows();
    let mut row_ptr = Vec::with_capacity(n + 1);
    let mut col_idx = Vec::with_capacity(a.nnz() + n);
    let mut values = Vec::with_capacity(a.nnz() + n);
    let mut diag = Vec::with_capacity(n);
    row_ptr.push(0);
    for i in 0..n {
        let (cols, vals) = a.row(i);
        let at = cols.partition_point(|&c| (c as usize) < i);
        col_idx.extend_from_slice(&cols[..at]);
        values.extend_from_slice(&vals[..at]);
        diag.push(values.len());
        if cols.get(at) == Some(&(i as i32)) {
            col_idx.extend_from_slice(&cols[at..]);
            values.extend_from_slice(&vals[at..]);
        } else {
            col_idx.push(i as i32);
            values.push(0.0);
            col_idx.extend_from_slice(&cols[at..]);
            values.extend_from_slice(&vals[at..]);
        }
        let d = diag[i];
        values[d] += sigma;
        row_ptr.push(values.len());
    }
    (row_ptr, col_idx, values, diag, sigma)
}

/// The IKJ ILU(0) in place on `values`: for each row `i`, for each `k < i` in the pattern,
/// `l_ik = a_ik / u_kk` and `a_ij -= l_ik u_kj` for every `j > k` in both patterns. Fails at
/// the first zero or non-finite pivot, and with `strict` at the first row with a non-finite
/// entry.
fn factor(
    row_ptr: &[usize],
    col_idx: &[i32],
    values: &mut [f64],
    diag: &[usize],
    strict: bool,
) -> std::result::Result<(), Failure> {
    let n = diag.len();
    // Position of column j in the current row, or usize::MAX.
    let mut position = vec![usize::MAX; n];
    for i in 0..n {
        let row = row_ptr[i]..row_ptr[i + 1];
        for k in row.clone() {
            position[col_idx[k] as usize] = k;
        }
        for kk in row_ptr[i]..diag[i] {
            let k = col_idx[kk] as usize;
            // u_kk was checked when row k finished
            let l = values[kk] / values[diag[k]];
            values[kk] = l;
            for m in diag[k] + 1..row_ptr[k + 1] {
                let p = position[col_idx[m] as usize];
                if p != usize::MAX {
                    let update = l * values[m];
                    values[p] -= update;
                }
            }
        }
        for k in row {
            position[col_idx[k] as usize] = usize::MAX;
        }
        let pivot = values[diag[i]];
        if pivot == 0.0 || !pivot.is_finite() {
            return Err(Failure::Pivot {
                row: i,
                zero: pivot == 0.0,
            });
        }
        if strict
            && values[row_ptr[i]..row_ptr[i + 1]]
                .iter()
                .any(|v| !v.is_finite())
        {
            return Err(Failure::Entry { row: i });
        }
    }
    Ok(())
}

/// `(LU)^{-1} 1` is finite: factors whose entries are all finite can still overflow in their
/// triangular solves (tiny pivots: a shift of 1e-10 on a missing diagonal), and then the first
/// application of the preconditioner ends the solve as non-finite.
fn solves_finitely(row_ptr: &[usize], col_idx: &[i32], values: &[f64], diag: &[usize]) -> bool {
    let n = diag.len();
    let mut x = vec![1.0f64; n];
    for i in 0..n {
        for k in row_ptr[i]..diag[i] {
            x[i] -= values[k] * x[col_idx[k] as usize];
        }
    }
    for i in (0..n).rev() {
        for k in diag[i] + 1..row_ptr[i + 1] {
            x[i] -= values[k] * x[col_idx[k] as usize];
        }
        x[i] /= values[diag[i]];
    }
    x.iter().all(|v| v.is_finite())
}

#[derive(Clone, Copy)]
enum Triangle {
    Lower,
    Upper,
}

/// Level of each row (longest dependency chain below it), then rows grouped by level.
fn levels(row_ptr: &[usize], col_idx: &[i32], diag: &[usize], triangle: Triangle) -> Levels {
    let n = diag.len();
    let mut level = vec![0u32; n];
    let mut count = 0usize;
    let mut visit = |i: usize, level: &mut Vec<u32>| {
        let deps = match triangle {
            Triangle::Lower => row_ptr[i]..diag[i],
            Triangle::Upper => diag[i] + 1..row_ptr[i + 1],
        };
        let l = deps
            .map(|k| level[col_idx[k] as usize] + 1)
            .max()
            .unwrap_or(0);
        level[i] = l;
        count = count.max(l as usize + 1);
    };
    match triangle {
        Triangle::Lower => (0..n).for_each(|i| visit(i, &mut level)),
        Triangle::Upper => (0..n).rev().for_each(|i| visit(i, &mut level)),
    }
    // counting sort by level, rows increasing within a level
    let mut ptr = vec![0usize; count + 1];
    for &l in &level {
        ptr[l as usize + 1] += 1;
    }
    for l in 0..count {
        ptr[l + 1] += ptr[l];
    }
    let mut next = ptr.clone();
    let mut rows = vec![0u32; n];
    for (i, &l) in level.iter().enumerate() {
        rows[next[l as usize]] = i as u32;
        next[l as usize] += 1;
    }
    Levels { rows, ptr }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Symmetry;

    fn csr(n: usize, entries: &[(u32, u32, f64)]) -> CsrMatrix {
        let r: Vec<u32> = entries.iter().map(|e| e.0).collect();
        let c: Vec<u32> = entries.iter().map(|e| e.1).collect();
        let v: Vec<f64> = entries.iter().map(|e| e.2).collect();
        CsrMatrix::from_coo(n, n, &r, &c, &v, Symmetry::General).unwrap()
    }

    #[test]
    fn tridiagonal_levels_are_a_chain() {
        let a = csr(
            4,
            &[
                (0, 0, 2.0),
                (0, 1, -1.0),
                (1, 0, -1.0),
                (1, 1, 2.0),
                (1, 2, -1.0),
                (2, 1, -1.0),
                (2, 2, 2.0),
                (2, 3, -1.0),
                (3, 2, -1.0),
                (3, 3, 2.0),
            ],
        );
        let f = Ilu0Factors::new(&a, None).unwrap();
        assert_eq!(f.lower_levels().count(), 4);
        assert_eq!(f.lower_levels().rows, vec![0, 1, 2, 3]);
        assert_eq!(f.upper_levels().rows, vec![3, 2, 1, 0]);
        // tridiagonal ILU(0) is the exact LU: u_11 = 2 - (-1/2)(-1) = 1.5
        assert_eq!(f.values()[f.diag()[1]], 1.5);
    }

    /// Every row once; a dependency is in an earlier level, and in the same part only if it is
    /// in that part's earlier levels; parts are runs of consecutive rows in the solve's order.
    fn check_partitioned(t: &OrderedTriangle, n: usize, parts: usize, upper: bool) {
        assert_eq!(t.part_ptr.len(), parts + 1);
        let mut seen = vec![false; n];
        let mut part_of = vec![0usize; n];
        let mut level_of = vec![0usize; n];
        for q in 0..parts {
            let (b, e) = (t.level_ptr[t.part_ptr[q]], t.level_ptr[t.part_ptr[q + 1]]);
            assert_eq!((b, e), (q * n / parts, (q + 1) * n / parts), "part {q}");
            for l in t.part_ptr[q]..t.part_ptr[q + 1] {
                for p in t.level_ptr[l]..t.level_ptr[l + 1] {
                    let i = t.rows[p] as usize;
                    let solve_index = if upper { n - 1 - i } else { i };
                    assert!((b..e).contains(&solve_index), "row {i} outside part {q}");
                    assert!(!seen[i]);
                    seen[i] = true;
                    (part_of[p], level_of[p]) = (q, l);
                }
            }
        }
        assert!(seen.iter().all(|&s| s));
        for p in 0..n {
            for &d in &t.deps[t.ptr[p]..t.ptr[p + 1]] {
                let d = d as usize;
                assert!(level_of[d] < level_of[p] && part_of[d] <= part_of[p]);
                assert_eq!(t.position[t.rows[d] as usize] as usize, d);
            }
        }
    }

    #[test]
    fn partitioned_orders_keep_dependencies_behind() {
        let a = crate::sparse::poisson3d(7);
        let n = a.nrows();
        let f = Ilu0Factors::new(&a, None).unwrap();
        for parts in [1, 2, 5, 48, n, n + 3] {
            for hop in [1, 8] {
                let want = parts.min(n);
                check_partitioned(&f.lower_partitioned(parts, hop), n, want, false);
                check_partitioned(&f.upper_partitioned(parts, hop), n, want, true);
            }
        }
        // one part of a 7^3 grid: its levels are the grid's, 3 * 6 + 1 = 19
        assert_eq!(f.lower_partitioned(1, 8).level_ptr.len(), 20);
        // a part per plane: row (x, y, z) arrives at x + y + 8 z, so each part has the plane's
        // 13 diagonals as levels, and the last part's first starts 8 * 6 steps in
        let seven = f.lower_partitioned(7, 8);
        assert_eq!(seven.part_ptr[1] - seven.part_ptr[0], 13);
        assert_eq!(seven.part_ptr[7] - seven.part_ptr[6], 13);
    }

    #[test]
    fn diagonal_matrix_is_one_level() {
        let a = csr(3, &[(0, 0, 1.0), (1, 1, 2.0), (2, 2, 4.0)]);
        let f = Ilu0Factors::new(&a, None).unwrap();
        assert_eq!(f.lower_levels().count(), 1);
        assert_eq!(f.upper_levels().count(), 1);
        assert_eq!(f.lower_levels().mean_width(), 3.0);
    }

    #[test]
    fn missing_diagonal_names_the_row_and_shift_inserts_it() {
        let a = csr(3, &[(0, 0, 1.0), (1, 0, 1.0), (1, 2, 1.0), (2, 2, 4.0)]);
        let err = Ilu0Factors::new(&a, None).unwrap_err().to_string();
        assert!(err.contains("row 2 has no diagonal"), "{err}");
        let f = Ilu0Factors::new(&a, Some(0.25)).unwrap();
        assert_eq!(f.nnz(), 5);
        assert_eq!(f.sigma(), 1.0);
        // row 2 (0-based 1): l_10 = 1 / (1 + 1), u_11 = 0 + 1 - 0 = 1
        assert_eq!(f.values()[f.diag()[1]], 1.0);
    }

    /// The automatic shift's factors are those of a fixed shift of its final `s`, bit for bit.
    fn assert_same_factors(auto: &Ilu0Factors, a: &CsrMatrix) {
        let s = auto.remedy().expect("the remedy ran").s;
        let fixed = Ilu0Factors::new(a, Some(s)).unwrap();
        assert_eq!(auto.row_ptr(), fixed.row_ptr());
        assert_eq!(auto.col_idx(), fixed.col_idx());
        assert_eq!(auto.diag(), fixed.diag());
        let bits = |f: &Ilu0Factors| f.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(auto), bits(&fixed));
        assert_eq!(auto.sigma().to_bits(), fixed.sigma().to_bits());
        assert!(fixed.remedy().is_none() && fixed.attempts() == 1);
    }

    #[test]
    fn auto_shift_gets_past_a_zero_pivot_and_reports_it() {
        // u_11 = 1 - (1/1) * 1 = 0; max|a_ij| = 1, so sigma = s
        let a = csr(2, &[(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 1.0)]);
        let f = Ilu0Factors::with_shift(&a, IluShift::Shift).unwrap();
        let r = f.remedy().unwrap();
        assert_eq!(r.cause, "zero pivot in row 2");
        // the first shift already factors: the plain attempt and one shifted
        assert_eq!((r.s, r.attempts, f.attempts()), (AUTO_SHIFT_START, 2, 2));
        assert_eq!(f.sigma(), AUTO_SHIFT_START);
        assert_same_factors(&f, &a);
        // no remedy: the error as before
        let err = Ilu0Factors::with_shift(&a, IluShift::None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("zero pivot in row 2"), "{err}");
        // a matrix that factors as given is factored as given
        let b = csr(2, &[(0, 0, 2.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 2.0)]);
        let f = Ilu0Factors::with_shift(&b, IluShift::Auto).unwrap();
        assert!(f.remedy().is_none());
        assert_eq!((f.sigma(), f.attempts()), (0.0, 1));
        let plain = Ilu0Factors::new(&b, None).unwrap();
        assert_eq!(f.values(), plain.values());
    }

    /// The automatic remedy permutes before it shifts: `[0 b; b 0]` (b near f64::MAX), which
    /// no shift gets past, factors once its rows are swapped; the factors are those of the
    /// swapped matrix, and the method CG keeps the rows (and shifts, and fails).
    #[test]
    fn auto_matches_rows_before_it_shifts() {
        let big = 1.7e308;
        let a = csr(2, &[(0, 1, big), (1, 0, big)]);
        let f = Ilu0Factors::with_shift(&a, IluShift::Auto).unwrap();
        let r = f.remedy().unwrap();
        assert_eq!((r.permuted_rows, r.s, r.attempts), (2, 0.0, 2));
        let order = f.row_order().unwrap();
        assert_eq!(order.position, [1, 0]);
        let swapped = Ilu0Factors::new(&order.matrix, None).unwrap();
        assert_eq!(f.values(), swapped.values());
        assert!(Ilu0Factors::with_remedy(&a, IluShift::Auto, false).is_err());
    }

    #[test]
    fn auto_shift_inserts_a_missing_diagonal() {
        // row 2 has no diagonal; max|a_ij| = 4
        let a = csr(3, &[(0, 0, 1.0), (1, 0, 1.0), (1, 2, 1.0), (2, 2, 4.0)]);
        let f = Ilu0Factors::with_shift(&a, IluShift::Auto).unwrap();
        let r = f.remedy().unwrap();
        assert!(
            r.cause.starts_with("row 2 has no diagonal entry (1 of 3"),
            "{r:?}"
        );
        assert_eq!(f.nnz(), 5);
        assert_eq!(f.sigma(), r.s * 4.0);
        assert_same_factors(&f, &a);
        // a fixed shift is exactly `new`
        let fixed = Ilu0Factors::with_shift(&a, IluShift::Fixed(0.25)).unwrap();
        assert!(fixed.remedy().is_none());
        assert_eq!(fixed.sigma(), 1.0);
    }

    #[test]
    fn auto_shift_grows_past_an_overflowing_solve_and_stops_at_the_cap() {
        // A lower bidiagonal chain with no diagonal but the last: with sigma = s the solve of
        // L U x = 1 grows like (1/s)^k, past f64 for small s and long chains, so the shift
        // must grow; an entry of 1e300 against a diagonal of 1e-300 overflows every s <= 100.
        let n = 40;
        let mut e: Vec<(u32, u32, f64)> = (1..n).map(|i| (i, i - 1, 1.0)).collect();
        e.push((0, 0, 1.0));
        let a = csr(n as usize, &e);
        let f = Ilu0Factors::with_shift(&a, IluShift::Shift).unwrap();
        let r = f.remedy().unwrap();
        assert!(r.attempts > 2 && r.s > AUTO_SHIFT_START, "{r:?}");
        assert_same_factors(&f, &a);
        let mut tried = Vec::new();
        let mut s = AUTO_SHIFT_START;
        while s <= AUTO_SHIFT_MAX * (1.0 + 1e-12) {
            tried.push(s);
            s = next_shift(s);
        }
        // no diagonal, entries near f64::MAX: for s < 1 l_10 u_01 overflows, s = 1 leaves a
        // zero pivot, and for s > 1 sigma itself overflows
        let big = 1.7e308;
        let overflow = csr(2, &[(0, 1, big), (1, 0, big)]);
        let err = Ilu0Factors::with_shift(&overflow, IluShift::Shift)
            .unwrap_err()
            .to_string();
        let last = tried.last().unwrap();
        assert!(err.contains(&format!("up to s = {last:e}")), "{err}");
        assert!(
            err.contains(&format!("{} factorizations", tried.len() + 1)),
            "{err}"
        );
    }

    #[test]
    fn shift_choices_parse() {
        assert_eq!(IluShift::parse("auto"), Ok(IluShift::Auto));
        assert_eq!(IluShift::parse("none"), Ok(IluShift::None));
        assert_eq!(IluShift::parse("0"), Ok(IluShift::None));
        assert_eq!(IluShift::parse("1e-8"), Ok(IluShift::Fixed(1e-8)));
        assert!(IluShift::parse("-1").is_err() && IluShift::parse("inf").is_err());
        assert!(IluShift::parse("sometimes").is_err());
        assert_eq!(IluShift::default(), IluShift::Auto);
        assert_eq!(IluShift::Fixed(0.1).to_string(), "1e-1");
    }

    #[test]
    fn zero_pivot_names_the_row() {
        // u_11 = 1 - (1/1) * 1 = 0
        let a = csr(2, &[(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 1.0)]);
        let err = Ilu0Factors::new(&a, None).unwrap_err().to_string();
        assert!(err.contains("zero pivot in row 2"), "{err}");
        assert!(Ilu0Factors::new(&a, Some(0.5)).is_ok());
        assert!(Ilu0Factors::new(&a, Some(-1.0)).is_err());
    }
}
