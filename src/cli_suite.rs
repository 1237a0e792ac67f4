//! `solver bench --suite DIR`: per-iteration time on the GPU and on the CPU backend (all this
//! host's cores) of every matrix of a folder, in f64 and dd, with the method `auto` picks, what
//! `--backend auto` would choose, and CuPy's `cg`/`bicgstab` where CuPy is present: the table on
//! stdout, and with `--json FILE` one object per matrix, precision, method and preconditioner.

use anyhow::Context as _;
use precsolve::precond::ilu0::IluShift;
use precsolve::precond::{PrecondKind, Preconditioning};
use precsolve::solver::NoMonitor;
use precsolve::solver::Params;
use precsolve::solver::dispatch::{
    BackendChoice, Method, Problem, Recipe, ResolvedBackend, WorkingPrecision, solve,
};
use precsolve::sparse::{ReadLimits, load_matrix_with};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

/// One row of the suite.
#[derive(Serialize)]
pub struct SuiteRow {
    pub matrix: String,
    pub rows: usize,
    pub nnz: usize,
    pub precision: &'static str,
    pub method: &'static str,
    pub precond: &'static str,
    /// Seconds an iteration.
    pub gpu_time_per_iteration: Option<f64>,
    pub cpu_time_per_iteration: Option<f64>,
    pub cupy_time_per_iteration: Option<f64>,
    /// Iterations timed (fewer than asked where a solve stopped early).
    pub iterations: usize,
    /// Solves timed on each backend, alternated GPU then CPU (the times are their medians),
    /// and each backend's spread: its slowest solve over its fastest.
    pub repeats: usize,
    pub gpu_spread: Option<f64>,
    pub cpu_spread: Option<f64>,
    /// What the cost model of `--backend auto` weighs beside rows and nonzeros: the longest
    /// row, and ILU(0)'s levels (both triangles).
    pub max_row: usize,
    pub ilu_levels: Option<usize>,
    /// What `--backend auto` picks for it.
    pub auto: &'static str,
    pub card: String,
    pub cpu_threads: usize,
}

/// CuPy's solvers timed on the matrices (one Python process for them all), where CuPy imports.
const CUPY_SCRIPT: &str = include_str!("../benches/gpu/cupy_suite.py");

/// The median of `times` (the upper one of an even count) and the slowest over the fastest;
/// `None` where a solve failed.
fn median_and_spread(times: Vec<Option<f64>>) -> (Option<f64>, Option<f64>) {
    let Some(mut times) = times.into_iter().collect::<Option<Vec<f64>>>() else {
        return (None, None);
    };
    if times.is_empty() {
        return (None, None);
    }
    times.sort_by(f64::total_cmp);
    let (median, fastest, slowest) = (times[times.len() / 2], times[0], times[times.len() - 1]);
    (Some(median), Some(slowest / fastest))
}

/// Seconds an iteration of `solve` on `backend` (`None` where it failed or did no iteration).
fn time_per_iteration(
    problem: &Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
) -> (Option<f64>, usize) {
    match solve(problem, backend, recipe, params, &mut NoMonitor) {
        Ok(s) if s.info.iterations > 0 => (
            Some(s.info.times.iterations / s.info.iterations as f64),
            s.info.iterations,
        ),
        Ok(_) => (None, 0),
        Err(e) => {
            log::warn!("{}: {e}", problem.a.nrows());
            (None, 0)
        }
    }
}

pub fn run(
    dir: &Path,
    iterations: usize,
    repeats: usize,
    precond: PrecondKind,
    card: &str,
    limits: &ReadLimits,
) -> anyhow::Result<Vec<SuiteRow>> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "mtx"))
        .collect();
    paths.sort();
    let params = Params {
        tol: 1e-300,
        max_iter: iterations,
        ..Params::default()
    };
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();
    let mut cupy_jobs = Vec::new();
    for path in &paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let a = match load_matrix_with(&path.to_string_lossy(), limits) {
            Ok(a) if a.is_square() => Arc::new(a),
            Ok(_) => continue,
            Err(e) => {
                log::warn!("{}: {e}", path.display());
                continue;
            }
        };
        let problem = Problem::new(a.clone(), None, None)?;
        let method = Method::Auto.resolve(&a);
        let prepared = match Preconditioning::prepare(precond, &a, IluShift::None, method) {
            Ok(p) => p,
            Err(e) => {
                log::warn!("{name}: {e}");
                continue;
            }
        };
        for precision in [WorkingPrecision::F64, WorkingPrecision::Dd] {
            let recipe = Recipe {
                method,
                precision,
                precond: &prepared,
            };
            let (auto, _) =
                BackendChoice::Auto.resolve_for_problem(&a, method, &prepared, &[precision])?;
            // alternated, so that a slow spell of the host weighs on both backends alike
            let (mut gpu, mut cpu, mut g_it, mut c_it) = (Vec::new(), Vec::new(), 0, 0);
            for _ in 0..repeats.max(1) {
                let (t, it) = time_per_iteration(&problem, BackendChoice::Cuda, recipe, &params);
                gpu.push(t);
                g_it = it;
                let (t, it) = time_per_iteration(&problem, BackendChoice::Cpu, recipe, &params);
                cpu.push(t);
                c_it = it;
            }
            let ((gpu, gpu_spread), (cpu, cpu_spread)) =
                (median_and_spread(gpu), median_and_spread(cpu));
            if precision == WorkingPrecision::F64 && precond == PrecondKind::None {
                cupy_jobs.push((rows.len(), path.clone(), method, g_it.max(c_it)));
            }
            rows.push(SuiteRow {
                matrix: name.clone(),
                rows: a.nrows(),
                nnz: a.nnz(),
                precision: precision.name(),
                method: method.name(),
                precond: precond.name(),
                gpu_time_per_iteration: gpu,
                cpu_time_per_iteration: cpu,
                cupy_time_per_iteration: None,
                iterations: g_it.max(c_it),
                repeats: repeats.max(1),
                gpu_spread,
                cpu_spread,
                max_row: a.nnz_per_row_max(),
                ilu_levels: prepared.ilu_levels(),
                auto: match auto {
                    ResolvedBackend::Cpu => "cpu",
                    #[cfg(feature = "cuda")]
                    ResolvedBackend::Cuda => "cuda",
                },
                card: card.to_string(),
                cpu_threads: threads,
            });
        }
    }
    for (row, seconds) in cupy(&cupy_jobs) {
        rows[row].cupy_time_per_iteration = Some(seconds);
    }
    Ok(rows)
}

/// CuPy's seconds an iteration for each job, through one `python3` process; nothing where
/// CuPy does not import (a note on stderr says so).
fn cupy(jobs: &[(usize, std::path::PathBuf, Method, usize)]) -> Vec<(usize, f64)> {
    use std::io::Write as _;
    let mut input = String::new();
    for (_, path, method, iterations) in jobs {
        if *iterations > 0 {
            input.push_str(&format!(
                "{}\t{}\t{}\n",
                path.display(),
                method.name(),
                iterations
            ));
        }
    }
    let child = std::process::Command::new("python3")
        .args(["-c", CUPY_SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("bench --suite: no python3, so no CuPy column");
        return Vec::new();
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let Ok(out) = child.wait_with_output() else {
        return Vec::new();
    };
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "bench --suite: no CuPy column ({})",
            why.lines().last().unwrap_or("python3 failed")
        );
        return Vec::new();
    }
    let by_path: std::collections::HashMap<String, f64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (path, seconds) = l.split_once('\t')?;
            Some((path.to_string(), seconds.trim().parse().ok()?))
        })
        .collect();
    jobs.iter()
        .filter_map(|(row, path, _, _)| {
            by_path.get(&path.display().to_string()).map(|&s| (*row, s))
        })
        .collect()
}

/// The table: one line per row, times in microseconds, GPU/CPU ratio.
pub fn table(rows: &[SuiteRow]) -> String {
    let us = |t: Option<f64>| t.map_or("-".to_string(), |t| format!("{:.1}", t * 1e6));
    let mut out = format!(
        "{:<18} {:>8} {:>9} {:<4} {:<8} {:<6} {:>9} {:>9} {:>9} {:>7} {:<5}\n",
        "matrix",
        "rows",
        "nnz",
        "prec",
        "method",
        "precond",
        "GPU us",
        "CPU us",
        "CuPy us",
        "CPU/GPU",
        "auto"
    );
    for r in rows {
        let ratio = match (r.gpu_time_per_iteration, r.cpu_time_per_iteration) {
            (Some(g), Some(c)) => format!("{:.2}", c / g),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "{:<18} {:>8} {:>9} {:<4} {:<8} {:<6} {:>9} {:>9} {:>9} {:>7} {:<5}\n",
            r.matrix,
            r.rows,
            r.nnz,
            r.precision,
            r.method,
            r.precond,
            us(r.gpu_time_per_iteration),
            us(r.cpu_time_per_iteration),
            us(r.cupy_time_per_iteration),
            ratio,
            r.auto
        ));
    }
    out
}
