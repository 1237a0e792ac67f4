//! The CPU backend's kernels on a rank's rows, with the words that cross between ranks.
//!
//! A vector of the matrix's order is spread: each rank holds its rows. Any other vector (the
//! scalar block of BiCGStab's fused steps) is held whole by every rank, which all compute it
//! alike. Reductions gather the ranks' chunk (or tile) partials in rank order and sum them as
//! the single process does; every rank then holds the same scalars and makes the same
//! decisions, so the solvers run unchanged on this backend.

use super::halo::Halo;
use super::{CommClock, Communicator, Partition, decode, encode, receive_buffers, words_per_value, write_received};
use crate::backend::cpu::{
    CpuBackend, CpuIlu, CpuMatrix, CpuVector, DOT_CHUNK, DOT_THREADS, DotOperand, copy_chunk,
    dot_lanes_of, dot_partials_of, finish_lanes, sum_partials, sum_tiles,
};
use crate::backend::{Backend, Operand, OperandOf, TiledDots, spmv_lanes};
use crate::error::Result;
use crate::precision::{HostSlice, HostSliceMut, HostVector, Precision, SliceOf};
use crate::precond::ilu0::{Ilu0Factors, IluShift};
use crate::solver::{BicgstabKernels, CgKernels, HostSteps};
use crate::sparse::CsrMatrix;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A rank's part of a distributed solve.
pub struct DistributedBackend {
    comm: Arc<dyn Communicator>,
    partition: Partition,
    cpu: CpuBackend,
    clock: CommClock,
}

/// A vector on a [`DistributedBackend`]: this rank's rows of a vector of the matrix's order
/// (`spread`), or the whole of a shorter one.
#[derive(Clone, Debug)]
pub struct DistVector<P: Precision> {
    pub local: CpuVector<P>,
    pub spread: bool,
}

/// This rank's rows of `A` (columns into its extended `x`) and its halo.
pub struct DistMatrix {
    cpu: CpuMatrix,
    halo: Halo,
    /// Rows (from a tile's start) that read no halo entry: computed while the halo travels.
    interior: Range<usize>,
    /// The extended `x` of each precision, kept between SpMVs: a new one each time cost a
    /// fresh allocation (and its page faults) per product.
    scratch: Mutex<HashMap<TypeId, Box<dyn Any + Send>>>,
}

/// ILU(0) of the whole matrix, held by every rank: each application gathers `fl64(r)` and runs
/// the single process's triangular solves, so the preconditioned solve keeps its bits at every
/// rank count (the cost: the solves are not split, see the README's "Distributed solves").
pub struct DistIlu {
    cpu: CpuIlu,
    /// The whole `z` of an application, kept between them; `None` for block Jacobi's factors
    /// of this rank's diagonal block, applied to its own rows alone.
    w: Option<CpuVector<f64>>,
}

impl DistributedBackend {
    /// This rank's backend for solves of `a` (every rank holds `a` whole).
    pub fn new(comm: Arc<dyn Communicator>, a: &CsrMatrix) -> DistributedBackend {
        let partition = Partition::balanced(a, comm.size());
        DistributedBackend {
            comm,
            partition,
            cpu: CpuBackend::new(),
            clock: CommClock::default(),
        }
    }

    pub fn comm(&self) -> &Arc<dyn Communicator> {
        &self.comm
    }

    pub fn partition(&self) -> &Partition {
        &self.partition
    }

    /// Time spent exchanging and gathering words so far.
    pub fn communication(&self) -> Duration {
        self.clock.total()
    }

    fn n(&self) -> usize {
        self.partition.n()
    }

    fn rows(&self) -> std::ops::Range<usize> {
        self.partition.rows(self.comm.rank())
    }

    /// What this rank holds of `values`: its rows where they are of the matrix's order (then
    /// `true`: spread), else all of them.
    fn mine<'v, T>(&self, values: &'v [T]) -> (&'v [T], bool) {
        match values.len() == self.n() {
            true => (&values[self.rows()], true),
            false => (values, false),
        }
    }

    /// Every rank's words, concatenated in rank order.
    fn gather(&self, mine: Vec<u64>) -> Vec<u64> {
        self.clock.time(|| self.comm.all_gather(&mine)).concat()
    }

    /// `<x, y>` over this rank's rows `x` and `y`, to the bits of the single process's `dot`.
    ///
    /// The chunks of `dot` ([`DOT_CHUNK`] rows) may be split between ranks, whose blocks start
    /// at multiples of [`DOT_THREADS`]: a chunk's lane sums are then carried from the rank
    /// holding its first rows to the next ([`dot_lanes_of`]), and the rank holding its last
    /// rows finishes its partial. Each rank sends the lanes of the chunk its block ends in
    /// before it waits for those of the chunk it starts in, so the carries overlap.
    fn dot_of<P: Precision>(&self, x: SliceOf<'_, P>, y: DotOperand<'_, P>) -> P {
        let rows = self.rows();
        let (lo, hi, n) = (rows.start, rows.end, self.n());
        let mut mine: Vec<P::Acc> = Vec::new();
        if lo < hi {
            let start_of = |at: usize| at / DOT_CHUNK * DOT_CHUNK;
            let end_of = |at: usize| (start_of(at) + DOT_CHUNK).min(n);
            let local = |r: &Range<usize>| {
                let xs = x.split_at(r.start - lo).1.split_at(r.len()).0;
                (xs, y.range(r.start - lo..r.end - lo))
            };
            let zeros = || vec![P::Acc::zero(); DOT_THREADS];
            // The chunk this block starts inside, and the one it ends inside (if another).
            let head = (lo % DOT_CHUNK != 0).then(|| lo..end_of(lo).min(hi));
            let tail = (end_of(hi - 1) > hi && start_of(hi - 1) >= lo).then(|| start_of(hi - 1)..hi);
            let mut sends = Vec::new();
            if let Some(tail) = &tail {
                let mut lanes = zeros();
                let (xs, ys) = local(tail);
                dot_lanes_of::<P>(xs, ys, &mut lanes);
                sends.push((self.partition.owner(hi), encode(lanes)));
            }
            let lanes_words = DOT_THREADS * words_per_value::<P::Acc>();
            let mut receives: Vec<(usize, Vec<u64>)> = head
                .iter()
                .map(|_| (self.partition.owner(lo - 1), vec![0; lanes_words]))
                .collect();
            self.clock
                .time(|| self.comm.exchange(&sends, &mut receives, &mut || ()));
            if let Some(head) = &head {
                let mut lanes: Vec<P::Acc> = decode(&receives[0].1);
                let (xs, ys) = local(head);
                dot_lanes_of::<P>(xs, ys, &mut lanes);
                if head.end == end_of(lo) {
                    let chunk = end_of(lo) - start_of(lo);
                    mine.push(finish_lanes(&mut lanes, chunk));
                } else {
                    // The block lies inside one chunk: pass its lanes on.
                    let send = [(self.partition.owner(hi), encode(lanes))];
                    self.clock
                        .time(|| self.comm.exchange(&send, &mut [], &mut || ()));
                }
            }
            let middle = head.map_or(lo, |h| h.end)..tail.map_or(hi, |t| t.start);
            if !middle.is_empty() {
                let (xs, ys) = local(&middle);
                mine.extend(dot_partials_of::<P>(xs, ys));
            }
        }
        P::from_acc(sum_partials(&self.gather_partials(mine)))
    }

    /// Every rank's partials, in rank order: the single process's list.
    fn gather_partials<A: Precision>(&self, mine: Vec<A>) -> Vec<A> {
        decode(&self.gather(encode(mine)))
    }

    /// `f(extended x)`, the extended `x` being `[below | own | above]`: the halo its rows'
    /// SpMV reads, received from the ranks that own it, around this rank's own values.
    fn with_extended<P: Precision, T>(
        &self,
        a: &DistMatrix,
        x: &DistVector<P>,
        f: impl FnOnce(&CpuVector<P>) -> T,
    ) -> T {
        self.with_extended_overlapped(a, x, |_| (), |ext, ()| f(ext))
    }

    /// [`with_extended`](Self::with_extended) in two parts: `interior(extended x)` while the
    /// halo is in flight (only this rank's own values are in place: the rows
    /// [`DistMatrix::interior`] read nothing else), then `rest(extended x, its result)`.
    fn with_extended_overlapped<P: Precision, I, T>(
        &self,
        a: &DistMatrix,
        x: &DistVector<P>,
        interior: impl FnOnce(&CpuVector<P>) -> I,
        rest: impl FnOnce(&CpuVector<P>, I) -> T,
    ) -> T {
        assert!(x.spread, "spmv of a vector that is not of the matrix's order");
        let h = &a.halo;
        let own = x.local.slice();
        let sends: Vec<(usize, Vec<u64>)> = h
            .sends
            .iter()
            .map(|(to, rows)| (*to, encode(rows.iter().map(|&i| own.get(i).into_owned()))))
            .collect();
        let mut receives = receive_buffers::<P>(&h.receives);
        let kept = a.scratch.lock().unwrap().remove(&TypeId::of::<P>());
        let mut ext = kept
            .and_then(|b| b.downcast::<CpuVector<P>>().ok())
            .map(|b| *b)
            .unwrap_or_else(|| {
                CpuVector(<P::Vector as HostVector<P>>::filled(
                    h.extended_len(),
                    &P::zero(),
                ))
            });
        let (_, from_own) = ext.slice_mut().split_at_mut(h.below);
        copy_chunk::<P>(own, from_own.split_at_mut(h.rows.len()).0);
        let (mut inside, mut busy) = (None, Duration::ZERO);
        let started = Instant::now();
        {
            let mut interior = Some(interior);
            let mut during = || {
                let t = Instant::now();
                inside = interior.take().map(|f| f(&ext));
                busy = t.elapsed();
            };
            self.comm.exchange(&sends, &mut receives, &mut during);
        }
        // Communication is the exchange's time less the interior rows' work done meanwhile.
        self.clock.add(started.elapsed().saturating_sub(busy));
        let inside = inside.expect("the exchange runs `during`");
        write_received::<P>(&mut ext.slice_mut(), &h.receives, &receives);
        let result = rest(&ext, inside);
        a.scratch
            .lock()
            .unwrap()
            .insert(TypeId::of::<P>(), Box::new(ext));
        result
    }
}

impl Backend for DistributedBackend {
    type Vector<P: Precision> = DistVector<P>;
    type Matrix = DistMatrix;
    type Ilu = DistIlu;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn ranks(&self) -> usize {
        self.comm.size()
    }

    fn any_rank(&self, mine: u64) -> Result<u64> {
        Ok(self.clock.time(|| super::any_rank(&*self.comm, mine)))
    }

    fn matrix(&self, a: &Arc<CsrMatrix>) -> Result<DistMatrix> {
        assert_eq!(a.nrows(), self.n(), "the backend was made for another matrix");
        let halo = Halo::new(a, &self.partition, self.comm.rank());
        let cpu = CpuMatrix::with_lanes(Arc::new(halo.local.clone()), spmv_lanes(a));
        Ok(DistMatrix {
            cpu,
            interior: halo.interior(),
            halo,
            scratch: Mutex::default(),
        })
    }

    fn ilu(&self, factors: &Arc<Ilu0Factors>) -> Result<DistIlu> {
        Ok(DistIlu {
            cpu: self.cpu.ilu(factors)?,
            w: Some(self.cpu.zeros(self.n())?),
        })
    }

    fn block_jacobi(&self, a: &CsrMatrix, shift: IluShift) -> Result<(DistIlu, Arc<Ilu0Factors>)> {
        let block = a.diagonal_block(self.rows());
        let factors = crate::precond::block_factors(&block, shift)?;
        let ilu = DistIlu {
            cpu: self.cpu.ilu(&factors)?,
            w: None,
        };
        Ok((ilu, factors))
    }

    fn ilu_apply<P: Precision, Z: Precision>(
        &self,
        ilu: &mut DistIlu,
        r: &DistVector<P>,
        z: &mut DistVector<Z>,
    ) -> Result<()> {
        let Some(w) = ilu.w.as_mut() else {
            return self.cpu.ilu_apply(&mut ilu.cpu, &r.local, &mut z.local);
        };
        let mine: Vec<f64> = r.local.to_values().iter().map(P::to_f64).collect();
        let r64 = CpuVector::from(decode::<f64>(&self.gather(encode(mine))));
        ilu.cpu.apply::<f64, f64>(r64.slice(), w.slice_mut());
        let mut out = z.local.slice_mut();
        for (k, &wi) in w.0[self.rows()].iter().enumerate() {
            out.set(k, Z::from_f64(wi));
        }
        Ok(())
    }

    fn zeros<P: Precision>(&self, n: usize) -> Result<DistVector<P>> {
        let spread = n == self.n();
        let len = if spread { self.rows().len() } else { n };
        Ok(DistVector {
            local: self.cpu.zeros(len)?,
            spread,
        })
    }

    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<DistVector<P>> {
        let (mine, spread) = self.mine(values);
        Ok(DistVector {
            local: self.cpu.vector_from_f64(mine)?,
            spread,
        })
    }

    fn upload<P: Precision>(&self, values: &[P]) -> Result<DistVector<P>> {
        let (mine, spread) = self.mine(values);
        Ok(DistVector {
            local: self.cpu.upload(mine)?,
            spread,
        })
    }

    fn to_host<P: Precision>(&self, x: &DistVector<P>) -> Result<Vec<P>> {
        let mine = x.local.to_values();
        match x.spread {
            true => Ok(decode(&self.gather(encode(mine)))),
            false => Ok(mine),
        }
    }

    fn len<P: Precision>(&self, x: &DistVector<P>) -> usize {
        match x.spread {
            true => self.n(),
            false => x.local.len(),
        }
    }

    fn spmv<P: Precision>(
        &self,
        a: &DistMatrix,
        x: &DistVector<P>,
        y: &mut DistVector<P>,
    ) -> Result<()> {
        self.with_extended(a, x, |ext| self.cpu.spmv(&a.cpu, ext, &mut y.local))
    }

    fn spmv_wide<P: Precision>(
        &self,
        a: &DistMatrix,
        x: &DistVector<f64>,
        y: &mut DistVector<P>,
    ) -> Result<()> {
        self.with_extended(a, x, |ext| self.cpu.spmv_wide(&a.cpu, ext, &mut y.local))
    }

    fn residual<P: Precision>(
        &self,
        a: &DistMatrix,
        b: &DistVector<f64>,
        x: &DistVector<P>,
        r: &mut DistVector<P>,
    ) -> Result<()> {
        self.with_extended(a, x, |ext| {
            self.cpu.residual(&a.cpu, &b.local, ext, &mut r.local)
        })
    }

    fn dot<P: Precision>(&self, x: &DistVector<P>, y: &DistVector<P>) -> Result<P> {
        if !x.spread {
            return self.cpu.dot(&x.local, &y.local);
        }
        Ok(self.dot_of(x.local.slice(), DotOperand::Own(y.local.slice())))
    }

    fn dot_wide<P: Precision>(&self, x: &DistVector<P>, y: &DistVector<f64>) -> Result<P> {
        if !x.spread {
            return self.cpu.dot_wide(&x.local, &y.local);
        }
        Ok(self.dot_of(x.local.slice(), DotOperand::Wide(&y.local.0)))
    }

    /// The SpMV with its dots summed while the rows are in cache, as on one process; the tile
    /// partials of the ranks gathered together (one gather for both dots of `SelfAnd`).
    fn spmv_dots_tiled<P: Precision>(
        &self,
        a: &DistMatrix,
        x: OperandOf<'_, Self, P>,
        dots: TiledDots<'_, DistVector<P>>,
        q: &mut DistVector<P>,
    ) -> Result<(P, P)> {
        let local_dots = match dots {
            TiledDots::With(w) => TiledDots::With(&w.local),
            TiledDots::SelfAnd(w) => TiledDots::SelfAnd(&w.local),
        };
        // The interior rows while the halo travels, then the rows before and after them; the
        // tiles in row order.
        let (n, inner) = (q.local.len(), a.interior.clone());
        let q = std::cell::RefCell::new(&mut q.local);
        let part = |ext: OperandOf<'_, CpuBackend, P>, rows: Range<usize>| {
            let mut q = q.borrow_mut();
            self.cpu.spmv_dot_tiles(&a.cpu, ext, local_dots, &mut q, rows)
        };
        let whole = |ext: OperandOf<'_, CpuBackend, P>, mid: [Vec<P::Acc>; 2]| {
            let [head, tail] = [0..inner.start, inner.end..n].map(|rows| part(ext, rows));
            std::array::from_fn::<_, 2, _>(|k| [&head[k], &mid[k], &tail[k]].map(|v| v.as_slice()).concat())
        };
        let tiles = match x {
            Operand::Own(x) => self.with_extended_overlapped(
                a,
                x,
                |e| part(Operand::Own(e), inner.clone()),
                |e, mid| whole(Operand::Own(e), mid),
            ),
            Operand::Wide(x) => self.with_extended_overlapped(
                a,
                x,
                |e| part(Operand::Wide(e), inner.clone()),
                |e, mid| whole(Operand::Wide(e), mid),
            ),
        };
        // Both lists in one gather: the first's length leads each rank's words.
        let [first, second] = tiles;
        let mut words = vec![first.len() as u64];
        words.extend(encode(first));
        words.extend(encode(second));
        let all = self.clock.time(|| self.comm.all_gather(&words));
        let (mut firsts, mut seconds) = (Vec::new(), Vec::new());
        for rank in all {
            let values: Vec<P::Acc> = decode(&rank[1..]);
            let (f, s) = values.split_at(rank[0] as usize);
            firsts.extend_from_slice(f);
            seconds.extend_from_slice(s);
        }
        let first = P::from_acc(sum_tiles(&firsts));
        Ok(match dots {
            TiledDots::With(_) => (first, P::zero()),
            TiledDots::SelfAnd(_) => (first, P::from_acc(sum_tiles(&seconds))),
        })
    }

    fn dot_tiled<P: Precision>(&self, x: &DistVector<P>, y: &DistVector<P>) -> Result<P> {
        if !x.spread {
            return self.cpu.dot_tiled(&x.local, &y.local);
        }
        // Tiles of `TILE_ROWS` rows never straddle two blocks: the partials just concatenate.
        let mine = self.cpu.dot_tiles(&x.local, &y.local);
        Ok(P::from_acc(sum_tiles(&self.gather_partials(mine))))
    }

    fn axpy<P: Precision>(
        &self,
        alpha: &P,
        x: &DistVector<P>,
        y: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu.axpy(alpha, &x.local, &mut y.local)
    }

    fn axpy_wide<P: Precision>(
        &self,
        alpha: &P,
        x: &DistVector<f64>,
        y: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu.axpy_wide(alpha, &x.local, &mut y.local)
    }

    fn xpay<P: Precision>(&self, x: &DistVector<P>, beta: &P, y: &mut DistVector<P>) -> Result<()> {
        self.cpu.xpay(&x.local, beta, &mut y.local)
    }

    fn xpay_wide<P: Precision>(
        &self,
        x: &DistVector<f64>,
        beta: &P,
        y: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu.xpay_wide(&x.local, beta, &mut y.local)
    }

    fn axpyz<P: Precision>(
        &self,
        alpha: &P,
        x: &DistVector<P>,
        y: &DistVector<P>,
        z: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu.axpyz(alpha, &x.local, &y.local, &mut z.local)
    }

    fn copy<P: Precision>(&self, x: &DistVector<P>, y: &mut DistVector<P>) -> Result<()> {
        self.cpu.copy(&x.local, &mut y.local)
    }

    fn convert<P: Precision, Q: Precision>(
        &self,
        x: &DistVector<P>,
        y: &mut DistVector<Q>,
    ) -> Result<()> {
        self.cpu.convert(&x.local, &mut y.local)
    }
}

/// The fused steps: the element-wise ones are the CPU backend's on this rank's rows (for td,
/// `bicgstab_direction` rounds once where its unfused default would round twice); those that
/// end in a reduction keep their default bodies, the primitives above, to the same bits.
impl CgKernels for DistributedBackend {
    fn cg_direction<P: Precision>(
        &self,
        alpha: &P,
        z: &DistVector<P>,
        beta: &P,
        p: &mut DistVector<P>,
        x: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu
            .cg_direction(alpha, &z.local, beta, &mut p.local, &mut x.local)
    }
    fn cg_direction_wide<P: Precision>(
        &self,
        alpha: &P,
        z: &DistVector<f64>,
        beta: &P,
        p: &mut DistVector<P>,
        x: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu
            .cg_direction_wide(alpha, &z.local, beta, &mut p.local, &mut x.local)
    }
}

impl BicgstabKernels for DistributedBackend {
    fn x_update<P: Precision>(
        &self,
        alpha: &P,
        p: &DistVector<P>,
        omega: &P,
        s: &DistVector<P>,
        x: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu
            .x_update(alpha, &p.local, omega, &s.local, &mut x.local)
    }
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &DistVector<P>,
        beta: &P,
        omega: &P,
        v: &DistVector<P>,
        p: &mut DistVector<P>,
    ) -> Result<()> {
        self.cpu
            .bicgstab_direction(&r.local, beta, omega, &v.local, &mut p.local)
    }
}

impl HostSteps for DistributedBackend {}
