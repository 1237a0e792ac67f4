//! Locating `../shared/matrices`, which exists on the team's machines and in CI but not in a
//! user's clone. Tests that need it carry
//! `#[cfg_attr(not(shared_matrices), ignore = "needs ../shared/matrices ...")]`: `build.rs`
//! sets the cfg where the folder exists, so elsewhere `cargo test` lists them as ignored, with
//! the reason, and counts them in its summary.

use std::path::PathBuf;

/// The shared SuiteSparse matrices (a test reaches this only where `build.rs` found them, or
/// when run with `--ignored`, where a missing folder is a clear failure).
pub fn shared_matrices() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/matrices");
    assert!(
        dir.is_dir(),
        "{} not found (it exists only beside the team's checkouts)",
        dir.display()
    );
    dir
}

/// Path of one shared matrix by name (`bcsstk16` -> `.../bcsstk16.mtx`).
pub fn shared_matrix(dir: &std::path::Path, name: &str) -> String {
    dir.join(format!("{name}.mtx"))
        .to_string_lossy()
        .into_owned()
}
