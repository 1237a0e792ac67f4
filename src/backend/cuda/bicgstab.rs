//! BiCGStab's steps on the GPU with the scalars kept there (`kernels/bicgstab.cu`, the
//! `bgs_` kernels and the `bicg_` kernels they share the block with): as CG's (`cg.rs`), the
//! host enqueues iterations without waiting and reads their records back many at a time. Double
//! and double-double have these steps; td and qd run the portable ones ([`HostBicgstab`]).
//!
//! An iteration without a preconditioner is nine launches: the direction update; `v = A p`
//! with `<r~, v>`'s tiles; alpha; `s` with `<s, s>`'s partials and their sum; `t = A s` with
//! `<t, t>`'s and `<t, s>`'s tiles; their sums, omega and the half-step flag; the `x` update;
//! the `r` update with `<r, r>`'s and the next rho's partials; the close (the stopping tests).
//! On small matrices it is one launch a batch instead (`kernels/bicgstab_persistent.cu`,
//! `persistent.rs` says where); with ILU(0) on small factors of few levels, one launch of one
//! block that applies the factors itself (`kernels/bicgstab_ilu_block.cu`, [`Schedule`]).

use super::persistent::{PersistentGrid, Schedule, SolverKernels, launch_ilu_block};
use super::resident::{Batches, DeviceScalar, RING, is, read_at, record_at, state_then_ring};
use super::spmv_dot::TilePartials;
use super::*;
use crate::precond::Preconditioner;
use crate::solver::bicgstab::{
    BicgstabRecord, BicgstabSteps, BicgstabVectors, HostBicgstab, rv_accepted,
};
use crate::solver::cg::{Collected, Threshold, rho_stops};
use launch::FinalStage;

/// The layout of `bicg_state<T>` in `kernels/bicgstab.cu`: the `bicg_` kernels' block first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct BicgScalars<T> {
    rv: T,
    alpha: T,
    accepted: T,
    ss: T,
    half: T,
    tt: T,
    ts: T,
    omega: T,
    omega_ok: T,
    rr: T,
    rho_next: T,
    rho: T,
    rho_prev: T,
    beta: T,
    done: i32,
    frozen: i32,
    pad: [i32; 2],
}

/// The layout of `bicg_record<T>` in `kernels/bicgstab.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct RawRecord<T> {
    rho: T,
    rv: T,
    ss: T,
    omega: T,
    rr: T,
}

/// Block slots the reductions' final stages write (`BicgScalars`' fields, in `T`s).
const SLOT_SS: usize = 3;
const SLOT_TT: usize = 5;
const SLOT_TS: usize = 6;

/// BiCGStab's state on the GPU backend: on the device (f64, dd) or on the host (td, qd).
pub enum CudaBicgstabState<P: Precision> {
    Host(HostBicgstab<CudaBackend, P>),
    Device(Box<DeviceBicgstab<P>>),
}

pub struct DeviceBicgstab<P: Precision> {
    /// `bicg_state<T>`, then the ring of `bicg_record<T>`, as a vector of `P` (both are whole
    /// `T`s): the `bicg_` kernels take its start as their block.
    words: CudaVector<P>,
    state_words: usize,
    identity: bool,
    threshold: Threshold,
    /// `<r~, v>`'s tiles; `<t, t>`'s and `<t, s>`'s.
    tiles_v: TilePartials<P>,
    tiles_t: TilePartials<P>,
    /// Chunk partials: `<s, s>`, `<r, r>`, the next rho, and with a preconditioner `<r~, v>`,
    /// `<t, t>`, `<t, s>`.
    partials: [CudaVector<P>; 6],
    blocks: usize,
    batches: Batches,
    /// Decided at the first batch, where the matrix and preconditioner are known.
    schedule: Option<Schedule>,
}

impl CudaBackend {
    fn device_bicgstab<P: Precision, T: DeviceScalar>(
        &self,
        n: usize,
        rho0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<DeviceBicgstab<P>> {
        let state = BicgScalars::<T> {
            rho: T::of(rho0),
            ..Default::default()
        };
        let first = RawRecord::<T> {
            rho: T::of(rho0),
            ..Default::default()
        };
        let (host, state_words) = state_then_ring(&state, first);
        let per_element = size_of::<T>() / 8;
        let mut words = self.alloc_vector::<P>(host.len() / per_element)?;
        self.stream
            .memcpy_htod(&host, &mut words.words)
            .map_err(driver_error("copying BiCGStab's scalars to the GPU"))?;
        let (ss_partial, blocks) = self.partials::<P>(n)?;
        let partial = || self.partials::<P>(n).map(|(v, _)| v);
        Ok(DeviceBicgstab {
            words,
            state_words,
            identity,
            threshold,
            tiles_v: self.tile_partials_for::<P>(n, false)?,
            tiles_t: self.tile_partials_for::<P>(n, true)?,
            partials: [
                ss_partial,
                partial()?,
                partial()?,
                partial()?,
                partial()?,
                partial()?,
            ],
            blocks,
            batches: Batches::new(n),
            schedule: None,
        })
    }

    fn device_bicgstab_iterate<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        v: &mut BicgstabVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &mut DeviceBicgstab<P>,
    ) -> Result<()> {
        let n = v.r.len;
        let n64 = n as i64;
        let (state, ring) = self.bicgstab_pointers(d);
        let cap = RING as i32;
        let blocks = d.blocks;
        let m = blocks as i32;
        let [ss_p, rr_p, rho_p, rv_p, tt_p, ts_p] = &d.partials;
        // p <- r + beta (p - omega v) (p <- r first)
        {
            let (f, name) = self.kernel::<P>("bgs_direction")?;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64).arg(&state).vec(&v.r).vec(&v.v).vec(&v.p);
            // SAFETY: bgs_direction_{p}(long long n, const bicg_state* s, const T* r, const T*
            // v, T* p), one thread an element.
            unsafe { args.launch(Self::elementwise(n)) }.map_err(driver_error(&name))?;
        }
        // p^ <- M^-1 p ; v <- A p^ ; <r~, v> ; alpha
        match v.p_hat.as_mut() {
            Some(ph) => {
                precond.apply_double(self, &v.p, ph)?;
                self.spmv_wide(a, ph, &mut v.v)?;
                self.launch_dot_partial_op("dot", &v.r_tilde, &v.v, rv_p, blocks)?;
                let (f, name) = self.kernel::<P>("bgs_alpha")?;
                let mut args = self.stream.launch_builder(&f);
                args.arg(&m).vec(rv_p).arg(&state).arg(&ring).arg(&cap);
                // SAFETY: bgs_alpha_{p}(int m, const T* partial, bicg_state* s, bicg_record*
                // rec, int cap), one block of DOT_THREADS.
                unsafe { args.launch(Self::reduction(1)) }.map_err(driver_error(&name))?;
            }
            None => {
                let dots = TiledDots::With(&v.r_tilde);
                self.spmv_dots_partial_into(
                    a,
                    Operand::Own(&v.p),
                    dots,
                    &mut v.v,
                    true,
                    &d.tiles_v,
                )?;
                let (f, name) = self.kernel::<P>("bgs_alpha_tiles")?;
                let tiles = d.tiles_v.tiles as i32;
                let mut args = self.stream.launch_builder(&f);
                args.arg(&tiles)
                    .vec(&d.tiles_v.first)
                    .arg(&state)
                    .arg(&ring)
                    .arg(&cap);
                // SAFETY: bgs_alpha_tiles_{p}(int m, const T* tiles, bicg_state* s,
                // bicg_record* rec, int cap), one block of TILE_FINAL_THREADS.
                unsafe { args.launch(Self::tile_final()) }.map_err(driver_error(&name))?;
            }
        }
        // s <- r - alpha v with <s, s>
        {
            let (f, name) = self.kernel::<P>("bicg_s")?;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64)
                .vec(&d.words)
                .vec(&v.v)
                .vec(&v.r)
                .vec(&v.s)
                .vec(ss_p);
            // SAFETY: bicg_s_{p}(long long n, const T* block, const T* v, const T* r, T* s, T*
            // partial), reduction layout; the block is the state's start.
            unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        }
        self.final_stage_into::<P>(ss_p, blocks, &mut d.words, SLOT_SS)?;
        // s^ <- M^-1 s ; t <- A s^ with <t, t> and <t, s> ; omega and the half-step flag
        let (den, tol) = (d.threshold.denominator, d.threshold.tol);
        match v.s_hat.as_mut() {
            Some(sh) => {
                precond.apply_double(self, &v.s, sh)?;
                self.spmv_wide(a, sh, &mut v.t)?;
                let (f, name) = self.kernel::<P>("bicg_tt_ts")?;
                let mut args = self.stream.launch_builder(&f);
                args.arg(&n64).vec(&v.t).vec(&v.s).vec(tt_p).vec(ts_p);
                // SAFETY: bicg_tt_ts_{p}(long long n, const T* t, const T* s, T* partial_tt, T*
                // partial_ts), reduction layout.
                unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
                self.launch_final(FinalStage::Dot, tt_p, blocks, &mut d.words, SLOT_TT)?;
                self.launch_final(FinalStage::Dot, ts_p, blocks, &mut d.words, SLOT_TS)?;
                let (f, name) = self.kernel::<P>("bicg_decide")?;
                let mut args = self.stream.launch_builder(&f);
                args.vec(&d.words).arg(&den).arg(&tol);
                // SAFETY: bicg_decide_{p}(T* block, double denominator, double tol), one thread.
                unsafe { args.launch(LaunchConfig::for_num_elems(1)) }
                    .map_err(driver_error(&name))?;
            }
            None => {
                let dots = TiledDots::SelfAnd(&v.s);
                self.spmv_dots_partial_into(
                    a,
                    Operand::Own(&v.s),
                    dots,
                    &mut v.t,
                    true,
                    &d.tiles_t,
                )?;
                let tiles = d.tiles_t.tiles as i32;
                let second = d.tiles_t.second.as_ref().expect("<t, s> tiles");
                let (f, name) = self.kernel::<P>("bgs_omega_tiles")?;
                let mut args = self.stream.launch_builder(&f);
                args.arg(&tiles)
                    .vec(&d.tiles_t.first)
                    .vec(second)
                    .arg(&state);
                args.arg(&den).arg(&tol);
                // SAFETY: bgs_omega_tiles_{p}(int m, const T* tt_tiles, const T* ts_tiles,
                // bicg_state* s, double denominator, double tol), one block of
                // TILE_FINAL_THREADS.
                unsafe { args.launch(Self::tile_final()) }.map_err(driver_error(&name))?;
            }
        }
        // x <- x + alpha p^ (+ omega s^)
        match (v.p_hat.as_ref(), v.s_hat.as_ref()) {
            (Some(ph), Some(sh)) => self.launch_bicg_x(&d.words, ph, sh, x)?,
            _ => self.launch_bicg_x(&d.words, &v.p, &v.s, x)?,
        }
        // r <- s - omega t with <r, r> and the next rho ; the close
        {
            let (f, name) = self.kernel::<P>("bicg_r")?;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64)
                .vec(&d.words)
                .vec(&v.t)
                .vec(&v.s)
                .vec(&v.r_tilde)
                .vec(&v.r);
            args.vec(rr_p).vec(rho_p);
            // SAFETY: bicg_r_{p}(long long n, const T* block, const T* t, const T* s, const T*
            // r_tilde, T* r, T* partial_rr, T* partial_rho), reduction layout.
            unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        }
        {
            let (f, name) = self.kernel::<P>("bgs_close")?;
            let (den, tol) = (d.threshold.denominator, d.threshold.tol);
            let mut args = self.stream.launch_builder(&f);
            args.arg(&m)
                .vec(rr_p)
                .vec(rho_p)
                .arg(&state)
                .arg(&ring)
                .arg(&cap);
            args.arg(&den).arg(&tol);
            // SAFETY: bgs_close_{p}(int m, const T* rr_partial, const T* rho_partial,
            // bicg_state* s, bicg_record* rec, int cap, double denominator, double tol), one
            // block of DOT_THREADS.
            unsafe { args.launch(Self::reduction(1)) }.map_err(driver_error(&name))?;
        }
        Ok(())
    }

    /// The device addresses of the state and of the ring.
    fn bicgstab_pointers<P: Precision>(&self, d: &DeviceBicgstab<P>) -> (u64, u64) {
        let (base, _sync) = d.words.words.device_ptr(&self.stream);
        (base, base + 8 * d.state_words as u64)
    }

    /// `iterations` iterations without a preconditioner by `bgp_run_{p}`, one launch (the
    /// state, records and vectors end as the step kernels leave them).
    fn persistent_bicgstab_iterate<P: Precision>(
        &self,
        a: &CudaMatrix,
        v: &mut BicgstabVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &DeviceBicgstab<P>,
        grid: &PersistentGrid,
        iterations: usize,
    ) -> Result<()> {
        let (state, ring) = self.bicgstab_pointers(d);
        let (f, name) = self.kernel::<P>("bgp_run")?;
        let (iterations, n, nt) = (iterations as i32, a.nrows as i32, a.lanes as i32);
        let cap = RING as i32;
        let (den, tol) = (d.threshold.denominator, d.threshold.tol);
        let [ss_p, rr_p, rho_p, ..] = &d.partials;
        let second = d.tiles_t.second.as_ref().expect("<t, s> tiles");
        let mut args = self.stream.launch_builder(&f);
        args.arg(&iterations).arg(&n).arg(&nt);
        args.arg(&a.row_ptr).arg(&a.col_idx).arg(&a.values);
        args.arg(&state).arg(&ring).arg(&cap);
        args.vec(&v.p).vec(&v.v).vec(&v.r).vec(&v.r_tilde);
        args.vec(&v.s).vec(&v.t).vec(x);
        args.vec(&d.tiles_v.first).vec(&d.tiles_t.first).vec(second);
        args.vec(ss_p).vec(rr_p).vec(rho_p);
        args.arg(&den).arg(&tol).arg(&grid.barrier);
        // bgp_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
        // const double* val, bicg_state* st, bicg_record* rec, int cap, T* p, T* v, T* r,
        // const T* r_tilde, T* s, T* t, T* x, T* tiles_rv, T* tiles_tt, T* tiles_ts, T*
        // ss_chunks, T* rr_chunks, T* rho_chunks, double denominator, double tol, unsigned
        // long long* barrier) on a CSR matrix of nt lanes a row, on the grid persistent_grid
        // sized; the partials as device_bicgstab allocated them (tiles and chunks of n).
        grid.launch_on(&mut args, &name)
    }

    /// The schedule of a solve on `a` with `precond` ([`Self::solver_schedule`]): with ILU(0)
    /// alone, the one block where it is faster than the step kernels.
    fn bicgstab_schedule<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        identity: bool,
    ) -> Result<Schedule> {
        let kernels = SolverKernels {
            persistent: "bgp_run",
            ilu_block: "bgi_run",
        };
        let alone = crate::backend::ilu_in_block_is_faster;
        self.solver_schedule::<P, M>(kernels, a, precond, identity, alone)
    }

    /// `iterations` preconditioned iterations by `bgi_run_{p}`, one launch of one block (the
    /// state, records and vectors end as the step kernels leave them).
    fn ilu_block_bicgstab_iterate<P: Precision>(
        &self,
        a: &CudaMatrix,
        ilu: &mut CudaIlu,
        v: &mut BicgstabVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &DeviceBicgstab<P>,
        iterations: usize,
    ) -> Result<()> {
        let Some(Schedule::IluBlock(f, name)) = &d.schedule else {
            unreachable!("launched where the schedule is the one block")
        };
        let (state, ring) = self.bicgstab_pointers(d);
        let (iterations, n, nt) = (iterations as i32, a.nrows as i32, a.lanes as i32);
        let cap = RING as i32;
        let (den, tol) = (d.threshold.denominator, d.threshold.tol);
        let [ss_p, rr_p, rho_p, rv_p, tt_p, ts_p] = &d.partials;
        let (Some(p_hat), Some(s_hat)) = (v.p_hat.as_mut(), v.s_hat.as_mut()) else {
            unreachable!("a preconditioned solve keeps p^ and s^")
        };
        let mut args = self.stream.launch_builder(f);
        args.arg(&iterations).arg(&n).arg(&nt);
        args.arg(&a.row_ptr).arg(&a.col_idx).arg(&a.values);
        let shared = self.push_ilu_in_block(ilu, &mut args)?;
        args.arg(&state).arg(&ring).arg(&cap);
        args.vec(&v.p).vec(&v.v).vec(&v.r).vec(&v.r_tilde);
        args.vec(&v.s).vec(&v.t).vec(x).vec(p_hat).vec(s_hat);
        args.vec(rv_p).vec(ss_p).vec(tt_p).vec(ts_p).vec(rr_p).vec(rho_p);
        args.arg(&den).arg(&tol);
        // SAFETY: bgi_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int*
        // col_idx, const double* val, the factors (push_ilu_in_block: both triangles in level
        // order of n rows, u_ii, the row map, n doubles of forward results, the sleep, the
        // time counter), bicg_state* st, bicg_record* rec, int cap, T* p, T* v, T* r, const
        // T* r_tilde, T* s, T* t, T* x, double* p_hat, double* s_hat, six chunk partials of n,
        // double denominator, double tol) in kernels/bicgstab_ilu_block.cu, on a CSR matrix of
        // nt lanes a row; one block of DOT_THREADS with the factors' 9 n bytes of dynamic
        // shared memory, which ilu_in_block checked fit beside the kernel's own.
        unsafe { launch_ilu_block(&mut args, shared, name) }
    }

    fn device_bicgstab_collect<P: Precision, T: DeviceScalar>(
        &self,
        d: &mut DeviceBicgstab<P>,
        out: &mut Vec<BicgstabRecord<P>>,
    ) -> Result<Collected> {
        let words = self.read_words(&d.words.words, "reading BiCGStab's scalars from the GPU")?;
        let state: BicgScalars<T> = read_at(&words, 0);
        let (range, collected) = d.batches.read(state.done as usize, state.frozen as usize);
        for k in range {
            let raw: RawRecord<T> = record_at(&words, d.state_words, k);
            // the fields the iteration reached, by the tests that stop it (the kernels' twins)
            let rho: P = raw.rho.to();
            let rv: Option<P> = (!rho_stops(&rho)).then(|| raw.rv.to());
            let ss_omega: Option<(P, P)> = rv
                .as_ref()
                .filter(|rv| rv_accepted(*rv))
                .map(|_| (raw.ss.to(), raw.omega.to()));
            let rr: Option<P> = ss_omega
                .as_ref()
                .filter(|(ss, omega)| !d.threshold.reached_by(ss) && omega.is_finite())
                .map(|_| raw.rr.to());
            out.push(BicgstabRecord {
                rho,
                rv,
                ss: ss_omega.as_ref().map(|(ss, _)| ss.clone()),
                omega: ss_omega.map(|(_, omega)| omega),
                rr,
            });
        }
        Ok(collected)
    }
}

impl BicgstabSteps for CudaBackend {
    type BicgstabState<P: Precision> = CudaBicgstabState<P>;

    fn bicgstab_start<P: Precision>(
        &self,
        n: usize,
        rho0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<CudaBicgstabState<P>> {
        Ok(if is::<P, f64>() {
            let d = self.device_bicgstab::<P, f64>(n, rho0, threshold, identity)?;
            CudaBicgstabState::Device(Box::new(d))
        } else if is::<P, Dd>() {
            let d = self.device_bicgstab::<P, Dd>(n, rho0, threshold, identity)?;
            CudaBicgstabState::Device(Box::new(d))
        } else {
            CudaBicgstabState::Host(HostBicgstab::start(self, rho0, threshold)?)
        })
    }

    fn bicgstab_batch<P: Precision>(&self, state: &CudaBicgstabState<P>) -> usize {
        match state {
            CudaBicgstabState::Host(_) => 1,
            CudaBicgstabState::Device(d) => d.batches.batch,
        }
    }

    fn bicgstab_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        v: &mut BicgstabVectors<Self, P>,
        x: &mut CudaVector<P>,
        state: &mut CudaBicgstabState<P>,
        iterations: usize,
    ) -> Result<()> {
        match state {
            CudaBicgstabState::Host(h) => h.run(self, a, precond, v, x, iterations),
            CudaBicgstabState::Device(d) => {
                if d.schedule.is_none() {
                    d.schedule = Some(self.bicgstab_schedule::<P, M>(a, precond, d.identity)?);
                }
                match d.schedule.as_ref() {
                    Some(Schedule::Persistent(grid)) => {
                        self.persistent_bicgstab_iterate(a, v, x, d, grid, iterations)?;
                        d.batches.enqueued += iterations;
                        return Ok(());
                    }
                    Some(Schedule::IluBlock(..)) => {
                        precond
                            .with_backend_ilu(|ilu| {
                                self.ilu_block_bicgstab_iterate(a, ilu, v, x, d, iterations)
                            })
                            .expect("the schedule was chosen for ILU(0)")?;
                        d.batches.enqueued += iterations;
                        return Ok(());
                    }
                    _ => {}
                }
                // (the batches are set aside while the steps borrow the rest of the state)
                let mut batches = std::mem::replace(&mut d.batches, Batches::new(0));
                let graphable = d.identity;
                let ran = self.run_batch(&mut batches, iterations, graphable, || {
                    self.device_bicgstab_iterate(a, precond, v, x, d)
                });
                d.batches = batches;
                ran
            }
        }
    }

    fn bicgstab_collect<P: Precision>(
        &self,
        state: &mut CudaBicgstabState<P>,
        out: &mut Vec<BicgstabRecord<P>>,
    ) -> Result<Collected> {
        match state {
            CudaBicgstabState::Host(h) => Ok(h.collect(out)),
            CudaBicgstabState::Device(d) if is::<P, f64>() => {
                self.device_bicgstab_collect::<P, f64>(d, out)
            }
            CudaBicgstabState::Device(d) => self.device_bicgstab_collect::<P, Dd>(d, out),
        }
    }
}
