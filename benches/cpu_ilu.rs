//! ILU(0) on the CPU: one application (`L` then `U` solve) by each schedule, and whole
//! preconditioned CG and BiCGStab iterations in double and double-double, on the 7-point
//! Poisson matrix of a
//! 100^3 grid (1,000,000 rows, 298 levels per triangle, ~3,356 rows per level).
//! Run with `cargo bench --bench cpu_ilu`; results in `benches/results/cpu.md`, where SciPy's
//! `spsolve_triangular` on the same factors (`benches/cpu/scipy_trisolve.py`) is the peer.
//!
//! Bytes of one application: `Ilu0Factors::apply_bytes` (each entry's value and column, the
//! gathered values, row pointers and diagonal positions, the work vector, input and output).

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::backend::cpu::trisolve::{CpuIlu, Schedule};
use precsolve::backend::cpu::{CpuMatrix, CpuVector};
use precsolve::precond::Ilu0;
use precsolve::precond::ilu0::Ilu0Factors;
use precsolve::solver::{Monitor, NoMonitor, Params, SolveInfo, bicgstab, cg};
use precsolve::{Dd, Precision};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

const GRID: usize = 100;

fn input<P: Precision>(n: usize) -> Vec<P> {
    let seven = P::from_f64(7.0);
    (0..n)
        .map(|i| P::from_f64((i % 1000) as f64 + 1.0).div(&seven))
        .collect()
}

fn bench_apply(c: &mut Criterion, f: &Arc<Ilu0Factors>) {
    let n = f.n();
    let mut group = c.benchmark_group("ilu0_apply");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(4))
        .sampling_mode(SamplingMode::Flat);
    let r64: Vec<f64> = input(n);
    let rdd: Vec<Dd> = input(n);
    for (label, schedule) in [
        ("f64_sequential", Schedule::Sequential),
        ("f64_levels", Schedule::Levels),
    ] {
        let mut ilu = CpuIlu::with_schedule(f.clone(), schedule);
        let mut z = vec![0.0; n];
        group.throughput(Throughput::Bytes(f.apply_bytes(8, 8) as u64));
        group.bench_function(label, |b| {
            b.iter(|| {
                ilu.apply::<f64, f64>(black_box(&r64), &mut z);
                black_box(&mut z);
            })
        });
    }
    let mut ilu = CpuIlu::new(f.clone());
    eprintln!("automatic schedule: {:?}", ilu.schedule());
    let mut z = vec![Dd::default(); n];
    group.throughput(Throughput::Bytes(f.apply_bytes(16, 16) as u64));
    group.bench_function("dd_auto", |b| {
        b.iter(|| {
            ilu.apply::<Dd, Dd>(black_box(&rdd), &mut z);
            black_box(&mut z);
        })
    });
    group.finish();
}

/// One of the solver loops, preconditioned by ILU(0), on the CPU.
type Method<P> = fn(
    &CpuBackend,
    &CpuMatrix,
    &CpuVector<f64>,
    &mut CpuVector<P>,
    &Ilu0<CpuBackend>,
    &Params,
    &mut dyn Monitor,
) -> precsolve::Result<SolveInfo>;

/// Iterations of `method` (named `name`: "pcg", "pbicgstab") in `P`, timed by the loop itself.
fn bench_method_one<P: Precision>(
    c: &mut Criterion,
    name: &str,
    method: Method<P>,
    a: &Arc<precsolve::CsrMatrix>,
    f: &Arc<Ilu0Factors>,
) {
    let backend = CpuBackend::new();
    let am = backend.matrix(a).unwrap();
    let b = backend
        .vector_from_f64::<f64>(&vec![1.0; a.nrows()])
        .unwrap();
    let mut group = c.benchmark_group(format!("{name}_iteration"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(6))
        .sampling_mode(SamplingMode::Flat);
    group.bench_function(P::NAME, |bench| {
        bench.iter_custom(|iters| {
            let params = Params {
                max_iter: iters as usize,
                tol: 1e-300,
                ..Default::default()
            };
            let ilu = Ilu0::new(&backend, f).unwrap();
            let mut x = backend.zeros::<P>(a.nrows()).unwrap();
            let t0 = Instant::now();
            let info = method(&backend, &am, &b, &mut x, &ilu, &params, &mut NoMonitor).unwrap();
            if info.iterations < iters as usize {
                // Converged to the last bit before `iters`: time what ran.
                return t0
                    .elapsed()
                    .mul_f64(iters as f64 / info.iterations.max(1) as f64);
            }
            let per_iteration = info.time_per_iteration();
            if iters >= 8 {
                eprintln!(
                    "{} {name}: {} iterations, preconditioner {:.1}% of the loop",
                    P::NAME,
                    info.iterations,
                    100.0 * ilu_share(&info, &ilu)
                );
            }
            Duration::from_secs_f64(per_iteration * iters as f64)
        })
    });
    group.finish();
}

fn ilu_share(info: &precsolve::solver::SolveInfo, ilu: &Ilu0<CpuBackend>) -> f64 {
    use precsolve::precond::Preconditioner;
    Preconditioner::<CpuBackend>::seconds(ilu) / info.times.iterations.max(1e-300)
}

fn bench_all(c: &mut Criterion) {
    let a = Arc::new(precsolve::sparse::poisson3d(GRID));
    let f = Arc::new(Ilu0Factors::new(&a, None).unwrap());
    eprintln!(
        "poisson3d({GRID}): {} rows, {} levels in L (mean width {:.0}), factored in {:.3} s",
        f.n(),
        f.lower_levels().count(),
        f.lower_levels().mean_width(),
        f.setup_seconds()
    );
    bench_apply(c, &f);
    bench_method_one::<f64>(c, "pcg", cg, &a, &f);
    bench_method_one::<Dd>(c, "pcg", cg, &a, &f);
    bench_method_one::<f64>(c, "pbicgstab", bicgstab, &a, &f);
    bench_method_one::<Dd>(c, "pbicgstab", bicgstab, &a, &f);
}

criterion_group!(benches, bench_all);
criterion_main!(benches);
