//! A solve spread over ranks gives the bits of the single-process solve (issue #31): the same
//! iterations, residuals and solution, for CG and BiCGStab, with and without ILU(0), in every
//! precision, at 2 and 3 ranks. The ranks here are threads of one process
//! (`distributed::ThreadGroup`); `.ci/run` runs the same through MPI (`tests/mpi.rs`).

use precsolve::distributed::{CommScope, ThreadGroup};
use precsolve::{BackendChoice, CsrMatrix, Solution, Solver, Symmetry, WorkingPrecision};
use std::sync::Arc;

/// A convection-diffusion operator on a `k x k` grid (upwind convection: nonsymmetric), of
/// `k * k` rows.
fn convection_diffusion(k: usize) -> CsrMatrix {
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

/// What must be identical, as text that tells every bit apart (`{:?}` of a double is the
/// shortest text that reads back to it, `-0.0` included): the report's numbers, then `x`.
fn fingerprint(s: &Solution) -> (String, String) {
    let info = &s.info;
    (
        format!(
            "{} iterations, {:?}, recurrence {:?}, true {:?}",
            info.iterations, info.stop_reason, info.recurrence_residual, info.true_residual
        ),
        format!("{:?}", s.x),
    )
}

fn solver(method: &str, ilu: bool, max_iter: usize) -> Solver<'static> {
    let solver = match method {
        "cg" => Solver::cg(),
        _ => Solver::bicgstab(),
    }
    .backend(BackendChoice::Cpu)
    .tol(1e-30)
    .max_iter(max_iter);
    if ilu { solver.ilu0() } else { solver }
}

fn solve(a: &CsrMatrix, method: &str, ilu: bool, precision: &str, max_iter: usize) -> Solution {
    let precision: WorkingPrecision = precision.parse().unwrap();
    let b = vec![1.0; a.nrows()];
    solver(method, ilu, max_iter)
        .solve_in(precision, a, &b)
        .unwrap()
}

fn same_bits_at_every_count(a: &CsrMatrix, method: &str, ilu: bool, precision: &str, iters: usize) {
    let alone = solve(a, method, ilu, precision, iters);
    assert!(alone.info.iterations > 0);
    assert_eq!(alone.info.ranks, 1);
    for ranks in [2, 3] {
        let spread = ThreadGroup::run(ranks, |comm| {
            let _scope = CommScope::enter(comm);
            solve(a, method, ilu, precision, iters)
        });
        let (want, want_x) = fingerprint(&alone);
        for (rank, s) in spread.iter().enumerate() {
            let what = format!("{method} {precision} ilu0={ilu}: rank {rank} of {ranks}");
            assert_eq!(s.info.ranks, ranks, "{what}");
            let (got, got_x) = fingerprint(s);
            assert_eq!(got, want, "{what}");
            assert!(got_x == want_x, "{what}: the solutions differ");
        }
    }
}

#[test]
fn cg_gives_the_single_process_bits_at_2_and_3_ranks() {
    let a = Arc::new(precsolve::poisson2d(170)); // 28,900 rows: 4 dot chunks
    for precision in ["f64", "dd"] {
        same_bits_at_every_count(&a, "cg", false, precision, 400);
        same_bits_at_every_count(&a, "cg", true, precision, 100);
    }
    for precision in ["td", "qd", "mp:128"] {
        same_bits_at_every_count(&a, "cg", false, precision, 30);
    }
}

#[test]
fn bicgstab_gives_the_single_process_bits_at_2_and_3_ranks() {
    let a = convection_diffusion(170);
    for precision in ["f64", "dd"] {
        same_bits_at_every_count(&a, "bicgstab", false, precision, 300);
        same_bits_at_every_count(&a, "bicgstab", true, precision, 60);
    }
    for precision in ["td", "qd", "mp:192"] {
        same_bits_at_every_count(&a, "bicgstab", false, precision, 20);
    }
}
