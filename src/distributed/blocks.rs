//! A rank's block of rows on any backend (the GPUs of `--devices`, or of MPI ranks with
//! `--backend cuda`): blocks start at multiples of `dot`'s chunk, and every vector of the
//! matrix's order is held *extended*, as `[padding | halo below | own rows | halo above]`,
//! with the own rows starting at a chunk.
//!
//! Held that way, the backend's own kernels do all the work unchanged: the SpMV runs on a
//! square local matrix (empty rows where the halo and padding lie) reading the halo in place;
//! the element-wise updates run over the whole extended vectors (a few rows more); a reduction's
//! partials over the own rows are a run of the single process's list (the chunks and tiles
//! line up), so gathering every rank's run in rank order and summing it with the backend's
//! final stage gives the single process's bits. What a backend adds is [`BlockKernels`]: the
//! partials before their final stage, and moving runs of words between ranks (NCCL between
//! one process's GPUs, the host and a [`Communicator`] between ranks' GPUs or on the CPU).
//!
//! [`DistributedBackend`](super::DistributedBackend) is the CPU's finer variant: blocks at
//! tiles, chunks split between ranks summed lane by lane, the interior rows computed while the
//! halo travels.

use super::block_kernels::{BlockKernels, BlockRoute, Reduction};
use super::halo::Halo;
use super::{CommClock, Communicator, Partition, decode, encode};
use crate::backend::cpu::DOT_CHUNK;
use crate::backend::{Backend, Operand, OperandOf, TiledDots, spmv_lanes};
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::precond::ilu0::{Ilu0Factors, IluShift};
use crate::solver::{BicgstabKernels, CgKernels};
use crate::sparse::{CsrMatrix, Symmetry};
use std::cell::UnsafeCell;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What a rank's error says when another rank failed.
pub(crate) const ANOTHER_RANK_FAILED: &str = "of the solve failed (its error is reported there)";

/// A rank's part of a solve over blocks of rows, its work done by the backend `B`.
pub struct BlockBackend<B: BlockKernels> {
    pub(super) inner: B,
    pub(super) link: B::Link,
    /// Moves what is not on the solve's path: the solution at the end, ILU(0)'s residuals.
    comm: Arc<dyn Communicator>,
    partition: Partition,
    halo: Halo,
    /// Rows before the own ones in an extended vector: the halo below, padded to a chunk.
    lead: usize,
    pub(super) route: BlockRoute,
    clock: CommClock,
    /// This rank has told the others it failed ([`fail_together`](Self::fail_together)).
    failed: AtomicBool,
}

/// A vector on a [`BlockBackend`]: extended (`spread`) or, shorter than the matrix's order,
/// whole on every rank.
pub struct BlockVector<V> {
    /// In a cell: an SpMV fills its input's halo rows, and the solvers pass that input by
    /// shared reference (see [`BlockVector::halo_mut`]).
    local: UnsafeCell<V>,
    pub spread: bool,
}

// SAFETY: shared references only read `local`, except `halo_mut`, whose contract excludes
// readers on other threads (a rank's solve runs on one thread).
unsafe impl<V: Sync> Sync for BlockVector<V> {}

impl<V> BlockVector<V> {
    fn new(local: V, spread: bool) -> Self {
        BlockVector {
            local: UnsafeCell::new(local),
            spread,
        }
    }

    pub fn local(&self) -> &V {
        // SAFETY: see `halo_mut`: no mutable reference outlives the halo's exchange.
        unsafe { &*self.local.get() }
    }

    pub(super) fn local_mut(&mut self) -> &mut V {
        self.local.get_mut()
    }

    /// The vector, to fill its halo rows.
    ///
    /// # Safety
    /// No other reference to the vector's contents may be live while the result is: callers
    /// exchange an SpMV's input before borrowing any vector for its kernels.
    #[allow(clippy::mut_from_ref)]
    unsafe fn halo_mut(&self) -> &mut V {
        // SAFETY: the caller's contract.
        unsafe { &mut *self.local.get() }
    }
}

/// This rank's rows of `A`, square over the extended vectors.
pub struct BlockMatrix<M> {
    pub(super) local: M,
}

/// A block solve's ILU(0) factors.
pub enum BlockIlu<I> {
    /// `--precond ilu0`: the whole matrix's on every rank, applied to the gathered `fl64(r)`:
    /// the single process's bits at any rank count, but the triangular solves are not split
    /// (see the README, "Distributed solves").
    Whole(I),
    /// `--precond bjacobi`: this rank's diagonal block's, applied to its own rows alone.
    Own(I),
}

impl<B: BlockKernels> BlockBackend<B> {
    /// Rank `comm.rank()`'s backend for solves of `a`, on `inner`, its partials and halos
    /// moved over `link`.
    pub fn new(inner: B, link: B::Link, comm: Arc<dyn Communicator>, a: &CsrMatrix) -> Self {
        let partition = Partition::balanced_at(a, comm.size(), DOT_CHUNK);
        let halo = Halo::spans(a, &partition, comm.rank());
        let lead = halo.below.next_multiple_of(DOT_CHUNK);
        let route = BlockRoute::new(&halo, &partition, lead);
        BlockBackend {
            inner,
            link,
            comm,
            partition,
            halo,
            lead,
            route,
            clock: CommClock::default(),
            failed: AtomicBool::new(false),
        }
    }

    /// `result`, told to the other ranks where it is an error: they are waiting at their next
    /// [`synchronize`](Backend::synchronize) (each solve synchronises after its setup, where a
    /// rank can fail alone: memory), which then fails on every rank instead of waiting forever.
    pub fn fail_together<T>(&self, result: Result<T>) -> Result<T> {
        if result.is_err() && !self.failed.swap(true, Ordering::SeqCst) {
            let _ = self.comm.all_gather(&[0]);
        }
        result
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// How this rank reaches the others.
    pub fn link(&self) -> &B::Link {
        &self.link
    }

    pub fn comm(&self) -> &Arc<dyn Communicator> {
        &self.comm
    }

    pub fn partition(&self) -> &Partition {
        &self.partition
    }

    /// Time spent moving words so far (partials, halos, gathers).
    pub fn communication(&self) -> Duration {
        self.clock.total() + self.inner.link_time(&self.link)
    }

    fn n(&self) -> usize {
        self.partition.n()
    }

    /// This rank's rows in an extended vector.
    fn own(&self) -> Range<usize> {
        self.lead..self.lead + self.halo.rows.len()
    }

    pub(super) fn extended_len(&self) -> usize {
        self.lead + self.halo.rows.len() + self.halo.above
    }

    /// From the halo's numbering `[below | own | above]` to the extended vector's.
    fn pad(&self) -> usize {
        self.lead - self.halo.below
    }

    fn reduce<P: Precision>(&self, kind: Reduction, mine: &B::Partials<P>) -> Result<P> {
        self.inner
            .reduce(&self.link, kind, mine, self.route.runs(kind))
    }

    /// Fill `x`'s halo from the ranks that own it: before any reference into the solve's
    /// vectors is taken for the SpMV (the contract of [`BlockVector::halo_mut`]).
    fn exchange<P: Precision>(&self, x: &BlockVector<B::Vector<P>>) -> Result<()> {
        // SAFETY: called first thing in each SpMV, with no reference into a vector live.
        let x = unsafe { x.halo_mut() };
        self.inner
            .exchange(&self.link, x, &self.route.sends, &self.route.receives)
    }

    /// Every rank's own rows of `x`, in order: the whole vector.
    fn gather<P: Precision>(&self, x: &B::Vector<P>) -> Result<Vec<P>> {
        let mine = self.inner.read_range(x, self.own())?;
        Ok(decode(&self.comm.all_gather(&encode(mine)).concat()))
    }

    /// `values` of the matrix's order as an extended vector; others whole.
    fn place<P: Precision>(&self, values: &[P]) -> Result<BlockVector<B::Vector<P>>> {
        if values.len() != self.n() {
            return Ok(BlockVector::new(self.inner.upload(values)?, false));
        }
        let mut ext = vec![P::zero(); self.extended_len()];
        ext[self.own()].clone_from_slice(&values[self.halo.rows.clone()]);
        Ok(BlockVector::new(self.inner.upload(&ext)?, true))
    }
}

impl<B: BlockKernels> Backend for BlockBackend<B> {
    type Vector<P: Precision> = BlockVector<B::Vector<P>>;
    type Matrix = BlockMatrix<B::Matrix>;
    type Ilu = BlockIlu<B::Ilu>;

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn ranks(&self) -> usize {
        self.comm.size()
    }

    fn any_rank(&self, mine: u64) -> Result<u64> {
        Ok(self.clock.time(|| super::any_rank(&*self.comm, mine)))
    }

    fn matrix(&self, a: &Arc<CsrMatrix>) -> Result<Self::Matrix> {
        assert_eq!(a.nrows(), self.n(), "the backend was made for another matrix");
        let (h, lead, n) = (&self.halo, self.lead, self.extended_len());
        let own = h.local.row_ptr();
        let nnz = h.local.nnz();
        let row_ptr: Vec<usize> = std::iter::repeat_n(0, lead)
            .chain(own.iter().copied())
            .chain(std::iter::repeat_n(nnz, h.above))
            .collect();
        let pad = self.pad() as i32;
        let cols: Vec<i32> = h.local.col_idx().iter().map(|&j| j + pad).collect();
        let local = CsrMatrix::try_from_parts(
            n,
            n,
            row_ptr,
            cols,
            h.local.values().to_vec(),
            Symmetry::General,
        )
        .expect("the halo's block with empty rows around it is valid");
        let local = self
            .inner
            .matrix_with_lanes(&Arc::new(local), spmv_lanes(a))?;
        Ok(BlockMatrix { local })
    }

    fn ilu(&self, factors: &Arc<Ilu0Factors>) -> Result<Self::Ilu> {
        if self.comm.rank() == 0 {
            log::warn!(
                "ILU(0) over {} ranks: each applies the whole factorisation to the gathered \
                 residual (exact, but not split between them; --precond bjacobi splits it)",
                self.comm.size()
            );
        }
        Ok(BlockIlu::Whole(self.inner.ilu(factors)?))
    }

    fn block_jacobi(
        &self,
        a: &CsrMatrix,
        shift: IluShift,
    ) -> Result<(BlockIlu<B::Ilu>, Arc<Ilu0Factors>)> {
        let block = a.diagonal_block(self.halo.rows.clone());
        let factors = crate::precond::block_factors(&block, shift)?;
        Ok((BlockIlu::Own(self.inner.ilu(&factors)?), factors))
    }

    fn ilu_apply<P: Precision, Z: Precision>(
        &self,
        ilu: &mut Self::Ilu,
        r: &Self::Vector<P>,
        z: &mut Self::Vector<Z>,
    ) -> Result<()> {
        let whole = match ilu {
            BlockIlu::Whole(whole) => whole,
            BlockIlu::Own(own) => {
                let rows = self.halo.rows.len();
                let mut mine = self.inner.zeros::<P>(rows)?;
                self.inner.copy_range(r.local(), self.own(), &mut mine, 0)?;
                let mut out = self.inner.zeros::<Z>(rows)?;
                self.inner.ilu_apply(own, &mine, &mut out)?;
                return self.inner.copy_range(&out, 0..rows, z.local_mut(), self.lead);
            }
        };
        let mut r64 = self.inner.zeros::<f64>(self.extended_len())?;
        self.inner.convert(r.local(), &mut r64)?;
        let r64 = self.clock.time(|| self.gather(&r64))?;
        let whole_r = self.inner.vector_from_f64::<f64>(&r64)?;
        let mut out = self.inner.zeros::<Z>(self.n())?;
        self.inner.ilu_apply(whole, &whole_r, &mut out)?;
        let rows = self.halo.rows.clone();
        self.inner.copy_range(&out, rows, z.local_mut(), self.lead)
    }

    fn zeros<P: Precision>(&self, n: usize) -> Result<Self::Vector<P>> {
        let spread = n == self.n();
        let len = if spread { self.extended_len() } else { n };
        Ok(BlockVector::new(self.inner.zeros(len)?, spread))
    }

    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<Self::Vector<P>> {
        let values: Vec<P> = values.iter().map(|&v| P::from_f64(v)).collect();
        self.place(&values)
    }

    fn upload<P: Precision>(&self, values: &[P]) -> Result<Self::Vector<P>> {
        self.place(values)
    }

    fn to_host<P: Precision>(&self, x: &Self::Vector<P>) -> Result<Vec<P>> {
        match x.spread {
            true => self.gather(x.local()),
            false => self.inner.to_host(x.local()),
        }
    }

    fn len<P: Precision>(&self, x: &Self::Vector<P>) -> usize {
        match x.spread {
            true => self.n(),
            false => self.inner.len(x.local()),
        }
    }

    fn spmv<P: Precision>(
        &self,
        a: &Self::Matrix,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.exchange(x)?;
        self.inner.spmv(&a.local, x.local(), y.local_mut())
    }

    fn spmv_wide<P: Precision>(
        &self,
        a: &Self::Matrix,
        x: &Self::Vector<f64>,
        y: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.exchange(x)?;
        self.inner.spmv_wide(&a.local, x.local(), y.local_mut())
    }

    fn residual<P: Precision>(
        &self,
        a: &Self::Matrix,
        b: &Self::Vector<f64>,
        x: &Self::Vector<P>,
        r: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.exchange(x)?;
        self.inner.residual(&a.local, b.local(), x.local(), r.local_mut())
    }

    fn dot<P: Precision>(&self, x: &Self::Vector<P>, y: &Self::Vector<P>) -> Result<P> {
        if !x.spread {
            return self.inner.dot(x.local(), y.local());
        }
        let partials = self.inner.dot_partials(x.local(), Operand::Own(y.local()))?;
        self.reduce(Reduction::Chunks, &partials)
    }

    fn dot_wide<P: Precision>(&self, x: &Self::Vector<P>, y: &Self::Vector<f64>) -> Result<P> {
        if !x.spread {
            return self.inner.dot_wide(x.local(), y.local());
        }
        let partials = self.inner.dot_partials(x.local(), Operand::Wide(y.local()))?;
        self.reduce(Reduction::Chunks, &partials)
    }

    fn dot_tiled<P: Precision>(&self, x: &Self::Vector<P>, y: &Self::Vector<P>) -> Result<P> {
        if !x.spread {
            return self.inner.dot_tiled(x.local(), y.local());
        }
        let partials = self.inner.tile_partials(x.local(), y.local())?;
        self.reduce(Reduction::Tiles, &partials)
    }

    fn spmv_dots_tiled<P: Precision>(
        &self,
        a: &Self::Matrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, Self::Vector<P>>,
        q: &mut Self::Vector<P>,
    ) -> Result<(P, P)> {
        let x = match x {
            Operand::Own(x) => {
                self.exchange(x)?;
                Operand::Own(x.local())
            }
            Operand::Wide(x) => {
                self.exchange(x)?;
                Operand::Wide(x.local())
            }
        };
        let dots = match dots {
            TiledDots::With(w) => TiledDots::With(w.local()),
            TiledDots::SelfAnd(w) => TiledDots::SelfAnd(w.local()),
        };
        let (first, second) = self
            .inner
            .spmv_tile_partials(&a.local, x, dots, q.local_mut())?;
        let first = self.reduce(Reduction::Tiles, &first)?;
        let second = match second {
            Some(second) => self.reduce(Reduction::Tiles, &second)?,
            None => P::zero(),
        };
        Ok((first, second))
    }

    fn axpy<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner.axpy(alpha, x.local(), y.local_mut())
    }

    fn axpy_wide<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<f64>,
        y: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner.axpy_wide(alpha, x.local(), y.local_mut())
    }

    fn xpay<P: Precision>(
        &self,
        x: &Self::Vector<P>,
        beta: &P,
        y: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner.xpay(x.local(), beta, y.local_mut())
    }

    fn xpay_wide<P: Precision>(
        &self,
        x: &Self::Vector<f64>,
        beta: &P,
        y: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner.xpay_wide(x.local(), beta, y.local_mut())
    }

    fn axpyz<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &Self::Vector<P>,
        z: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner.axpyz(alpha, x.local(), y.local(), z.local_mut())
    }

    fn copy<P: Precision>(&self, x: &Self::Vector<P>, y: &mut Self::Vector<P>) -> Result<()> {
        self.inner.copy(x.local(), y.local_mut())
    }

    fn convert<P: Precision, Q: Precision>(
        &self,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<Q>,
    ) -> Result<()> {
        self.inner.convert(x.local(), y.local_mut())
    }

    /// The backend's, then every rank's outcome gathered: an error on any rank is an error on
    /// all (see [`BlockBackend::fail_together`]). Once the outcomes are gathered, every rank
    /// knows of a failure: none has more to tell.
    fn synchronize(&self) -> Result<()> {
        let mine = self.inner.synchronize();
        let all = self.comm.all_gather(&[mine.is_ok() as u64]);
        let failed = all.iter().position(|ok| ok.first() != Some(&1));
        if failed.is_some() {
            self.failed.store(true, Ordering::SeqCst);
        }
        mine?;
        match failed {
            Some(rank) => Err(Error::Backend {
                backend: self.inner.name(),
                message: format!("rank {rank} {ANOTHER_RANK_FAILED}"),
            }),
            None => Ok(()),
        }
    }

    fn prepare<P: Precision>(&self) -> Result<()> {
        self.inner.prepare::<P>()
    }
}

/// The fused element-wise steps are the backend's own over the extended vectors; those that end
/// in a reduction keep their default bodies (the primitives above, so CG's step has its SpMV
/// fused with `<p, q>`), and CG's residual update has its `<r, r>` in the same pass.
impl<B: BlockKernels> CgKernels for BlockBackend<B> {
    fn axpy_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<P> {
        if !y.spread {
            return self.inner.axpy_norm(alpha, x.local(), y.local_mut());
        }
        let partials = self
            .inner
            .axpy_norm_partials(alpha, x.local(), y.local_mut())?;
        self.reduce(Reduction::Chunks, &partials)
    }
    fn cg_direction<P: Precision>(
        &self,
        alpha: &P,
        z: &Self::Vector<P>,
        beta: &P,
        p: &mut Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner
            .cg_direction(alpha, z.local(), beta, p.local_mut(), x.local_mut())
    }
    fn cg_direction_wide<P: Precision>(
        &self,
        alpha: &P,
        z: &Self::Vector<f64>,
        beta: &P,
        p: &mut Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner
            .cg_direction_wide(alpha, z.local(), beta, p.local_mut(), x.local_mut())
    }
}

impl<B: BlockKernels> BicgstabKernels for BlockBackend<B> {
    fn x_update<P: Precision>(
        &self,
        alpha: &P,
        p: &Self::Vector<P>,
        omega: &P,
        s: &Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner
            .x_update(alpha, p.local(), omega, s.local(), x.local_mut())
    }
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &Self::Vector<P>,
        beta: &P,
        omega: &P,
        v: &Self::Vector<P>,
        p: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.inner
            .bicgstab_direction(r.local(), beta, omega, v.local(), p.local_mut())
    }
}
