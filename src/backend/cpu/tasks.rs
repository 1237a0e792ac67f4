//! How a kernel call is split over the kernel threads: by its work, not by a fixed piece size.
//!
//! A call whose work is small runs on the calling thread, in order: handing work to other
//! threads and waiting for it costs more than a small matrix's whole kernel
//! (`benches/results/cpu-threads.md`). Larger calls are split into tasks of at least
//! [`TASK_MIN_WORK`], at most a few per thread, run by the calling thread and the spinning
//! workers of [`team`](super::team); an SpMV's rows are split where the nonzeros balance, not
//! every so many rows, which can leave most of a matrix's entries to one task. Where the pieces
//! end never changes a result: dot products reduce the same fixed chunks and tiles in the same
//! order whatever the tasks are, and rows are independent.

use crate::precision::{HostSliceMut, Precision};
use crate::sparse::CsrMatrix;
use std::ops::Range;
use std::sync::Mutex;

/// Set up the process's threads: `threads` (0: one per core), the calling thread one of them,
/// for the kernels ([`team`](super::team), sized by this count) and for rayon's pool (reading
/// matrices, setup). A program calls this once, before its first solve.
pub fn use_threads(threads: usize) -> Result<(), rayon::ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .use_current_thread()
        .build_global()
}

/// Work (elements, or nonzeros, times [`cost`]) below which a call stays on the calling thread.
pub(super) const PARALLEL_MIN_WORK: usize = 1 << 15;
/// Work a task gets at least, once a call is split.
pub(super) const TASK_MIN_WORK: usize = 1 << 14;
/// Tasks per thread at most: a few, so that a slow thread is balanced by the others.
const TASKS_PER_THREAD: usize = 4;

/// Relative cost of one element (or one nonzero) of `P` against `f64`: [`element_cost`].
pub(super) fn cost<P: Precision>() -> usize {
    element_cost(size_of::<P>())
}

/// Relative cost of an element of `bytes` bytes against `f64`: its bytes, and for the extended
/// formats their arithmetic (a double-double multiply-add is about 10 double ones).
pub fn element_cost(bytes: usize) -> usize {
    match bytes {
        0..=8 => 1,
        9..=16 => 4,
        17..=32 => 16,
        // Arbitrary precision (MPFR values behind pointers): far slower than any fixed format.
        _ => 64,
    }
}

/// Whether `work` is worth the pool.
pub(super) fn parallel(work: usize) -> bool {
    work >= PARALLEL_MIN_WORK && rayon::current_num_threads() > 1
}

/// How many tasks `work` makes: 1 below [`PARALLEL_MIN_WORK`], else one per
/// [`TASK_MIN_WORK`], at most [`TASKS_PER_THREAD`] a thread.
pub(super) fn task_count(work: usize) -> usize {
    tasks_for(work, rayon::current_num_threads())
}

/// [`task_count`] with `threads` threads.
fn tasks_for(work: usize, threads: usize) -> usize {
    if work < PARALLEL_MIN_WORK || threads <= 1 {
        return 1;
    }
    (work / TASK_MIN_WORK).clamp(2, TASKS_PER_THREAD * threads)
}

/// Threads a call of `work` (elements times [`element_cost`]) runs on, out of `threads`: one
/// a task at most ([`team::run_tasks`](super::team::run_tasks)). `--backend auto`'s cost model
/// splits its CPU estimate the same way.
pub fn threads_for(work: usize, threads: usize) -> usize {
    tasks_for(work, threads).min(threads.max(1))
}

/// `f(index, item)` for every item, on the kernel threads ([`team`](super::team)) when `work`
/// is worth it, else here in order. The calling thread's mp precision goes with each task
/// (`precision::mp::carried`).
pub(super) fn for_each<T: Send>(items: Vec<T>, work: usize, f: impl Fn(usize, T) + Sync + Send) {
    map(items, work, f);
}

/// `f(index, item)` for every item, collected in order; on the kernel threads as [`for_each`].
pub(super) fn map<T: Send, R: Send>(
    items: Vec<T>,
    work: usize,
    f: impl Fn(usize, T) -> R + Sync + Send,
) -> Vec<R> {
    if items.len() < 2 || !parallel(work) {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, item)| f(i, item))
            .collect();
    }
    let bits = crate::precision::mp::current_bits();
    // Each task takes its item and leaves its result in its own slot (uncontended locks).
    let slots: Vec<Mutex<(Option<T>, Option<R>)>> = items
        .into_iter()
        .map(|item| Mutex::new((Some(item), None)))
        .collect();
    super::team::run_tasks(rayon::current_num_threads(), slots.len(), &|i| {
        let item = slots[i].lock().unwrap().0.take().expect("each task runs once");
        let result = crate::precision::mp::carried(bits, || f(i, item));
        slots[i].lock().unwrap().1 = Some(result);
    });
    slots
        .into_iter()
        .map(|slot| slot.into_inner().unwrap().1.expect("every task ran"))
        .collect()
}

/// Rows of `a` in `parts` ranges of about equal nonzeros, each starting at a multiple of
/// `align` rows (the SIMD kernels take whole groups of rows; CG's fused dots, whole tiles).
pub(super) fn row_ranges(a: &CsrMatrix, parts: usize, align: usize) -> Vec<Range<usize>> {
    let (n, row_ptr) = (a.nrows(), a.row_ptr());
    let nnz = a.nnz();
    let mut ends = Vec::with_capacity(parts);
    let mut start = 0;
    for t in 1..parts {
        let target = nnz / parts * t + nnz % parts * t / parts;
        let row = row_ptr.partition_point(|&p| p < target).min(n);
        let end = row / align * align;
        if end > start && end < n {
            ends.push(start..end);
            start = end;
        }
    }
    ends.push(start..n);
    ends
}

/// `y` cut into the pieces `ranges` (consecutive, covering it).
pub(super) fn split_mut<'a, P: Precision, S: HostSliceMut<'a, P>>(
    y: S,
    ranges: &[Range<usize>],
) -> Vec<S> {
    let mut pieces = Vec::with_capacity(ranges.len());
    let mut rest = y;
    for range in ranges {
        let (piece, tail) = rest.split_at_mut(range.len());
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges_cover_the_rows_aligned_and_balanced() {
        let a = crate::sparse::poisson2d(100); // 10,000 rows, 5 entries a row at most
        for (parts, align) in [(1, 8), (2, 8), (7, 8), (3, 256), (64, 256)] {
            let ranges = row_ranges(&a, parts, align);
            assert_eq!(ranges.first().unwrap().start, 0);
            assert_eq!(ranges.last().unwrap().end, a.nrows());
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start, "consecutive");
                assert!(w[0].end.is_multiple_of(align), "aligned");
            }
            assert!(ranges.len() <= parts && !ranges.iter().any(|r| r.is_empty()));
            if parts <= 7 {
                let nnz = |r: &Range<usize>| a.row_ptr()[r.end] - a.row_ptr()[r.start];
                let most = ranges.iter().map(nnz).max().unwrap();
                assert!(most <= a.nnz() / parts + 5 * align, "{parts}: balanced");
            }
        }
    }

    #[test]
    fn small_work_stays_on_the_calling_thread() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        // Inside the pool so that `parallel` sees 2 threads; still the caller's thread.
        pool.install(|| {
            let caller = std::thread::current().id();
            let ids = map(vec![1, 2, 3], PARALLEL_MIN_WORK - 1, |_, _| {
                std::thread::current().id()
            });
            assert!(ids.iter().all(|&id| id == caller));
            assert_eq!(task_count(PARALLEL_MIN_WORK - 1), 1);
            assert!(task_count(64 * PARALLEL_MIN_WORK) <= 8);
            assert_eq!(threads_for(PARALLEL_MIN_WORK - 1, 16), 1);
            assert_eq!(threads_for(PARALLEL_MIN_WORK, 16), 2);
            assert_eq!(threads_for(64 * PARALLEL_MIN_WORK, 16), 16);
            assert_eq!(threads_for(64 * PARALLEL_MIN_WORK, 1), 1);
        });
    }
}
