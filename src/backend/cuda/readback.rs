//! Small reads from the GPU (a solver's scalars and records each batch, a reduction's result)
//! through a page-locked buffer of the backend's own. A copy to pageable memory goes through
//! the driver's staging buffer, which every stream of the process shares: with several solves
//! in flight (`batch::schedule`), each one's read of its records waited behind the others'
//! (`benches/results/gpu-study.md`).

use super::CudaBackend;
use super::device::driver_error;
use crate::error::Result;
use cudarc::driver::{CudaSlice, DevicePtr, PinnedHostSlice};

/// Reads of at most this many words go through the page-locked buffer; longer ones (whole
/// vectors, once a solve) are copied as they were, so the buffer stays small.
const MOST_WORDS: usize = 1 << 16;

/// A backend's page-locked buffer, grown to the longest read so far.
#[derive(Default)]
pub(super) struct Readback(std::sync::Mutex<Option<PinnedHostSlice<f64>>>);

impl CudaBackend {
    /// The words of `src`, copied to the host after the work before on the stream.
    pub(super) fn read_words(&self, src: &CudaSlice<f64>, what: &str) -> Result<Vec<f64>> {
        let len = src.len();
        if len > MOST_WORDS {
            return self.stream.clone_dtoh(src).map_err(driver_error(what));
        }
        let mut guard = self.readback.0.lock().unwrap_or_else(|e| e.into_inner());
        if guard.as_ref().is_none_or(|b| b.len() < len) {
            // SAFETY: only the words a copy wrote are read. Flags 0, not write-combined: the
            // host reads it.
            let buffer = unsafe { self.ctx.alloc_pinned_with_flags::<f64>(len.max(64), 0) }
                .map_err(driver_error("allocating page-locked memory for reads"))?;
            *guard = Some(buffer);
        }
        let buffer = guard.as_mut().expect("allocated above");
        // The buffer's own wait (its event, recorded by no copy here) passes at once.
        let host = buffer.as_mut_slice().map_err(driver_error(what))?;
        let (device, _record) = src.device_ptr(&self.stream);
        // SAFETY: `host[..len]` is page-locked memory of this context, `device` the `len`
        // words of `src`; the stream's wait below ends the copy before they are read. (cudarc's
        // `memcpy_dtoh` would copy the whole buffer, past `src`.)
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut host[..len],
                device,
                self.stream.cu_stream(),
            )
        }
        .map_err(driver_error(what))?;
        self.stream.synchronize().map_err(driver_error(what))?;
        Ok(host[..len].to_vec())
    }
}
