//! Compressed sparse row matrix with `f64` values and sorted `i32` column indices.

use super::view::ColumnIndex;
use std::sync::Arc;

/// Symmetry declared by the source (a Matrix Market header, or a generator). The CSR always holds
/// every stored entry (the mirror included); this only records what the source claimed, which
/// picks CG over BiCGStab for `--method auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Symmetry {
    /// No symmetry declared.
    General,
    /// `a_ij = a_ji` (a Matrix Market `symmetric` file, or a generated Laplacian).
    Symmetric,
    /// `a_ij = -a_ji`.
    SkewSymmetric,
}

impl std::fmt::Display for Symmetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Symmetry::General => "general",
            Symmetry::Symmetric => "symmetric",
            Symmetry::SkewSymmetric => "skew-symmetric",
        })
    }
}

/// Why arrays do not make a valid [`CsrMatrix`]; rows and columns are 0-based.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CsrError {
    /// `row_ptr` does not have `nrows + 1` entries.
    #[error("row pointer array has length {got}, expected nrows + 1 = {expected}")]
    RowPtrLength {
        /// Its length.
        got: usize,
        /// `nrows + 1`.
        expected: usize,
    },
    /// `row_ptr` does not start at 0, or decreases.
    #[error("row pointers must start at 0 and never decrease (row {row})")]
    RowPtrNotMonotone {
        /// The first row where it does.
        row: usize,
    },
    /// `row_ptr`'s last entry is not the number of entries.
    #[error("row pointers end at {last} but there are {nnz} entries")]
    RowPtrEnd {
        /// `row_ptr[nrows]`.
        last: usize,
        /// The entries given.
        nnz: usize,
    },
    /// A column index is negative or not below `ncols`.
    #[error("column index {col} out of range 0..{ncols} in row {row}")]
    ColumnOutOfRange {
        /// Its row.
        row: usize,
        /// The index.
        col: i64,
        /// The column count.
        ncols: usize,
    },
    /// A row's column indices are not strictly increasing (unsorted, or a duplicate).
    #[error("column indices of row {row} are not strictly increasing")]
    ColumnsNotSorted {
        /// The row.
        row: usize,
    },
    /// A dimension does not fit the kernels' `i32` indices.
    #[error("dimension {dim} is too large for i32 column indices")]
    TooLarge {
        /// The dimension.
        dim: usize,
    },
    /// A coordinate entry lies outside the matrix.
    #[error("entry ({row}, {col}) lies outside the {nrows} x {ncols} matrix")]
    EntryOutOfRange {
        /// Its row.
        row: usize,
        /// Its column.
        col: usize,
        /// The row count.
        nrows: usize,
        /// The column count.
        ncols: usize,
    },
    /// A value is NaN or infinite (or duplicates summed to one).
    #[error("value of entry ({row}, {col}) is not finite")]
    NonFinite {
        /// Its row.
        row: usize,
        /// Its column.
        col: usize,
    },
    /// The arrays are by columns (CSC), not by rows.
    #[error("the matrix is stored by columns (CSC); a CSR view needs it by rows")]
    ColumnMajor,
    /// The arrays cannot be allocated.
    #[error("cannot allocate {bytes} bytes for a matrix with {nrows} rows")]
    Allocation {
        /// The bytes asked for.
        bytes: usize,
        /// The row count.
        nrows: usize,
    },
}

/// A sparse matrix in compressed sparse row form, validated: `f64` values, all finite; `i32`
/// column indices sorted within each row (explicit zeros kept: they belong to ILU(0)'s
/// pattern); and the symmetry its source declared. A clone shares the arrays.
///
/// Build one with [`read_matrix_market`](crate::read_matrix_market),
/// [`load_matrix`](crate::load_matrix), [`CsrMatrix::from_slices`],
/// [`CsrMatrix::try_from_parts`], [`CsrMatrix::from_coo`], `TryFrom` an `sprs` or
/// `nalgebra-sparse` matrix (features `sprs`, `nalgebra`), or [`poisson2d`](crate::poisson2d).
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix {
    nrows: usize,
    ncols: usize,
    // Shared, so that a clone (each solve of a matrix holds one) costs no copy.
    row_ptr: Arc<Vec<usize>>,
    col_idx: Arc<Vec<i32>>,
    values: Arc<Vec<f64>>,
    symmetry: Symmetry,
}

impl CsrMatrix {
    /// Build from raw arrays, checking every invariant the kernels rely on: `row_ptr` has
    /// `nrows + 1` monotone entries from 0 to `nnz`, column indices are in range and strictly
    /// increasing within each row, values are finite.
    pub fn try_from_parts(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<usize>,
        col_idx: Vec<i32>,
        values: Vec<f64>,
        symmetry: Symmetry,
    ) -> Result<Self, CsrError> {
        check_parts(nrows, ncols, &row_ptr, &col_idx, &values)?;
        Ok(CsrMatrix {
            nrows,
            ncols,
            row_ptr: Arc::new(row_ptr),
            col_idx: Arc::new(col_idx),
            values: Arc::new(values),
            symmetry,
        })
    }

    /// Build from 0-based coordinate entries: duplicates are summed, explicit zeros kept as
    /// stored entries (they belong to the ILU(0) pattern). Counting sort by row, then each row
    /// sorted by column: O(nnz + nrows) plus the per-row sorts.
    pub fn from_coo(
        nrows: usize,
        ncols: usize,
        rows: &[u32],
        cols: &[u32],
        vals: &[f64],
        symmetry: Symmetry,
    ) -> Result<Self, CsrError> {
        assert!(rows.len() == cols.len() && cols.len() == vals.len());
        for dim in [nrows, ncols] {
            if dim > i32::MAX as usize {
                return Err(CsrError::TooLarge { dim });
            }
        }
        let mut counts = zeroed_row_array(nrows)?;
        for (k, (&r, &c)) in rows.iter().zip(cols).enumerate() {
            let (r, c) = (r as usize, c as usize);
            if r >= nrows || c >= ncols {
                return Err(CsrError::EntryOutOfRange {
                    row: r,
                    col: c,
                    nrows,
                    ncols,
                });
            }
            if !vals[k].is_finite() {
                return Err(CsrError::NonFinite { row: r, col: c });
            }
            counts[r + 1] += 1;
        }
        for i in 0..nrows {
            counts[i + 1] += counts[i];
        }
        let mut next = zeroed_row_array(nrows)?;
        next.copy_from_slice(&counts);
        let mut entries: Vec<(i32, f64)> = vec![(0, 0.0); rows.len()];
        for k in 0..rows.len() {
            let r = rows[k] as usize;
            entries[next[r]] = (cols[k] as i32, vals[k]);
            next[r] += 1;
        }
        let mut row_ptr = Vec::new();
        row_ptr
            .try_reserve_exact(nrows + 1)
            .map_err(|_| allocation_error(nrows))?;
        let mut col_idx = Vec::with_capacity(rows.len());
        let mut values = Vec::with_capacity(rows.len());
        row_ptr.push(0);
        for r in 0..nrows {
            let row = &mut entries[counts[r]..counts[r + 1]];
            // Stable, so duplicates are summed in file order: the same sum on every run.
            row.sort_by_key(|&(c, _)| c);
            for &(c, v) in row.iter() {
                if col_idx.len() > row_ptr[r] && *col_idx.last().unwrap() == c {
                    let sum: &mut f64 = values.last_mut().unwrap();
                    *sum += v;
                    if !sum.is_finite() {
                        // Finite duplicates can overflow when summed.
                        return Err(CsrError::NonFinite {
                            row: r,
                            col: c as usize,
                        });
                    }
                } else {
                    col_idx.push(c);
                    values.push(v);
                }
            }
            row_ptr.push(col_idx.len());
        }
        Ok(CsrMatrix {
            nrows,
            ncols,
            row_ptr: Arc::new(row_ptr),
            col_idx: Arc::new(col_idx),
            values: Arc::new(values),
            symmetry,
        })
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Stored entries (explicit zeros included).
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// Where each row's entries start, `nrows + 1` offsets from 0 to `nnz`.
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }
    /// The column of each entry, sorted within each row.
    pub fn col_idx(&self) -> &[i32] {
        &self.col_idx
    }
    /// The value of each entry.
    pub fn values(&self) -> &[f64] {
        &self.values
    }
    /// Symmetry the source declared (see [`Symmetry`]).
    pub fn symmetry(&self) -> Symmetry {
        self.symmetry
    }

    /// The same matrix, declared `symmetry` (which [`Method::Auto`](crate::Method::Auto)
    /// reads to pick CG). Only a declaration: the entries are not checked against it.
    pub fn with_symmetry(mut self, symmetry: Symmetry) -> Self {
        self.symmetry = symmetry;
        self
    }

    /// The diagonal entries (0 where none is stored), `min(nrows, ncols)` of them.
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.nrows.min(self.ncols))
            .map(|i| {
                let (cols, values) = self.row(i);
                cols.binary_search(&(i as i32)).map_or(0.0, |k| values[k])
            })
            .collect()
    }
    /// Checks every invariant again (as [`CsrMatrix::try_from_parts`] does): for fuzzers and
    /// tests of code that builds matrices.
    pub fn check_invariants(&self) -> Result<(), CsrError> {
        check_parts(
            self.nrows,
            self.ncols,
            &self.row_ptr,
            &self.col_idx,
            &self.values,
        )
    }

    /// Whether `nrows == ncols`.
    pub fn is_square(&self) -> bool {
        self.nrows == self.ncols
    }

    /// Column indices and values of one row.
    pub fn row(&self, i: usize) -> (&[i32], &[f64]) {
        let range = self.row_ptr[i]..self.row_ptr[i + 1];
        (&self.col_idx[range.clone()], &self.values[range])
    }

    /// The square block of rows and columns `range` (block Jacobi's block), its entries in
    /// their order; symmetric where this matrix is.
    pub fn diagonal_block(&self, range: std::ops::Range<usize>) -> CsrMatrix {
        let (lo, hi) = (range.start as i32, range.end as i32);
        let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
        for i in range.clone() {
            let (c, v) = self.row(i);
            for (&j, &x) in c.iter().zip(v) {
                if (lo..hi).contains(&j) {
                    cols.push(j - lo);
                    values.push(x);
                }
            }
            row_ptr.push(cols.len());
        }
        let n = range.len();
        CsrMatrix::try_from_parts(n, n, row_ptr, cols, values, self.symmetry())
            .expect("a diagonal block of a valid matrix is valid")
    }

    /// Rows whose diagonal entry is not stored (an explicit zero counts as stored).
    pub fn rows_missing_diagonal(&self) -> Vec<usize> {
        (0..self.nrows.min(self.ncols))
            .filter(|&i| self.row(i).0.binary_search(&(i as i32)).is_err())
            .collect()
    }

    /// Mean stored entries per row.
    pub fn nnz_per_row_mean(&self) -> f64 {
        if self.nrows == 0 {
            0.0
        } else {
            self.nnz() as f64 / self.nrows as f64
        }
    }

    /// Most stored entries in a row.
    pub fn nnz_per_row_max(&self) -> usize {
        self.row_ptr
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }

    /// Zero-copy view for users of sprs.
    #[cfg(feature = "sprs")]
    pub fn as_sprs(&self) -> sprs::CsMatViewI<'_, f64, i32, usize> {
        sprs::CsMatViewI::try_new(
            (self.nrows, self.ncols),
            &self.row_ptr,
            &self.col_idx,
            &self.values,
        )
        .expect("a validated CsrMatrix is a valid sprs CSR view")
    }
}

/// The invariants [`CsrMatrix::try_from_parts`] checks.
fn check_parts(
    nrows: usize,
    ncols: usize,
    row_ptr: &[usize],
    col_idx: &[i32],
    values: &[f64],
) -> Result<(), CsrError> {
    if row_ptr.len() != nrows + 1 {
        return Err(CsrError::RowPtrLength {
            got: row_ptr.len(),
            expected: nrows + 1,
        });
    }
    if row_ptr[0] != 0 {
        return Err(CsrError::RowPtrNotMonotone { row: 0 });
    }
    check_structure(nrows, ncols, row_ptr, col_idx, values)
}

/// The invariants the kernels rely on, of arrays whose row `r` holds the entries
/// `row_ptr[r] - row_ptr[0] .. row_ptr[r + 1] - row_ptr[0]` (`row_ptr` has `nrows + 1` entries):
/// dimensions that fit `i32`, offsets monotone and ending at the entry count, columns in range
/// and strictly increasing within each row, values finite.
pub(super) fn check_structure<I: ColumnIndex>(
    nrows: usize,
    ncols: usize,
    row_ptr: &[usize],
    col_idx: &[I],
    values: &[f64],
) -> Result<(), CsrError> {
    for dim in [nrows, ncols] {
        if dim > i32::MAX as usize {
            return Err(CsrError::TooLarge { dim });
        }
    }
    let first = row_ptr[0];
    let nnz = col_idx.len();
    let last = row_ptr[nrows].wrapping_sub(first);
    if values.len() != nnz || row_ptr[nrows] < first || last != nnz {
        return Err(CsrError::RowPtrEnd {
            last,
            nnz: values.len().max(nnz),
        });
    }
    for row in 0..nrows {
        let (start, end) = (row_ptr[row], row_ptr[row + 1]);
        if start < first || end < start || end - first > nnz {
            return Err(CsrError::RowPtrNotMonotone { row });
        }
        let mut previous: i64 = -1;
        for k in start - first..end - first {
            let col = col_idx[k].to_i64();
            if col < 0 || col >= ncols as i64 {
                return Err(CsrError::ColumnOutOfRange { row, col, ncols });
            }
            if col <= previous {
                return Err(CsrError::ColumnsNotSorted { row });
            }
            if !values[k].is_finite() {
                return Err(CsrError::NonFinite {
                    row,
                    col: col as usize,
                });
            }
            previous = col;
        }
    }
    Ok(())
}

fn allocation_error(nrows: usize) -> CsrError {
    CsrError::Allocation {
        bytes: (nrows + 1).saturating_mul(size_of::<usize>()),
        nrows,
    }
}

/// `nrows + 1` zeros, or an error when a file declares more rows than memory can hold (a
/// 30-byte file may declare two billion rows): an allocation failure would abort the process.
fn zeroed_row_array(nrows: usize) -> Result<Vec<usize>, CsrError> {
    let mut v = Vec::new();
    v.try_reserve_exact(nrows + 1)
        .map_err(|_| allocation_error(nrows))?;
    v.resize(nrows + 1, 0);
    Ok(v)
}
