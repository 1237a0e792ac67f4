//! What [`BlockBackend`](super::BlockBackend) needs of a backend ([`BlockKernels`]), and the
//! routes of a rank's words: its halo's runs and every rank's run of a reduction's partials.

use crate::backend::cpu::{DOT_CHUNK, TILE_ROWS};
use crate::backend::{Backend, OperandOf, TiledDots};
use crate::error::Result;
use crate::precision::Precision;
use crate::solver::cg::{CgRecord, Collected, Threshold};
use crate::solver::{BicgstabKernels, CgKernels};
use crate::sparse::CsrMatrix;
use super::Partition;
use super::halo::Halo;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

/// Which order a reduction's partials follow: `dot`'s chunks or the tiles of the SpMV's dots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    Chunks,
    Tiles,
}

impl Reduction {
    /// Rows a partial.
    pub fn rows(self) -> usize {
        match self {
            Reduction::Chunks => DOT_CHUNK,
            Reduction::Tiles => TILE_ROWS,
        }
    }
}

/// The partials of an SpMV's first dot, and of its second where it has one.
pub type TwoPartials<B, P> = (
    <B as BlockKernels>::Partials<P>,
    Option<<B as BlockKernels>::Partials<P>>,
);

/// Where a rank's words travel in a block solve: the halo's messages as runs of an extended
/// vector (the rows sent to each rank, those received from each), and every rank's run of
/// each reduction's partials in the whole list.
pub struct BlockRoute {
    pub sends: Vec<(usize, Range<usize>)>,
    pub receives: Vec<(usize, Range<usize>)>,
    /// The SpMV's tiles (of [`TILE_ROWS`] rows of an extended vector) holding the own rows,
    /// and among them the longest run whose rows read no halo: a backend may compute those
    /// while the halo travels.
    pub own_tiles: Range<usize>,
    pub interior: Range<usize>,
    chunks: Runs,
    tiles: Runs,
}

/// Every rank's partials in the whole list, and where this rank's start in its own list (an
/// extended vector's partials).
#[derive(Clone, Debug)]
pub struct Runs {
    pub runs: Vec<Range<usize>>,
    pub first: usize,
}

impl Runs {
    fn of(partition: &Partition, lead: usize, kind: Reduction) -> Self {
        let rows = kind.rows();
        let runs = (0..partition.ranks())
            .map(|k| {
                let r = partition.rows(k);
                match r.is_empty() {
                    true => 0..0,
                    false => r.start / rows..r.end.div_ceil(rows),
                }
            })
            .collect();
        Runs {
            runs,
            first: lead / rows,
        }
    }

    /// Partials in the whole list.
    pub fn total(&self) -> usize {
        self.runs.iter().map(Range::len).sum()
    }
}

impl BlockRoute {
    /// Rank `halo`'s route, its own rows at `lead` in an extended vector.
    pub(super) fn new(halo: &Halo, partition: &Partition, lead: usize) -> Self {
        let sends = halo
            .sends
            .iter()
            .map(|(to, rows)| {
                let (first, last) = (rows[0], rows[rows.len() - 1]);
                assert_eq!(last - first + 1, rows.len(), "a span halo sends contiguous rows");
                (*to, lead + first..lead + last + 1)
            })
            .collect();
        // From the halo's numbering `[below | own | above]` to the extended vector's.
        let pad = lead - halo.below;
        let receives = halo
            .receives
            .iter()
            .map(|(from, r)| (*from, r.start + pad..r.end + pad))
            .collect();
        let first = lead / TILE_ROWS;
        let own_tiles = first..first + halo.rows.len().div_ceil(TILE_ROWS);
        let interior = interior_tiles(halo);
        BlockRoute {
            sends,
            receives,
            own_tiles,
            interior: first + interior.start..first + interior.end,
            chunks: Runs::of(partition, lead, Reduction::Chunks),
            tiles: Runs::of(partition, lead, Reduction::Tiles),
        }
    }

    pub fn runs(&self, kind: Reduction) -> &Runs {
        match kind {
            Reduction::Chunks => &self.chunks,
            Reduction::Tiles => &self.tiles,
        }
    }
}

/// The longest run of tiles of `halo`'s own rows (counted from its first row) whose rows read
/// none of the halo.
fn interior_tiles(halo: &Halo) -> Range<usize> {
    let own = halo.below..halo.below + halo.rows.len();
    let (row_ptr, cols) = (halo.local.row_ptr(), halo.local.col_idx());
    let reads_halo = |t: usize| {
        let rows = t * TILE_ROWS..((t + 1) * TILE_ROWS).min(halo.rows.len());
        cols[row_ptr[rows.start]..row_ptr[rows.end]]
            .iter()
            .any(|&j| !own.contains(&(j as usize)))
    };
    let tiles = halo.rows.len().div_ceil(TILE_ROWS);
    let (mut best, mut start) = (0..0, 0);
    for t in 0..=tiles {
        let interior = t < tiles && !reads_halo(t);
        if !interior {
            if t - start > best.len() {
                best = start..t;
            }
            start = t + 1;
        }
    }
    best
}

/// What [`BlockBackend`] needs of a backend beyond [`Backend`].
pub trait BlockKernels: CgKernels + BicgstabKernels {
    /// How this backend's ranks reach each other.
    type Link: Send + Sync;
    /// A reduction's partials where the backend keeps them.
    type Partials<P: Precision>;

    /// `a` uploaded with its rows summed in `lanes` lanes (the whole matrix's count).
    fn matrix_with_lanes(&self, a: &Arc<CsrMatrix>, lanes: usize) -> Result<Self::Matrix>;
    /// `dot(x, y)`'s (or `dot_wide`'s) chunk partials.
    fn dot_partials<P: Precision>(
        &self,
        x: &Self::Vector<P>,
        y: OperandOf<'_, Self, P>,
    ) -> Result<Self::Partials<P>>;
    /// `y <- alpha x + y` with the chunk partials of `<y, y>` (CG's residual update).
    fn axpy_norm_partials<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<Self::Partials<P>>;
    /// `dot_tiled(x, y)`'s tile partials.
    fn tile_partials<P: Precision>(
        &self,
        x: &Self::Vector<P>,
        y: &Self::Vector<P>,
    ) -> Result<Self::Partials<P>>;
    /// `spmv_dots_tiled`'s product and the tile partials of its dots (the second where `dots`
    /// asks for two).
    fn spmv_tile_partials<P: Precision>(
        &self,
        a: &Self::Matrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, Self::Vector<P>>,
        q: &mut Self::Vector<P>,
    ) -> Result<TwoPartials<Self, P>>;
    /// The reduction of every rank's run of partials, in rank order: `runs.runs[k]` are rank
    /// `k`'s partials' places in the whole list; this rank's are `mine[runs.first..]`.
    fn reduce<P: Precision>(
        &self,
        link: &Self::Link,
        kind: Reduction,
        mine: &Self::Partials<P>,
        runs: &Runs,
    ) -> Result<P>;
    /// Send `x[range]` to each `(rank, range)` of `sends`, and fill `x[range]` from each of
    /// `receives`.
    fn exchange<P: Precision>(
        &self,
        link: &Self::Link,
        x: &mut Self::Vector<P>,
        sends: &[(usize, Range<usize>)],
        receives: &[(usize, Range<usize>)],
    ) -> Result<()>;
    /// `y[at..] <- x[from]`.
    fn copy_range<P: Precision>(
        &self,
        x: &Self::Vector<P>,
        from: Range<usize>,
        y: &mut Self::Vector<P>,
        at: usize,
    ) -> Result<()>;
    /// `x[range]` on the host.
    fn read_range<P: Precision>(&self, x: &Self::Vector<P>, range: Range<usize>)
    -> Result<Vec<P>>;
    /// Time the link has spent moving words.
    fn link_time(&self, link: &Self::Link) -> Duration;

    /// CG's scalars kept on this backend's device through a block solve ([`CgSteps`] with the
    /// reductions gathered between the ranks there): `Infallible` where it has no such steps.
    type BlockCg<P: Precision>;
    /// Those steps for `P` without a preconditioner (`None`: the host's steps), vectors of
    /// `len` elements, the state after `<r0, r0>` = `rr0`.
    fn block_cg_start<P: Precision>(
        &self,
        route: &BlockRoute,
        len: usize,
        rr0: &P,
        threshold: Threshold,
    ) -> Result<Option<Self::BlockCg<P>>>;
    fn block_cg_batch<P: Precision>(&self, state: &Self::BlockCg<P>) -> usize;
    /// [`CgSteps::cg_run`] on this rank's vectors, the halo of `p` exchanged by the route.
    #[allow(clippy::too_many_arguments)]
    fn block_cg_run<P: Precision>(
        &self,
        link: &Self::Link,
        route: &BlockRoute,
        a: &Self::Matrix,
        v: BlockCgVectors<'_, Self, P>,
        state: &mut Self::BlockCg<P>,
        iterations: usize,
    ) -> Result<()>;
    fn block_cg_collect<P: Precision>(
        &self,
        link: &Self::Link,
        state: &mut Self::BlockCg<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected>;
    fn block_cg_settle<P: Precision>(
        &self,
        state: &mut Self::BlockCg<P>,
        p: &Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()>;
}

/// A rank's CG vectors for [`BlockKernels::block_cg_run`].
pub struct BlockCgVectors<'a, B: Backend + ?Sized, P: Precision> {
    pub r: &'a mut B::Vector<P>,
    pub p: &'a mut B::Vector<P>,
    pub q: &'a mut B::Vector<P>,
    pub x: &'a mut B::Vector<P>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::Symmetry;

    /// A tridiagonal matrix of `n` rows.
    fn tridiagonal(n: usize) -> CsrMatrix {
        let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for j in i.saturating_sub(1)..(i + 2).min(n) {
                cols.push(j as i32);
                vals.push(if i == j { 2.0 } else { -1.0 });
            }
            row_ptr.push(cols.len());
        }
        CsrMatrix::try_from_parts(n, n, row_ptr, cols, vals, Symmetry::General).unwrap()
    }

    #[test]
    fn interior_tiles_are_those_whose_rows_read_no_halo() {
        let a = tridiagonal(3 * DOT_CHUNK);
        let partition = Partition::balanced_at(&a, 3, DOT_CHUNK);
        let tiles = DOT_CHUNK / TILE_ROWS;
        for rank in 0..3 {
            assert_eq!(partition.rows(rank).len(), DOT_CHUNK);
            let halo = Halo::spans(&a, &partition, rank);
            let lead = halo.below.next_multiple_of(DOT_CHUNK);
            let route = BlockRoute::new(&halo, &partition, lead);
            let first = lead / TILE_ROWS;
            assert_eq!(route.own_tiles, first..first + tiles);
            // the first tile reads the row below (not on rank 0), the last the row above (not on
            // the last rank)
            let start = first + usize::from(rank > 0);
            let end = first + tiles - usize::from(rank < 2);
            assert_eq!(route.interior, start..end, "rank {rank}");
        }
    }
}
