//! BiCGStab's shadow residual and restarts across a folder of matrices: for each matrix, each
//! shadow choice (`r0`, `random`; `rhs` equals `r0` with `x0 = 0`) and f64 and dd, whether the
//! solve reached the tolerance by its true residual, its iterations and restarts, and the
//! same without restarts. Feeds `benches/results/bicgstab-shadow.md`.
//!
//!     cargo bench --bench bicgstab_shadow -- ../shared/matrices [TOL] [MAX_ITER]

use precsolve::precond::Preconditioning;
use precsolve::solver::bicgstab::Shadow;
use precsolve::solver::dispatch::{
    BackendChoice, Method, Problem, Recipe, WorkingPrecision, solve,
};
use precsolve::solver::{NoMonitor, Params};
use std::sync::Arc;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let dir = args.first().map_or("../shared/matrices", String::as_str);
    let tol: f64 = args.get(1).map_or(1e-8, |t| t.parse().expect("TOL"));
    let max_iter: usize = args.get(2).map_or(10_000, |t| t.parse().expect("MAX_ITER"));
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("a folder of .mtx files")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mtx"))
        .collect();
    paths.sort();
    println!(
        "matrix,rows,precision,shadow,max_restarts,solved,iterations,restarts,stop,true_residual"
    );
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let Ok(a) = precsolve::load_matrix(&path.to_string_lossy()) else {
            continue;
        };
        let rows = a.nrows();
        let Ok(problem) = Problem::new(Arc::new(a), None, None) else {
            continue;
        };
        for precision in [WorkingPrecision::F64, WorkingPrecision::Dd] {
            for (shadow, max_restarts) in [
                (Shadow::R0, 0),
                (Shadow::R0, 5),
                (Shadow::Random, 0),
                (Shadow::Random, 5),
            ] {
                let params = Params {
                    tol,
                    max_iter,
                    shadow,
                    max_restarts,
                    time_limit: Some(Duration::from_secs(20)),
                    ..Params::default()
                };
                let recipe = Recipe {
                    method: Method::Bicgstab,
                    precision,
                    precond: &Preconditioning::None,
                };
                let Ok(s) = solve(
                    &problem,
                    BackendChoice::Cpu,
                    recipe,
                    &params,
                    &mut NoMonitor,
                ) else {
                    continue;
                };
                let i = &s.info;
                let solved = i.stop_reason.converged() && i.true_residual <= tol;
                println!(
                    "{name},{rows},{},{},{max_restarts},{solved},{},{},{},{:e}",
                    precision.name(),
                    shadow.name(),
                    i.iterations,
                    i.restarts,
                    i.stop_reason,
                    i.true_residual
                );
            }
        }
    }
}
