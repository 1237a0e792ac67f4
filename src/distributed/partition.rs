//! Rows in contiguous blocks, one per rank, balanced by nonzeros.

use crate::backend::cpu::TILE_ROWS;
use crate::sparse::CsrMatrix;
use std::ops::Range;

/// Rank `k` owns rows `starts[k]..starts[k + 1]`. Every start is a multiple of [`TILE_ROWS`]
/// (256): the tiles of the tiled dot order never straddle two ranks, and a chunk of `dot`
/// (8,192 rows, whole rounds of 256 lanes) that does is summed across them lane by lane
/// (`DistributedBackend::dot_of`). A matrix of fewer than 256 rows a rank leaves ranks
/// without rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    starts: Vec<usize>,
}

impl Partition {
    /// `ranks` blocks of `a`'s rows, each boundary the tile boundary whose nonzeros before it
    /// are nearest `k / ranks` of the total.
    pub fn balanced(a: &CsrMatrix, ranks: usize) -> Partition {
        Self::balanced_at(a, ranks, TILE_ROWS)
    }

    /// [`balanced`](Self::balanced) with every start a multiple of `align` rows (a multiple of
    /// [`TILE_ROWS`]): `DOT_CHUNK` for the blocks of [`BlockBackend`](super::BlockBackend),
    /// whose ranks then hold whole chunks of `dot`.
    pub fn balanced_at(a: &CsrMatrix, ranks: usize, align: usize) -> Partition {
        assert!(ranks > 0, "a partition needs a rank");
        assert!(align.is_multiple_of(TILE_ROWS), "blocks start at tiles");
        let n = a.nrows();
        let row_ptr = a.row_ptr();
        let boundaries: Vec<usize> = (0..n.div_ceil(align))
            .map(|c| c * align)
            .chain([n])
            .collect();
        let nnz = a.nnz() as f64;
        let mut starts = vec![0];
        let mut at = 0; // index into `boundaries` of the last start
        for k in 1..ranks {
            let target = nnz * k as f64 / ranks as f64;
            let distance = |i: usize| (row_ptr[boundaries[i]] as f64 - target).abs();
            while at + 1 < boundaries.len() && distance(at + 1) <= distance(at) {
                at += 1;
            }
            starts.push(boundaries[at]);
        }
        starts.push(n);
        Partition { starts }
    }

    /// The blocks given by their starts (the first 0, the last the row count), each a multiple
    /// of [`TILE_ROWS`] but the last.
    pub fn from_starts(starts: Vec<usize>) -> Partition {
        assert!(starts.len() >= 2 && starts[0] == 0, "partition starts");
        let n = *starts.last().unwrap();
        for w in starts.windows(2) {
            assert!(w[0] <= w[1], "partition starts must not decrease");
            assert!(
                w[0] == n || w[0].is_multiple_of(TILE_ROWS),
                "partition starts at multiples of {TILE_ROWS}"
            );
        }
        Partition { starts }
    }

    pub fn ranks(&self) -> usize {
        self.starts.len() - 1
    }

    /// Rows in all.
    pub fn n(&self) -> usize {
        *self.starts.last().unwrap()
    }

    /// The rows of `rank`.
    pub fn rows(&self, rank: usize) -> Range<usize> {
        self.starts[rank]..self.starts[rank + 1]
    }

    /// The rank owning row `i`.
    pub fn owner(&self, i: usize) -> usize {
        self.starts.partition_point(|&s| s <= i) - 1
    }

    /// The most nonzeros of `a` one rank's rows hold: what the slowest rank's SpMV reads.
    pub fn largest_nnz(&self, a: &CsrMatrix) -> usize {
        let row_ptr = a.row_ptr();
        self.starts
            .windows(2)
            .map(|w| row_ptr[w[1]] - row_ptr[w[0]])
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::poisson2d;

    #[test]
    fn blocks_cover_the_rows_at_tile_boundaries_balanced_by_nonzeros() {
        let a = poisson2d(300);
        let p = Partition::balanced(&a, 3);
        assert_eq!(p.ranks(), 3);
        assert_eq!(p.rows(0).start, 0);
        assert_eq!(p.rows(2).end, a.nrows());
        let mut counts = Vec::new();
        for k in 0..3 {
            let rows = p.rows(k);
            assert!(rows.start.is_multiple_of(TILE_ROWS));
            counts.push(a.row_ptr()[rows.end] - a.row_ptr()[rows.start]);
            assert_eq!(p.owner(rows.start), k);
            assert_eq!(p.owner(rows.end - 1), k);
        }
        // Within a tile's nonzeros of a third each.
        let chunk_nnz = 5 * TILE_ROWS;
        for c in counts {
            assert!((c as i64 - a.nnz() as i64 / 3).unsigned_abs() as usize <= chunk_nnz);
        }
    }

    #[test]
    fn a_matrix_of_one_tile_stays_on_one_rank() {
        let a = poisson2d(15);
        let p = Partition::balanced(&a, 4);
        let owners: Vec<_> = (0..4).filter(|&k| !p.rows(k).is_empty()).collect();
        assert_eq!(owners.len(), 1);
        assert_eq!(p.rows(owners[0]), 0..225);
    }
}
