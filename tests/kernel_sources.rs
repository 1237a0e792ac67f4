//! The CUDA kernels' sources compile with NVRTC, checked without a GPU: NVRTC needs no driver.
//! Ignored by a plain `cargo test` (most machines have no libnvrtc); `.ci/run` installs NVRTC
//! from its pip wheel and runs it with `--ignored`. The kernels' results are checked against
//! the CPU backend on a GPU, by `tests/gpu.rs`.

#![cfg(feature = "cuda")]

use precsolve::backend::cuda::compile_kernel_sources;

#[test]
#[ignore = "needs libnvrtc on LD_LIBRARY_PATH (.ci/run installs it and runs this with --ignored)"]
fn every_kernel_source_compiles_for_hopper_and_ampere() {
    for arch in ["sm_90", "sm_80"] {
        let compiled = compile_kernel_sources(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(
            compiled.contains(&"blas1") && compiled.contains(&"mp_l32") && compiled.len() >= 12,
            "{arch}: {compiled:?}"
        );
    }
}
