//! Median timings of the three passes of an unpreconditioned CG iteration on the CPU, in double
//! and double-double, run alternately in one process so that both see the same machine: the SpMV
//! with `<p, q>`, the `r` update with `<r, r>`, and the direction update carrying `x`; then the
//! SpMV and the tiled dot on their own (what the fused pass costs beyond its SpMV). Each pass is
//! reported against the bytes it must move, so the DD/double ratio of every pass can be put
//! beside its bytes ratio ("min": the ratio of the shortest times). See `benches/results/cpu.md`.
//!
//!     cargo bench --bench cg_phase_timing -- [N] [REPEATS]

use precsolve::backend::cpu::{CpuBackend, CpuVector};
use precsolve::backend::{Backend, Operand, TiledDots};
use precsolve::solver::CgKernels;
use precsolve::{Dd, Precision};
use std::sync::Arc;
use std::time::Instant;

#[path = "common/vectors.rs"]
mod vectors;
use vectors::test_vector;

/// One precision's vectors and per-pass times (seconds).
struct Run<P: Precision> {
    p: CpuVector<P>,
    q: CpuVector<P>,
    r: CpuVector<P>,
    x: CpuVector<P>,
    times: [Vec<f64>; 6],
}

impl<P: Precision> Run<P> {
    fn new(n: usize) -> Self {
        Run {
            p: test_vector(n, 1.0),
            q: test_vector(n, 2.0),
            r: test_vector(n, 3.0),
            x: test_vector(n, 4.0),
            times: Default::default(),
        }
    }

    /// One CG iteration, pass by pass, with small coefficients so the values stay put.
    fn iterate(&mut self, backend: &CpuBackend, a: &<CpuBackend as Backend>::Matrix) {
        let tiny = P::from_f64(1e-9);
        let one = P::from_f64(1.0);
        let start = Instant::now();
        backend
            .spmv_dots_tiled(
                a,
                Operand::Own(&self.p),
                TiledDots::With(&self.p),
                &mut self.q,
            )
            .expect("spmv");
        let spmv = Instant::now();
        backend
            .axpy_norm(&tiny.neg(), &self.q, &mut self.r)
            .expect("axpy_norm");
        let update = Instant::now();
        backend
            .cg_direction(&tiny, &self.r, &one, &mut self.p, &mut self.x)
            .expect("direction");
        let end = Instant::now();
        self.times[0].push((spmv - start).as_secs_f64());
        self.times[1].push((update - spmv).as_secs_f64());
        self.times[2].push((end - update).as_secs_f64());
        self.times[3].push((end - start).as_secs_f64());
        // Not part of the iteration: the SpMV and `<p, q>` unfused.
        let t0 = Instant::now();
        backend.spmv(a, &self.p, &mut self.q).expect("spmv");
        let t1 = Instant::now();
        backend.dot_tiled(&self.p, &self.q).expect("dot");
        let t2 = Instant::now();
        self.times[4].push((t1 - t0).as_secs_f64());
        self.times[5].push((t2 - t1).as_secs_f64());
    }
}

/// The median and the shortest of `times`, in milliseconds.
fn median_min_ms(times: &[f64]) -> (f64, f64) {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    (sorted[sorted.len() / 2] * 1e3, sorted[0] * 1e3)
}

fn main() {
    // `cargo bench` adds `--bench`.
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let grid: usize = args.next().map_or(100, |s| s.parse().expect("N"));
    let repeats: usize = args.next().map_or(40, |s| s.parse().expect("REPEATS"));
    let csr = Arc::new(precsolve::sparse::poisson3d(grid));
    let backend = CpuBackend::new();
    let a = backend.matrix(&csr).expect("matrix");
    let (n, nnz) = (csr.nrows(), csr.nnz());
    let mut double = Run::<f64>::new(n);
    let mut dd = Run::<Dd>::new(n);
    for k in 0..repeats + 2 {
        // Alternate which precision goes first; the first two rounds warm up.
        if k % 2 == 0 {
            double.iterate(&backend, &a);
            dd.iterate(&backend, &a);
        } else {
            dd.iterate(&backend, &a);
            double.iterate(&backend, &a);
        }
        if k < 2 {
            double.times.iter_mut().for_each(Vec::clear);
            dd.times.iter_mut().for_each(Vec::clear);
        }
    }
    let names = [
        "spmv + <p,q>",
        "r update + <r,r>",
        "direction + x",
        "iteration",
        "spmv alone",
        "dot_tiled alone",
    ];
    // Bytes each pass must move, per precision size s (as benches/cpu_kernels.rs counts them):
    // the matrix (12 nnz + 8 (n + 1): values, column indices, `usize` row pointers) and p
    // read, q written; q and r read, r written; r, p, x read, p and x written.
    let bytes = |s: usize| -> [usize; 6] {
        let spmv = 12 * nnz + 8 * (n + 1) + 2 * s * n;
        let update = 3 * s * n;
        let direction = 5 * s * n;
        [
            spmv,
            update,
            direction,
            spmv + update + direction,
            spmv,
            2 * s * n,
        ]
    };
    let (b64, bdd) = (bytes(8), bytes(16));
    println!(
        "poisson3d:{grid}, n = {n}, nnz = {nnz}, {} threads, median of {repeats}",
        rayon::current_num_threads()
    );
    println!(
        "{:<18} {:>9} {:>7} {:>9} {:>7} {:>7} {:>7} {:>7}",
        "pass", "f64 ms", "GB/s", "dd ms", "GB/s", "dd/f64", "min", "bytes"
    );
    for i in 0..6 {
        let ((t64, min64), (tdd, mindd)) =
            (median_min_ms(&double.times[i]), median_min_ms(&dd.times[i]));
        println!(
            "{:<18} {:>9.3} {:>7.1} {:>9.3} {:>7.1} {:>7.2} {:>7.2} {:>7.2}",
            names[i],
            t64,
            b64[i] as f64 / t64 / 1e6,
            tdd,
            bdd[i] as f64 / tdd / 1e6,
            tdd / t64,
            mindd / min64,
            bdd[i] as f64 / b64[i] as f64
        );
    }
}
