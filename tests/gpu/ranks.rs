//! Ranks a GPU each, reaching each other through the host (`mpirun ... solver solve --backend
//! cuda`; issue #31): here 2 and 3 threads of one process stand in for the ranks
//! (`ThreadGroup`, as `tests/distributed.rs` does for the CPU) and share this machine's GPU,
//! each with a stream of its own. Every rank's solve must give the single-process CPU solve's
//! iterations, stop reason, residual bits and solution.

use precsolve::backend::cuda::CudaBackend;
use precsolve::distributed::{CommScope, ThreadGroup};
use precsolve::sparse::{CsrMatrix, Symmetry, poisson3d};
use precsolve::{BackendChoice, Solution, Solver, WorkingPrecision};

/// An upwind convection-diffusion operator on a `k` x `k` grid (nonsymmetric), as
/// `benches/gpu/devices.sh` writes it.
fn convection_diffusion(k: usize) -> CsrMatrix {
    let (mut row_ptr, mut cols, mut vals) = (vec![0], Vec::new(), Vec::new());
    for i in 0..k {
        for j in 0..k {
            let r = i * k + j;
            let mut entries = vec![(r, 4.6)];
            if i > 0 {
                entries.push((r - k, -1.4));
            }
            if j > 0 {
                entries.push((r - 1, -1.3));
            }
            if j + 1 < k {
                entries.push((r + 1, -0.7));
            }
            if i + 1 < k {
                entries.push((r + k, -0.6));
            }
            entries.sort_by_key(|e| e.0);
            for (c, v) in entries {
                cols.push(c as i32);
                vals.push(v);
            }
            row_ptr.push(cols.len());
        }
    }
    CsrMatrix::try_from_parts(k * k, k * k, row_ptr, cols, vals, Symmetry::General).unwrap()
}

fn solve(
    a: &CsrMatrix,
    method: &str,
    ilu: bool,
    precision: &str,
    iterations: usize,
    backend: BackendChoice,
) -> Result<Solution, String> {
    let solver = match method {
        "cg" => Solver::cg(),
        _ => Solver::bicgstab(),
    }
    .backend(backend)
    .tol(1e-300)
    .max_iter(iterations);
    let mut solver = if ilu { solver.ilu0() } else { solver };
    let precision: WorkingPrecision = precision.parse().map_err(|e| format!("{e:?}"))?;
    let b = vec![1.0; a.nrows()];
    solver.solve_in(precision, a, &b).map_err(|e| e.to_string())
}

/// What must be identical, as text that tells every bit apart.
fn fingerprint(s: &Solution) -> String {
    let info = &s.info;
    format!(
        "{} iterations, {:?}, recurrence {:?}, true {:?}, x {:?}",
        info.iterations, info.stop_reason, info.recurrence_residual, info.true_residual, s.x
    )
}

pub fn ranks_share_one_gpu(_gpu: &CudaBackend) -> Result<(), String> {
    // 32,768 and 22,500 rows: four and three of `dot`'s chunks, so 2 and 3 ranks each hold
    // whole chunks of their own
    let spd = poisson3d(32);
    let nonsymmetric = convection_diffusion(150);
    let mut cases = Vec::new();
    for precision in ["f64", "dd"] {
        cases.push((&spd, "cg", false, precision, 200));
        cases.push((&spd, "cg", true, precision, 40));
        cases.push((&nonsymmetric, "bicgstab", false, precision, 120));
        cases.push((&nonsymmetric, "bicgstab", true, precision, 30));
    }
    for precision in ["td", "qd", "mp:128"] {
        cases.push((&spd, "cg", false, precision, 15));
        cases.push((&nonsymmetric, "bicgstab", false, precision, 10));
    }
    for (a, method, ilu, precision, iterations) in cases {
        let label = format!("{method} {precision} ilu0={ilu}");
        let alone = solve(a, method, ilu, precision, iterations, BackendChoice::Cpu)?;
        if alone.info.iterations == 0 {
            return Err(format!("{label}: the CPU solve ran no iteration"));
        }
        let want = fingerprint(&alone);
        for ranks in [2, 3] {
            let spread = ThreadGroup::run(ranks, |comm| {
                let _scope = CommScope::enter(comm);
                solve(a, method, ilu, precision, iterations, BackendChoice::Cuda)
            });
            for (rank, got) in spread.into_iter().enumerate() {
                let got = got.map_err(|e| format!("{label}, rank {rank} of {ranks}: {e}"))?;
                let info = &got.info;
                if info.backend != "cuda" || info.ranks != ranks {
                    return Err(format!(
                        "{label}: rank {rank} ran on {} over {} ranks",
                        info.backend, info.ranks
                    ));
                }
                if fingerprint(&got) != want {
                    return Err(format!(
                        "{label}, rank {rank} of {ranks}: {} iterations, {:?}, true residual \
                         {:e}; alone on the CPU {}, {:?}, {:e}",
                        info.iterations,
                        info.stop_reason,
                        info.true_residual,
                        alone.info.iterations,
                        alone.info.stop_reason,
                        alone.info.true_residual
                    ));
                }
            }
        }
        println!(
            "    {label:>24}: {:>4} iterations at 1, 2 and 3 ranks on one GPU, identical to the CPU",
            alone.info.iterations
        );
    }
    Ok(())
}
