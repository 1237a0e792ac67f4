//! Building a [`CsrMatrix`] from the arrays a program already holds: raw CSR slices, and the
//! matrices of `sprs` (feature `sprs`) and `nalgebra-sparse` (feature `nalgebra`).
//!
//! The kernels read `i32` column indices and `usize` row pointers, sorted within each row,
//! every value finite; every constructor checks all of that. An owned matrix whose arrays are
//! already of those types is taken without copying them (`sprs`' `CsMatI<f64, i32>`); otherwise
//! the column indices are narrowed into a new array (and borrowed views are copied: to solve
//! one without a copy, borrow it as a [`CsrView`](super::CsrView)).

use super::csr::{CsrError, CsrMatrix, Symmetry};

impl CsrMatrix {
    /// Copy validated CSR arrays: `row_ptr` (`nrows + 1` entries from 0), `col_idx` (sorted
    /// within each row, each below `ncols`) and `values` (finite). Any integer type converts to
    /// the `i32` column indices the kernels read; a column that does not fit is an error.
    ///
    /// ```
    /// use precsolve::{CsrMatrix, Symmetry};
    ///
    /// // [ 4 -1 ]
    /// // [-1  4 ]
    /// let a = CsrMatrix::from_slices(2, 2, &[0, 2, 4], &[0usize, 1, 0, 1], &[4.0, -1.0, -1.0, 4.0])?
    ///     .with_symmetry(Symmetry::Symmetric);
    /// assert_eq!(a.nnz(), 4);
    /// # Ok::<(), precsolve::CsrError>(())
    /// ```
    pub fn from_slices<I: Copy + TryInto<i64>>(
        nrows: usize,
        ncols: usize,
        row_ptr: &[usize],
        col_idx: &[I],
        values: &[f64],
    ) -> Result<Self, CsrError> {
        let cols = narrow_columns(nrows, ncols, row_ptr, col_idx)?;
        CsrMatrix::try_from_parts(
            nrows,
            ncols,
            row_ptr.to_vec(),
            cols,
            values.to_vec(),
            Symmetry::General,
        )
    }
}

/// `col_idx` as `i32`, with the row of the first index that does not fit.
fn narrow_columns<I: Copy + TryInto<i64>>(
    nrows: usize,
    ncols: usize,
    row_ptr: &[usize],
    col_idx: &[I],
) -> Result<Vec<i32>, CsrError> {
    if ncols > i32::MAX as usize {
        return Err(CsrError::TooLarge { dim: ncols });
    }
    let row_of = |k: usize| row_ptr.partition_point(|&p| p <= k).saturating_sub(1);
    col_idx
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let wide: i64 = c.try_into().unwrap_or(i64::MAX);
            i32::try_from(wide).map_err(|_| CsrError::ColumnOutOfRange {
                row: row_of(k).min(nrows.saturating_sub(1)),
                col: wide,
                ncols,
            })
        })
        .collect()
}

#[cfg(feature = "sprs")]
mod with_sprs {
    use super::*;

    impl TryFrom<sprs::CsMatI<f64, i32, usize>> for CsrMatrix {
        type Error = CsrError;
        /// Takes the arrays as they are (no copy); a CSC matrix is converted to CSR first.
        fn try_from(m: sprs::CsMatI<f64, i32, usize>) -> Result<Self, CsrError> {
            let m = if m.is_csr() { m } else { m.to_csr() };
            let (nrows, ncols) = m.shape();
            let (row_ptr, col_idx, values) = m.into_raw_storage();
            CsrMatrix::try_from_parts(nrows, ncols, row_ptr, col_idx, values, Symmetry::General)
        }
    }

    impl<I: sprs::SpIndex + TryInto<i64>> TryFrom<sprs::CsMatViewI<'_, f64, I, usize>> for CsrMatrix {
        type Error = CsrError;
        /// Copies the view (narrowing its column indices); a CSC view is converted first.
        fn try_from(m: sprs::CsMatViewI<'_, f64, I, usize>) -> Result<Self, CsrError> {
            let csr;
            let m = if m.is_csr() {
                m
            } else {
                csr = m.to_csr();
                csr.view()
            };
            let (nrows, ncols) = m.shape();
            let indptr = m.indptr();
            CsrMatrix::from_slices(nrows, ncols, &indptr.to_proper(), m.indices(), m.data())
        }
    }
}

#[cfg(feature = "nalgebra")]
mod with_nalgebra {
    use super::*;

    impl TryFrom<nalgebra_sparse::CsrMatrix<f64>> for CsrMatrix {
        type Error = CsrError;
        /// Takes the row offsets and values without copying them; the column indices are
        /// narrowed to `i32`.
        fn try_from(m: nalgebra_sparse::CsrMatrix<f64>) -> Result<Self, CsrError> {
            let (nrows, ncols) = (m.nrows(), m.ncols());
            let (row_ptr, col_idx, values) = m.disassemble();
            let cols = narrow_columns(nrows, ncols, &row_ptr, &col_idx)?;
            drop(col_idx);
            CsrMatrix::try_from_parts(nrows, ncols, row_ptr, cols, values, Symmetry::General)
        }
    }

    impl TryFrom<&nalgebra_sparse::CsrMatrix<f64>> for CsrMatrix {
        type Error = CsrError;
        /// Copies the matrix's arrays.
        fn try_from(m: &nalgebra_sparse::CsrMatrix<f64>) -> Result<Self, CsrError> {
            CsrMatrix::from_slices(
                m.nrows(),
                m.ncols(),
                m.row_offsets(),
                m.col_indices(),
                m.values(),
            )
        }
    }
}
