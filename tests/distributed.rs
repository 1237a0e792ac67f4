//! A solve spread over ranks gives the bits of the single-process solve (issue #31): the same
//! iterations, residuals and solution, for CG and BiCGStab, with and without ILU(0), in every
//! precision, at 2 and 3 ranks. The ranks here are threads of one process
//! (`distributed::ThreadGroup`); `.ci/run` runs the same through MPI (`tests/mpi.rs`).

mod common;

use common::matrices::{convection_diffusion, shared_matrices, shared_matrix};
use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::backend::cpu::CpuLink;
use precsolve::distributed::{BlockBackend, CommScope, DistributedBackend, ThreadGroup};
use precsolve::{BackendChoice, CsrMatrix, Method, Solution, Solver, WorkingPrecision};
use precsolve::{Dd, Precision, Qd, Td};
use std::sync::Arc;

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
        "gmres" => Solver::gmres().gmres_restart(20),
        "bicgstab-l" => Solver::with_method(Method::BicgstabL).bicgstab_l(2),
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
    assert_eq!(alone.info.method, method);
    assert_eq!(alone.info.ranks, 1);
    // Ranks on the CPU's DistributedBackend, and on BlockBackend (the layout of the GPUs'
    // `--devices` solves) over the CPU's kernels.
    for (ranks, blocks) in [(2, false), (3, false), (2, true), (3, true)] {
        let spread = ThreadGroup::run(ranks, |comm| {
            let _scope = match blocks {
                true => CommScope::enter_blocks(comm),
                false => CommScope::enter_rows(comm),
            };
            solve(a, method, ilu, precision, iters)
        });
        let (want, want_x) = fingerprint(&alone);
        for (rank, s) in spread.iter().enumerate() {
            let what =
                format!("{method} {precision} ilu0={ilu} blocks={blocks}: rank {rank} of {ranks}");
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

#[test]
fn gmres_and_bicgstab_l_give_the_single_process_bits_at_2_and_3_ranks() {
    // Written from the primitives alone: their Krylov bases are spread like any vector, their
    // small dense work is whole on every rank.
    let a = convection_diffusion(170);
    for precision in ["f64", "dd"] {
        same_bits_at_every_count(&a, "gmres", false, precision, 60);
        same_bits_at_every_count(&a, "bicgstab-l", false, precision, 30);
    }
    same_bits_at_every_count(&a, "gmres", true, "dd", 30);
}

/// `dot` and `dot_wide` over 2 to 5 ranks against the single process's, for lengths whose
/// blocks split a dot chunk between ranks (and, with 5 ranks on 2,025 rows, put several ranks
/// inside one chunk, whose lanes then pass through each in turn).
fn dots_match<P: Precision>() {
    for k in [45, 170, 200] {
        let a = precsolve::poisson2d(k);
        let n = a.nrows();
        let (x, y) = common::dot_operands(n);
        let cpu = CpuBackend::new();
        let (xv, yv) = (
            cpu.vector_from_f64::<P>(&x).unwrap(),
            cpu.vector_from_f64::<P>(&y).unwrap(),
        );
        let y64 = cpu.vector_from_f64::<f64>(&y).unwrap();
        let want = format!(
            "{:?} {:?} {:?}",
            cpu.dot(&xv, &yv).unwrap(),
            cpu.dot_wide(&xv, &y64).unwrap(),
            cpu.dot_tiled(&xv, &yv).unwrap()
        );
        for ranks in 2..=5 {
            let got = ThreadGroup::run(ranks, |comm| {
                let backend = DistributedBackend::new(comm, &a);
                let (xv, yv) = (
                    backend.vector_from_f64::<P>(&x).unwrap(),
                    backend.vector_from_f64::<P>(&y).unwrap(),
                );
                let y64 = backend.vector_from_f64::<f64>(&y).unwrap();
                format!(
                    "{:?} {:?} {:?}",
                    backend.dot(&xv, &yv).unwrap(),
                    backend.dot_wide(&xv, &y64).unwrap(),
                    backend.dot_tiled(&xv, &yv).unwrap()
                )
            });
            for (rank, g) in got.iter().enumerate() {
                assert_eq!(g, &want, "{} n={n}: rank {rank} of {ranks}", P::NAME);
            }
        }
    }
}

#[test]
fn dot_products_over_ranks_give_the_single_process_bits() {
    dots_match::<f64>();
    dots_match::<Td>();
    dots_match::<Dd>();
    dots_match::<Qd>();
}

#[test]
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's checkouts and CI)"
)]
fn shared_matrices_over_ranks_give_the_single_process_bits() {
    let dir = shared_matrices();
    let load = |name| precsolve::load_matrix(&shared_matrix(&dir, name)).unwrap();
    // SPD, 1,138 rows: blocks of 256-row multiples over 2 and 3 ranks.
    let bus = load("1138_bus");
    for precision in ["f64", "dd"] {
        same_bits_at_every_count(&bus, "cg", false, precision, 300);
        same_bits_at_every_count(&bus, "cg", true, precision, 100);
    }
    // Nonsymmetric, 1,015 rows.
    let cage = load("cage8");
    for precision in ["f64", "dd"] {
        same_bits_at_every_count(&cage, "bicgstab", false, precision, 100);
        same_bits_at_every_count(&cage, "bicgstab", true, precision, 50);
    }
}

/// Ranks of one host (threads here) count themselves in rank order: which of the host's GPUs
/// each takes under `mpirun --backend cuda`.
#[test]
fn ranks_of_one_host_count_themselves_in_rank_order() {
    let places = ThreadGroup::run(3, |comm| precsolve::distributed::host_ranks(&*comm));
    assert_eq!(places, vec![(0, 3), (1, 3), (2, 3)]);
}

/// A rank that fails in its setup makes every rank's solve fail, at their next `synchronize`,
/// and none waits for ever: not the failing rank, nor the one that learns of it there.
#[test]
fn a_rank_that_fails_alone_fails_every_rank() {
    let a = precsolve::poisson2d(170);
    let outcomes = ThreadGroup::run(3, |comm| {
        let link = CpuLink::new(comm.clone());
        let backend = BlockBackend::new(CpuBackend::new(), link, comm.clone(), &a);
        let result = match comm.rank() {
            1 => Err(precsolve::Error::Backend {
                backend: "cpu",
                message: "out of memory".into(),
            }),
            _ => backend.synchronize(),
        };
        backend.fail_together(result).map_err(|e| e.to_string())
    });
    assert_eq!(outcomes[1], Err("backend cpu: out of memory".to_string()));
    for rank in [0, 2] {
        let e = outcomes[rank].clone().unwrap_err();
        assert!(e.contains("rank 1 of the solve failed"), "rank {rank}: {e}");
    }
}

/// A stop that one rank decides alone (rank 0's callback, another rank's clock) stops every rank
/// at the same iteration, with the same reason, soon after: none is left waiting for the others
/// in a reduction they never reach.
#[test]
fn a_stop_one_rank_decides_stops_every_rank_at_the_same_iteration() {
    let (done, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let a = precsolve::poisson2d(100);
        let b = vec![1.0; a.nrows()];
        let mut seen = Vec::new();
        for blocks in [false, true] {
            for timed in [false, true] {
                let spread = ThreadGroup::run(3, |comm| {
                    let rank = comm.rank();
                    let _scope = match blocks {
                        true => CommScope::enter_blocks(comm),
                        false => CommScope::enter_rows(comm),
                    };
                    let mut solver = solver("cg", false, 1000);
                    if timed && rank == 2 {
                        solver = solver.time_limit(std::time::Duration::ZERO);
                    }
                    if !timed && rank == 0 {
                        solver = solver.on_iteration(|at| match at.iteration >= 5 {
                            true => precsolve::Control::Stop,
                            false => precsolve::Control::Continue,
                        });
                    }
                    let info = solver.solve(&a, &b).unwrap().info;
                    (info.iterations, info.stop_reason.to_string())
                });
                seen.push((blocks, timed, spread));
            }
        }
        let _ = done.send(seen);
    });
    let seen = outcome
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the ranks did not all stop: one waits for the others");
    for (blocks, timed, spread) in seen {
        let what = format!("blocks={blocks} time limit={timed}: {spread:?}");
        let (iterations, reason) = &spread[0];
        assert!(spread.iter().all(|s| s == &spread[0]), "{what}");
        let want = if timed { "time limit" } else { "cancelled" };
        assert_eq!(reason, want, "{what}");
        let earliest = if timed { 1 } else { 5 };
        assert!((earliest..earliest + 8).contains(iterations), "{what}");
    }
}
