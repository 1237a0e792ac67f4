//! GPU kernels against the CPU backend, bit for bit, then whole solves.
//!
//! A custom harness (`harness = false`): where no GPU is usable every test is reported as
//! skipped with the reason, never as passed. Run on a GPU machine with
//! `cargo test --release --test gpu`; `PRECSOLVE_MATRICES` names a folder of `.mtx` files for the
//! whole-solve checks (default `../shared/matrices`).

#[cfg(feature = "cuda")]
#[path = "gpu/mp_arithmetic.rs"]
mod mp_arithmetic;

#[cfg(feature = "cuda")]
#[path = "gpu/ranks.rs"]
mod ranks;

#[cfg(feature = "cuda")]
#[path = "gpu/common.rs"]
mod common;

#[cfg(feature = "cuda")]
#[path = "gpu/kernels.rs"]
mod kernels;

#[cfg(feature = "cuda")]
#[path = "gpu/solves.rs"]
mod solves;

#[cfg(feature = "cuda")]
#[path = "gpu/ilu.rs"]
mod ilu;

#[cfg(feature = "cuda")]
#[path = "gpu/front_door.rs"]
mod front_door;

#[cfg(feature = "cuda")]
mod gpu_checks {
    use super::{front_door::*, ilu::*, kernels::*, solves::*};
    use precsolve::backend::cuda::CudaBackend;

    pub type Check = fn(&CudaBackend) -> Result<(), String>;
    use super::mp_arithmetic;

    pub const CHECKS: &[(&str, Check)] = &[
        (
            "spmv_and_residual_match_cpu_for_every_lane_count",
            spmv_and_residual,
        ),
        ("dot_matches_cpu_at_awkward_lengths", dot),
        ("vector_updates_match_cpu", vector_updates),
        ("wide_reads_match_cpu", wide_reads),
        ("cg_step_and_fused_spmv_dots_match_cpu", cg_steps),
        ("conversions_and_copies_match_cpu", conversions),
        ("whole_solves_match_cpu_on_poisson", solves_poisson),
        ("whole_solves_match_cpu_on_shared_matrices", solves_shared),
        ("ilu_apply_matches_cpu_for_every_schedule", ilu_apply),
        (
            "preconditioned_solves_match_cpu_on_poisson",
            precond_solves_poisson,
        ),
        (
            "preconditioned_solves_match_cpu_on_shared_matrices",
            precond_solves_shared,
        ),
        (
            "device_resident_solves_match_cpu_point_by_point",
            device_resident_solves,
        ),
        (
            "concurrent_solves_on_own_streams_match_cpu",
            concurrent_solves,
        ),
        (
            "front_door_solves_match_cpu_with_a_program_s_preconditioner",
            front_door_solves,
        ),
        ("bicgstab_restarts_and_shadows_match_cpu", bicgstab_restarts),
        ("matched_ilu0_solves_match_cpu", matched_ilu0),
        ("precision_ladders_match_cpu", ladders),
        ("gmres_matches_cpu", gmres_solves),
        ("bicgstab_l_matches_cpu", bicgstab_l_solves),
        (
            "mp_arithmetic_matches_cpu_bit_for_bit",
            mp_arithmetic::mp_arithmetic,
        ),
        ("mp_solves_match_cpu", mp_arithmetic::mp_solves),
        (
            "ranks_sharing_one_gpu_match_cpu",
            super::ranks::ranks_share_one_gpu,
        ),
    ];
}

fn main() {
    let mut passed = 0;
    let mut failed = 0;
    let mut skipped = 0;
    #[cfg(feature = "cuda")]
    {
        let gpu = precsolve::solver::dispatch::cuda_backend();
        // As libtest: arguments that are not flags select the checks whose names contain one.
        let filters: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let selected = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
        for (name, check) in gpu_checks::CHECKS.iter().filter(|(name, _)| selected(name)) {
            match &gpu {
                Err(e) => {
                    println!("test {name} ... skipped ({e})");
                    skipped += 1;
                }
                Ok(gpu) => {
                    let start = std::time::Instant::now();
                    let result = std::panic::catch_unwind(|| check(gpu))
                        .unwrap_or_else(|_| Err("panicked".into()));
                    match result {
                        Ok(()) => {
                            println!(
                                "test {name} ... ok ({:.2} s)",
                                start.elapsed().as_secs_f64()
                            );
                            passed += 1;
                        }
                        Err(e) => {
                            println!("test {name} ... FAILED: {e}");
                            failed += 1;
                        }
                    }
                }
            }
        }
        if let Ok(gpu) = &gpu {
            println!("device: {}", gpu.device_description());
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        println!("test gpu ... skipped (built without the `cuda` feature)");
        skipped += 1;
    }
    println!("\ngpu: {passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 {
        std::process::exit(1);
    }
}
