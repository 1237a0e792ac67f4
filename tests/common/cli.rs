//! Running the `solver` binary from tests, and its exit codes (see src/main.rs).

use std::path::Path;
use std::process::{Command, Output};

pub const EXIT_OK: i32 = 0;
pub const EXIT_USAGE: i32 = 2;
pub const EXIT_NOT_CONVERGED: i32 = 3;
pub const EXIT_BAD_INPUT: i32 = 4;

/// Run `solver args...` in `dir` (no solver.toml there: built-in defaults).
pub fn solver(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_solver"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("runs the solver binary")
}
