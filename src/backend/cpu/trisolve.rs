//! ILU(0) triangular solves on the CPU, the twin of `kernels/ilu0.cu`: the same per-row
//! arithmetic (src/precond/ilu0/mod.rs), so the same bits whatever the schedule or thread count.
//!
//! Two schedules, chosen once per factorization:
//! - `Sequential`: rows in natural order on one thread, on the factors as stored.
//! - `Levels`: level by level, the rows of a wide level split over the kernel threads. Rows of
//!   one level lie far apart in natural order (on a 3D grid a level is a diagonal plane), and
//!   walking them there missed the cache on every row, far slower than `Sequential`
//!   (`benches/results/cpu.md`).
//!   So this schedule solves on copies of the two triangles renumbered in level order (each
//!   level a contiguous block of rows and of the work vector), at the price of one gather
//!   between the triangles and one into `z`, and a second copy of the factors.
//!
//! `Levels` is tried when there are threads to share the work and the levels are wide enough to
//! amortise a hand-off per level (about a microsecond on the spinning thread team, against
//! ~15 ns per row), and kept if a trial application runs faster than `Sequential`.

use crate::precision::{HostSlice, HostSliceMut, Precision, SliceMutOf, SliceOf};
use crate::precond::ilu0::{Ilu0Factors, OrderedTriangle};
use super::tasks;
use std::sync::Arc;

/// Mean rows per level from which a level-scheduled solve can beat the sequential one on 2+
/// threads (measured in benches/cpu_ilu.rs, see benches/results/cpu.md).
const MIN_MEAN_LEVEL_WIDTH: f64 = 2048.0;
/// Rows per task within a level (a level runs inline unless its work passes the tasks' grain).
const ROWS_PER_TASK: usize = 1024;
/// The work of one row of a triangular solve against one element of a vector pass (the
/// tasks' unit): a few dependent loads and multiply-adds, about 15 ns.
const ROW_WORK: usize = 16;

/// How the two triangles are solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Sequential,
    Levels,
    /// As `Levels`, on the partitioned order the GPU's `Partitioned` schedule walks
    /// (`Ilu0Factors::lower_partitioned`) with these parts and hop weight: never chosen on the
    /// CPU, it checks that order's bits (tests).
    Partitioned {
        parts: usize,
        hop: u32,
    },
}

/// ILU(0) factors on the CPU, with the work space of an application.
pub struct CpuIlu {
    factors: Arc<Ilu0Factors>,
    schedule: Schedule,
    /// The level-ordered copies, built when `schedule` is `Levels`.
    ordered: Option<LevelOrdered>,
    work: Vec<f64>,
}

fn choose(f: &Ilu0Factors) -> Schedule {
    let width = f
        .lower_levels()
        .mean_width()
        .min(f.upper_levels().mean_width());
    if rayon::current_num_threads() > 1 && width >= MIN_MEAN_LEVEL_WIDTH {
        Schedule::Levels
    } else {
        Schedule::Sequential
    }
}

impl CpuIlu {
    /// With the faster schedule on this machine's thread pool: `Sequential` where `choose`
    /// sees no room for `Levels`, else whichever of the two ran one trial application faster
    /// (the bits are the same either way, so the choice cannot change a result).
    pub fn new(factors: Arc<Ilu0Factors>) -> Self {
        let mut sequential = Self::with_schedule(factors.clone(), Schedule::Sequential);
        if choose(&factors) == Schedule::Sequential {
            return sequential;
        }
        let mut levels = Self::with_schedule(factors, Schedule::Levels);
        let (a, b) = (sequential.trial_seconds(), levels.trial_seconds());
        log::debug!("ILU(0) trial application: sequential {a:.3e} s, levels {b:.3e} s");
        if b < a { levels } else { sequential }
    }

    /// Best of two applications to a vector of ones, in seconds.
    fn trial_seconds(&mut self) -> f64 {
        let r = vec![1.0f64; self.factors.n()];
        let mut z = vec![0.0f64; self.factors.n()];
        (0..2)
            .map(|_| {
                let t0 = std::time::Instant::now();
                self.apply::<f64, f64>(&r, &mut z);
                t0.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// With a given schedule (benchmarks and tests).
    pub fn with_schedule(factors: Arc<Ilu0Factors>, schedule: Schedule) -> Self {
        let ordered = match schedule {
            Schedule::Sequential => None,
            Schedule::Levels => Some(LevelOrdered::new(
                factors.lower_ordered(),
                factors.upper_ordered(),
            )),
            Schedule::Partitioned { parts, hop } => Some(LevelOrdered::new(
                factors.lower_partitioned(parts, hop),
                factors.upper_partitioned(parts, hop),
            )),
        };
        CpuIlu {
            work: vec![0.0; factors.n()],
            factors,
            schedule,
            ordered,
        }
    }

    pub fn schedule(&self) -> Schedule {
        self.schedule
    }

    /// `z <- U^{-1} L^{-1} fl64(r)`, widened to `Z`.
    pub fn apply<P: Precision, Z: Precision>(&mut self, r: SliceOf<'_, P>, z: SliceMutOf<'_, Z>) {
        let f = &*self.factors;
        assert!(r.len() == f.n() && z.len() == f.n(), "ilu_apply: lengths");
        match self.ordered.as_mut() {
            Some(ordered) => ordered.apply::<P, Z>(r, z),
            None => {
                sequential::<P>(f, r, &mut self.work);
                widen::<Z>(&self.work, z);
            }
        }
    }
}

/// `z_i = w_i` in `P`, on the kernel threads where the vector is long enough to pay for it.
fn widen<P: Precision>(w: &[f64], z: SliceMutOf<'_, P>) {
    let work = w.len() * tasks::cost::<P>();
    let pieces: Vec<_> = z
        .chunks_mut(ROWS_PER_TASK)
        .into_iter()
        .zip(w.chunks(ROWS_PER_TASK))
        .collect();
    tasks::for_each(pieces, work, |_, (mut z, w)| {
        for (i, &wi) in w.iter().enumerate() {
            z.set(i, P::from_f64(wi));
        }
    });
}

/// Both solves in natural order on the factors as stored; the result in `w`.
fn sequential<P: Precision>(f: &Ilu0Factors, r: SliceOf<'_, P>, w: &mut [f64]) {
    let (row_ptr, cols, vals, diag) = (f.row_ptr(), f.col_idx(), f.values(), f.diag());
    // forward: y_i = r_i - sum_{j < i} l_ij y_j, increasing column order, unfused
    for i in 0..w.len() {
        let mut acc = r.get(i).to_f64();
        for k in row_ptr[i]..diag[i] {
            let product = vals[k] * w[cols[k] as usize];
            acc -= product;
        }
        w[i] = acc;
    }
    // backward: x_i = (y_i - sum_{j > i} u_ij x_j) / u_ii, decreasing column order
    for i in (0..w.len()).rev() {
        let mut acc = w[i];
        for k in (diag[i] + 1..row_ptr[i + 1]).rev() {
            let product = vals[k] * w[cols[k] as usize];
            acc -= product;
        }
        w[i] = acc / vals[diag[i]];
    }
}

/// The CPU's level-scheduled solve over one level-ordered triangle.
impl OrderedTriangle {
    /// Solve in place: `w[p]` holds the right-hand side of position `p` on entry (unless
    /// `rhs` gives it), the solution on exit.
    fn solve(&self, w: &mut [f64], rhs: Option<&(dyn Fn(usize) -> f64 + Sync)>) {
        for l in 0..self.level_ptr.len() - 1 {
            let (start, end) = (self.level_ptr[l], self.level_ptr[l + 1]);
            // Earlier levels are final and only read; this level's block is only written.
            let (done, rest) = w.split_at_mut(start);
            let done = &*done;
            let block = &mut rest[..end - start];
            let row = |p: usize, out: &mut f64| {
                let mut acc = match rhs {
                    Some(rhs) => rhs(self.rows[p] as usize),
                    None => *out,
                };
                for k in self.ptr[p]..self.ptr[p + 1] {
                    let product = self.vals[k] * done[self.deps[k] as usize];
                    acc -= product;
                }
                *out = if self.diag.is_empty() {
                    acc
                } else {
                    acc / self.diag[p]
                };
            };
            let pieces: Vec<_> = block.chunks_mut(ROWS_PER_TASK).collect();
            tasks::for_each(pieces, (end - start) * ROW_WORK, |t, chunk| {
                let first = start + t * ROWS_PER_TASK;
                for (o, out) in chunk.iter_mut().enumerate() {
                    row(first + o, out);
                }
            });
        }
    }
}

/// Both triangles in level order (or partitioned), with the maps between the orders.
struct LevelOrdered {
    lower: OrderedTriangle,
    upper: OrderedTriangle,
    /// For each position of the upper order, the position of its row in the lower order.
    lower_of_upper: Vec<u32>,
    y: Vec<f64>,
    x: Vec<f64>,
}

impl LevelOrdered {
    fn new(lower: OrderedTriangle, upper: OrderedTriangle) -> Self {
        let n = lower.rows.len();
        let lower_of_upper = upper.positions_in(&lower);
        LevelOrdered {
            lower,
            upper,
            lower_of_upper,
            y: vec![0.0; n],
            x: vec![0.0; n],
        }
    }

    fn apply<P: Precision, Z: Precision>(&mut self, r: SliceOf<'_, P>, z: SliceMutOf<'_, Z>) {
        let rhs = |i: usize| r.get(i).to_f64();
        self.lower.solve(&mut self.y, Some(&rhs));
        let y = &self.y;
        let pieces: Vec<_> = self
            .x
            .chunks_mut(ROWS_PER_TASK)
            .zip(self.lower_of_upper.chunks(ROWS_PER_TASK))
            .collect();
        tasks::for_each(pieces, y.len(), |_, (x, from)| {
            for (xq, &p) in x.iter_mut().zip(from) {
                *xq = y[p as usize];
            }
        });
        self.upper.solve(&mut self.x, None);
        let x = &self.x;
        let pieces: Vec<_> = z
            .chunks_mut(ROWS_PER_TASK)
            .into_iter()
            .zip(self.upper.position.chunks(ROWS_PER_TASK))
            .collect();
        tasks::for_each(pieces, x.len() * tasks::cost::<Z>(), |_, (mut z, from)| {
            for (i, &q) in from.iter().enumerate() {
                z.set(i, Z::from_f64(x[q as usize]));
            }
        });
    }
}
