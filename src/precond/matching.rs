//! A row permutation that puts large entries on the diagonal, with row and column scaling:
//! the maximum product transversal of MC64 (job 5; Duff and Koster, "On algorithms for
//! permuting large entries to the diagonal of a sparse matrix", SIAM J. Matrix Anal. Appl. 22,
//! 2001), for ILU(0) of matrices whose diagonal has zeros or holes.
//!
//! Each row `i` is matched to a column `m(i)`, all different, maximising `prod_i |a_{i,m(i)}|`:
//! a minimum-cost assignment with costs `c_ij = log max_k |a_ik| - log |a_ij| >= 0` on the
//! nonzero entries, solved by successive shortest augmenting paths (Dijkstra on reduced costs,
//! one augmentation per row). Its dual variables `u` (rows) and `v` (columns), with
//! `u_i + v_j <= c_ij` and equality on the matching, give the scaling:
//! `d_i = exp(u_i) / max_k |a_ik|`, `e_j = exp(v_j)` make `|d_i a_ij e_j| <= 1`, with 1 on the
//! matched entries. Written here because no maintained Rust crate offers a sparse weighted
//! matching with its duals (the assignment crates are dense, O(n^2) memory).
//!
//! The scalings are rounded to powers of two, so that scaling is exact in floating point.

use crate::precision::ldexp;
use crate::sparse::{CsrMatrix, Symmetry};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

/// The matching and its scaling: row `i` of `A` belongs at position `column[i]` (where its
/// matched entry is on the diagonal); the scales are powers of two, kept as their exponents.
#[derive(Clone, Debug, PartialEq)]
pub struct Matching {
    /// The column matched to each row.
    pub column: Vec<usize>,
    /// `round(log2 d_i)`.
    pub row_scale: Vec<i32>,
    /// `round(log2 e_j)`.
    pub column_scale: Vec<i32>,
}

impl Matching {
    /// Whether every row is matched to its own column (the diagonal is already the transversal).
    pub fn is_identity(&self) -> bool {
        self.column.iter().enumerate().all(|(i, &j)| i == j)
    }

    /// Rows that move.
    pub fn moved_rows(&self) -> usize {
        self.column.iter().enumerate().filter(|(i, j)| i != *j).count()
    }
}

/// Why no matching exists: `row` (0-based) cannot be matched to a column no other row needs
/// (the matrix is structurally singular).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StructurallySingular {
    pub row: usize,
}

/// A distance in the Dijkstra heap: `f64` ordered (costs are finite and non-negative).
#[derive(Clone, Copy, PartialEq)]
struct Distance(f64);

impl Eq for Distance {}
impl PartialOrd for Distance {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Distance {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

const FREE: usize = usize::MAX;

/// Dijkstra's state over the columns for one augmenting path, reset (through `touched`) for
/// the next.
struct Search {
    dist: Vec<f64>,
    done: Vec<bool>,
    /// The row each column was reached from.
    via: Vec<usize>,
    touched: Vec<usize>,
    finalized: Vec<usize>,
    heap: BinaryHeap<Reverse<(Distance, usize)>>,
}

impl Search {
    fn new(n: usize) -> Self {
        Search {
            dist: vec![f64::INFINITY; n],
            done: vec![false; n],
            via: vec![FREE; n],
            touched: Vec::new(),
            finalized: Vec::new(),
            heap: BinaryHeap::new(),
        }
    }

    /// Reach the columns of row `from` (at distance `base`) by their reduced costs.
    fn relax(
        &mut self,
        from: usize,
        base: f64,
        edges: impl Iterator<Item = (usize, f64)>,
        u: &[f64],
        v: &[f64],
    ) {
        for (j, c) in edges {
            // non-negative in exact arithmetic; rounding may take it just below zero
            let d = base + (c - u[from] - v[j]).max(0.0);
            if !self.done[j] && d < self.dist[j] {
                if self.dist[j] == f64::INFINITY {
                    self.touched.push(j);
                }
                self.dist[j] = d;
                self.via[j] = from;
                self.heap.push(Reverse((Distance(d), j)));
            }
        }
    }

    /// The closest column not yet final, made final.
    fn closest(&mut self) -> Option<usize> {
        while let Some(Reverse((Distance(d), j))) = self.heap.pop() {
            if self.done[j] || d > self.dist[j] {
                continue;
            }
            self.done[j] = true;
            self.finalized.push(j);
            return Some(j);
        }
        None
    }

    fn reset(&mut self) {
        for &j in &self.touched {
            self.dist[j] = f64::INFINITY;
            self.done[j] = false;
            self.via[j] = FREE;
        }
        self.touched.clear();
        self.finalized.clear();
        self.heap.clear();
    }
}

/// The maximum product matching of the square CSR matrix (`row_ptr`, `col_idx`, `values`;
/// explicit zeros are not entries), with its scaling.
pub fn max_product_matching(
    row_ptr: &[usize],
    col_idx: &[i32],
    values: &[f64],
) -> Result<Matching, StructurallySingular> {
    let n = row_ptr.len() - 1;
    let row = |i: usize| row_ptr[i]..row_ptr[i + 1];
    // costs c_ij = log max_k |a_ik| - log |a_ij| (infinite for a zero: no edge)
    let row_max_log: Vec<f64> = (0..n)
        .map(|i| {
            let max = row(i).map(|k| values[k].abs()).fold(0.0, f64::max);
            max.ln()
        })
        .collect();
    let cost: Vec<f64> = (0..n)
        .flat_map(|i| row(i).map(move |k| (i, k)))
        .map(|(i, k)| row_max_log[i] - values[k].abs().ln())
        .collect();
    let edges = |i: usize| {
        row(i)
            .filter(|&k| values[k] != 0.0)
            .map(|k| (col_idx[k] as usize, cost[k]))
    };

    let mut u = vec![0.0; n];
    let mut v = vec![0.0; n];
    let mut column_of = vec![FREE; n];
    let mut row_of = vec![FREE; n];
    let mut search = Search::new(n);
    for start in 0..n {
        search.relax(start, 0.0, edges(start), &u, &v);
        // the free column closest to `start`, and its distance
        let mut found = None;
        while let Some(j) = search.closest() {
            if row_of[j] == FREE {
                found = Some((j, search.dist[j]));
                break;
            }
            let i = row_of[j];
            search.relax(i, search.dist[j], edges(i), &u, &v);
        }
        let Some((end, total)) = found else {
            return Err(StructurallySingular { row: start });
        };
        // potentials: reduced costs stay non-negative and the path becomes tight
        for &j in &search.finalized {
            let slack = total - search.dist[j];
            v[j] -= slack;
            if row_of[j] != FREE {
                u[row_of[j]] += slack;
            }
        }
        u[start] += total;
        // augment along the path back to `start`
        let mut j = end;
        loop {
            let i = search.via[j];
            let previous = column_of[i];
            column_of[i] = j;
            row_of[j] = i;
            if i == start {
                break;
            }
            j = previous;
        }
        search.reset();
    }
    let exponent = |log_e: f64| (log_e / std::f64::consts::LN_2).round().clamp(-2200.0, 2200.0) as i32;
    Ok(Matching {
        row_scale: (0..n).map(|i| exponent(u[i] - row_max_log[i])).collect(),
        column_scale: v.iter().map(|&v| exponent(v)).collect(),
        column: column_of,
    })
}


/// `A`'s rows in a matching's order: the system a solve with matched ILU(0) factors iterates
/// on, `P A x = P b`. Permuting rows keeps the residual's entries (reordered) and its norm, and
/// `x` itself, so the solve's stopping test and report are those of `A x = b`.
#[derive(Clone, Debug)]
pub struct RowOrder {
    /// Row `i` of `A` is row `position[i]` of `P A`.
    pub position: Vec<usize>,
    /// `P A`.
    pub matrix: Arc<CsrMatrix>,
}

impl RowOrder {
    /// `P b`.
    pub fn permute(&self, b: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; b.len()];
        for (i, &p) in self.position.iter().enumerate() {
            out[p] = b[i];
        }
        out
    }

    /// Rows that moved.
    pub fn moved_rows(&self) -> usize {
        self.position.iter().enumerate().filter(|(i, p)| i != *p).count()
    }
}

/// `P A` (as a [`RowOrder`]) and `S = D_r P A D_c`, the matrix ILU(0) is computed from, with
/// the scales (powers of two) in `P A`'s row order.
pub struct Matched {
    pub order: RowOrder,
    pub scaled: CsrMatrix,
    row_scale: Vec<i32>,
    column_scale: Vec<i32>,
}

impl Matched {
    /// Match `a`'s rows to its columns and build both matrices.
    pub fn new(a: &CsrMatrix) -> Result<Matched, StructurallySingular> {
        let m = max_product_matching(a.row_ptr(), a.col_idx(), a.values())?;
        let n = a.nrows();
        let mut source = vec![0; n]; // the row of `A` at each row of `P A`
        for (i, &p) in m.column.iter().enumerate() {
            source[p] = i;
        }
        let (mut row_ptr, mut cols, mut vals, mut scaled) = (vec![0], vec![], vec![], vec![]);
        let row_scale: Vec<i32> = source.iter().map(|&i| m.row_scale[i]).collect();
        for (k, &i) in source.iter().enumerate() {
            let (c, v) = a.row(i);
            cols.extend_from_slice(c);
            vals.extend_from_slice(v);
            let scale = |(&j, &v): (&i32, &f64)| ldexp(v, row_scale[k] + m.column_scale[j as usize]);
            scaled.extend(c.iter().zip(v).map(scale));
            row_ptr.push(cols.len());
        }
        let symmetry = match m.is_identity() {
            true => a.symmetry(),
            false => Symmetry::General,
        };
        let permuted = CsrMatrix::try_from_parts(n, n, row_ptr.clone(), cols.clone(), vals, symmetry)
            .expect("a row permutation of a valid matrix is valid");
        let scaled = CsrMatrix::try_from_parts(n, n, row_ptr, cols, scaled, Symmetry::General)
            .expect("a power-of-two scaling of a finite matrix stays finite");
        Ok(Matched {
            order: RowOrder {
                position: m.column,
                matrix: Arc::new(permuted),
            },
            scaled,
            row_scale,
            column_scale: m.column_scale,
        })
    }

    /// ILU(0) factor values of `S` (in its pattern, `diag` the diagonal positions) made those
    /// of `P A`: `L = D_r^-1 L_S D_r` (`l_ij d_j / d_i`) and `U = D_r^-1 U_S D_c^-1`
    /// (`u_ij / (d_i e_j)`). The scales are powers of two, so this is exact: without a shift
    /// the factors are those of `P A` itself, bit for bit.
    pub fn unscale(&self, row_ptr: &[usize], col_idx: &[i32], values: &mut [f64], diag: &[usize]) {
        let (d, e) = (&self.row_scale, &self.column_scale);
        for i in 0..diag.len() {
            for k in row_ptr[i]..row_ptr[i + 1] {
                let j = col_idx[k] as usize;
                values[k] = if k < diag[i] {
                    ldexp(values[k], d[j] - d[i])
                } else {
                    ldexp(values[k], -(d[i] + e[j]))
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sparse `n x n` matrix from a linear congruential generator: about `density` of the
    /// entries present, magnitudes over six decades, some explicit zeros.
    fn random_csr(n: usize, density: f64, seed: u64) -> (Vec<usize>, Vec<i32>, Vec<f64>) {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
        for _ in 0..n {
            for j in 0..n {
                if next() < density {
                    cols.push(j as i32);
                    let value = if next() < 0.1 {
                        0.0
                    } else {
                        (next() - 0.5).signum() * 10f64.powf(6.0 * next() - 3.0)
                    };
                    vals.push(value);
                }
            }
            ptr.push(cols.len());
        }
        (ptr, cols, vals)
    }

    fn entry(ptr: &[usize], cols: &[i32], vals: &[f64], i: usize, j: usize) -> f64 {
        (ptr[i]..ptr[i + 1])
            .find(|&k| cols[k] as usize == j)
            .map_or(0.0, |k| vals[k])
    }

    /// The largest `sum_i log |a_{i, p(i)}|` over every permutation `p` (None: every
    /// permutation meets a zero).
    fn brute_force(ptr: &[usize], cols: &[i32], vals: &[f64]) -> Option<f64> {
        fn go(i: usize, used: &mut Vec<bool>, logs: &dyn Fn(usize, usize) -> f64) -> f64 {
            if i == used.len() {
                return 0.0;
            }
            let mut best = f64::NEG_INFINITY;
            for j in 0..used.len() {
                if !used[j] {
                    let here = logs(i, j);
                    if here > f64::NEG_INFINITY {
                        used[j] = true;
                        best = best.max(here + go(i + 1, used, logs));
                        used[j] = false;
                    }
                }
            }
            best
        }
        let n = ptr.len() - 1;
        let logs = |i: usize, j: usize| entry(ptr, cols, vals, i, j).abs().ln();
        let best = go(0, &mut vec![false; n], &logs);
        (best > f64::NEG_INFINITY).then_some(best)
    }

    #[test]
    fn the_matching_is_the_best_assignment_of_brute_force() {
        let mut matched = 0;
        for seed in 0..400 {
            let n = 2 + (seed as usize % 6);
            let density = [0.3, 0.5, 0.8][seed as usize % 3];
            let (ptr, cols, vals) = random_csr(n, density, seed);
            let best = brute_force(&ptr, &cols, &vals);
            match (max_product_matching(&ptr, &cols, &vals), best) {
                (Ok(m), Some(best)) => {
                    matched += 1;
                    let mut seen = vec![false; n];
                    for &j in &m.column {
                        assert!(!seen[j], "seed {seed}: column {j} matched twice");
                        seen[j] = true;
                    }
                    let ours: f64 = (0..n)
                        .map(|i| entry(&ptr, &cols, &vals, i, m.column[i]).abs().ln())
                        .sum();
                    assert!(
                        (ours - best).abs() <= 1e-9 * (1.0 + best.abs()),
                        "seed {seed}: product e^{ours} against the best e^{best}"
                    );
                }
                (Err(_), None) => {}
                (ours, best) => panic!("seed {seed}: matching {ours:?}, brute force {best:?}"),
            }
        }
        assert!(matched > 200, "{matched} of 400 had a transversal");
    }

    /// The scaled matrix has entries of magnitude at most 1 on the unrounded scaling, so at
    /// most 2 after rounding each factor to a power of two (and at least 1/4 on the matching).
    #[test]
    fn the_scaling_bounds_the_entries_and_lifts_the_matched_ones() {
        for seed in 1000..1200 {
            let n = 3 + (seed as usize % 20);
            let (ptr, cols, vals) = random_csr(n, 0.4, seed);
            let Ok(m) = max_product_matching(&ptr, &cols, &vals) else {
                continue;
            };
            for i in 0..n {
                for k in ptr[i]..ptr[i + 1] {
                    let j = cols[k] as usize;
                    let scaled = ldexp(vals[k], m.row_scale[i] + m.column_scale[j]).abs();
                    assert!(scaled <= 2.0 + 1e-12, "seed {seed}: |s a s| = {scaled}");
                    if j == m.column[i] {
                        assert!(scaled >= 0.25 - 1e-12, "seed {seed}: matched {scaled}");
                    }
                }
            }
        }
    }

    /// `ldexp` (`precision`) reaches past the exponent range a double holds without losing the
    /// value, which the scales of rows near f64::MAX need.
    #[test]
    fn ldexp_scales_by_any_power_of_two() {
        assert_eq!(ldexp(1.7e308, -1024), 1.7e308 / 2f64.powi(512) / 2f64.powi(512));
        assert_eq!(ldexp(3.0, 4), 48.0);
        assert_eq!(ldexp(1e-300, 1100), 1e-300 * 2f64.powi(550) * 2f64.powi(550));
        assert_eq!(ldexp(1.0, -1074), f64::from_bits(1));
    }

    #[test]
    fn a_structurally_singular_matrix_has_no_matching() {
        // rows 0 and 1 both have entries only in column 0
        let (ptr, cols, vals) = (vec![0, 1, 2, 4], vec![0, 0, 1, 2], vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            max_product_matching(&ptr, &cols, &vals),
            Err(StructurallySingular { row: 1 })
        );
        // an explicit zero is not an entry
        let (ptr, cols, vals) = (vec![0, 2, 3], vec![0, 1, 0], vec![0.0, 1.0, 0.0]);
        assert!(max_product_matching(&ptr, &cols, &vals).is_err());
    }

    #[test]
    fn a_zero_diagonal_gets_its_rows_swapped() {
        // [0 2; 3 0] -> rows swapped
        let m = max_product_matching(&[0, 1, 2], &[1, 0], &[2.0, 3.0]).unwrap();
        assert_eq!(m.column, [1, 0]);
        assert_eq!(m.moved_rows(), 2);
    }
}
