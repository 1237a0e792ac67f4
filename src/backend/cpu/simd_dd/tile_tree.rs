//! A tile's halving tree (`kernels::dot_tiles`: 256 products, `s[t] = s[t] + s[t + off]` for
//! `off = 128, ..., 1`) fed one register of `W` products at a time, in order, so that the tile
//! is read front to back. Forming each register of the first two levels from the products of
//! lanes `t`, `t + 128`, `t + 64` and `t + 192` instead (four interleaved streams per vector),
//! with an array of 16 registers zeroed per tile (a `memset` call, with a `vzeroupper`), was
//! much slower (`benches/results/cpu.md`).

use super::{DdX, lanes};
use crate::backend::cpu::kernels::TILE_ROWS;
use crate::precision::Dd;

/// One tile's tree as its product registers arrive. With `Q = 64 / W` registers per 64 lanes,
/// register `G` (products of lanes `W G ..+ W`, `P[G]`) is held while `G < 2Q`; for
/// `2Q <= G < 3Q` (`g = G - 2Q`) it makes `low[g] = P[g] + P[G]` (lanes `t` and `t + 128`);
/// for `3Q <= G` (`g = G - 3Q`) `high = P[g + Q] + P[G]` (lanes `t + 64` and `t + 192`) and
/// `r[g] = low[g] + high`: the first two levels of the tree, in its order.
pub(super) struct TileTree<const W: usize> {
    /// `P[0..2Q]`, then `low` and `r` in the first `Q`.
    held: [DdX<W>; 32],
    /// Registers pushed into the current tile.
    fed: usize,
}

impl<const W: usize> TileTree<W> {
    const QUARTER: usize = 64 / W;

    #[inline(always)]
    pub(super) fn new() -> Self {
        const {
            assert!(
                TILE_ROWS == 256,
                "tile tree: the first two levels are written out"
            )
        };
        const { assert!(64 % W == 0 && 64 / W <= 16, "tile tree: lanes per register") };
        TileTree {
            held: [DdX::ZERO; 32],
            fed: 0,
        }
    }

    /// The products of lanes `W G ..+ W` of the tile, `G` the number pushed so far.
    #[inline(always)]
    pub(super) fn push(&mut self, product: DdX<W>) {
        let q = Self::QUARTER;
        let at = self.fed;
        debug_assert!(at < 4 * q, "tile tree: a whole tile pushed already");
        if at < 2 * q {
            self.held[at] = product;
        } else if at < 3 * q {
            let g = at - 2 * q;
            self.held[g] = self.held[g].add(product);
        } else {
            let g = at - 3 * q;
            let high = self.held[g + q].add(product);
            self.held[g] = self.held[g].add(high);
        }
        self.fed = at + 1;
    }

    /// The tile's sum once all `256 / W` registers were pushed; the tree is empty again.
    #[inline(always)]
    pub(super) fn finish(&mut self) -> Dd {
        debug_assert_eq!(self.fed, 4 * Self::QUARTER, "tile tree: a partial tile");
        self.fed = 0;
        let r = &mut self.held;
        let mut regs = Self::QUARTER;
        while regs > 1 {
            regs /= 2;
            for g in 0..regs {
                r[g] = r[g].add(r[g + regs]);
            }
        }
        // Lane t of `v` gets lane t + off added (the lanes past `off` add whatever, unread).
        let mut v = r[0];
        let mut off = W / 2;
        while off > 0 {
            let shifted = DdX {
                hi: lanes(|t| v.hi[(t + off) % W]),
                lo: lanes(|t| v.lo[(t + off) % W]),
            };
            v = v.add(shifted);
            off /= 2;
        }
        Dd::new(v.hi[0], v.lo[0])
    }
}
