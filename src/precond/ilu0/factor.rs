//! The IKJ factorization itself and the checks around it, on raw CSR arrays.

use super::shift::{AUTO_SHIFT_GROWTH, Failure};
use crate::error::{Error, Result};
use crate::sparse::CsrMatrix;

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
pub(super) fn next_shift(s: f64) -> f64 {
    let grown = s * AUTO_SHIFT_GROWTH;
    format!("{grown:.6e}").parse().unwrap_or(grown)
}

/// `a` is square, else the error saying so.
pub(super) fn check_square(a: &CsrMatrix) -> Result<()> {
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
pub(super) fn shift_sigma(a: &CsrMatrix, s: f64) -> f64 {
    let max_abs = a.values().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    s * if max_abs > 0.0 { max_abs } else { 1.0 }
}

/// Index of every row's diagonal entry, or the first row without one.
pub(super) fn diagonal_positions(a: &CsrMatrix) -> std::result::Result<Vec<usize>, Failure> {
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
pub(super) fn shifted_pattern(a: &CsrMatrix, s: f64) -> (Vec<usize>, Vec<i32>, Vec<f64>, Vec<usize>, f64) {
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
pub(super) fn factor(
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
pub(super) fn solves_finitely(row_ptr: &[usize], col_idx: &[i32], values: &[f64], diag: &[usize]) -> bool {
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
