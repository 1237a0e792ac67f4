//! CG's steps on the GPU with the scalars kept there (`kernels/cg.cu`): the host enqueues
//! iterations without waiting for them and reads their records back, many at a time, in one
//! transfer. Double and double-double have these steps; td and qd run the portable ones
//! ([`HostCg`]: one transfer an iteration).
//!
//! An iteration is four launches without a preconditioner: the direction update, the SpMV with
//! `<p, q>`'s tile partials, `alpha`, and the `r` update with `<r, r>`, whose last block
//! decides (the stopping test). Once an iteration's scalars stop the solve, every later kernel but the
//! SpMV and the preconditioner (which recompute the same values from vectors nothing changes
//! any more) does nothing, so the state stays at that iteration. Small matrices run a whole
//! batch as one kernel: without a preconditioner `kernels/cg_persistent.cu`, with ILU(0) beside
//! other solves the one block that applies the factors itself (`kernels/cg_ilu_block.cu`).

use super::device::alloc_words;
use super::ilu::CudaIlu;
use super::persistent::{PersistentGrid, Schedule, SolverKernels, launch_ilu_block};
use super::resident::{Batches, DeviceScalar, RING, is, read_at, record_at, state_then_ring};
use super::spmv_dot::TilePartials;
use super::*;
use crate::precond::Preconditioner;
use super::link::GpuLink;
use cudarc::driver::{CudaEvent, CudaFunction, CudaStream};
use crate::distributed::{BlockKernels, BlockRoute, Reduction};
use crate::solver::cg::{CgRecord, CgSteps, CgVectors, Collected, HostCg, Threshold, rho_stops};

/// The layout of `cg_state<T>` in `kernels/cg.cu` (`T`: `f64`, or [`Dd`] for `double2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CgScalars<T> {
    pq: T,
    alpha: T,
    accepted: T,
    rr: T,
    rho: T,
    rho_prev: T,
    beta: T,
    done: i32,
    frozen: i32,
    pending: i32,
    ticket: u32,
}

/// The layout of `cg_record<T>` in `kernels/cg.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RawRecord<T> {
    rho: T,
    pq: T,
    rr: T,
}

/// CG's state on the GPU backend: on the device (f64, dd) or on the host (td, qd).
pub enum CudaCgState<P: Precision> {
    Host(HostCg<P>),
    Device(Box<DeviceCg<P>>),
}

pub struct DeviceCg<P: Precision> {
    /// `cg_state<T>`, then the ring of `cg_record<T>`: one allocation, one transfer.
    words: CudaSlice<f64>,
    state_words: usize,
    identity: bool,
    threshold: Threshold,
    /// `<p, q>`'s tile partials, `<r, r>`'s (and `<r, z>`'s) chunk partials.
    tiles: TilePartials<P>,
    rr_partial: CudaVector<P>,
    rho_partial: CudaVector<P>,
    blocks: usize,
    pub(super) batches: Batches,
    /// Decided at the first batch, where the matrix and preconditioner are known.
    schedule: Option<Schedule>,
    /// A block solve's (`--devices`): every GPU's partials gathered before each final stage.
    whole: Option<WholeLists<P>>,
}

/// The whole lists of `<p, q>`'s tile partials and `<r, r>`'s chunk partials of a block solve,
/// every GPU's run gathered (`BlockBackend`'s reductions, kept on the device).
struct WholeLists<P> {
    tiles: CudaVector<P>,
    chunks: CudaVector<P>,
    /// The halo's stream, beside the SpMV of the interior rows, and the events between them.
    side: Arc<CudaStream>,
    ready: CudaEvent,
    arrived: CudaEvent,
}

/// Whether a block solve's halo travels beside the interior rows' SpMV
/// (`PRECSOLVE_HALO_OVERLAP=1`). Off by default: between GPUs joined by NVLink the exchange of
/// a 3-D stencil's halo is shorter than what splitting the SpMV in three launches costs
/// (`benches/results/multi-gpu.md`); a slower link may gain.
fn halo_overlap() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("PRECSOLVE_HALO_OVERLAP").is_ok_and(|v| v == "1"))
}

/// A block solve's place for the steps: its link to the other GPUs and its route.
#[derive(Clone, Copy)]
pub(super) struct Block<'a> {
    pub link: &'a GpuLink,
    pub route: &'a BlockRoute,
}

/// The vectors an iteration's steps write, borrowed from a solve's or a block's.
pub(super) struct Steps<'a, P> {
    pub r: &'a mut CudaVector<P>,
    pub p: &'a mut CudaVector<P>,
    pub q: &'a mut CudaVector<P>,
    pub z: Option<&'a mut CudaVector<f64>>,
    pub x: &'a mut CudaVector<P>,
}

impl<P> Steps<'_, P> {
    /// The same vectors for one more iteration.
    fn reborrow(&mut self) -> Steps<'_, P> {
        Steps {
            r: &mut *self.r,
            p: &mut *self.p,
            q: &mut *self.q,
            z: self.z.as_deref_mut(),
            x: &mut *self.x,
        }
    }
}

impl CudaBackend {
    /// CG's device state for `P` where it has device steps (f64 and dd; `None` else), a block
    /// solve's where `route` is given.
    pub(super) fn device_cg_of<P: Precision>(
        &self,
        n: usize,
        rr0: &P,
        threshold: Threshold,
        identity: bool,
        route: Option<&BlockRoute>,
    ) -> Result<Option<DeviceCg<P>>> {
        Ok(if is::<P, f64>() {
            Some(self.device_cg::<P, f64>(n, rr0, threshold, identity, route)?)
        } else if is::<P, Dd>() {
            Some(self.device_cg::<P, Dd>(n, rr0, threshold, identity, route)?)
        } else {
            None
        })
    }

    fn device_cg<P: Precision, T: DeviceScalar>(
        &self,
        n: usize,
        rr0: &P,
        threshold: Threshold,
        identity: bool,
        route: Option<&BlockRoute>,
    ) -> Result<DeviceCg<P>> {
        let state = CgScalars::<T> {
            rho: T::of(rr0),
            ..Default::default()
        };
        // iteration 1's rho without a preconditioner: <r0, r0>
        let first = RawRecord::<T> {
            rho: T::of(rr0),
            ..Default::default()
        };
        let (host, state_words) = state_then_ring(&state, first);
        let mut words = alloc_words(&self.stream, host.len())?;
        self.stream
            .memcpy_htod(&host, &mut words)
            .map_err(driver_error("copying CG's scalars to the GPU"))?;
        let (rr_partial, blocks) = self.partials::<P>(n)?;
        let (rho_partial, _) = self.partials::<P>(n)?;
        let whole = match route {
            Some(route) => {
                let event = || {
                    let flags = cudarc::driver::sys::CUevent_flags::CU_EVENT_DISABLE_TIMING;
                    self.ctx.new_event(Some(flags)).map_err(driver_error("an event"))
                };
                Some(WholeLists {
                    tiles: self.whole_list::<P>(route, Reduction::Tiles)?,
                    chunks: self.whole_list::<P>(route, Reduction::Chunks)?,
                    side: self.stream.fork().map_err(driver_error("a stream"))?,
                    ready: event()?,
                    arrived: event()?,
                })
            }
            None => None,
        };
        Ok(DeviceCg {
            words,
            state_words,
            identity,
            threshold,
            tiles: self.tile_partials_for::<P>(n, false)?,
            rr_partial,
            rho_partial,
            blocks,
            batches: Batches::new(n),
            // a block solve's reductions are gathered between kernels: no persistent kernel
            schedule: route.map(|_| Schedule::Steps),
            whole,
        })
    }

    fn whole_list<P: Precision>(
        &self,
        route: &BlockRoute,
        kind: Reduction,
    ) -> Result<CudaVector<P>> {
        let total = route.runs(kind).total();
        Ok(self.partials_per::<P>(total * kind.rows(), kind.rows())?.0)
    }

    /// The device addresses of the state and of the ring.
    fn cg_pointers<P: Precision>(&self, d: &DeviceCg<P>) -> (u64, u64) {
        let (base, _sync) = d.words.device_ptr(&self.stream);
        (base, base + 8 * d.state_words as u64)
    }

    /// `iterations` iterations by [`Self::device_iterate`], replayed as a graph where
    /// `graphable` and the batch is full.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn device_batch<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        mut v: Steps<'_, P>,
        d: &mut DeviceCg<P>,
        iterations: usize,
        graphable: bool,
        block: Option<Block<'_>>,
    ) -> Result<()> {
        // (the batches are set aside while the steps borrow the rest of the state)
        let mut batches = std::mem::replace(&mut d.batches, Batches::new(0));
        let ran = self.run_batch(&mut batches, iterations, graphable, || {
            self.device_iterate(a, precond, v.reborrow(), d, block)
        });
        d.batches = batches;
        ran
    }

    /// One iteration's launches; a block solve's exchange `p`'s halo before the SpMV and
    /// gather the partials of both reductions before their final stages.
    fn device_iterate<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        v: Steps<'_, P>,
        d: &DeviceCg<P>,
        block: Option<Block<'_>>,
    ) -> Result<()> {
        let Steps { r, p, q, mut z, x } = v;
        // a block solve's place and its whole lists (a state made for one has them)
        let blocked = block.zip(d.whole.as_ref());
        let n = r.len;
        let n64 = n as i64;
        let (state, ring) = self.cg_pointers(d);
        let cap = RING as i32;
        let blocks = d.blocks as i32;
        // z <- M^-1 r ; rho <- <r, z> (on the device)
        if let Some(z) = z.as_deref_mut() {
            assert!(block.is_none(), "a block solve's device steps have no preconditioner");
            precond.apply_double(self, r, z)?;
            let op = Self::wide_op::<P>("dot", "dot_wide")?;
            self.launch_dot_partial_op(op, r, z, &d.rho_partial, d.blocks)?;
            let (f, name) = self.kernel::<P>("cgs_rho")?;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&blocks)
                .vec(&d.rho_partial)
                .arg(&state)
                .arg(&ring)
                .arg(&cap);
            // SAFETY: cgs_rho_{p}(int m, const T* partial, cg_state* s, cg_record* rec, int
            // cap), one block of DOT_THREADS; the state and ring are d.words.
            unsafe { args.launch(Self::reduction(1)) }.map_err(driver_error(&name))?;
        }
        // (x <- x + alpha p ;) p <- z + beta p
        {
            let (f, name) = match z {
                Some(_) => self.kernel::<P>("cgs_direction_wide")?,
                None => self.kernel::<P>("cgs_direction")?,
            };
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64).arg(&state);
            match z.as_deref() {
                Some(z) => args.vec(z),
                None => args.vec(&*r),
            };
            args.vec(&*p).vec(&*x);
            // SAFETY: cgs_direction[_wide]_{p}(long long n, const cg_state* s, const T* z (or
            // double*), T* p, T* x), one thread an element.
            unsafe { args.launch(Self::elementwise(n)) }.map_err(driver_error(&name))?;
        }
        // q <- A p with <p, q>'s tile partials ; alpha
        let spread = match blocked {
            Some((b, whole)) => self.block_spmv(b, whole, a, p, q, &d.tiles)?,
            None => false,
        };
        if !spread {
            let p = &*p;
            self.spmv_dots_partial_into(a, Operand::Own(p), TiledDots::With(p), q, true, &d.tiles)?;
        }
        let (tiles, m) = match blocked {
            Some((b, whole)) => {
                let runs = b.route.runs(Reduction::Tiles);
                self.gather_runs(b.link, &d.tiles.first, d.tiles.tiles, runs, &whole.tiles)?;
                (&whole.tiles, runs.total())
            }
            None => (&d.tiles.first, d.tiles.tiles),
        };
        {
            let (f, name) = self.kernel::<P>("cgs_alpha")?;
            let m = m as i32;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&m)
                .vec(tiles)
                .arg(&state)
                .arg(&ring)
                .arg(&cap);
            // SAFETY: cgs_alpha_{p}(int m, const T* tiles, cg_state* s, cg_record* rec, int
            // cap), one block of TILE_FINAL_THREADS.
            unsafe { args.launch(Self::tile_final()) }.map_err(driver_error(&name))?;
        }
        // r <- r - alpha q with <r, r>'s partials; the last block: <r, r>, the stopping test,
        // the next rho without a preconditioner
        if let Some((b, whole)) = blocked {
            return self.block_update(b, whole, q, r, d);
        }
        {
            let (f, name) = self.kernel::<P>("cgs_update")?;
            let identity = i32::from(d.identity);
            let (den, tol) = (d.threshold.denominator, d.threshold.tol);
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64).arg(&state).arg(&ring).arg(&cap);
            args.vec(&*q).vec(&*r).vec(&d.rr_partial);
            args.arg(&den).arg(&tol).arg(&identity);
            // SAFETY: cgs_update_{p}(long long n, cg_state* s, cg_record* rec, int cap, const
            // T* q, T* r, T* partial, double denominator, double tol, int identity), the
            // reduction layout (one partial a block).
            unsafe { args.launch(Self::reduction(d.blocks)) }.map_err(driver_error(&name))?;
        }
        Ok(())
    }

    /// A block solve's `q <- A p` with `<p, q>`'s tile partials, `p`'s halo exchanged: where
    /// [`halo_overlap`] and the fused kernel can run on a range of tiles, on a side stream
    /// while the interior rows (which read none of it) are computed, then the rows around
    /// them; else the exchange, then nothing (`false`: the caller's SpMV of every row).
    fn block_spmv<P: Precision>(
        &self,
        b: Block<'_>,
        whole: &WholeLists<P>,
        a: &CudaMatrix,
        p: &mut CudaVector<P>,
        q: &mut CudaVector<P>,
        tiles: &TilePartials<P>,
    ) -> Result<bool> {
        let (own, interior) = (b.route.own_tiles.clone(), b.route.interior.clone());
        if interior.is_empty() || Self::ranged_spmv_dot::<P>(a).is_none() || !halo_overlap() {
            self.exchange(b.link, p, &b.route.sends, &b.route.receives)?;
            return Ok(false);
        }
        let wait = || driver_error("ordering the halo's stream");
        whole.ready.record(&self.stream).map_err(wait())?;
        whole.side.wait(&whole.ready).map_err(wait())?;
        self.exchange_on(b.link, p, &b.route.sends, &b.route.receives, &whole.side)?;
        whole.arrived.record(&whole.side).map_err(wait())?;
        self.spmv_dot_tiles(a, p, q, tiles, interior.clone())?;
        self.stream.wait(&whole.arrived).map_err(wait())?;
        self.spmv_dot_tiles(a, p, q, tiles, own.start..interior.start)?;
        self.spmv_dot_tiles(a, p, q, tiles, interior.end..own.end)?;
        Ok(true)
    }

    /// A block solve's `r <- r - alpha q`: its `<r, r>` partials, every GPU's gathered, then
    /// the close (`cgs_update`'s work in three steps: the last block cannot see the other GPUs).
    fn block_update<P: Precision>(
        &self,
        b: Block<'_>,
        whole: &WholeLists<P>,
        q: &CudaVector<P>,
        r: &mut CudaVector<P>,
        d: &DeviceCg<P>,
    ) -> Result<()> {
        let (state, ring) = self.cg_pointers(d);
        let n64 = r.len as i64;
        {
            let (f, name) = self.kernel::<P>("cgs_update_partials")?;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64).arg(&state).vec(q).vec(&*r).vec(&d.rr_partial);
            // SAFETY: cgs_update_partials_{p}(long long n, const cg_state* s, const T* q, T* r,
            // T* partial), the reduction layout (one partial a block).
            unsafe { args.launch(Self::reduction(d.blocks)) }.map_err(driver_error(&name))?;
        }
        let runs = b.route.runs(Reduction::Chunks);
        self.gather_runs(b.link, &d.rr_partial, d.blocks, runs, &whole.chunks)?;
        let (f, name) = self.kernel::<P>("cgs_close")?;
        let (m, cap, identity) = (runs.total() as i32, RING as i32, 1i32);
        let (den, tol) = (d.threshold.denominator, d.threshold.tol);
        let mut args = self.stream.launch_builder(&f);
        args.arg(&m).vec(&whole.chunks).arg(&state).arg(&ring).arg(&cap);
        args.arg(&den).arg(&tol).arg(&identity);
        // SAFETY: cgs_close_{p}(int m, const T* partial, cg_state* s, cg_record* rec, int cap,
        // double denominator, double tol, int identity), one block of DOT_THREADS.
        unsafe { args.launch(Self::reduction(1)) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// The schedule of a solve on `a` with `precond` ([`Self::solver_schedule`]): with ILU(0),
    /// the one block that applies the factors itself beside other solves (and everywhere, for
    /// the tests), never alone (the one block's CG iteration has not been measured against
    /// the step kernels alone).
    fn cg_schedule<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        identity: bool,
    ) -> Result<Schedule> {
        let kernels = SolverKernels {
            persistent: "cgp_run",
            ilu_block: "cgi_run",
        };
        self.solver_schedule::<P, M>(kernels, a, precond, identity, |_, _, _| false)
    }

    /// `iterations` preconditioned iterations by `cgi_run_{p}`, one launch of one block (the
    /// state, records and vectors end as the step kernels leave them).
    #[allow(clippy::too_many_arguments)]
    fn ilu_block_cg_iterate<P: Precision>(
        &self,
        a: &CudaMatrix,
        ilu: &mut CudaIlu,
        v: &mut CgVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &DeviceCg<P>,
        (f, name): (&CudaFunction, &String),
        iterations: usize,
    ) -> Result<()> {
        let (state, ring) = self.cg_pointers(d);
        let (iterations, n, nt) = (iterations as i32, a.nrows as i32, a.lanes as i32);
        let cap = RING as i32;
        let (den, tol) = (d.threshold.denominator, d.threshold.tol);
        let Some(z) = v.z.as_ref() else {
            unreachable!("a preconditioned solve keeps z")
        };
        let mut args = self.stream.launch_builder(f);
        args.arg(&iterations).arg(&n).arg(&nt);
        args.arg(&a.row_ptr).arg(&a.col_idx).arg(&a.values);
        let shared = self.push_ilu_in_block(ilu, &mut args)?;
        args.arg(&state).arg(&ring).arg(&cap);
        args.vec(&v.p).vec(&v.q).vec(&v.r).vec(x).vec(z);
        args.vec(&d.tiles.first).vec(&d.rr_partial).vec(&d.rho_partial);
        args.arg(&den).arg(&tol);
        // SAFETY: cgi_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int*
        // col_idx, const double* val, the factors (push_ilu_in_block: both triangles in level
        // order of n rows, u_ii, the row map, n doubles of forward results, the sleep, the time
        // counter), cg_state* s, cg_record* rec, int cap, T* p, T* q, T* r, T* x, double* z, T*
        // tiles, T* rr_chunks, T* rho_chunks, double denominator, double tol) in
        // kernels/cg_ilu_block.cu, on a CSR matrix of nt lanes a row; one block of DOT_THREADS
        // with the factors' 9 n bytes of dynamic shared memory, which ilu_in_block checked fit
        // beside the kernel's own; the partials as device_cg allocated them.
        unsafe { launch_ilu_block(&mut args, shared, name) }
    }

    /// `iterations` iterations without a preconditioner by `cgp_run_{p}`, one launch (the
    /// state and vectors end as the step kernels leave them: the same bits, the same records).
    fn persistent_iterate<P: Precision>(
        &self,
        a: &CudaMatrix,
        v: &mut CgVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &DeviceCg<P>,
        grid: &PersistentGrid,
        iterations: usize,
    ) -> Result<()> {
        let (state, ring) = self.cg_pointers(d);
        let (f, name) = self.kernel::<P>("cgp_run")?;
        let (iterations, n, nt) = (iterations as i32, a.nrows as i32, a.lanes as i32);
        let cap = RING as i32;
        let (den, tol) = (d.threshold.denominator, d.threshold.tol);
        let mut args = self.stream.launch_builder(&f);
        args.arg(&iterations).arg(&n).arg(&nt);
        args.arg(&a.row_ptr).arg(&a.col_idx).arg(&a.values);
        args.arg(&state).arg(&ring).arg(&cap);
        args.vec(&v.p).vec(&v.q).vec(&v.r).vec(x);
        args.vec(&d.tiles.first).vec(&d.rr_partial);
        args.arg(&den).arg(&tol).arg(&grid.barrier);
        // cgp_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
        // const double* val, cg_state* s, cg_record* rec, int cap, T* p, T* q, T* r, T* x, T*
        // tiles, T* chunks, double denominator, double tol, unsigned* barrier) on a CSR matrix
        // of nt lanes a row, on the grid persistent_grid sized.
        grid.launch_on(&mut args, &name)
    }

    /// The records of a device CG's iterations run since the last read (one transfer).
    pub(super) fn device_records<P: Precision>(
        &self,
        d: &mut DeviceCg<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        match is::<P, f64>() {
            true => self.device_collect::<P, f64>(d, out),
            false => self.device_collect::<P, Dd>(d, out),
        }
    }

    fn device_collect<P: Precision, T: DeviceScalar>(
        &self,
        d: &mut DeviceCg<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        let words = self.read_words(&d.words, "reading CG's scalars from the GPU")?;
        let state: CgScalars<T> = read_at(&words, 0);
        let (range, collected) = d.batches.read(state.done as usize, state.frozen as usize);
        for k in range {
            let raw: RawRecord<T> = record_at(&words, d.state_words, k);
            let rho: P = raw.rho.to();
            let complete = k <= state.done as usize;
            out.push(CgRecord {
                pq: (complete || !rho_stops(&rho)).then(|| raw.pq.to()),
                rr: complete.then(|| raw.rr.to()),
                rho,
            });
        }
        Ok(collected)
    }

    pub(super) fn device_settle<P: Precision>(
        &self,
        d: &mut DeviceCg<P>,
        p: &CudaVector<P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        let (state, _) = self.cg_pointers(d);
        let n64 = p.len as i64;
        let (f, name) = self.kernel::<P>("cgs_settle")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n64).arg(&state).vec(p).vec(x);
        // SAFETY: cgs_settle_{p}(long long n, const cg_state* s, const T* p, T* x).
        unsafe { args.launch(Self::elementwise(p.len)) }.map_err(driver_error(&name))?;
        let (f, name) = self.kernel::<P>("cgs_settled")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&state);
        // SAFETY: cgs_settled_{p}(cg_state* s), one thread.
        unsafe { args.launch(LaunchConfig::for_num_elems(1)) }.map_err(driver_error(&name))?;
        Ok(())
    }
}

impl CgSteps for CudaBackend {
    type CgState<P: Precision> = CudaCgState<P>;

    fn cg_start<P: Precision>(
        &self,
        n: usize,
        rr0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<CudaCgState<P>> {
        Ok(match self.device_cg_of(n, rr0, threshold, identity, None)? {
            Some(d) => CudaCgState::Device(Box::new(d)),
            None => CudaCgState::Host(HostCg::start(rr0, threshold)),
        })
    }

    fn cg_batch<P: Precision>(&self, state: &CudaCgState<P>) -> usize {
        match state {
            CudaCgState::Host(_) => 1,
            CudaCgState::Device(d) => d.batches.batch,
        }
    }

    fn cg_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        v: &mut CgVectors<Self, P>,
        x: &mut CudaVector<P>,
        state: &mut CudaCgState<P>,
        iterations: usize,
    ) -> Result<()> {
        match state {
            CudaCgState::Host(h) => h.run(self, a, precond, v, x, iterations),
            CudaCgState::Device(d) => {
                if d.schedule.is_none() {
                    d.schedule = Some(self.cg_schedule::<P, M>(a, precond, d.identity)?);
                }
                match d.schedule.as_ref() {
                    Some(Schedule::Persistent(grid)) => {
                        self.persistent_iterate(a, v, x, d, grid, iterations)?;
                        d.batches.enqueued += iterations;
                        return Ok(());
                    }
                    Some(Schedule::IluBlock(f, name)) => {
                        precond
                            .with_backend_ilu(|ilu| {
                                self.ilu_block_cg_iterate(a, ilu, v, x, d, (f, name), iterations)
                            })
                            .expect("the schedule was chosen for ILU(0)")?;
                        d.batches.enqueued += iterations;
                        return Ok(());
                    }
                    _ => {}
                }
                let steps = Steps {
                    r: &mut v.r,
                    p: &mut v.p,
                    q: &mut v.q,
                    z: v.z.as_mut(),
                    x,
                };
                let graphable = d.identity;
                self.device_batch(a, precond, steps, d, iterations, graphable, None)
            }
        }
    }

    fn cg_collect<P: Precision>(
        &self,
        state: &mut CudaCgState<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        match state {
            CudaCgState::Host(h) => Ok(h.collect(out)),
            CudaCgState::Device(d) => self.device_records(d, out),
        }
    }

    fn cg_settle<P: Precision>(
        &self,
        state: &mut CudaCgState<P>,
        v: &CgVectors<Self, P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        match state {
            CudaCgState::Host(h) => h.settle(self, &v.p, x),
            CudaCgState::Device(d) => self.device_settle(d, &v.p, x),
        }
    }
}
