//! Solves over several processes (MPI ranks) or threads standing in for them: the rows of `A`
//! and of every vector in contiguous blocks, one per rank, and every reduction in the one global
//! order, so a distributed solve gives the bits of the single-process solve at any rank count.
//!
//! - [`Partition`]: the row blocks, balanced by nonzeros, starting at multiples of the dot
//!   product's chunk ([`DOT_CHUNK`](crate::backend::cpu::DOT_CHUNK) rows), so each rank's chunk
//!   partials are a run of the global list; gathered in rank order, they are summed as one
//!   process sums them.
//! - [`halo`]: which entries of `x` each rank's rows read from the others, and the local matrix
//!   whose columns address `[halo below | own rows | halo above]` in the global order.
//! - [`DistributedBackend`]: the CPU backend's kernels on each rank's rows, with the halo
//!   exchange before each SpMV and the gathers of reduction partials.
//! - [`BlockBackend`]: any backend's kernels on blocks of whole chunks, over extended vectors
//!   (the GPUs of `--devices`, NCCL moving the words; [`BlockKernels`] is what a backend adds).
//! - [`Communicator`]: what moves the words: MPI ([`mpi`], cargo feature `mpi`) or a group of
//!   threads in one process ([`ThreadGroup`], for tests and for machines without MPI).
//!
//! Values travel as the words of their layout ([`Precision::write_words`]).

mod backend;
mod block_kernels;
mod block_steps;
mod blocks;
#[cfg(feature = "cuda")]
pub mod devices;
pub mod halo;
#[cfg(feature = "mpi")]
pub mod mpi;
mod partition;
mod threads;

pub use backend::{DistIlu, DistMatrix, DistVector, DistributedBackend};
pub use block_kernels::{BlockCgVectors, BlockKernels, BlockRoute, Reduction, Runs, TwoPartials};
pub use block_steps::BlockCgState;
pub use blocks::{BlockBackend, BlockIlu, BlockMatrix, BlockVector};
pub use partition::Partition;
pub use threads::ThreadGroup;

use crate::precision::{HostSliceMut, Precision, SliceMutOf};
use crate::sparse::CsrMatrix;
use std::ops::Range;
use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The ranks of a distributed solve and how words move between them. Every rank calls the same
/// operations in the same order (one program, many ranks).
pub trait Communicator: Send + Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// How many ranks.
    fn size(&self) -> usize;
    /// Every rank's `mine`, in rank order.
    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>>;
    /// Send `sends[k].1` to rank `sends[k].0` and fill `receives[k].1` from rank
    /// `receives[k].0` (the lengths are known to both sides), running `during` while the
    /// messages are in flight.
    fn exchange(
        &self,
        sends: &[(usize, Vec<u64>)],
        receives: &mut [(usize, Vec<u64>)],
        during: &mut dyn FnMut(),
    );
    /// What to call the transport in reports (`mpi`, `threads`).
    fn kind(&self) -> &'static str;
    /// Stop every rank after an error on this one, which the others, waiting for it in a
    /// collective, would never learn of (MPI: `MPI_Abort`, as PETSc's error handler does).
    /// The in-process transport (threads of one process, in tests) does nothing here.
    fn abort_all(&self, _exit_code: i32) {}
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<dyn Communicator>>> = const { RefCell::new(None) };
    static LAYOUT: std::cell::Cell<CpuLayout> = const { std::cell::Cell::new(CpuLayout::Auto) };
}

/// How a CPU solve spread over ranks holds its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuLayout {
    /// [`DistributedBackend`]: blocks starting at tiles (256 rows), a chunk of `dot` split
    /// between ranks summed lane by lane, the interior rows computed while the halo travels.
    Rows,
    /// [`BlockBackend`] over the CPU backend (the layout of the GPUs' solves): blocks of whole
    /// chunks of `dot` (8,192 rows), every vector held extended, so no copy of `x` into an
    /// extended one before each SpMV and CG's residual update summing its norm in the same
    /// pass: two passes over a rank's vectors fewer an iteration.
    Blocks,
    /// [`CpuLayout::Blocks`] where its coarser balance costs less than those passes save,
    /// [`CpuLayout::Rows`] otherwise ([`CpuLayout::resolve`]).
    Auto,
}

/// How much more work the block layout may give its busiest rank than the row layout gives
/// its own: the passes it saves were 10-20% of a CG iteration on poisson3d:30 to :100 at 2
/// ranks (`benches/results/mpi-cpu.md`), where its blocks held up to 1.21x the nonzeros.
const BLOCKS_IMBALANCE: f64 = 1.25;

impl CpuLayout {
    /// The layout a solve of `a` over `ranks` ranks runs in ([`Rows`](Self::Rows) or
    /// [`Blocks`](Self::Blocks)): the same bits either way, but for block Jacobi, whose
    /// blocks are the ranks' (and so are reproducible for a matrix and a rank count).
    pub fn resolve(self, a: &CsrMatrix, ranks: usize) -> CpuLayout {
        if self != CpuLayout::Auto {
            return self;
        }
        let rows = Partition::balanced(a, ranks).largest_nnz(a);
        let blocks = Partition::balanced_at(a, ranks, crate::backend::cpu::DOT_CHUNK).largest_nnz(a);
        match blocks as f64 <= BLOCKS_IMBALANCE * rows as f64 {
            true => CpuLayout::Blocks,
            false => CpuLayout::Rows,
        }
    }
}

/// Solves started on this thread while the guard lives run distributed over `comm` (where it
/// has more than one rank).
pub struct CommScope {
    previous: Option<Arc<dyn Communicator>>,
    previous_layout: CpuLayout,
}

impl CommScope {
    /// On the CPU in the layout [`CpuLayout::Auto`] picks for each matrix.
    pub fn enter(comm: Arc<dyn Communicator>) -> CommScope {
        Self::enter_as(comm, CpuLayout::Auto)
    }

    /// On the CPU's [`DistributedBackend`] whatever the matrix.
    pub fn enter_rows(comm: Arc<dyn Communicator>) -> CommScope {
        Self::enter_as(comm, CpuLayout::Rows)
    }

    /// On [`BlockBackend`] over the CPU backend whatever the matrix: the layout of the GPUs'
    /// solves, which the tests check with the CPU's kernels.
    pub fn enter_blocks(comm: Arc<dyn Communicator>) -> CommScope {
        Self::enter_as(comm, CpuLayout::Blocks)
    }

    fn enter_as(comm: Arc<dyn Communicator>, layout: CpuLayout) -> CommScope {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(comm));
        let previous_layout = LAYOUT.with(|l| l.replace(layout));
        CommScope {
            previous,
            previous_layout,
        }
    }
}

impl Drop for CommScope {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = self.previous.take());
        LAYOUT.with(|l| l.set(self.previous_layout));
    }
}

/// The communicator of this thread's solves, where it has more than one rank.
pub fn current() -> Option<Arc<dyn Communicator>> {
    CURRENT.with(|c| c.borrow().clone()).filter(|c| c.size() > 1)
}

/// Whether this thread's solves are spread over ranks or over the GPUs of `--devices`: the
/// scopes that say so belong to this thread, so its solves run here, one at a time.
pub fn spread() -> bool {
    #[cfg(feature = "cuda")]
    let devices = devices::current().is_some();
    #[cfg(not(feature = "cuda"))]
    let devices = false;
    current().is_some() || devices
}

/// `mine` or'ed with every other rank's word: a flag any rank may raise, seen by all.
pub fn any_rank(comm: &dyn Communicator, mine: u64) -> u64 {
    comm.all_gather(&[mine]).iter().flatten().fold(0, |any, w| any | w)
}

/// Rank 0's `bytes` on every rank (what the others pass is ignored): how one rank's decision,
/// such as which runs of a study are pending, reaches the others.
pub fn from_root(comm: &dyn Communicator, bytes: &[u8]) -> Vec<u8> {
    let words = match comm.rank() {
        0 => encode_bytes(bytes),
        _ => Vec::new(),
    };
    let all = comm.all_gather(&words);
    let root = &all[0];
    bytes_of(&root[1..], root[0] as usize)
}

/// This rank's place among the ranks of `comm` on its host (by host name): how many come
/// before it, and how many the host runs. Which of the host's GPUs a rank takes, and whether
/// it shares it.
pub fn host_ranks(comm: &dyn Communicator) -> (usize, usize) {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let mine = encode_bytes(name.trim().as_bytes());
    let all = comm.all_gather(&mine);
    let before = all[..comm.rank()].iter().filter(|other| **other == mine).count();
    (before, all.iter().filter(|other| **other == mine).count())
}

/// `bytes` as words, their count first.
fn encode_bytes(bytes: &[u8]) -> Vec<u64> {
    std::iter::once(bytes.len() as u64).chain(words_of(bytes)).collect()
}

/// `bytes` as words (the last one padded with zeros), as a [`Communicator`] moves them.
pub fn words_of(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|chunk| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            u64::from_le_bytes(word)
        })
        .collect()
}

/// The first `len` bytes of `words` (what [`words_of`] made of them).
pub fn bytes_of(words: &[u64], len: usize) -> Vec<u8> {
    assert!(8 * words.len() >= len, "a run of {len} bytes in {} words", words.len());
    words.iter().flat_map(|w| w.to_le_bytes()).take(len).collect()
}

/// The layout this thread's distributed CPU solves ask for.
pub fn cpu_layout() -> CpuLayout {
    LAYOUT.with(|l| l.get())
}

/// `values` as words.
pub fn encode<P: Precision>(values: impl IntoIterator<Item = P>) -> Vec<u64> {
    let mut out = Vec::new();
    for v in values {
        v.write_words(&mut out);
    }
    out
}

/// The values [`encode`] wrote.
pub fn decode<P: Precision>(mut words: &[u64]) -> Vec<P> {
    let mut out = Vec::new();
    while !words.is_empty() {
        out.push(P::read_words(&mut words));
    }
    out
}

/// The words one value of `P` takes: every value of a precision takes as many (mp values their
/// limb count, MPFR ones the digits of their precision), which only a value can tell for the
/// precisions chosen at run time.
pub fn words_per_value<P: Precision>() -> usize {
    let mut out = Vec::new();
    P::zero().write_words(&mut out);
    out.len()
}

/// Room for the words of the values `receives` brings: `range.len()` values of `P` from each
/// rank.
pub fn receive_buffers<P: Precision>(receives: &[(usize, Range<usize>)]) -> Vec<(usize, Vec<u64>)> {
    let words = words_per_value::<P>();
    receives
        .iter()
        .map(|(from, range)| (*from, vec![0; range.len() * words]))
        .collect()
}

/// The values of `got` (filled as [`receive_buffers`] made them) written at their places of
/// `out`.
pub fn write_received<P: Precision>(
    out: &mut SliceMutOf<'_, P>,
    receives: &[(usize, Range<usize>)],
    got: &[(usize, Vec<u64>)],
) {
    for ((_, range), (_, words)) in receives.iter().zip(got) {
        for (k, value) in decode::<P>(words).into_iter().enumerate() {
            out.set(range.start + k, value);
        }
    }
}

/// Time spent moving words, summed over a solve (the report's communication time).
#[derive(Debug, Default)]
pub struct CommClock {
    nanos: std::sync::atomic::AtomicU64,
}

impl CommClock {
    /// Run `f`, adding its time.
    pub fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        self.add(start.elapsed());
        out
    }

    /// Add `spent`.
    pub fn add(&self, spent: Duration) {
        self.nanos
            .fetch_add(spent.as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(std::sync::atomic::Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_blocks_where_they_balance_and_rows_where_they_would_idle_a_rank() {
        let small = crate::sparse::poisson2d(60); // 3,600 rows: one chunk of `dot`
        assert_eq!(CpuLayout::Auto.resolve(&small, 2), CpuLayout::Rows);
        let large = crate::sparse::poisson2d(400); // 160,000 rows: 20 chunks
        assert_eq!(CpuLayout::Auto.resolve(&large, 2), CpuLayout::Blocks);
        assert_eq!(CpuLayout::Auto.resolve(&large, 3), CpuLayout::Blocks);
        assert_eq!(CpuLayout::Rows.resolve(&large, 2), CpuLayout::Rows);
        assert_eq!(CpuLayout::Blocks.resolve(&small, 2), CpuLayout::Blocks);
    }

    #[test]
    fn bytes_travel_as_words_and_back() {
        for len in [0usize, 1, 7, 8, 9, 12, 24, 31] {
            let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37).wrapping_add(5)).collect();
            let words = words_of(&bytes);
            assert_eq!(words.len(), len.div_ceil(8));
            assert_eq!(bytes_of(&words, len), bytes);
        }
    }
}
