//! The level structure of ILU(0)'s triangles: rows grouped by the longest chain of
//! dependencies below them, and each triangle renumbered in that order for the level-scheduled
//! solves of the CPU and the GPU.

use super::Ilu0Factors;

/// Rows grouped by level: a row's dependencies all lie in earlier levels, so the rows of one
/// level can be solved at the same time. Within a level rows are in increasing order.
#[derive(Clone, Debug, Default)]
pub struct Levels {
    /// Rows, level after level.
    pub rows: Vec<u32>,
    /// `rows[ptr[l]..ptr[l + 1]]` is level `l`.
    pub ptr: Vec<usize>,
}

impl Levels {
    pub fn count(&self) -> usize {
        self.ptr.len().saturating_sub(1)
    }
    pub fn level(&self, l: usize) -> &[u32] {
        &self.rows[self.ptr[l]..self.ptr[l + 1]]
    }
    /// Mean rows per level: the parallelism a level-scheduled solve can use.
    pub fn mean_width(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.rows.len() as f64 / self.count() as f64
        }
    }
}

/// One triangle renumbered in the order of its levels: what the CPU's level schedule and the GPU
/// kernels walk. Position `p` holds row `rows[p]`; its off-diagonal entries are
/// `ptr[p]..ptr[p + 1]` of `deps` and `vals`, in the order of the arithmetic (L: increasing
/// column, U: decreasing), each dependency given as its row's position in this same order
/// (always smaller than `p`), so each level is a contiguous block of positions.
///
/// In the partitioned order (`lower_partitioned`) the levels are those of each part's own
/// dependency graph, part after part; a row's dependencies are still all in earlier levels, so
/// everything that walks levels in order works on either.
#[derive(Clone, Debug)]
pub struct OrderedTriangle {
    pub rows: Vec<u32>,
    /// Level `l` is positions `level_ptr[l]..level_ptr[l + 1]`.
    pub level_ptr: Vec<usize>,
    /// Part `q` is levels `part_ptr[q]..part_ptr[q + 1]` (the level order is one part).
    pub part_ptr: Vec<usize>,
    pub ptr: Vec<usize>,
    pub deps: Vec<u32>,
    pub vals: Vec<f64>,
    /// `u_ii` by position (the upper triangle; empty for the lower).
    pub diag: Vec<f64>,
    /// The position of each row.
    pub position: Vec<u32>,
}

impl OrderedTriangle {
    /// For each position of this triangle, the position of its row in `other` (the map between
    /// the forward and the backward order of the same rows).
    pub fn positions_in(&self, other: &OrderedTriangle) -> Vec<u32> {
        self.rows
            .iter()
            .map(|&i| other.position[i as usize])
            .collect()
    }
}

impl Ilu0Factors {
    /// `L` (strictly lower entries, unit diagonal) in the order of its levels.
    pub fn lower_ordered(&self) -> OrderedTriangle {
        self.ordered(&self.lower, false, vec![0, self.lower.count()])
    }

    /// `U` (diagonal and strictly upper entries) in the order of its levels.
    pub fn upper_ordered(&self) -> OrderedTriangle {
        self.ordered(&self.upper, true, vec![0, self.upper.count()])
    }

    /// `L` cut into `parts` runs of consecutive rows (as equal as can be) for a GPU block each,
    /// each run in the order of its rows' "arrival": the longest dependency path to the row,
    /// counting a dependency in the same run as 1 and one in an earlier run as `hop` (the
    /// cost of hearing from another block, in a block's own level steps). A block solves its
    /// run arrival by arrival with a barrier between them, so a row whose dependency comes from
    /// another block is placed `hop` steps after it, and the rows that need nothing from
    /// outside go first instead of waiting behind it. (Counting only a run's own
    /// dependencies, `hop` = 0, makes each run wait for most of the one before:
    /// `benches/results/ilu0-h200.md`.)
    pub fn lower_partitioned(&self, parts: usize, hop: u32) -> OrderedTriangle {
        self.partitioned(false, parts, hop)
    }

    /// `U` likewise, its runs taken from the last row backwards (the order of its solve).
    pub fn upper_partitioned(&self, parts: usize, hop: u32) -> OrderedTriangle {
        self.partitioned(true, parts, hop)
    }

    fn partitioned(&self, upper: bool, parts: usize, hop: u32) -> OrderedTriangle {
        let n = self.n;
        let parts = parts.clamp(1, n.max(1));
        let hop = hop.max(1);
        let (row_ptr, cols, diag) = (&self.row_ptr, &self.col_idx, &self.diag);
        // `t`: a row's index in the order of the solve (L forward, U backward)
        let step = |t: usize| if upper { n - 1 - t } else { t };
        let mut level = vec![0u32; n];
        let mut rows = vec![0u32; n];
        let mut level_ptr = vec![0usize];
        let mut part_ptr = vec![0usize];
        for q in 0..parts {
            let (t0, t1) = (q * n / parts, (q + 1) * n / parts);
            let mut count = 0usize;
            for t in t0..t1 {
                let i = step(t);
                let deps = if upper {
                    diag[i] + 1..row_ptr[i + 1]
                } else {
                    row_ptr[i]..diag[i]
                };
                let l = deps
                    .map(|k| cols[k] as usize)
                    .map(|j| level[j] + if step(j) >= t0 { 1 } else { hop })
                    .max()
                    .unwrap_or(0);
                level[i] = l;
                count = count.max(l as usize + 1);
            }
            // counting sort of the run by arrival, in the order of the solve within one; the
            // arrivals no row of the run has are no levels
            let low = (t0..t1).map(|t| level[step(t)]).min().unwrap_or(0) as usize;
            let mut next = vec![0usize; count - low + 1];
            for t in t0..t1 {
                next[level[step(t)] as usize - low + 1] += 1;
            }
            next[0] = t0;
            for l in 1..next.len() {
                next[l] += next[l - 1];
            }
            let mut ends: Vec<usize> = next[1..].to_vec();
            ends.dedup();
            level_ptr.extend_from_slice(&ends);
            for t in t0..t1 {
                let i = step(t);
                let slot = &mut next[level[i] as usize - low];
                rows[*slot] = i as u32;
                *slot += 1;
            }
            part_ptr.push(level_ptr.len() - 1);
        }
        let levels = Levels {
            rows,
            ptr: level_ptr,
        };
        self.ordered(&levels, upper, part_ptr)
    }

    fn ordered(&self, levels: &Levels, upper: bool, part_ptr: Vec<usize>) -> OrderedTriangle {
        let mut position = vec![0u32; self.n];
        for (p, &i) in levels.rows.iter().enumerate() {
            position[i as usize] = p as u32;
        }
        let (row_ptr, cols, values, diag) =
            (&self.row_ptr, &self.col_idx, &self.values, &self.diag);
        let entries = if upper {
            self.nnz() - diag.len() - (0..self.n).map(|i| diag[i] - row_ptr[i]).sum::<usize>()
        } else {
            (0..self.n).map(|i| diag[i] - row_ptr[i]).sum::<usize>()
        };
        let mut ptr = Vec::with_capacity(self.n + 1);
        let mut deps = Vec::with_capacity(entries);
        let mut vals = Vec::with_capacity(entries);
        let mut pivots = Vec::with_capacity(if upper { self.n } else { 0 });
        ptr.push(0);
        for &i in &levels.rows {
            let i = i as usize;
            let mut push = |k: usize| {
                deps.push(position[cols[k] as usize]);
                vals.push(values[k]);
            };
            if upper {
                (diag[i] + 1..row_ptr[i + 1]).rev().for_each(&mut push);
                pivots.push(values[diag[i]]);
            } else {
                (row_ptr[i]..diag[i]).for_each(&mut push);
            }
            ptr.push(deps.len());
        }
        OrderedTriangle {
            rows: levels.rows.clone(),
            level_ptr: levels.ptr.clone(),
            part_ptr,
            ptr,
            deps,
            vals,
            diag: pivots,
            position,
        }
    }
}

#[derive(Clone, Copy)]
pub(super) enum Triangle {
    Lower,
    Upper,
}

/// Level of each row (longest dependency chain below it), then rows grouped by level.
pub(super) fn levels(row_ptr: &[usize], col_idx: &[i32], diag: &[usize], triangle: Triangle) -> Levels {
    let n = diag.len();
    let mut level = vec![0u32; n];
    let mut count = 0usize;
    let mut visit = |i: usize, level: &mut Vec<u32>| {
        let deps = match triangle {
            Triangle::Lower => row_ptr[i]..diag[i],
            Triangle::Upper => diag[i] + 1..row_ptr[i + 1],
        };
        let l = deps
            .map(|k| level[col_idx[k] as usize] + 1)
            .max()
            .unwrap_or(0);
        level[i] = l;
        count = count.max(l as usize + 1);
    };
    match triangle {
        Triangle::Lower => (0..n).for_each(|i| visit(i, &mut level)),
        Triangle::Upper => (0..n).rev().for_each(|i| visit(i, &mut level)),
    }
    // counting sort by level, rows increasing within a level
    let mut ptr = vec![0usize; count + 1];
    for &l in &level {
        ptr[l as usize + 1] += 1;
    }
    for l in 0..count {
        ptr[l + 1] += ptr[l];
    }
    let mut next = ptr.clone();
    let mut rows = vec![0u32; n];
    for (i, &l) in level.iter().enumerate() {
        rows[next[l as usize]] = i as u32;
        next[l as usize] += 1;
    }
    Levels { rows, ptr }
}
