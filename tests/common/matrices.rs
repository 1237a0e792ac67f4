//! Locating `../shared/matrices`, which exists on the team's machines and in CI but not in a
//! user's clone. Tests that need it carry
//! `#[cfg_attr(not(shared_matrices), ignore = "needs ../shared/matrices ...")]`: `build.rs`
//! sets the cfg where the folder exists, so elsewhere `cargo test` lists them as ignored, with
//! the reason, and counts them in its summary. Also the generated matrices tests share.

use precsolve::{CsrMatrix, Symmetry};
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

/// A convection-diffusion operator on a `k x k` grid (upwind convection: nonsymmetric), of
/// `k * k` rows.
pub fn convection_diffusion(k: usize) -> CsrMatrix {
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    let id = |i: usize, j: usize| (i * k + j) as u32;
    for i in 0..k {
        for j in 0..k {
            let mut push = |c: u32, v: f64| {
                rows.push(id(i, j));
                cols.push(c);
                vals.push(v);
            };
            push(id(i, j), 4.6);
            if i > 0 {
                push(id(i - 1, j), -1.4);
            }
            if i + 1 < k {
                push(id(i + 1, j), -0.6);
            }
            if j > 0 {
                push(id(i, j - 1), -1.3);
            }
            if j + 1 < k {
                push(id(i, j + 1), -0.7);
            }
        }
    }
    CsrMatrix::from_coo(k * k, k * k, &rows, &cols, &vals, Symmetry::General).unwrap()
}
