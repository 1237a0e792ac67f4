//! The cost of the fixed reduction order across MPI ranks (issue #31): a `dot` as the
//! distributed backend computes it (each rank's chunk partials gathered to every rank and summed
//! in the single process's order: the same bits at any rank count) against a plain
//! `MPI_Allreduce` of each rank's local sum (what PETSc and most codes do: bits that change with
//! the rank count). f64, both over the same row blocks, per call, median of 9 rounds of 200.
//!
//! Run: `cargo build --release --features mpi --example allreduce_cost`, then
//! `mpirun -np 2 target/release/examples/allreduce_cost` (`benches/cpu/mpi.sh` does both).

use mpi::collective::SystemOperation;
use mpi::traits::CommunicatorCollectives;
use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::distributed::mpi::MpiWorld;
use precsolve::distributed::{Communicator, DistributedBackend};
use std::sync::Arc;
#[path = "common/timing.rs"]
mod timing;
use timing::median_seconds;

fn main() {
    let world = Arc::new(MpiWorld::initialize().expect("MPI initialises once"));
    let comm: Arc<dyn Communicator> = world.clone();
    if comm.rank() == 0 {
        println!("| rows | fixed order (gather of partials) [us] | MPI_Allreduce [us] | ratio |");
        println!("|---:|---:|---:|---:|");
    }
    for k in [22, 50, 100] {
        let a = precsolve::poisson3d(k);
        let n = a.nrows();
        let x: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f64 / 997.0 - 0.5)
            .collect();
        let backend = DistributedBackend::new(Arc::clone(&comm), &a);
        let xv = backend.vector_from_f64::<f64>(&x).unwrap();
        let fixed = median_seconds(|| {
            std::hint::black_box(backend.dot(&xv, &xv).unwrap());
        });
        let cpu = CpuBackend::new();
        let plain = median_seconds(|| {
            let local = cpu.dot(&xv.local, &xv.local).unwrap();
            let mut sum = 0.0f64;
            world
                .raw()
                .all_reduce_into(&local, &mut sum, SystemOperation::sum());
            std::hint::black_box(sum);
        });
        if comm.rank() == 0 {
            println!(
                "| {n} | {:.1} | {:.1} | {:.2} |",
                fixed * 1e6,
                plain * 1e6,
                fixed / plain
            );
        }
    }
}
