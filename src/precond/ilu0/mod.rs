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

mod factor;
mod levels;
mod shift;
#[cfg(test)]
mod tests;

pub use factor::check_shift;
pub use levels::{Levels, OrderedTriangle};
pub use shift::{AUTO_SHIFT_GROWTH, AUTO_SHIFT_MAX, AUTO_SHIFT_START, IluRemedy, IluShift};

use factor::{check_square, diagonal_positions, factor, next_shift, shift_sigma, shifted_pattern, solves_finitely};
use levels::{Triangle, levels};
use shift::Failure;

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
