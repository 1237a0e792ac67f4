//! `--backend auto`'s cost model against the shared matrices' suite (`solver bench --suite`),
//! replayed from the committed runs: three without a preconditioner and two with ILU(0), in
//! one lease of an H100 and its 16-core host (`benches/results/gpu-suite*.json`,
//! `gpu-suite-runs/`; `gpu-suite.md` says how they ran). Each row carries what the model
//! weighs (rows, nonzeros, longest row, ILU(0)'s levels), so this needs no matrix files.
//!
//! What is asserted, of the solves of enough iterations to time: no pick is twice as slow as
//! the faster backend or worse, nor 1.5 times unless another run measured the picked backend
//! the faster (the runs themselves disagree on the order); at most 2% are more than 10%
//! slower; and on 2,000 rows or more a pick more than 10% slower only where the runs
//! disagree. The lent hosts are shared: the same CPU solve of the same build differed by up
//! to 2.5 times between two leases of an H200 minutes apart, while the three timings of one
//! run agree within 10-40%.

use precsolve::solver::cost::{CostModel, Workload};
use precsolve::solver::dispatch::{Method, WorkingPrecision};
use std::collections::HashMap;

/// (run, preconditioner, JSON, iterations a solve needs to be judged).
const RUNS: [(&str, &str, &str, usize); 5] = [
    (
        "h100-1",
        "none",
        include_str!("../benches/results/gpu-suite.json"),
        100,
    ),
    (
        "h100-2",
        "none",
        include_str!("../benches/results/gpu-suite-runs/h100-none-2.json"),
        100,
    ),
    (
        "h100-3",
        "none",
        include_str!("../benches/results/gpu-suite-runs/h100-none-3.json"),
        100,
    ),
    (
        "h100-1",
        "ilu0",
        include_str!("../benches/results/gpu-suite-ilu0.json"),
        50,
    ),
    (
        "h100-2",
        "ilu0",
        include_str!("../benches/results/gpu-suite-runs/h100-ilu0-2.json"),
        50,
    ),
];

/// One timed solve of one run.
struct Timed {
    run: &'static str,
    solve: String,
    rows: usize,
    gpu: f64,
    cpu: f64,
    picks_gpu: bool,
    why: String,
}

impl Timed {
    fn picked(&self) -> f64 {
        if self.picks_gpu { self.gpu } else { self.cpu }
    }
    fn slower(&self) -> f64 {
        self.picked() / self.gpu.min(self.cpu)
    }
    fn describe(&self) -> String {
        format!(
            "{} ({}): GPU {:.1} us, CPU {:.1} us, {:.2}x slower; {}",
            self.solve,
            self.run,
            self.gpu * 1e6,
            self.cpu * 1e6,
            self.slower(),
            self.why
        )
    }
}

/// The most a solve's repeats on one backend may differ (slowest over fastest) for its
/// timings to judge a pick.
const MAX_SPREAD: f64 = 2.0;

fn timed_solves() -> Vec<Timed> {
    let mut out = Vec::new();
    for (run, precond, json, min_iterations) in RUNS {
        let rows: Vec<serde_json::Value> = serde_json::from_str(json).expect("the suite's JSON");
        for row in rows {
            let (Some(gpu), Some(cpu)) = (
                row["gpu_time_per_iteration"].as_f64(),
                row["cpu_time_per_iteration"].as_f64(),
            ) else {
                continue;
            };
            if (row["iterations"].as_u64().unwrap_or(0) as usize) < min_iterations {
                continue;
            }
            // A solve whose own repeats on one backend differ by more than 2x (slowest over
            // fastest) cannot say which backend is faster: the host was busy with something
            // else (odepa400's f64 CPU timings in the H100 run of c8c07b1: 3.3x apart, its
            // median 44 us where five other runs measured 6-12).
            let spread = |key: &str| row[key].as_f64().unwrap_or(1.0);
            if spread("gpu_spread") > MAX_SPREAD || spread("cpu_spread") > MAX_SPREAD {
                continue;
            }
            let count = |key: &str| row[key].as_u64().expect(key) as usize;
            let workload = Workload {
                rows: count("rows"),
                nnz: count("nnz"),
                precision: match row["precision"].as_str() {
                    Some("f64") => WorkingPrecision::F64,
                    _ => WorkingPrecision::Dd,
                },
                method: match row["method"].as_str() {
                    Some("cg") => Method::Cg,
                    _ => Method::Bicgstab,
                },
                max_row: count("max_row"),
                ilu_levels: (precond == "ilu0").then(|| count("ilu_levels")),
            };
            let (picks_gpu, why) =
                CostModel::measured(count("cpu_threads")).prefers_gpu(&[workload]);
            out.push(Timed {
                run,
                solve: format!(
                    "{} {} {} {precond}",
                    row["matrix"].as_str().expect("matrix"),
                    row["precision"],
                    row["method"]
                ),
                rows: workload.rows,
                gpu,
                cpu,
                picks_gpu,
                why,
            });
        }
    }
    out
}

#[test]
fn auto_picks_the_faster_backend_of_the_suites_runs() {
    let solves = timed_solves();
    let judged = solves.len();
    assert!(judged > 700, "only {judged} solves judged");
    // for each solve, whether some run measured each backend the faster
    let mut faster: HashMap<&str, (bool, bool)> = HashMap::new();
    for t in &solves {
        let seen = faster.entry(t.solve.as_str()).or_default();
        seen.0 |= t.gpu < t.cpu;
        seen.1 |= t.cpu < t.gpu;
    }
    let misses: Vec<&Timed> = solves.iter().filter(|t| t.slower() > 1.10).collect();
    let list = |m: &[&Timed]| {
        m.iter()
            .map(|t| t.describe())
            .collect::<Vec<_>>()
            .join("\n")
    };
    println!(
        "{} of {judged} picks more than 10% slower than the faster backend:\n{}",
        misses.len(),
        list(&misses)
    );
    // whether another run measured the picked backend the faster for this solve
    let disputed = |t: &Timed| {
        let (gpu_won, cpu_won) = faster[t.solve.as_str()];
        if t.picks_gpu { gpu_won } else { cpu_won }
    };
    let far: Vec<&Timed> = misses
        .iter()
        .copied()
        .filter(|t| t.slower() >= 2.0 || (t.slower() >= 1.5 && !disputed(t)))
        .collect();
    assert!(
        far.is_empty(),
        "picks twice as slow, or 1.5 times where every run measured the other backend faster:\n{}",
        list(&far)
    );
    // At most 2% of the picks more than 10% slower: 10 of 758 (1.3%), none 1.25 times slower,
    // for the model refitted to these runs (the GPU's floor that of the kernels that run);
    // the model before, fitted to runs of the step kernels and the persistent kernels before
    // their rows moved to registers, missed 33 of the 543 plain solves, dw2048's f64 BiCGStab
    // 2.1-2.6 times slower on the CPU.
    assert!(
        misses.len() * 1000 <= 20 * judged,
        "{} of {judged} picks more than 10% slower:\n{}",
        misses.len(),
        list(&misses)
    );
    let agreed: Vec<&Timed> = misses
        .iter()
        .copied()
        .filter(|t| t.rows >= 2000 && !disputed(t))
        .collect();
    assert!(
        agreed.is_empty(),
        "on 2,000 rows or more, picks more than 10% slower where every run measured the other \
         backend faster:\n{}",
        list(&agreed)
    );
}
