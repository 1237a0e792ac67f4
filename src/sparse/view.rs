//! [`CsrView`]: a CSR matrix borrowed from arrays the program holds (raw slices, an `sprs`
//! view, an `nalgebra-sparse` matrix), validated as a [`CsrMatrix`] is, never copied.
//!
//! A [`CsrMatrix`] owns `i32` column indices, the layout the GPU kernels and the SIMD SpMV read;
//! a program's arrays rarely have it (`usize` in nalgebra-sparse, any index type in sprs), and
//! converting means a copy as large as the matrix. A view keeps the program's arrays and is
//! solved as a [`LinearOperator`](crate::LinearOperator), summing each row exactly as the CSR
//! kernels do (the same lanes and tree), so its solves have the bits of the copied matrix's on
//! the CPU (td aside, whose rows the kernels round once from double-double). The price is speed:
//! a solve of a view runs its steps unfused and its double-double rows without the SIMD
//! kernel, which read the crate's own layout; [`CsrView::to_csr`] copies into it.

use super::csr::{CsrError, CsrMatrix, Symmetry};

mod sealed {
    pub trait Sealed {}
}

/// An integer type a borrowed CSR's column indices may have: `i32`, `i64`, `isize`, `u32`,
/// `u64`, `usize`.
pub trait ColumnIndex: sealed::Sealed + Copy + Send + Sync + TryInto<i64> + 'static {
    /// The index as an `i64` (`i64::MAX` where it does not fit: out of range for any matrix).
    fn to_i64(self) -> i64;
}

macro_rules! column_index {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ColumnIndex for $t {
            #[inline(always)]
            fn to_i64(self) -> i64 {
                i64::try_from(self).unwrap_or(i64::MAX)
            }
        }
    )*};
}
column_index!(i32, i64, isize, u32, u64, usize);

/// A CSR matrix whose arrays the program owns: `row_ptr` (`nrows + 1` offsets, not necessarily
/// from 0: a view of some rows of a larger matrix starts where they start), `col_idx` and
/// `values` (the entries from `row_ptr[0]` to `row_ptr[nrows]`). Checked on construction as a
/// [`CsrMatrix`] is: offsets monotone, columns in range and strictly increasing in each row,
/// values finite.
///
/// ```
/// use precsolve::{CsrView, Dd, Solver, Symmetry};
///
/// // tridiag(-1, 2, -1), 4 x 4, in arrays the program already has
/// let row_ptr = [0, 2, 5, 8, 10];
/// let col_idx: [u32; 10] = [0, 1, 0, 1, 2, 1, 2, 3, 2, 3];
/// let values = [2.0, -1.0, -1.0, 2.0, -1.0, -1.0, 2.0, -1.0, -1.0, 2.0];
/// let a = CsrView::new(4, 4, &row_ptr, &col_idx, &values)?.with_symmetry(Symmetry::Symmetric);
/// let out = Solver::auto().precision::<Dd>().tol(1e-28).solve_operator(&a, &[1.0; 4])?;
/// assert!(out.converged() && out.true_residual <= 1e-28);
/// # Ok::<(), precsolve::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'a, I: ColumnIndex = usize> {
    nrows: usize,
    ncols: usize,
    row_ptr: &'a [usize],
    col_idx: &'a [I],
    values: &'a [f64],
    symmetry: Symmetry,
}

impl<'a, I: ColumnIndex> CsrView<'a, I> {
    /// Borrow validated arrays (see the type's documentation).
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: &'a [usize],
        col_idx: &'a [I],
        values: &'a [f64],
    ) -> Result<Self, CsrError> {
        if row_ptr.len() != nrows + 1 {
            return Err(CsrError::RowPtrLength {
                got: row_ptr.len(),
                expected: nrows + 1,
            });
        }
        super::csr::check_structure(nrows, ncols, row_ptr, col_idx, values)?;
        Ok(CsrView {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
            symmetry: Symmetry::General,
        })
    }

    /// The symmetry the arrays' source declares ([`Solver::auto`](crate::Solver::auto) takes CG
    /// for a symmetric matrix).
    pub fn with_symmetry(mut self, symmetry: Symmetry) -> Self {
        self.symmetry = symmetry;
        self
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }
    /// The declared symmetry.
    pub fn symmetry(&self) -> Symmetry {
        self.symmetry
    }
    /// The borrowed row offsets (`nrows + 1`, from wherever the first row starts).
    pub fn row_ptr(&self) -> &'a [usize] {
        self.row_ptr
    }
    /// The borrowed column indices.
    pub fn col_idx(&self) -> &'a [I] {
        self.col_idx
    }
    /// The borrowed values.
    pub fn values(&self) -> &'a [f64] {
        self.values
    }

    /// Row `i`'s column indices and values.
    #[inline(always)]
    pub(crate) fn row(&self, i: usize) -> (&'a [I], &'a [f64]) {
        let first = self.row_ptr[0];
        let entries = self.row_ptr[i] - first..self.row_ptr[i + 1] - first;
        (&self.col_idx[entries.clone()], &self.values[entries])
    }

    /// A [`CsrMatrix`] with these entries (a copy, with the column indices narrowed to `i32`):
    /// for the GPU and for ILU(0), which read that layout.
    pub fn to_csr(&self) -> Result<CsrMatrix, CsrError> {
        let first = self.row_ptr[0];
        let row_ptr: Vec<usize> = self.row_ptr.iter().map(|p| p - first).collect();
        CsrMatrix::from_slices(self.nrows, self.ncols, &row_ptr, self.col_idx, self.values)
            .map(|a| a.with_symmetry(self.symmetry))
    }
}

impl<'a> From<&'a CsrMatrix> for CsrView<'a, i32> {
    /// The matrix's own arrays (already checked).
    fn from(a: &'a CsrMatrix) -> Self {
        CsrView {
            nrows: a.nrows(),
            ncols: a.ncols(),
            row_ptr: a.row_ptr(),
            col_idx: a.col_idx(),
            values: a.values(),
            symmetry: a.symmetry(),
        }
    }
}

#[cfg(feature = "sprs")]
impl<'a, I: ColumnIndex + sprs::SpIndex> TryFrom<sprs::CsMatViewI<'a, f64, I, usize>>
    for CsrView<'a, I>
{
    type Error = CsrError;
    /// Borrows the view's arrays (a slice of rows included). A CSC view is an error: its arrays
    /// are by columns (convert it with `to_csr`, a copy, then borrow that).
    fn try_from(m: sprs::CsMatViewI<'a, f64, I, usize>) -> Result<Self, CsrError> {
        if !m.is_csr() {
            return Err(CsrError::ColumnMajor);
        }
        let (nrows, ncols) = m.shape();
        let (row_ptr, col_idx, values) = m.into_raw_storage();
        CsrView::new(nrows, ncols, row_ptr, col_idx, values)
    }
}

#[cfg(feature = "nalgebra")]
impl<'a> TryFrom<&'a nalgebra_sparse::CsrMatrix<f64>> for CsrView<'a, usize> {
    type Error = CsrError;
    /// Borrows the matrix's arrays (checked again for finite values).
    fn try_from(m: &'a nalgebra_sparse::CsrMatrix<f64>) -> Result<Self, CsrError> {
        CsrView::new(
            m.nrows(),
            m.ncols(),
            m.row_offsets(),
            m.col_indices(),
            m.values(),
        )
    }
}
