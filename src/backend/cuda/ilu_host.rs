//! ILU(0) applied on the host for the CUDA backend: where a small factor's chain of levels
//! costs the kernels more than a round trip (`backend::ilu_application_seconds`), and for mp.
//!
//! One application: `r`'s words copied into page-locked memory and one wait for them, `fl64(r)`
//! and the CPU backend's solve in double, and the result's words copied back on the stream
//! without a wait. Pageable copies each waited for the stream and went through the driver's
//! staging buffer, which the solves in flight beside each other share; with 8 in flight these
//! buffers took a fifth of an ILU(0) iteration off (`benches/results/gpu-study.md`). f64 and dd
//! are narrowed and widened here, as the CPU's `to_f64` and `from_f64` do; td, qd and mp go
//! through the device's conversion to double first (a launch each way).

use super::device::driver_error;
use super::{CudaBackend, CudaVector};
use crate::backend::Backend;
use crate::backend::cpu::CpuIlu;
use crate::error::Result;
use crate::precision::{Dd, Precision};
use cudarc::driver::PinnedHostSlice;

/// The host's solve and what an application moves through.
pub struct HostIlu {
    pub(super) ilu: CpuIlu,
    staging: Option<Staging>,
}

impl HostIlu {
    pub fn new(ilu: CpuIlu) -> Self {
        HostIlu { ilu, staging: None }
    }
}

/// Page-locked buffers for the words of `n` elements in and out (`words`: a word each, or two
/// for dd), the solve's right-hand side and result in double where those are dd words, and
/// device vectors of doubles for the precisions converted on the device.
struct Staging {
    n: usize,
    words: (usize, usize),
    input: PinnedHostSlice<f64>,
    output: PinnedHostSlice<f64>,
    rhs: Vec<f64>,
    result: Vec<f64>,
    narrow: Option<CudaVector<f64>>,
    wide: Option<CudaVector<f64>>,
}

/// Words an element of `P` has where the host narrows or widens it itself (f64: 1, dd: 2,
/// the pair `hi, lo` whose `to_f64` is `hi + lo`); `None` where the device converts it.
fn host_words<P: Precision>() -> Option<usize> {
    match P::KERNEL_SUFFIX {
        "f64" => Some(1),
        "dd" => Some(2),
        _ => None,
    }
}

impl CudaBackend {
    fn staging(&self, n: usize, words: (usize, usize)) -> Result<Staging> {
        // SAFETY: the buffers are written (by a copy or by the host) before they are read.
        // Flags 0, not write-combined: the host reads `input`.
        let pinned = |len: usize| {
            unsafe { self.ctx.alloc_pinned_with_flags::<f64>(len, 0) }
                .map_err(driver_error("allocating page-locked memory for ILU(0) on the host"))
        };
        Ok(Staging {
            n,
            words,
            input: pinned(words.0 * n)?,
            output: pinned(words.1 * n)?,
            rhs: vec![0.0; if words.0 == 2 { n } else { 0 }],
            result: vec![0.0; if words.1 == 2 { n } else { 0 }],
            narrow: None,
            wide: None,
        })
    }

    /// `z <- U^{-1} L^{-1} fl64(r)` by the host's solve, widened to `Z`.
    pub(super) fn ilu_solve_on_host<P: Precision, Z: Precision>(
        &self,
        host: &mut HostIlu,
        r: &CudaVector<P>,
        z: &mut CudaVector<Z>,
    ) -> Result<()> {
        let n = r.len;
        let (per_in, per_out) = (host_words::<P>().unwrap_or(1), host_words::<Z>().unwrap_or(1));
        if host.staging.as_ref().is_none_or(|s| (s.n, s.words) != (n, (per_in, per_out))) {
            host.staging = Some(self.staging(n, (per_in, per_out))?);
        }
        let s = host.staging.as_mut().expect("staged above");
        // r's words, or fl64(r) converted on the device
        let words = match host_words::<P>() {
            Some(_) => &r.words,
            None => {
                if s.narrow.is_none() {
                    s.narrow = Some(self.alloc_vector::<f64>(n)?);
                }
                let narrow = s.narrow.as_mut().expect("allocated above");
                self.convert(r, narrow)?;
                &narrow.words
            }
        };
        let copy_in = "copying ILU(0)'s right-hand side to the host";
        self.stream
            .memcpy_dtoh(&words.slice(..per_in * n), &mut s.input)
            .map_err(driver_error(copy_in))?;
        // The stream's wait (a spin), not the buffer's event (created with blocking sync,
        // which sleeps): after it both buffers' events have passed, so the reads below
        // return at once.
        self.stream.synchronize().map_err(driver_error(copy_in))?;
        let input = s.input.as_slice().map_err(driver_error(copy_in))?;
        let copy_back = "copying ILU(0)'s result to the GPU";
        let output = s.output.as_mut_slice().map_err(driver_error(copy_back))?;
        // f64 in and out: the solve reads and writes the page-locked buffers themselves
        let rhs: &[f64] = match per_in {
            1 => input,
            _ => {
                for (v, pair) in s.rhs.iter_mut().zip(input.chunks_exact(2)) {
                    *v = Dd {
                        hi: pair[0],
                        lo: pair[1],
                    }
                    .to_f64();
                }
                &s.rhs
            }
        };
        match per_out {
            1 => host.ilu.apply::<f64, f64>(rhs, output),
            _ => {
                host.ilu.apply::<f64, f64>(rhs, &mut s.result);
                for (pair, &v) in output.chunks_exact_mut(2).zip(&s.result) {
                    let d = Dd::from_f64(v);
                    (pair[0], pair[1]) = (d.hi, d.lo);
                }
            }
        }
        let widen_on_device = host_words::<Z>().is_none();
        if widen_on_device && s.wide.is_none() {
            s.wide = Some(self.alloc_vector::<f64>(n)?);
        }
        let target = match s.wide.as_mut().filter(|_| widen_on_device) {
            Some(wide) => &mut wide.words,
            None => &mut z.words,
        };
        self.stream
            .memcpy_htod(&s.output, &mut target.slice_mut(..per_out * n))
            .map_err(driver_error(copy_back))?;
        match s.wide.as_ref().filter(|_| widen_on_device) {
            Some(wide) => self.convert(wide, z),
            None => Ok(()),
        }
    }
}
