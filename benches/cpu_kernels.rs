//! CPU kernel throughput on the 7-point Poisson matrix of a 100^3 grid (1,000,000 rows,
//! ~6.94 M nonzeros), in double, double-double and triple (td), plus the machine's copy bandwidth as the
//! yardstick. Run with `cargo bench --bench cpu_kernels`; results are written up in
//! `benches/results/cpu.md`.
//!
//! Every throughput is the *minimum* traffic of the operation (each array read or written once,
//! no cache misses counted twice), so `bytes / time` compared with the copy bandwidth says how
//! close to memory-bound an operation runs:
//! - SpMV `y <- A x`: `12 nnz + 8 (n + 1)` (values, column indices, row pointers) plus
//!   `s (ncols + nrows)` (`x` once, `y` once), `s` = bytes per element.
//! - dot: `2 s n`; axpy: `3 s n` (read `x`, read and write `y`).
//! - one CG iteration (per `solver/cg.rs`): SpMV + `<p, q>` + the `x` update + the `r` update
//!   fused with `<r, r>` + xpay = `12 nnz + 8 (n + 1) + 13 s n`.
//! - copy: `2 * 64 MB` (read once, written once).
//!
//! The CG iteration runs the real `solver::cg` with `tol = 1e-300` (never converges) for as many
//! iterations as criterion asks for, and reports the loop time only
//! (`SolveInfo::times.iterations`: setup, allocation and the final true residual are excluded).

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use precsolve::backend::Backend;
use precsolve::backend::cpu::{CpuBackend, CpuMatrix, CpuVector};
use precsolve::precision::Td;
use precsolve::precond::Identity;
use precsolve::solver::{NoMonitor, Params, cg};
use precsolve::{CsrMatrix, Dd, Precision};
use rayon::prelude::*;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/vectors.rs"]
mod vectors;
use vectors::test_vector;

/// Grid side of the benchmark problem: 100^3 = 1,000,000 unknowns.
const GRID: usize = 100;
/// Bytes per buffer of the copy-bandwidth reference.
const COPY_BYTES: usize = 64 << 20;

struct Problem {
    backend: CpuBackend,
    a: CpuMatrix,
    n: usize,
    nnz: usize,
    b: CpuVector<f64>,
}

impl Problem {
    fn new() -> Self {
        let csr = Arc::new(precsolve::sparse::poisson3d(GRID));
        let backend = CpuBackend::new();
        let a = backend.matrix(&csr).expect("matrix");
        let (n, nnz) = (csr.nrows(), csr.nnz());
        Problem {
            backend,
            a,
            n,
            nnz,
            b: CpuVector::from(vec![1.0; n]),
        }
    }

    fn csr(&self) -> &CsrMatrix {
        &self.a.csr
    }
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(4))
        .warm_up_time(Duration::from_secs(1))
        .sampling_mode(SamplingMode::Flat);
}

fn bench_copy(c: &mut Criterion) {
    let mut group = c.benchmark_group("copy");
    configure(&mut group);
    let src = vec![1.0f64; COPY_BYTES / 8];
    let mut dst = vec![0.0f64; COPY_BYTES / 8];
    let half = src.len() / 2;
    group.throughput(Throughput::Bytes(2 * COPY_BYTES as u64));
    group.bench_function("64MB_2threads", |bench| {
        bench.iter(|| {
            dst.par_chunks_mut(half)
                .zip(src.par_chunks(half))
                .for_each(|(d, s)| d.copy_from_slice(s));
            black_box(&mut dst);
        })
    });
    group.finish();
}

fn spmv_bytes<P: Precision>(p: &Problem) -> u64 {
    let csr = p.csr();
    (12 * p.nnz + 8 * (p.n + 1) + P::BYTES * (csr.ncols() + csr.nrows())) as u64
}

fn bench_spmv_one<P: Precision>(group: &mut BenchmarkGroup<'_, WallTime>, p: &Problem) {
    let x: CpuVector<P> = test_vector(p.n, 1.0);
    let mut y = p.backend.zeros::<P>(p.n).unwrap();
    group.throughput(Throughput::Bytes(spmv_bytes::<P>(p)));
    group.bench_function(P::NAME, |bench| {
        bench.iter(|| p.backend.spmv(&p.a, black_box(&x), &mut y).unwrap())
    });
}

fn bench_dot_one<P: Precision>(group: &mut BenchmarkGroup<'_, WallTime>, p: &Problem) {
    let x: CpuVector<P> = test_vector(p.n, 1.0);
    let y: CpuVector<P> = test_vector(p.n, 2.0);
    group.throughput(Throughput::Bytes((2 * p.n * P::BYTES) as u64));
    group.bench_function(P::NAME, |bench| {
        bench.iter(|| black_box(p.backend.dot(black_box(&x), black_box(&y)).unwrap()))
    });
}

fn bench_axpy_one<P: Precision>(group: &mut BenchmarkGroup<'_, WallTime>, p: &Problem) {
    let x: CpuVector<P> = test_vector(p.n, 1.0);
    let mut y: CpuVector<P> = test_vector(p.n, 2.0);
    // |alpha| < 1 and alternating sign keep y bounded however often the kernel runs.
    let alpha = P::from_f64(-1.0).div(&P::from_f64(3.0));
    group.throughput(Throughput::Bytes((3 * p.n * P::BYTES) as u64));
    group.bench_function(P::NAME, |bench| {
        bench.iter(|| {
            p.backend.axpy(&alpha, black_box(&x), &mut y).unwrap();
            black_box(&mut y);
        })
    });
}

fn bench_cg_one<P: Precision>(group: &mut BenchmarkGroup<'_, WallTime>, p: &Problem) {
    let bytes = 12 * p.nnz + 8 * (p.n + 1) + 13 * P::BYTES * p.n;
    let params = Params {
        max_iter: 1,
        tol: 1e-300,
        ..Default::default()
    };
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(P::NAME, |bench| {
        bench.iter_custom(|iters| {
            let params = Params {
                max_iter: iters as usize,
                ..params.clone()
            };
            let mut x = p.backend.zeros::<P>(p.n).unwrap();
            let t0 = Instant::now();
            let info = cg(
                &p.backend,
                &p.a,
                &p.b,
                &mut x,
                &Identity,
                &params,
                &mut NoMonitor,
            )
            .unwrap();
            assert_eq!(info.iterations, iters as usize, "{:?}", info.stop_reason);
            // Loop time only; fall back on the wall time if the solver reported none.
            let per_iteration = info.time_per_iteration();
            if per_iteration > 0.0 {
                Duration::from_secs_f64(per_iteration * iters as f64)
            } else {
                t0.elapsed()
            }
        })
    });
}

fn bench_kernels(c: &mut Criterion) {
    let p = Problem::new();

    let mut group = c.benchmark_group("spmv");
    configure(&mut group);
    bench_spmv_one::<f64>(&mut group, &p);
    bench_spmv_one::<Dd>(&mut group, &p);
    bench_spmv_one::<Td>(&mut group, &p);
    group.finish();

    let mut group = c.benchmark_group("dot");
    configure(&mut group);
    bench_dot_one::<f64>(&mut group, &p);
    bench_dot_one::<Dd>(&mut group, &p);
    bench_dot_one::<Td>(&mut group, &p);
    group.finish();

    let mut group = c.benchmark_group("axpy");
    configure(&mut group);
    bench_axpy_one::<f64>(&mut group, &p);
    bench_axpy_one::<Dd>(&mut group, &p);
    bench_axpy_one::<Td>(&mut group, &p);
    group.finish();

    let mut group = c.benchmark_group("cg_iteration");
    configure(&mut group);
    bench_cg_one::<f64>(&mut group, &p);
    bench_cg_one::<Dd>(&mut group, &p);
    bench_cg_one::<Td>(&mut group, &p);
    group.finish();
}

criterion_group!(benches, bench_copy, bench_kernels);
criterion_main!(benches);
