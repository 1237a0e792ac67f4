//! MPI ranks (cargo feature `mpi`: rsmpi over the system's Open MPI or MPICH), one process
//! each, started by `mpirun -np N solver ...`.

use super::Communicator;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator as _, CommunicatorCollectives, Destination, Source};
use mpi::Count;

/// `MPI_COMM_WORLD`, for the process's life (MPI is finalised when the [`Universe`] drops).
pub struct MpiWorld {
    _universe: Universe,
    world: SimpleCommunicator,
}

// SAFETY: MPI is initialised at the `Funneled` level: only the thread that initialised it calls
// it. The solves that use this communicator run on the main thread (`solver solve` solves its
// precisions one after another there; the CPU kernels' rayon workers never communicate).
unsafe impl Send for MpiWorld {}
unsafe impl Sync for MpiWorld {}

impl MpiWorld {
    /// `MPI_COMM_WORLD` itself, for what the [`Communicator`] trait does not offer.
    pub fn raw(&self) -> &SimpleCommunicator {
        &self.world
    }

    /// Initialise MPI; `None` where it was initialised already.
    pub fn initialize() -> Option<MpiWorld> {
        let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Funneled)?;
        let world = universe.world();
        Some(MpiWorld {
            _universe: universe,
            world,
        })
    }
}

impl Communicator for MpiWorld {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }
    fn abort_all(&self, exit_code: i32) {
        self.world.abort(exit_code)
    }
    fn size(&self) -> usize {
        self.world.size() as usize
    }
    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        let size = self.size();
        let mut counts = vec![0 as Count; size];
        self.world
            .all_gather_into(&(mine.len() as Count), &mut counts[..]);
        let displs: Vec<Count> = counts
            .iter()
            .scan(0, |at, &c| {
                let here = *at;
                *at += c;
                Some(here)
            })
            .collect();
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let mut all = vec![0u64; total];
        {
            let mut parts = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(mine, &mut parts);
        }
        counts
            .iter()
            .zip(&displs)
            .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
            .collect()
    }
    fn exchange(
        &self,
        sends: &[(usize, Vec<u64>)],
        receives: &mut [(usize, Vec<u64>)],
        during: &mut dyn FnMut(),
    ) {
        mpi::request::scope(|scope| {
            let mut pending = Vec::new();
            for (from, words) in receives.iter_mut() {
                let process = self.world.process_at_rank(*from as i32);
                pending.push(process.immediate_receive_into(scope, &mut words[..]));
            }
            let sent: Vec<_> = sends
                .iter()
                .map(|(to, words)| {
                    let process = self.world.process_at_rank(*to as i32);
                    process.immediate_send(scope, &words[..])
                })
                .collect();
            during();
            for request in pending {
                request.wait();
            }
            for request in sent {
                request.wait();
            }
        });
    }
    fn kind(&self) -> &'static str {
        "mpi"
    }
}
