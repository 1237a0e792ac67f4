//! ILU(0) triangular solves on the CPU, the twin of `kernels/ilu0.cu`: the same per-row
//! arithmetic (src/precond/ilu0.rs), so the same bits whatever the schedule or thread count.
//!
//! Schedule, chosen per triangle: rows in natural order on one thread when the levels are too
//! narrow to share (a level costs one rayon fork-join, microseconds, against ~15 ns per row), else
//! level by level, the wide levels split over rayon and the narrow ones run inline.

use crate::precision::Precision;
use crate::precond::ilu0::{Ilu0Factors, Levels};
use rayon::prelude::*;
use std::sync::Arc;

/// Mean rows per level from which a level-scheduled solve beats the sequential one on 2+ threads
/// (a fork-join costs about as much as solving ~1000 rows; measured in benches/cpu_kernels.rs).
const MIN_MEAN_LEVEL_WIDTH: f64 = 2048.0;
/// Rows per rayon task within a level; levels with fewer rows than two tasks run inline.
const ROWS_PER_TASK: usize = 1024;

/// How one triangle is solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Sequential,
    Levels,
}

/// ILU(0) factors on the CPU with the double work vector of an application.
pub struct CpuIlu {
    factors: Arc<Ilu0Factors>,
    work: Vec<f64>,
    lower: Schedule,
    upper: Schedule,
}

fn choose(levels: &Levels) -> Schedule {
    if rayon::current_num_threads() > 1 && levels.mean_width() >= MIN_MEAN_LEVEL_WIDTH {
        Schedule::Levels
    } else {
        Schedule::Sequential
    }
}

/// A pointer to the work vector shared by the tasks of one level: each writes only its own rows
/// and reads rows of earlier levels, finished before the level started.
#[derive(Clone, Copy)]
struct Shared(*mut f64);
// SAFETY: see the type's comment: writes are to disjoint rows, reads to rows no task writes.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl CpuIlu {
    pub fn new(factors: Arc<Ilu0Factors>) -> Self {
        let lower = choose(factors.lower_levels());
        let upper = choose(factors.upper_levels());
        CpuIlu {
            work: vec![0.0; factors.n()],
            factors,
            lower,
            upper,
        }
    }

    /// Force a schedule for both triangles (benchmarks and tests).
    pub fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.lower = schedule;
        self.upper = schedule;
        self
    }

    pub fn schedules(&self) -> (Schedule, Schedule) {
        (self.lower, self.upper)
    }

    /// `z <- U^{-1} L^{-1} fl64(r)`, widened to `P`.
    pub fn apply<P: Precision>(&mut self, r: &[P], z: &mut [P]) {
        let f = &*self.factors;
        assert!(r.len() == f.n() && z.len() == f.n(), "ilu_apply: lengths");
        let y = Shared(self.work.as_mut_ptr());
        let lower_row = |i: usize| {
            // SAFETY: i < n; the row reads only rows of earlier levels (or earlier rows).
            unsafe { lower_row(f, i, r[i].to_f64(), y) }
        };
        run(f.lower_levels(), self.lower, f.n(), false, lower_row);
        let upper_row = |i: usize| {
            // SAFETY: as above, for later rows.
            unsafe { upper_row(f, i, y) }
        };
        run(f.upper_levels(), self.upper, f.n(), true, upper_row);
        z.par_chunks_mut(ROWS_PER_TASK)
            .zip(self.work.par_chunks(ROWS_PER_TASK))
            .for_each(|(z, w)| {
                for (zi, &wi) in z.iter_mut().zip(w) {
                    *zi = P::from_f64(wi);
                }
            });
    }
}

/// Run `row` over every row in an order that respects the dependencies.
fn run(levels: &Levels, schedule: Schedule, n: usize, backward: bool, row: impl Fn(usize) + Sync) {
    match schedule {
        Schedule::Sequential if backward => (0..n).rev().for_each(row),
        Schedule::Sequential => (0..n).for_each(row),
        Schedule::Levels => {
            for l in 0..levels.count() {
                let rows = levels.level(l);
                if rows.len() < 2 * ROWS_PER_TASK {
                    rows.iter().for_each(|&i| row(i as usize));
                } else {
                    rows.par_chunks(ROWS_PER_TASK)
                        .for_each(|chunk| chunk.iter().for_each(|&i| row(i as usize)));
                }
            }
        }
    }
}

/// `y_i = rhs - sum_{j < i} l_ij y_j`, increasing column order, unfused.
///
/// # Safety
/// `i < n`, `y` points at `n` doubles, and every `y_j` read is final.
#[inline]
unsafe fn lower_row(f: &Ilu0Factors, i: usize, rhs: f64, y: Shared) {
    let (cols, vals) = (f.col_idx(), f.values());
    let mut acc = rhs;
    for k in f.row_ptr()[i]..f.diag()[i] {
        let product = vals[k] * unsafe { *y.0.add(cols[k] as usize) };
        acc -= product;
    }
    unsafe { *y.0.add(i) = acc };
}

/// `x_i = (y_i - sum_{j > i} u_ij x_j) / u_ii`, decreasing column order, unfused.
///
/// # Safety
/// As [`lower_row`], for the rows after `i`.
#[inline]
unsafe fn upper_row(f: &Ilu0Factors, i: usize, x: Shared) {
    let (cols, vals) = (f.col_idx(), f.values());
    let d = f.diag()[i];
    let mut acc = unsafe { *x.0.add(i) };
    for k in (d + 1..f.row_ptr()[i + 1]).rev() {
        let product = vals[k] * unsafe { *x.0.add(cols[k] as usize) };
        acc -= product;
    }
    unsafe { *x.0.add(i) = acc / vals[d] };
}
