//! CG's steps on the GPU with the scalars kept there (`kernels/cg.cu`): the host enqueues
//! iterations without waiting for them and reads their records back, many at a time, in one
//! transfer. Double and double-double have these steps; td and qd run the portable ones
//! ([`HostCg`]: one transfer an iteration).
//!
//! An iteration is four launches without a preconditioner: the direction update, the SpMV with
//! `<p, q>`'s tile partials, `alpha`, and the `r` update with `<r, r>`, whose last block
//! decides (the stopping test). Once an iteration's scalars stop the solve, every later kernel but the
//! SpMV and the preconditioner (which recompute the same values from vectors nothing changes
//! any more) does nothing, so the state stays at that iteration.

use super::device::{alloc_words, cuda_error};
use super::spmv_dot::TilePartials;
use super::*;
use crate::precond::Preconditioner;
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

/// Iterations enqueued at most before the records are read back; the ring holds one more
/// (the close of an iteration writes the next one's `rho`).
const MAX_BATCH: usize = 32;
/// Below this many rows a batch grows to [`MAX_BATCH`]; above, iterations are long enough that
/// the transfer costs little and a shorter batch wastes less after the stop.
const BATCH_ROWS: usize = 1 << 20;

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
    enqueued: usize,
    collected: usize,
    batch: usize,
    batch_max: usize,
    /// `batch_max` iterations captured (without a preconditioner, once the batch is full).
    graph: Option<cudarc::driver::CudaGraph>,
}

const RING: usize = MAX_BATCH + 1;

/// `T` for `P` on the device: `f64` or `Dd` (the precisions with device steps).
trait DeviceScalar: Copy + Default {
    fn of<P: Precision>(v: &P) -> Self;
    fn to<P: Precision>(self) -> P;
}

impl DeviceScalar for f64 {
    fn of<P: Precision>(v: &P) -> Self {
        v.to_f64()
    }
    fn to<P: Precision>(self) -> P {
        P::from_f64(self)
    }
}

impl DeviceScalar for Dd {
    fn of<P: Precision>(v: &P) -> Self {
        v.to_dd()
    }
    fn to<P: Precision>(self) -> P {
        P::from_dd(self)
    }
}

/// `value` as doubles (a `#[repr(C)]` struct of doubles and ints, a multiple of 8 bytes).
fn words_of<T: Copy>(value: &T) -> Vec<f64> {
    assert!(size_of::<T>().is_multiple_of(8));
    let mut words = vec![0.0; size_of::<T>() / 8];
    // SAFETY: `words` holds exactly `size_of::<T>()` bytes; any bits are a valid f64.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (value as *const T).cast::<u8>(),
            words.as_mut_ptr().cast::<u8>(),
            size_of::<T>(),
        )
    };
    words
}

/// The `T` stored at `words[at..]` (read back from the device).
fn read_at<T: Copy + Default>(words: &[f64], at: usize) -> T {
    assert!((at * 8 + size_of::<T>()).div_ceil(8) <= words.len());
    let mut value = T::default();
    // SAFETY: the bytes lie inside `words` (checked above); `T` is plain doubles and ints.
    unsafe {
        std::ptr::copy_nonoverlapping(
            words.as_ptr().add(at).cast::<u8>(),
            (&mut value as *mut T).cast::<u8>(),
            size_of::<T>(),
        )
    };
    value
}

impl CudaBackend {
    fn device_cg<P: Precision, T: DeviceScalar>(
        &self,
        n: usize,
        rr0: &P,
        threshold: Threshold,
        identity: bool,
    ) -> Result<DeviceCg<P>> {
        let state = CgScalars::<T> {
            rho: T::of(rr0),
            ..Default::default()
        };
        let mut host = words_of(&state);
        let state_words = host.len();
        let mut ring = vec![RawRecord::<T>::default(); RING];
        // iteration 1's rho without a preconditioner: <r0, r0>
        ring[0].rho = T::of(rr0);
        for r in &ring {
            host.extend(words_of(r));
        }
        let mut words = alloc_words(&self.stream, host.len())?;
        self.stream
            .memcpy_htod(&host, &mut words)
            .map_err(driver_error("copying CG's scalars to the GPU"))?;
        let (tiles_first, tiles) = self.tile_partials::<P>(n)?;
        let (rr_partial, blocks) = self.partials::<P>(n)?;
        let (rho_partial, _) = self.partials::<P>(n)?;
        let batch_max = if n <= BATCH_ROWS { MAX_BATCH } else { 4 };
        Ok(DeviceCg {
            words,
            state_words,
            identity,
            threshold,
            tiles: TilePartials {
                first: tiles_first,
                second: None,
                tiles,
            },
            rr_partial,
            rho_partial,
            blocks,
            enqueued: 0,
            collected: 0,
            batch: 1,
            batch_max,
            graph: None,
        })
    }

    /// The device addresses of the state and of the ring.
    fn cg_pointers<P: Precision>(&self, d: &DeviceCg<P>) -> (u64, u64) {
        let (base, _sync) = d.words.device_ptr(&self.stream);
        (base, base + 8 * d.state_words as u64)
    }

    fn device_iterate<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        v: &mut CgVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &mut DeviceCg<P>,
    ) -> Result<()> {
        let n = v.r.len;
        let n64 = n as i64;
        let (state, ring) = self.cg_pointers(d);
        let cap = RING as i32;
        let blocks = d.blocks as i32;
        // z <- M^-1 r ; rho <- <r, z> (on the device)
        if let Some(z) = v.z.as_mut() {
            precond.apply_double(self, &v.r, z)?;
            let op = Self::wide_op::<P>("dot", "dot_wide")?;
            self.launch_dot_partial_op(op, &v.r, z, &d.rho_partial, d.blocks)?;
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
            let (f, name) = match v.z.as_ref() {
                Some(_) => self.kernel::<P>("cgs_direction_wide")?,
                None => self.kernel::<P>("cgs_direction")?,
            };
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64).arg(&state);
            match v.z.as_ref() {
                Some(z) => args.vec(z),
                None => args.vec(&v.r),
            };
            args.vec(&v.p).vec(x);
            // SAFETY: cgs_direction[_wide]_{p}(long long n, const cg_state* s, const T* z (or
            // double*), T* p, T* x), one thread an element.
            unsafe { args.launch(Self::elementwise(n)) }.map_err(driver_error(&name))?;
        }
        // q <- A p with <p, q>'s tile partials ; alpha
        self.spmv_dots_partial_into(
            a,
            Operand::Own(&v.p),
            TiledDots::With(&v.p),
            &mut v.q,
            true,
            &d.tiles,
        )?;
        {
            let (f, name) = self.kernel::<P>("cgs_alpha")?;
            let m = d.tiles.tiles as i32;
            let mut args = self.stream.launch_builder(&f);
            args.arg(&m)
                .vec(&d.tiles.first)
                .arg(&state)
                .arg(&ring)
                .arg(&cap);
            // SAFETY: cgs_alpha_{p}(int m, const T* tiles, cg_state* s, cg_record* rec, int
            // cap), one block of TILE_FINAL_THREADS.
            unsafe { args.launch(Self::tile_final()) }.map_err(driver_error(&name))?;
        }
        // r <- r - alpha q with <r, r>'s partials; the last block: <r, r>, the stopping test,
        // the next rho without a preconditioner
        {
            let (f, name) = self.kernel::<P>("cgs_update")?;
            let identity = i32::from(d.identity);
            let (den, tol) = (d.threshold.denominator, d.threshold.tol);
            let mut args = self.stream.launch_builder(&f);
            args.arg(&n64).arg(&state).arg(&ring).arg(&cap);
            args.vec(&v.q).vec(&v.r).vec(&d.rr_partial);
            args.arg(&den).arg(&tol).arg(&identity);
            // SAFETY: cgs_update_{p}(long long n, cg_state* s, cg_record* rec, int cap, const
            // T* q, T* r, T* partial, double denominator, double tol, int identity), the
            // reduction layout (one partial a block).
            unsafe { args.launch(Self::reduction(d.blocks)) }.map_err(driver_error(&name))?;
        }
        d.enqueued += 1;
        Ok(())
    }

    /// `iterations` iterations: a full batch without a preconditioner replays a CUDA graph of
    /// them, captured the first time (a graph's launch costs the host one call where the
    /// iterations cost four each, and the device starts each kernel sooner).
    fn device_run<P: Precision, M: Preconditioner<Self>>(
        &self,
        a: &CudaMatrix,
        precond: &M,
        v: &mut CgVectors<Self, P>,
        x: &mut CudaVector<P>,
        d: &mut DeviceCg<P>,
        iterations: usize,
    ) -> Result<()> {
        let graphed = d.identity && iterations == d.batch_max && self.graphs_enabled();
        if !graphed {
            return (0..iterations).try_for_each(|_| self.device_iterate(a, precond, v, x, d));
        }
        if d.graph.is_none() {
            let mode = cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
            self.stream
                .begin_capture(mode)
                .map_err(driver_error("capturing CG's iterations"))?;
            let enqueued = d.enqueued;
            let captured =
                (0..iterations).try_for_each(|_| self.device_iterate(a, precond, v, x, d));
            d.enqueued = enqueued;
            let flags = cudarc::driver::sys::CUgraphInstantiate_flags(0);
            let graph = self
                .stream
                .end_capture(flags)
                .map_err(driver_error("capturing CG's iterations"))?;
            captured?;
            d.graph = graph;
        }
        let graph = d
            .graph
            .as_ref()
            .ok_or_else(|| cuda_error("CG's graph", "empty capture"))?;
        graph
            .launch()
            .map_err(driver_error("launching CG's graph"))?;
        d.enqueued += iterations;
        Ok(())
    }

    fn device_collect<P: Precision, T: DeviceScalar>(
        &self,
        d: &mut DeviceCg<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        let words = self
            .stream
            .clone_dtoh(&d.words)
            .map_err(driver_error("reading CG's scalars from the GPU"))?;
        let state: CgScalars<T> = read_at(&words, 0);
        let (done, frozen) = (state.done as usize, state.frozen as usize);
        let frozen_here = frozen != 0 && frozen <= d.enqueued;
        let last = if frozen_here {
            frozen
        } else {
            done.min(d.enqueued)
        };
        let record_words = size_of::<RawRecord<T>>() / 8;
        for k in d.collected + 1..=last {
            let raw: RawRecord<T> = read_at(&words, d.state_words + (k - 1) % RING * record_words);
            let rho: P = raw.rho.to();
            let complete = k <= done;
            out.push(CgRecord {
                pq: (complete || !rho_stops(&rho)).then(|| raw.pq.to()),
                rr: complete.then(|| raw.rr.to()),
                rho,
            });
        }
        d.collected = last;
        // a batch grows while the solve goes on, so that a short solve wastes little after
        // its stop
        d.batch = (d.batch * 2).min(d.batch_max);
        Ok(match frozen_here {
            true => Collected::Frozen,
            false => Collected::Running,
        })
    }

    fn device_settle<P: Precision>(
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

fn is<P: 'static, Q: 'static>() -> bool {
    std::any::TypeId::of::<P>() == std::any::TypeId::of::<Q>()
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
        Ok(if is::<P, f64>() {
            CudaCgState::Device(Box::new(
                self.device_cg::<P, f64>(n, rr0, threshold, identity)?,
            ))
        } else if is::<P, Dd>() {
            CudaCgState::Device(Box::new(
                self.device_cg::<P, Dd>(n, rr0, threshold, identity)?,
            ))
        } else {
            CudaCgState::Host(HostCg::start(rr0, threshold))
        })
    }

    fn cg_batch<P: Precision>(&self, state: &CudaCgState<P>) -> usize {
        match state {
            CudaCgState::Host(_) => 1,
            CudaCgState::Device(d) => d.batch,
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
            CudaCgState::Device(d) => self.device_run(a, precond, v, x, d, iterations),
        }
    }

    fn cg_collect<P: Precision>(
        &self,
        state: &mut CudaCgState<P>,
        out: &mut Vec<CgRecord<P>>,
    ) -> Result<Collected> {
        match state {
            CudaCgState::Host(h) => Ok(h.collect(out)),
            CudaCgState::Device(d) if is::<P, f64>() => self.device_collect::<P, f64>(d, out),
            CudaCgState::Device(d) => self.device_collect::<P, Dd>(d, out),
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
