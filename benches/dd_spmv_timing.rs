//! Best-of-30 timings of the CPU's double-double SpMV and CG step on poisson3d(100), for A/B
//! comparisons of two builds run alternately (criterion compares a run with the previous one,
//! which on this shared machine drifts by 20% within minutes). See `benches/results/cpu.md`.
//!
//!     cargo bench --bench dd_spmv_timing

use precsolve::Dd;
use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::solver::CgKernels;
use std::sync::Arc;
use std::time::Instant;

#[path = "common/vectors.rs"]
mod vectors;
use vectors::test_vector;

/// The shortest of `times`, in milliseconds.
fn best_ms(times: &[f64]) -> f64 {
    times.iter().copied().fold(f64::INFINITY, f64::min) * 1e3
}

fn main() {
    let csr = Arc::new(precsolve::sparse::poisson3d(100));
    let backend = CpuBackend::new();
    let a = backend.matrix(&csr).expect("matrix");
    let n = csr.nrows();
    let p = test_vector::<Dd>(n, 1.0);
    let mut q = backend.zeros::<Dd>(n).expect("q");
    let mut r = test_vector::<Dd>(n, 2.0);
    // A pass over 384 MB between timings evicts the matrix, as a solve's vector updates do.
    let mut big_y = test_vector::<Dd>(8 * n, 4.0);
    let big_x = test_vector::<Dd>(8 * n, 5.0);
    let tiny = Dd::from_f64(1e-9);
    let (mut warm, mut cold, mut step) = (vec![], vec![], vec![]);
    for _ in 0..30 {
        let t = Instant::now();
        backend.spmv(&a, &p, &mut q).expect("spmv");
        warm.push(t.elapsed().as_secs_f64());
        backend.axpy(&tiny, &big_x, &mut big_y).expect("axpy");
        let t = Instant::now();
        backend.spmv(&a, &p, &mut q).expect("spmv");
        cold.push(t.elapsed().as_secs_f64());
        backend.axpy(&tiny, &big_x, &mut big_y).expect("axpy");
        let t = Instant::now();
        backend
            .cg_step(&a, &tiny, &p, &mut q, &mut r)
            .expect("cg_step");
        step.push(t.elapsed().as_secs_f64());
    }
    println!(
        "dd spmv after an spmv {:.3} ms, after a 384 MB pass {:.3} ms; cg_step after a pass {:.3} ms (best of 30, {} threads)",
        best_ms(&warm),
        best_ms(&cold),
        best_ms(&step),
        rayon::current_num_threads()
    );
}
