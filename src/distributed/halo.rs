//! The halo of a rank: the entries of `x` its rows read from other ranks, where they come from,
//! what it sends in return, and its rows of `A` with columns that address its extended `x`.
//!
//! The extended `x` is `[halo below | own rows | halo above]`, each part in global order, so the
//! column map is increasing: every row keeps its entries in their order, and the CPU kernels sum
//! them in the lanes and tree of the single-process SpMV, to the same bits.

use super::Partition;
use crate::backend::cpu::TILE_ROWS;
use crate::sparse::{CsrMatrix, Symmetry};
use std::ops::Range;

/// One rank's share of `A` and the exchange its SpMV needs.
#[derive(Clone, Debug)]
pub struct Halo {
    /// This rank's rows of `A`, columns into the extended `x`.
    pub local: CsrMatrix,
    /// Entries of the extended `x` before this rank's own.
    pub below: usize,
    /// This rank's rows.
    pub rows: Range<usize>,
    /// Entries of the extended `x` after this rank's own.
    pub above: usize,
    /// `(rank, positions in the extended x)` this rank receives, in rank order.
    pub receives: Vec<(usize, Range<usize>)>,
    /// `(rank, this rank's row offsets)` this rank sends, in rank order and global order.
    pub sends: Vec<(usize, Vec<usize>)>,
}

impl Halo {
    /// The halo of `rank` under `partition` of `a` (every rank holds `a` whole and finds its
    /// sends by scanning the others' rows: no messages to set up).
    pub fn new(a: &CsrMatrix, partition: &Partition, rank: usize) -> Halo {
        Self::build(a, partition, rank, false)
    }

    /// [`new`](Self::new) with each rank's part of the halo widened to the whole span of rows
    /// between the first and the last it needs: every message is then one contiguous run of
    /// the sender's rows, which a GPU sends from where it lies (no packing kernel). For banded
    /// matrices the span is the set; elsewhere it costs the rows between.
    pub fn spans(a: &CsrMatrix, partition: &Partition, rank: usize) -> Halo {
        Self::build(a, partition, rank, true)
    }

    fn build(a: &CsrMatrix, partition: &Partition, rank: usize, spans: bool) -> Halo {
        let rows = partition.rows(rank);
        let (lo, hi) = (rows.start, rows.end);
        // The columns of rows `range` that `keep` keeps, sorted once: filtered first, so a
        // block's scan costs its nonzeros, not a sort of them.
        let outside = |range: Range<usize>, keep: &dyn Fn(usize) -> bool| {
            let mut cols: Vec<usize> = range
                .flat_map(|i| a.row(i).0.iter().map(|&j| j as usize))
                .filter(|&j| keep(j))
                .collect();
            cols.sort_unstable();
            cols.dedup();
            if spans {
                cols = widen_to_spans(&cols, partition);
            }
            cols
        };
        let needed = outside(rows.clone(), &|j| !rows.contains(&j));
        let below: Vec<usize> = needed.iter().copied().filter(|&j| j < lo).collect();
        let above: Vec<usize> = needed.iter().copied().filter(|&j| j >= hi).collect();
        let own = hi - lo;

        let mut receives: Vec<(usize, Range<usize>)> = Vec::new();
        let halo_positions = below
            .iter()
            .enumerate()
            .chain(above.iter().enumerate().map(|(k, j)| (below.len() + own + k, j)))
            .map(|(position, &j)| (position, partition.owner(j)));
        for (position, owner) in halo_positions {
            match receives.last_mut() {
                Some((r, range)) if *r == owner && range.end == position => range.end += 1,
                _ => receives.push((owner, position..position + 1)),
            }
        }

        let sends = (0..partition.ranks())
            .filter(|&m| m != rank)
            .filter_map(|m| {
                let mine: Vec<usize> = outside(partition.rows(m), &|j| rows.contains(&j))
                    .into_iter()
                    .map(|j| j - lo)
                    .collect();
                (!mine.is_empty()).then_some((m, mine))
            })
            .collect();

        let column = |j: usize| {
            if j < lo {
                below.binary_search(&j).unwrap()
            } else if j < hi {
                below.len() + j - lo
            } else {
                below.len() + own + above.binary_search(&j).unwrap()
            }
        };
        let first = a.row_ptr()[lo];
        let row_ptr: Vec<usize> = a.row_ptr()[lo..=hi].iter().map(|p| p - first).collect();
        let entries = first..a.row_ptr()[hi];
        let col_idx: Vec<i32> = a.col_idx()[entries.clone()]
            .iter()
            .map(|&j| column(j as usize) as i32)
            .collect();
        let values = a.values()[entries].to_vec();
        let ext = below.len() + own + above.len();
        let local = CsrMatrix::try_from_parts(own, ext, row_ptr, col_idx, values, Symmetry::General)
            .expect("a block of a valid matrix with an increasing column map is valid");
        Halo {
            local,
            below: below.len(),
            rows,
            above: above.len(),
            receives,
            sends,
        }
    }

    /// Rows from the first tile after the last row that reads the halo below, to the tile
    /// start at or before the first row that reads the halo above (empty where they cross):
    /// the rows a rank computes before its halo has arrived.
    pub fn interior(&self) -> Range<usize> {
        let own = self.below..self.below + self.rows.len();
        let reads = |i: usize, outside: &dyn Fn(usize) -> bool| {
            self.local.row(i).0.iter().any(|&j| outside(j as usize))
        };
        let n = self.rows.len();
        let first = (0..n)
            .rev()
            .find(|&i| reads(i, &|j| j < own.start))
            .map_or(0, |i| (i + 1).next_multiple_of(TILE_ROWS));
        let end = (0..n)
            .find(|&i| reads(i, &|j| j >= own.end))
            .map_or(n, |i| i / TILE_ROWS * TILE_ROWS);
        first.min(n)..end.max(first.min(n))
    }

    /// Entries of the extended `x`.
    pub fn extended_len(&self) -> usize {
        self.below + self.rows.len() + self.above
    }
}

/// `cols` (sorted) with the rows between each rank's first and last of them added.
fn widen_to_spans(cols: &[usize], partition: &Partition) -> Vec<usize> {
    let mut out = Vec::with_capacity(cols.len());
    let mut k = 0;
    while k < cols.len() {
        let owner = partition.owner(cols[k]);
        let end = partition.rows(owner).end;
        let last = cols[k..].partition_point(|&j| j < end) + k - 1;
        out.extend(cols[k]..=cols[last]);
        k = last + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::DOT_CHUNK;
    use crate::sparse::{CsrMatrix, Symmetry, poisson2d};

    #[test]
    fn each_rank_receives_what_the_others_send_it() {
        let a = poisson2d(200); // 40,000 rows, 5 chunks
        let p = Partition::from_starts(vec![0, DOT_CHUNK, 3 * DOT_CHUNK, 40_000]);
        let halos: Vec<Halo> = (0..3).map(|r| Halo::new(&a, &p, r)).collect();
        for (r, halo) in halos.iter().enumerate() {
            for (from, range) in &halo.receives {
                let (_, sent) = halos[*from].sends.iter().find(|(to, _)| *to == r).unwrap();
                assert_eq!(sent.len(), range.len(), "rank {from} to {r}");
            }
            // A 5-point stencil of width 200 reads 200 rows on each side of a block.
            let expected = |k: usize| if k == 0 || k == 3 { 0 } else { 200 };
            let boundary = |row: usize| [0, DOT_CHUNK, 3 * DOT_CHUNK, 40_000].iter().position(|&s| s == row).unwrap();
            assert_eq!(halo.below, expected(boundary(halo.rows.start)));
            assert_eq!(halo.above, expected(boundary(halo.rows.end)));
            // The interior reads no halo, starts a tile, and leaves out only the rows near
            // the block's ends (a stencil of width 200, two tiles at most each side).
            let inner = halo.interior();
            let own = halo.below..halo.below + halo.rows.len();
            assert!(inner.start.is_multiple_of(TILE_ROWS));
            assert!(inner.len() + 4 * TILE_ROWS >= halo.rows.len(), "rank {r}: {inner:?}");
            for i in inner {
                assert!(halo.local.row(i).0.iter().all(|&j| own.contains(&(j as usize))));
            }
            // Every row keeps its entries and values in order.
            for (i, global) in halo.rows.clone().enumerate() {
                assert_eq!(halo.local.row(i).1, a.row(global).1);
            }
        }
    }

    #[test]
    fn span_halos_send_contiguous_runs_that_cover_every_column_read() {
        // Rows reading far columns: i reads i, i + 7 and (i * 37) % n.
        let n = 3 * DOT_CHUNK + 100;
        let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            for j in [i, (i + 7) % n, (i * 37) % n] {
                rows.push(i as u32);
                cols.push(j as u32);
                vals.push(1.0 + j as f64);
            }
        }
        let a = CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap();
        let p = Partition::balanced_at(&a, 3, DOT_CHUNK);
        for k in 0..3 {
            assert!(p.rows(k).start.is_multiple_of(DOT_CHUNK) || p.rows(k).is_empty());
        }
        let halos: Vec<Halo> = (0..3).map(|r| Halo::spans(&a, &p, r)).collect();
        for (r, halo) in halos.iter().enumerate() {
            for (from, range) in &halo.receives {
                let (_, sent) = halos[*from].sends.iter().find(|(to, _)| *to == r).unwrap();
                assert_eq!(sent.len(), range.len(), "rank {from} to {r}");
                assert!(sent.windows(2).all(|w| w[1] == w[0] + 1), "a contiguous run");
            }
            // Every entry reads, through the extended x, the column it read in `a`.
            let ext_col = |j: usize| {
                for (from, range) in &halo.receives {
                    let first = p.rows(*from).start + halos[*from].sends.iter().find(|(to, _)| *to == r).unwrap().1[0];
                    if (first..first + range.len()).contains(&j) {
                        return range.start + j - first;
                    }
                }
                assert!(halo.rows.contains(&j), "column {j} of rank {r} is neither own nor received");
                halo.below + j - halo.rows.start
            };
            for (i, global) in halo.rows.clone().enumerate() {
                let want: Vec<usize> = a.row(global).0.iter().map(|&j| ext_col(j as usize)).collect();
                let got: Vec<usize> = halo.local.row(i).0.iter().map(|&j| j as usize).collect();
                assert_eq!(got, want, "row {global}");
            }
        }
    }
}
