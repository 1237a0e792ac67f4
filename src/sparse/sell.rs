//! Sliced ELLPACK ("SELL-C", Kreutzer et al. 2014, without sorting): a CSR matrix's entries
//! regrouped so that the rows of a slice of `C` consecutive rows are read side by side.
//!
//! Step `k` of slice `s` holds entry `k` of each of rows `C s .. C s + C` in `C` consecutive
//! slots, so a kernel that gives each of those rows its own lane (a SIMD lane on the CPU, a thread
//! of a warp on the GPU) loads the step's values and column indices contiguously instead of at
//! the rows' scattered CSR offsets. A slice is as wide as its longest row; the shorter rows'
//! slots beyond their length are padding (zeros) that the kernels never read, since each row
//! stops at its own CSR length. [`SellEntries::new_marked`] gives the padding the column index
//! [`PADDING_COL`] instead, so that a kernel can tell it from an entry without the row
//! pointers. Rows keep their CSR order, so a row summed entry by entry from either layout gives
//! the same bits.
//!
//! Built by hand: sprs has no sliced layout, and the SpMV kernels' bits depend on this exact
//! slot order.

use super::CsrMatrix;
use rayon::prelude::*;

/// The column index of padding in [`SellEntries::new_marked`]'s layout (no column's index).
pub const PADDING_COL: i32 = -1;

#[derive(Debug)]
pub struct SellEntries {
    /// Rows per slice.
    c: usize,
    /// Slot of each slice's first step (`slices + 1` entries); a step is `c` slots. The last
    /// slice may be partial (`nrows % c` rows): its missing rows have no entries.
    slice_ptr: Vec<usize>,
    vals: Vec<f64>,
    cols: Vec<i32>,
}

impl SellEntries {
    /// Slots (stored entries plus padding) that [`SellEntries::new`] would allocate.
    pub fn slots(a: &CsrMatrix, c: usize) -> usize {
        slice_widths(a, c).iter().map(|w| w * c).sum()
    }

    /// The shortest row of each slice of `c` rows (the last one possibly partial): the steps
    /// of the slice that hold no padding.
    pub fn shortest_rows(a: &CsrMatrix, c: usize) -> Vec<usize> {
        fold_slice_rows(a, c, usize::min)
    }

    /// The entries of `a` for slices of `c` rows, padding with column index 0.
    pub fn new(a: &CsrMatrix, c: usize) -> SellEntries {
        Self::build(a, c, 0)
    }

    /// [`SellEntries::new`] with padding's column index [`PADDING_COL`] (its value is 0).
    pub fn new_marked(a: &CsrMatrix, c: usize) -> SellEntries {
        Self::build(a, c, PADDING_COL)
    }

    fn build(a: &CsrMatrix, c: usize, padding_col: i32) -> SellEntries {
        let widths = slice_widths(a, c);
        let mut slice_ptr = Vec::with_capacity(widths.len() + 1);
        slice_ptr.push(0);
        for w in &widths {
            slice_ptr.push(slice_ptr.last().unwrap() + w * c);
        }
        let slots = *slice_ptr.last().unwrap();
        let (mut vals, mut cols) = (vec![0.0; slots], vec![padding_col; slots]);
        // Each slice's slots are its own: fill the slices in parallel.
        let mut pieces = Vec::with_capacity(widths.len());
        let (mut vals_rest, mut cols_rest) = (&mut vals[..], &mut cols[..]);
        for w in &widths {
            let (v, vr) = vals_rest.split_at_mut(w * c);
            let (k, kr) = cols_rest.split_at_mut(w * c);
            pieces.push((v, k));
            (vals_rest, cols_rest) = (vr, kr);
        }
        let row_ptr = a.row_ptr();
        pieces
            .into_par_iter()
            .enumerate()
            .for_each(|(s, (vals, cols))| {
                for r in 0..c.min(a.nrows() - s * c) {
                    let row = s * c + r;
                    let (start, end) = (row_ptr[row], row_ptr[row + 1]);
                    for k in 0..end - start {
                        vals[c * k + r] = a.values()[start + k];
                        cols[c * k + r] = a.col_idx()[start + k];
                    }
                }
            });
        SellEntries {
            c,
            slice_ptr,
            vals,
            cols,
        }
    }

    /// Rows per slice.
    pub fn slice_height(&self) -> usize {
        self.c
    }

    pub fn slice_ptr(&self) -> &[usize] {
        &self.slice_ptr
    }

    pub fn vals(&self) -> &[f64] {
        &self.vals
    }

    pub fn cols(&self) -> &[i32] {
        &self.cols
    }
}

/// The longest row of each slice of `c` rows (the last one possibly partial).
fn slice_widths(a: &CsrMatrix, c: usize) -> Vec<usize> {
    fold_slice_rows(a, c, usize::max)
}

/// The row lengths of each slice of `c` rows (the last one possibly partial), folded by `pick`.
fn fold_slice_rows(a: &CsrMatrix, c: usize, pick: fn(usize, usize) -> usize) -> Vec<usize> {
    assert!(c > 0, "SellEntries: empty slices");
    let row_ptr = a.row_ptr();
    (0..a.nrows().div_ceil(c))
        .into_par_iter()
        .map(|s| {
            (s * c..(s * c + c).min(a.nrows()))
                .map(|row| row_ptr[row + 1] - row_ptr[row])
                .reduce(pick)
                .unwrap_or(0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Symmetry;

    /// Every entry sits at slot `slice_ptr[s] + c k + r` and padding is zero.
    #[test]
    fn entries_sit_in_their_slots() {
        // rows of lengths 0..=4 in a cycle, 11 rows (a partial last slice for c = 4)
        let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
        for i in 0..11u32 {
            for k in 0..(i % 5) {
                rows.push(i);
                cols.push((i + 3 * k) % 11);
                vals.push(1.0 + f64::from(i) + 0.25 * f64::from(k));
            }
        }
        let a = CsrMatrix::from_coo(11, 11, &rows, &cols, &vals, Symmetry::General).unwrap();
        for (c, marked) in [1, 4, 32].into_iter().flat_map(|c| [(c, false), (c, true)]) {
            let sell = if marked {
                SellEntries::new_marked(&a, c)
            } else {
                SellEntries::new(&a, c)
            };
            assert_eq!(sell.slice_ptr().len(), 11usize.div_ceil(c) + 1);
            assert_eq!(SellEntries::slots(&a, c), sell.vals().len());
            let mut seen = 0;
            for row in 0..11 {
                let (s, r) = (row / c, row % c);
                let entries = a.row_ptr()[row]..a.row_ptr()[row + 1];
                for (k, e) in entries.enumerate() {
                    let slot = sell.slice_ptr()[s] + c * k + r;
                    assert_eq!(sell.vals()[slot], a.values()[e]);
                    assert_eq!(sell.cols()[slot], a.col_idx()[e]);
                    seen += 1;
                }
            }
            assert_eq!(seen, a.nnz());
            // Rows of lengths `i % 5`: the shortest of slice `s` is that of its rows' minimum.
            let shortest: Vec<usize> = (0..11usize.div_ceil(c))
                .map(|s| (s * c..(s * c + c).min(11)).map(|i| i % 5).min().unwrap())
                .collect();
            assert_eq!(SellEntries::shortest_rows(&a, c), shortest, "c = {c}");
            let nonzero = sell.vals().iter().filter(|v| **v != 0.0).count();
            assert_eq!(nonzero, a.nnz(), "padding is zero (c = {c})");
            // Every slot that holds no entry holds the padding's column index (entries in
            // column 0 counted apart).
            let pad = if marked { PADDING_COL } else { 0 };
            let padded = sell.cols().iter().filter(|&&k| k == pad).count();
            let entries_at_pad = a.col_idx().iter().filter(|&&k| k == pad).count();
            assert_eq!(
                padded,
                sell.cols().len() - a.nnz() + entries_at_pad,
                "c = {c}"
            );
        }
    }
}
