//! The GPUs of one host as the ranks of a block solve (`solver solve --devices N|all`): a thread
//! a GPU, each running the solver on its [`BlockBackend`] over the CUDA backend, NCCL moving
//! the partials and halos between the GPUs, and the threads' [`ThreadGroup`] the rest (the
//! solution at the end, ILU(0)'s residuals).

use super::{BlockBackend, ThreadGroup};
use crate::backend::cuda::{CudaBackend, GpuLink, NcclComms};
use crate::error::{Error, Result};
use crate::sparse::CsrMatrix;
use std::cell::RefCell;
use std::sync::Arc;

/// GPUs opened together, with their communicators.
pub struct DeviceGroup {
    gpus: Vec<CudaBackend>,
    comms: Arc<NcclComms>,
}

impl DeviceGroup {
    /// GPUs `0..count` (`None`: all the driver sees).
    pub fn open(count: Option<usize>) -> Result<DeviceGroup> {
        // Why no GPU at all can be used, in the single GPU's words.
        CudaBackend::new()?;
        let present = CudaBackend::device_count();
        let count = count.unwrap_or(present);
        if count == 0 || count > present {
            return Err(Error::Backend {
                backend: "cuda",
                message: format!("{count} GPUs asked for, {present} usable on this host"),
            });
        }
        let gpus = (0..count)
            .map(CudaBackend::on_device)
            .collect::<Result<Vec<_>>>()?;
        let comms = NcclComms::new(&gpus)?;
        Ok(DeviceGroup { gpus, comms })
    }

    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }

    /// The GPUs, for reports (`2 x NVIDIA H100 80GB HBM3, sm_90`).
    pub fn describe(&self) -> String {
        format!("{} x {}", self.len(), self.gpus[0].device_description())
    }

    /// Run a solve of `a` on every GPU: `first` on this thread with GPU 0 (its result is the
    /// one returned), `rest` on a thread each for the others. An error on any GPU before the
    /// iterations is every GPU's (the backends agree at each `synchronize`).
    pub fn run<T: Send>(
        &self,
        a: &CsrMatrix,
        first: impl FnOnce(&BlockBackend<CudaBackend>) -> Result<T>,
        rest: impl Fn(&BlockBackend<CudaBackend>) -> Result<T> + Sync,
    ) -> Result<T> {
        let backend = |comm: Arc<dyn super::Communicator>| -> Result<BlockBackend<CudaBackend>> {
            let rank = comm.rank();
            let gpu = self.gpus[rank].sibling()?;
            let link = GpuLink::nccl(self.comms.clone(), rank);
            Ok(BlockBackend::new(gpu, link, comm, a))
        };
        // mp values take their precision from the thread's scope: the GPUs' threads too.
        let bits = crate::precision::mp::current_bits();
        let mut results = ThreadGroup::run_here(
            self.len(),
            |comm| backend(comm).and_then(|b| b.fail_together(first(&b))),
            |comm| {
                crate::precision::mp::carried(bits, || {
                    backend(comm).and_then(|b| b.fail_together(rest(&b)))
                })
            },
        );
        // Rank 0's outcome, unless another rank failed first: then that rank's own error.
        match results.iter().position(|r| r.as_ref().is_err_and(|e| !is_echo(e))) {
            Some(rank) if results[0].is_err() => results.swap_remove(rank),
            _ => results.swap_remove(0),
        }
    }
}

/// An error that only says another rank failed.
fn is_echo(e: &Error) -> bool {
    e.to_string().contains(super::blocks::ANOTHER_RANK_FAILED)
}

thread_local! {
    static DEVICES: RefCell<Option<Arc<DeviceGroup>>> = const { RefCell::new(None) };
}

/// CUDA solves started on this thread while the guard lives run over the group's GPUs.
pub struct DeviceScope {
    previous: Option<Arc<DeviceGroup>>,
}

impl DeviceScope {
    pub fn enter(group: Arc<DeviceGroup>) -> DeviceScope {
        let previous = DEVICES.with(|d| d.borrow_mut().replace(group));
        DeviceScope { previous }
    }
}

impl Drop for DeviceScope {
    fn drop(&mut self) {
        DEVICES.with(|d| *d.borrow_mut() = self.previous.take());
    }
}

/// The GPUs of this thread's CUDA solves, where there are several.
pub fn current() -> Option<Arc<DeviceGroup>> {
    DEVICES.with(|d| d.borrow().clone()).filter(|g| g.len() > 1)
}
