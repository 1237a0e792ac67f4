//! Build-time facts the tests select on, so that a test that cannot run here is reported by
//! `cargo test` as ignored, with its reason, instead of passing without checking anything:
//! - `shared_matrices`: the team's `../shared/matrices` (SuiteSparse files) is present;
//! - `host_fma`: the building machine, where the tests run, has fused multiply-add.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(shared_matrices)");
    println!("cargo::rustc-check-cfg=cfg(host_fma)");
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/matrices");
    // Cargo re-runs a build script every time for a watched path that does not exist, so only
    // a present folder is watched: one that appears later needs `touch build.rs`.
    println!("cargo::rerun-if-changed=build.rs");
    if shared.is_dir() {
        println!("cargo::rerun-if-changed=../shared/matrices");
        println!("cargo::rustc-cfg=shared_matrices");
    }
    if host_has_fma() {
        println!("cargo::rustc-cfg=host_fma");
    }
}

fn host_has_fma() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(target_arch = "aarch64")]
    {
        true // every AArch64 core has FMA
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}
