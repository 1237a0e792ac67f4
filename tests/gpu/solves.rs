//! Whole solves on the GPU against the CPU, point by point: every precision, both SpMV layouts,
//! the scalars on the device, and several solves at once on their own streams.

use super::common::*;
use precsolve::backend::cpu::CpuBackend;
use precsolve::backend::cuda::SpmvLayout;
use precsolve::backend::cuda::{CudaBackend, Persistent};
use precsolve::precision::Td;
use precsolve::precond::ilu0::Ilu0Factors;
use precsolve::precond::{Identity, Ilu0, Preconditioner};
use precsolve::solver::{BicgstabSteps, CgSteps, NoMonitor, Params, SolveInfo, bicgstab, cg};
use precsolve::sparse::{CsrMatrix, Symmetry, poisson3d};
use precsolve::{Dd, Precision, Qd};
use std::sync::Arc;

/// One solve through the real loop on any backend.
pub fn solve_on<B: CgSteps + BicgstabSteps, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &Arc<CsrMatrix>,
    precond: &M,
    use_cg: bool,
    params: &Params,
) -> Result<(SolveInfo, Vec<P>), String> {
    let ga = backend.matrix(a).map_err(err)?;
    let gb = backend
        .vector_from_f64::<f64>(&vec![1.0; a.nrows()])
        .map_err(err)?;
    let mut gx = backend.zeros::<P>(a.nrows()).map_err(err)?;
    let info = if use_cg {
        cg(backend, &ga, &gb, &mut gx, precond, params, &mut NoMonitor)
    } else {
        bicgstab(backend, &ga, &gb, &mut gx, precond, params, &mut NoMonitor)
    }
    .map_err(err)?;
    Ok((info, backend.to_host(&gx).map_err(err)?))
}

/// Run one solve on both backends; iterations, outcome, residuals and x must agree exactly.
/// With `factors`, both solves are preconditioned by ILU(0) with those factors.
pub fn compare_solve<P: Precision>(
    gpu: &CudaBackend,
    a: &Arc<CsrMatrix>,
    use_cg: bool,
    label: &str,
    factors: Option<&Arc<Ilu0Factors>>,
) -> Result<SolveInfo, String> {
    let cpu = CpuBackend::new();
    let params = Params {
        max_iter: 3000,
        ..Params::default()
    };
    let ((gi, gx), (ci, cx)) = match factors {
        None => (
            solve_on::<_, P, _>(gpu, a, &Identity, use_cg, &params)?,
            solve_on::<_, P, _>(&cpu, a, &Identity, use_cg, &params)?,
        ),
        Some(f) => {
            let g = Ilu0::new(gpu, f).map_err(err)?;
            let c = Ilu0::new(&cpu, f).map_err(err)?;
            (
                solve_on::<_, P, _>(gpu, a, &g, use_cg, &params)?,
                solve_on::<_, P, _>(&cpu, a, &c, use_cg, &params)?,
            )
        }
    };
    if gi.iterations != ci.iterations || gi.stop_reason != ci.stop_reason {
        return Err(format!(
            "{label} {}: GPU {} iterations ({}), CPU {} ({})",
            P::NAME,
            gi.iterations,
            gi.stop_reason,
            ci.iterations,
            ci.stop_reason
        ));
    }
    if gi.recurrence_residual.to_bits() != ci.recurrence_residual.to_bits()
        || gi.true_residual.to_bits() != ci.true_residual.to_bits()
    {
        return Err(format!(
            "{label} {}: residuals GPU {:e}/{:e}, CPU {:e}/{:e}",
            P::NAME,
            gi.recurrence_residual,
            gi.true_residual,
            ci.recurrence_residual,
            ci.true_residual
        ));
    }
    same_bits(&format!("{label} solution"), &gx, &cx)?;
    println!(
        "    {label:>28} {:>4} {:>9}{}: {:>5} iterations, true residual {:.3e}, identical",
        P::NAME,
        if use_cg { "cg" } else { "bicgstab" },
        if factors.is_some() { "+ilu0" } else { "" },
        gi.iterations,
        gi.true_residual
    );
    Ok(gi)
}

/// CG and BiCGStab with the scalars on the device (f64 and dd: batches of iterations read
/// back at once) against the CPU, history point by point: stops at max_iter inside a batch, periodic true
/// residuals (batches end where x is read), convergence, an indefinite matrix (the stop on
/// `<p, Ap>`), with and without ILU(0).
pub fn device_resident_solves(gpu: &CudaBackend) -> Result<(), String> {
    let cpu = CpuBackend::new();
    let spd = Arc::new(poisson3d(12));
    // poisson3d(12) shifted by -2 I: symmetric, indefinite
    let indefinite = {
        let mut values = spd.values().to_vec();
        for (i, ends) in spd.row_ptr().windows(2).enumerate() {
            let diagonal = (ends[0]..ends[1]).find(|&k| spd.col_idx()[k] as usize == i);
            values[diagonal.expect("poisson3d stores its diagonal")] -= 2.0;
        }
        let parts = (spd.row_ptr().to_vec(), spd.col_idx().to_vec(), values);
        Arc::new(
            CsrMatrix::try_from_parts(
                spd.nrows(),
                spd.ncols(),
                parts.0,
                parts.1,
                parts.2,
                Symmetry::Symmetric,
            )
            .map_err(|e| e.to_string())?,
        )
    };
    let larger = Arc::new(poisson3d(24));
    let full = |tol: f64, max_iter: usize| Params {
        tol,
        max_iter,
        ..Params::default()
    };
    let cases: [(&str, &Arc<CsrMatrix>, Params); 6] = [
        // past the batches that grow to full ones, which replay a CUDA graph
        ("full batches, max_iter 200", &spd, full(1e-300, 200)),
        ("full batches, converges", &larger, full(1e-13, 30_000)),
        (
            "max_iter 37",
            &spd,
            Params {
                max_iter: 37,
                tol: 1e-300,
                ..Params::default()
            },
        ),
        (
            "true residual every 5",
            &spd,
            Params {
                true_residual_every: 5,
                ..Params::default()
            },
        ),
        (
            "converges",
            &spd,
            Params {
                tol: 1e-12,
                ..Params::default()
            },
        ),
        (
            "indefinite",
            &indefinite,
            Params {
                tol: 1e-14,
                ..Params::default()
            },
        ),
    ];
    // (CUDA graphs, persistent kernel): each way of running the device steps
    let modes = [
        (true, Persistent::Everywhere),
        (true, Persistent::OneBlock),
        (true, Persistent::Off),
        (false, Persistent::Off),
    ];
    let runs = modes
        .into_iter()
        .flat_map(|m| cases.iter().map(move |c| (m, c)));
    // with a nonsymmetric matrix for BiCGStab: cavity02 (SuiteSparse), and bcsstk16 (four
    // lanes a row in the SpMV), where present
    let shared = |name: &str| -> Result<Option<Arc<CsrMatrix>>, String> {
        let path = format!("{}/{name}.mtx", matrix_dir());
        match std::path::Path::new(&path).exists() {
            true => Ok(Some(Arc::new(precsolve::load_matrix(&path).map_err(err)?))),
            false => Ok(None),
        }
    };
    let (nonsymmetric, wide_rows) = (shared("cavity02")?, shared("bcsstk16")?);
    let mut all: Vec<(&str, &Arc<CsrMatrix>, Params)> = cases.to_vec();
    if let Some(a) = nonsymmetric.as_ref() {
        all.push(("cavity02 (bicgstab only)", a, full(1e-12, 3000)));
    }
    if let Some(a) = wide_rows.as_ref() {
        all.push(("bcsstk16, max_iter 150", a, full(1e-300, 150)));
    }
    for ((graphs, persistent), (label, a, params)) in runs.chain(
        modes
            .into_iter()
            .flat_map(|m| all[cases.len()..].iter().map(move |c| (m, c))),
    ) {
        gpu.set_graphs(graphs);
        gpu.set_persistent(persistent);
        let params = Params {
            record_history: true,
            ..params.clone()
        };
        for (use_cg, ilu) in [(true, false), (true, true), (false, false), (false, true)] {
            if (ilu && label.starts_with("indefinite"))
                || (use_cg && label.contains("bicgstab only"))
            {
                continue;
            }
            let method = if use_cg { "cg" } else { "bicgstab" };
            let label = &format!("{label} graphs {graphs} persistent {persistent:?} {method}");
            let check = |name: &str, g: (SolveInfo, Vec<f64>), c: (SolveInfo, Vec<f64>)| {
                same_history(&format!("{label} {name} ilu {ilu}"), &g.0, &c.0)?;
                same_bits(&format!("{label} {name} solution"), &g.1, &c.1)
            };
            let factors = match ilu {
                // the matrix's own factors, shifted where a pivot would vanish
                true => Some(Arc::new(Ilu0Factors::new(a, Some(1e-8)).map_err(err)?)),
                false => None,
            };
            match factors {
                Some(factors) => {
                    let (g, c) = (
                        Ilu0::new(gpu, &factors).map_err(err)?,
                        Ilu0::new(&cpu, &factors).map_err(err)?,
                    );
                    check(
                        "f64",
                        widen(solve_on::<_, f64, _>(gpu, a, &g, use_cg, &params)?),
                        widen(solve_on::<_, f64, _>(&cpu, a, &c, use_cg, &params)?),
                    )?;
                    check(
                        "dd",
                        widen(solve_on::<_, Dd, _>(gpu, a, &g, use_cg, &params)?),
                        widen(solve_on::<_, Dd, _>(&cpu, a, &c, use_cg, &params)?),
                    )?;
                }
                None => {
                    check(
                        "f64",
                        widen(solve_on::<_, f64, _>(gpu, a, &Identity, use_cg, &params)?),
                        widen(solve_on::<_, f64, _>(&cpu, a, &Identity, use_cg, &params)?),
                    )?;
                    check(
                        "dd",
                        widen(solve_on::<_, Dd, _>(gpu, a, &Identity, use_cg, &params)?),
                        widen(solve_on::<_, Dd, _>(&cpu, a, &Identity, use_cg, &params)?),
                    )?;
                }
            }
        }
    }
    gpu.set_graphs(true);
    gpu.set_persistent(Persistent::from_env());
    Ok(())
}

/// One solve of a concurrent batch: matrix, method, precision, ILU(0) or not.
type Job = (String, Arc<CsrMatrix>, bool, bool, bool);
/// A solve's outcome and its solution as words.
type Solved = (SolveInfo, Vec<f64>);

/// Run `job` on `backend` (f64 where `dd` is false), as words.
fn run_job<B: CgSteps + BicgstabSteps>(
    backend: &B,
    job: &Job,
    params: &Params,
) -> Result<Solved, String> {
    let (_, a, use_cg, dd, ilu) = job;
    let factors = match ilu {
        true => Some(Arc::new(Ilu0Factors::new(a, Some(1e-8)).map_err(err)?)),
        false => None,
    };
    let ilu0 = match &factors {
        Some(f) => Some(Ilu0::new(backend, f).map_err(err)?),
        None => None,
    };
    match (ilu0.as_ref(), dd) {
        (Some(m), true) => Ok(widen(solve_on::<_, Dd, _>(backend, a, m, *use_cg, params)?)),
        (Some(m), false) => Ok(widen(solve_on::<_, f64, _>(
            backend, a, m, *use_cg, params,
        )?)),
        (None, true) => Ok(widen(solve_on::<_, Dd, _>(
            backend, a, &Identity, *use_cg, params,
        )?)),
        (None, false) => Ok(widen(solve_on::<_, f64, _>(
            backend, a, &Identity, *use_cg, params,
        )?)),
    }
}

/// Solves in six threads at once, each on a sibling backend (a stream of its own), as
/// `solver batch --in-flight` runs them: every one identical to the CPU's, point by point.
pub fn concurrent_solves(gpu: &CudaBackend) -> Result<(), String> {
    let mut matrices: Vec<(String, Arc<CsrMatrix>)> = [9, 12, 16, 20]
        .into_iter()
        .map(|n| (format!("poisson3d:{n}"), Arc::new(poisson3d(n))))
        .collect();
    for name in ["1138_bus", "bcsstk16", "cavity02", "sherman5"] {
        let path = format!("{}/{name}.mtx", matrix_dir());
        if std::path::Path::new(&path).exists() {
            matrices.push((
                name.into(),
                Arc::new(precsolve::load_matrix(&path).map_err(err)?),
            ));
        }
    }
    let mut jobs: Vec<Job> = vec![];
    for (name, a) in &matrices {
        for use_cg in [true, false] {
            for dd in [false, true] {
                for ilu in [false, true] {
                    jobs.push((name.clone(), a.clone(), use_cg, dd, ilu));
                }
            }
        }
    }
    let params = Params {
        tol: 1e-12,
        max_iter: 2000,
        record_history: true,
        ..Params::default()
    };
    const THREADS: usize = 6;
    let results: Vec<Result<Vec<(usize, Solved)>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (jobs, params) = (&jobs, &params);
                scope.spawn(move || {
                    let own = gpu.sibling().map_err(err)?;
                    // as `solver batch` runs them (`Lane::own`)
                    own.set_persistent(Persistent::OneBlock);
                    (t..jobs.len())
                        .step_by(THREADS)
                        .map(|i| Ok((i, run_job(&own, &jobs[i], params)?)))
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a solving thread"))
            .collect()
    });
    let cpu = CpuBackend::new();
    let mut compared = 0;
    for result in results {
        for (i, g) in result? {
            let job = &jobs[i];
            let c = run_job(&cpu, job, &params)?;
            let (name, _, use_cg, dd, ilu) = job;
            let label = format!("{name} cg {use_cg} dd {dd} ilu {ilu}");
            same_history(&label, &g.0, &c.0)?;
            same_bits(&format!("{label} solution"), &g.1, &c.1)?;
            compared += 1;
        }
    }
    println!("    {compared} solves in {THREADS} threads at once, each identical to the CPU");
    Ok(())
}

/// A solution as the words of its elements (double-double: both halves).
pub fn widen<P: Precision>((info, x): (SolveInfo, Vec<P>)) -> (SolveInfo, Vec<f64>) {
    let words = x
        .iter()
        .flat_map(|v| {
            let d = v.to_dd();
            [d.hi, d.lo]
        })
        .collect();
    (info, words)
}

/// Outcome, iterations, residuals and every history point the same, bit for bit.
pub fn same_history(label: &str, g: &SolveInfo, c: &SolveInfo) -> Result<(), String> {
    if g.iterations != c.iterations || g.stop_reason != c.stop_reason {
        return Err(format!(
            "{label}: GPU {} iterations ({}), CPU {} ({})",
            g.iterations, g.stop_reason, c.iterations, c.stop_reason
        ));
    }
    if g.history.len() != c.history.len() {
        return Err(format!(
            "{label}: {} history points against {}",
            g.history.len(),
            c.history.len()
        ));
    }
    for (gp, cp) in g.history.iter().zip(&c.history) {
        let bits = |p: &precsolve::solver::HistoryPoint| {
            (
                p.iteration,
                p.half_step,
                p.recurrence_residual.to_bits(),
                p.true_residual.map(f64::to_bits),
            )
        };
        if bits(gp) != bits(cp) {
            return Err(format!("{label}: history point GPU {gp:?}, CPU {cp:?}"));
        }
    }
    if g.true_residual.to_bits() != c.true_residual.to_bits() {
        return Err(format!(
            "{label}: true residual GPU {:e}, CPU {:e}",
            g.true_residual, c.true_residual
        ));
    }
    println!(
        "    {label:>36}: {:>4} iterations ({}), {} history points identical",
        g.iterations,
        g.stop_reason,
        g.history.len()
    );
    Ok(())
}

pub fn solves_poisson(gpu: &CudaBackend) -> Result<(), String> {
    poisson_solves_in_both_layouts(gpu, None)
}

/// CG and BiCGStab on poisson3d:40 in every precision, with `factors` as ILU(0) if given,
/// once with the automatic layout (CSR: fewer rows than the H200 keeps threads) and once
/// with the sliced one forced.
pub fn poisson_solves_in_both_layouts(
    gpu: &CudaBackend,
    factors: Option<&Arc<Ilu0Factors>>,
) -> Result<(), String> {
    let a = Arc::new(poisson3d(40));
    for layout in [None, Some(SpmvLayout::Sell)] {
        gpu.set_spmv_layout(layout);
        let label = format!("poisson3d:40 {layout:?}");
        let result = (|| -> Result<(), String> {
            for use_cg in [true, false] {
                compare_solve::<f64>(gpu, &a, use_cg, &label, factors)?;
                compare_solve::<Dd>(gpu, &a, use_cg, &label, factors)?;
                compare_solve::<Td>(gpu, &a, use_cg, &label, factors)?;
                compare_solve::<Qd>(gpu, &a, use_cg, &label, factors)?;
            }
            Ok(())
        })();
        gpu.set_spmv_layout(None);
        result?;
    }
    Ok(())
}

pub fn solves_shared(gpu: &CudaBackend) -> Result<(), String> {
    shared_solves(gpu, false)
}

/// CG (matrices stored as symmetric) or BiCGStab on ten shared matrices, in f64, dd and td (and
/// qd on `QD_SHARED`), with ILU(0) where `ilu0` (matrices without one are skipped, saying so).
pub fn shared_solves(gpu: &CudaBackend, ilu0: bool) -> Result<(), String> {
    let dir = matrix_dir();
    let names = [
        "bcsstk16", "1138_bus", "nos1", "fs_183_4", "olm500", "rdb200l", "sherman5", "cavity02",
        "e05r0100", "Pd",
    ];
    let mut compared = 0;
    for name in names {
        let path = format!("{dir}/{name}.mtx");
        if !std::path::Path::new(&path).exists() {
            continue;
        }
        let a = Arc::new(precsolve::load_matrix(&path).map_err(err)?);
        let f = match ilu0.then(|| Ilu0Factors::new(&a, None)) {
            None => None,
            Some(Ok(f)) => Some(Arc::new(f)),
            Some(Err(e)) => {
                println!("    {name:>28}: no ILU(0) ({e}), skipped");
                continue;
            }
        };
        compared += 1;
        let use_cg = a.symmetry() == Symmetry::Symmetric;
        compare_solve::<f64>(gpu, &a, use_cg, name, f.as_ref())?;
        compare_solve::<Dd>(gpu, &a, use_cg, name, f.as_ref())?;
        compare_solve::<Td>(gpu, &a, use_cg, name, f.as_ref())?;
        if QD_SHARED.contains(&name) {
            compare_solve::<Qd>(gpu, &a, use_cg, name, f.as_ref())?;
        }
    }
    if compared == 0 {
        let what = if ilu0 {
            "factorable matrices"
        } else {
            "matrices"
        };
        return Err(format!("no {what} found in {dir} (set PRECSOLVE_MATRICES)"));
    }
    Ok(())
}
