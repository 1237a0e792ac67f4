//! Solves through the library's front door (`precsolve::Solver`) on the GPU against the CPU:
//! restarts, matched ILU(0), precision ladders, GMRES, BiCGStab(l), a program's preconditioner.

use super::common::*;
use precsolve::Dd;
use precsolve::backend::cuda::CudaBackend;
use precsolve::sparse::poisson3d;

/// A GPU solve (`g`) and a CPU solve (`c`) through the front door: each on its backend,
/// with the same iterations, restarts, stop reason, residual bits and solution.
fn same_solve(label: &str, g: &precsolve::Solution, c: &precsolve::Solution) -> Result<(), String> {
    let (gi, ci) = (&g.info, &c.info);
    if gi.backend != "cuda" || ci.backend != "cpu" {
        return Err(format!("{label}: ran on {} and {}", gi.backend, ci.backend));
    }
    // the same bits, or NaN on both sides (a solve that blew up on both backends); the
    // vectors by their exact decimal forms, in which every NaN reads `NaN`
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    if gi.iterations != ci.iterations
        || gi.restarts != ci.restarts
        || gi.stop_reason != ci.stop_reason
        || !same(gi.recurrence_residual, ci.recurrence_residual)
        || !same(gi.true_residual, ci.true_residual)
        || (g.x != c.x && format!("{:?}", g.x) != format!("{:?}", c.x))
    {
        return Err(format!(
            "{label}: GPU {} iterations, {} restarts, {}, true residual {:e}; \
             CPU {}, {}, {}, {:e}",
            gi.iterations,
            gi.restarts,
            gi.stop_reason,
            gi.true_residual,
            ci.iterations,
            ci.restarts,
            ci.stop_reason,
            ci.true_residual
        ));
    }
    println!(
        "    {label:>32}: {:>5} iterations, {} restarts, {}, true residual {:.3e}, identical",
        gi.iterations, gi.restarts, gi.stop_reason, gi.true_residual
    );
    Ok(())
}

/// ILU(0) past a zero pivot by the matching (the solve iterates on `P A x = P b`):
/// BiCGStab and GMRES in f64, dd and qd, the GPU's solves against the CPU's.
pub fn matched_ilu0(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
    for name in ["gre_216a", "west0497", "str_200", "impcol_c"] {
        let path = format!("{}/{name}.mtx", matrix_dir());
        let a = precsolve::read_matrix_market(&path).map_err(err)?;
        let b = vec![1.0; a.nrows()];
        for method in [Method::Bicgstab, Method::Gmres] {
            for p in [
                WorkingPrecision::F64,
                WorkingPrecision::Dd,
                WorkingPrecision::Qd,
            ] {
                let run = |backend| {
                    let mut solver = Solver::with_method(method).ilu0().backend(backend);
                    solver.solve_in(p, &a, &b).map_err(err)
                };
                let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                let label = format!("{name} {} {}", g.info.method, p.name());
                let moved = c.info.ilu_remedy.as_ref().map_or(0, |r| r.permuted_rows);
                if moved == 0 {
                    return Err(format!("{label}: no rows permuted"));
                }
                same_solve(&label, &g, &c)?;
            }
        }
    }
    Ok(())
}

/// BiCGStab's restarts after breakdowns and its shadow residuals, on the shared matrices
/// where double breaks down (cage8 on `<r~, v>`, rdb200l and str_0 on `rho`, str_0 until its
/// restarts run out), f64 and dd, with and without ILU(0): the GPU's device-resident steps
/// restart where the CPU's do, with the same bits.
pub fn bicgstab_restarts(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Shadow, Solver, WorkingPrecision};
    for name in ["cage8", "rdb200l", "str_0"] {
        let path = format!("{}/{name}.mtx", matrix_dir());
        let a = precsolve::read_matrix_market(&path).map_err(err)?;
        let b = vec![1.0; a.nrows()];
        for shadow in [Shadow::R0, Shadow::Random] {
            for ilu in [false, true] {
                for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
                    let run = |backend| {
                        let solver = Solver::bicgstab().shadow(shadow).backend(backend);
                        let mut solver = if ilu {
                            solver.ilu0_shifted(1e-8)
                        } else {
                            solver
                        };
                        solver.solve_in(p, &a, &b).map_err(err)
                    };
                    let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                    let label = format!("{name} {} ilu {ilu} {}", shadow.name(), p.name());
                    same_solve(&label, &g, &c)?;
                }
            }
        }
    }
    Ok(())
}

/// Precision ladders (`auto`: f64, dd, qd) on matrices where they climb: graded_spd_400 and
/// 1138_bus (CG: double's true residual stops following its recurrence residual, or its
/// recurrence meets tol while the true residual misses), fs_183_4 and gre_216a (BiCGStab:
/// no progress in double; gre_216a goes on to qd), with and without ILU(0). The stagnation
/// checks fall where the device ends its batches, so every rung ends at the same iteration
/// as on the CPU, with the same bits.
pub fn ladders(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
    let auto = WorkingPrecision::Ladder(precsolve::Ladder::AUTO);
    let cases = [
        ("graded_spd_400", Method::Cg),
        ("1138_bus", Method::Cg),
        ("fs_183_4", Method::Bicgstab),
        ("gre_216a", Method::Bicgstab),
    ];
    for (name, method) in cases {
        // graded_spd_400 is the bundled sample; the others are shared
        let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices").to_string();
        let path = [matrix_dir(), bundled]
            .iter()
            .map(|dir| format!("{dir}/{name}.mtx"))
            .find(|path| std::path::Path::new(path).exists())
            .ok_or_else(|| format!("{name}.mtx is neither shared nor bundled here"))?;
        let a = precsolve::read_matrix_market(&path).map_err(err)?;
        let b = vec![1.0; a.nrows()];
        for ilu in [false, true] {
            let run = |backend| {
                let solver = Solver::with_method(method).tol(1e-12).backend(backend);
                let mut solver = if ilu { solver.ilu0() } else { solver };
                solver.solve_in(auto, &a, &b).map_err(err)
            };
            let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
            let rungs = |s: &precsolve::Solution| {
                let steps: Vec<String> = s
                    .info
                    .phases
                    .iter()
                    .map(|p| format!("{} {} ({})", p.precision, p.iterations, p.stop_reason))
                    .collect();
                steps.join(" > ")
            };
            let label = format!("auto {name} ilu {ilu}");
            // every rung's outcome; its seconds are the backend's own
            let untimed = |s: &precsolve::Solution| {
                let phases = s.info.phases.iter().cloned();
                phases
                    .map(|p| precsolve::Phase { seconds: 0.0, ..p })
                    .collect::<Vec<_>>()
            };
            if untimed(&g) != untimed(&c) {
                return Err(format!("{label}: GPU {}; CPU {}", rungs(&g), rungs(&c)));
            }
            same_solve(&label, &g, &c)?;
            println!("    {:>32}  {}", "", rungs(&g));
        }
    }
    Ok(())
}

/// GMRES(30), written once from the backends' primitives: in every precision, with and
/// without ILU(0), with both orthogonalisations, the GPU's solves equal the CPU's.
pub fn gmres_solves(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Orthogonalization, Solver, WorkingPrecision};
    for name in ["cage8", "fs_183_4", "sherman5"] {
        let path = format!("{}/{name}.mtx", matrix_dir());
        let a = precsolve::read_matrix_market(&path).map_err(err)?;
        let b = vec![1.0; a.nrows()];
        for how in [Orthogonalization::Mgs, Orthogonalization::Cgs2] {
            for ilu in [false, true] {
                for p in WorkingPrecision::ALL {
                    let run = |backend| {
                        let solver = Solver::gmres()
                            .orthogonalization(how)
                            .max_iter(600)
                            .backend(backend);
                        let mut solver = if ilu { solver.ilu0() } else { solver };
                        solver.solve_in(p, &a, &b).map_err(err)
                    };
                    let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                    let label = format!("gmres {name} {} ilu {ilu} {}", how.name(), p.name());
                    same_solve(&label, &g, &c)?;
                }
            }
        }
    }
    Ok(())
}

/// BiCGStab(l), written once from the backends' primitives: l = 2 and 4, every precision,
/// with and without ILU(0) (impcol_c's and gre_216a's blow up to NaN, on both backends
/// alike), restarts after breakdowns (gre_216a), the GPU's solves equal the CPU's.
pub fn bicgstab_l_solves(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
    for name in ["impcol_c", "fs_183_4", "sherman5", "gre_216a"] {
        let path = format!("{}/{name}.mtx", matrix_dir());
        let a = precsolve::read_matrix_market(&path).map_err(err)?;
        let b = vec![1.0; a.nrows()];
        for l in [2, 4] {
            for ilu in [false, true] {
                for p in WorkingPrecision::ALL {
                    let run = |backend| {
                        let solver = Solver::with_method(Method::BicgstabL)
                            .bicgstab_l(l)
                            .max_iter(600)
                            .backend(backend);
                        let mut solver = if ilu { solver.ilu0() } else { solver };
                        solver.solve_in(p, &a, &b).map_err(err)
                    };
                    let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                    let label = format!("bicgstab({l}) {name} ilu {ilu} {}", p.name());
                    same_solve(&label, &g, &c)?;
                }
            }
        }
    }
    Ok(())
}

/// `z_i = r_i / a_ii`, as an embedding program writes it.
struct Jacobi(Vec<f64>);

impl precsolve::Preconditioner for Jacobi {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        for ((z, r), d) in z.iter_mut().zip(r).zip(&self.0) {
            *z = r / d;
        }
    }
    fn name(&self) -> &'static str {
        "jacobi"
    }
}

/// The library's front door (`precsolve::Solver`) with `BackendChoice::Cuda` against
/// `Cpu`: without a preconditioner, with ILU(0), and with a program's own preconditioner
/// (applied on the host between device steps), every precision; and a callback's stop,
/// which the GPU honours at the end of its batch, leaves the state of a CPU solve of that
/// many iterations.
pub fn front_door_solves(_gpu: &CudaBackend) -> Result<(), String> {
    use precsolve::{BackendChoice, Control, Solver, StopReason, WorkingPrecision};
    let a = poisson3d(10);
    let b = vec![1.0; a.nrows()];
    for precond in ["none", "ilu0", "jacobi"] {
        for p in WorkingPrecision::ALL {
            let run = |backend| {
                let solver = Solver::cg().tol(1e-12).backend(backend);
                let mut solver = match precond {
                    "ilu0" => solver.ilu0(),
                    "jacobi" => solver.preconditioner(Jacobi(a.diagonal())),
                    _ => solver,
                };
                solver.solve_in(p, &a, &b).map_err(err)
            };
            let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
            let label = format!("front door {precond} {}", p.name());
            same_solve(&label, &g, &c)?;
        }
    }
    let stopped = Solver::cg()
        .precision::<Dd>()
        .backend(BackendChoice::Cuda)
        .on_iteration(|at| {
            if at.iteration >= 5 {
                Control::Stop
            } else {
                Control::Continue
            }
        })
        .solve(&a, &b)
        .map_err(err)?;
    if stopped.stop_reason != StopReason::Cancelled || !(5..=5 + 64).contains(&stopped.iterations) {
        return Err(format!(
            "callback stop: {} after {}",
            stopped.stop_reason, stopped.iterations
        ));
    }
    let limited = Solver::cg()
        .precision::<Dd>()
        .backend(BackendChoice::Cpu)
        .max_iter(stopped.iterations)
        .solve(&a, &b)
        .map_err(err)?;
    same_bits("callback stop vs max_iter", &stopped.x, &limited.x)?;
    println!(
        "    a callback's stop at 5 took effect at {} on the GPU, identical to the CPU",
        stopped.iterations
    );
    Ok(())
}
