//! Locating `../shared/matrices`, which exists on the team's machines and in CI but not in a
//! user's clone: tests that need it print a SKIPPED line and return where it is absent.

use std::path::PathBuf;

/// The shared SuiteSparse matrices, or `None` after printing why the caller is skipped.
pub fn shared_matrices(test: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/matrices");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED {test}: {} not found (it exists only beside the team's checkouts)",
            dir.display()
        );
        None
    }
}

/// Path of one shared matrix by name (`bcsstk16` -> `.../bcsstk16.mtx`).
pub fn shared_matrix(dir: &std::path::Path, name: &str) -> String {
    dir.join(format!("{name}.mtx"))
        .to_string_lossy()
        .into_owned()
}
