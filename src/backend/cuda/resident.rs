//! What the solvers' device-resident steps share (`cg.rs`, `bicgstab.rs`): the scalar types
//! they keep on the device, copying `#[repr(C)]` state to and from words, and the batches of
//! iterations between two transfers, replayed as a CUDA graph once full.

use super::CudaBackend;
use super::device::{cuda_error, driver_error};
use crate::error::Result;
use crate::precision::{Dd, Precision};
use crate::solver::cg::Collected;
use std::ops::RangeInclusive;

/// Iterations enqueued at most before the records are read back; the ring holds one more
/// (the close of an iteration writes the next one's `rho`).
pub(super) const MAX_BATCH: usize = 32;
/// Below this many rows a batch grows to [`MAX_BATCH`]; above, iterations are long enough that
/// the transfer costs little and a shorter batch wastes less after the stop.
pub(super) const BATCH_ROWS: usize = 1 << 20;

pub(super) const RING: usize = MAX_BATCH + 1;

/// `T` for `P` on the device: `f64` or `Dd` (the precisions with device steps).
pub(super) trait DeviceScalar: Copy + Default {
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
pub(super) fn words_of<T: Copy>(value: &T) -> Vec<f64> {
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
pub(super) fn read_at<T: Copy + Default>(words: &[f64], at: usize) -> T {
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

/// A solver's device words: its state `S`, then a ring of [`RING`] records `R`, the first
/// `first` (iteration 1's); and the state's length in doubles.
pub(super) fn state_then_ring<S: Copy, R: Copy + Default>(
    state: &S,
    first: R,
) -> (Vec<f64>, usize) {
    let mut words = words_of(state);
    let state_words = words.len();
    words.extend(words_of(&first));
    for _ in 1..RING {
        words.extend(words_of(&R::default()));
    }
    (words, state_words)
}

/// The record `R` of iteration `k` in words read back ([`state_then_ring`]'s layout).
pub(super) fn record_at<R: Copy + Default>(words: &[f64], state_words: usize, k: usize) -> R {
    read_at(words, state_words + (k - 1) % RING * (size_of::<R>() / 8))
}

/// Whether `P` is `Q`.
pub(super) fn is<P: 'static, Q: 'static>() -> bool {
    std::any::TypeId::of::<P>() == std::any::TypeId::of::<Q>()
}

/// The batches of a device-resident solve: iterations asked for and read back, the size of the
/// next batch (growing while the solve goes on, so that a short solve wastes little after its
/// stop), and the graph of a full batch.
pub(super) struct Batches {
    pub enqueued: usize,
    pub collected: usize,
    pub batch: usize,
    pub batch_max: usize,
    graph: Option<cudarc::driver::CudaGraph>,
}

impl Batches {
    pub fn new(rows: usize) -> Self {
        Batches {
            enqueued: 0,
            collected: 0,
            batch: 1,
            batch_max: if rows <= BATCH_ROWS { MAX_BATCH } else { 4 },
            graph: None,
        }
    }

    /// After a read showing `done` iterations completed and `frozen` the iteration that stopped
    /// the solve (0: none): the iterations whose records to read now, and how they came back.
    /// The next batch is twice as long, up to the most.
    pub fn read(&mut self, done: usize, frozen: usize) -> (RangeInclusive<usize>, Collected) {
        let frozen_here = frozen != 0 && frozen <= self.enqueued;
        let last = if frozen_here {
            frozen
        } else {
            done.min(self.enqueued)
        };
        let range = self.collected + 1..=last;
        self.collected = last;
        self.batch = (self.batch * 2).min(self.batch_max);
        let collected = match frozen_here {
            true => Collected::Frozen,
            false => Collected::Running,
        };
        (range, collected)
    }
}

impl CudaBackend {
    /// Run `iterations` iterations by `step` (one iteration's launches): a full batch where
    /// `graphable` replays a CUDA graph of them, captured the first time (a graph's launch costs
    /// the host one call where the iterations cost several each, and the device starts each
    /// kernel sooner).
    pub(super) fn run_batch(
        &self,
        batches: &mut Batches,
        iterations: usize,
        graphable: bool,
        mut step: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let graphed = graphable && iterations == batches.batch_max && self.graphs_enabled();
        if !graphed {
            (0..iterations).try_for_each(|_| step())?;
            batches.enqueued += iterations;
            return Ok(());
        }
        if batches.graph.is_none() {
            let mode = cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
            self.stream()
                .begin_capture(mode)
                .map_err(driver_error("capturing a solver's iterations"))?;
            let captured = (0..iterations).try_for_each(|_| step());
            let flags = cudarc::driver::sys::CUgraphInstantiate_flags(0);
            let graph = self
                .stream()
                .end_capture(flags)
                .map_err(driver_error("capturing a solver's iterations"))?;
            captured?;
            batches.graph = graph;
        }
        let graph = batches
            .graph
            .as_ref()
            .ok_or_else(|| cuda_error("a solver's graph", "empty capture"))?;
        graph
            .launch()
            .map_err(driver_error("launching a solver's graph"))?;
        batches.enqueued += iterations;
        Ok(())
    }
}
