//! `solver bench`: our kernels against cuSPARSE and the measured copy bandwidth, in one process.
//! Each kernel is warmed up, then timed with CUDA events around each of `reps` runs; the median
//! is reported with the minimum bytes the operation must move.

use super::cusparse::CusparseSpmv;
use super::{CudaBackend, CudaMatrix, CudaVector};
use crate::backend::Backend;
use crate::error::Result;
use crate::precision::{Dd, Precision};
use crate::precond::Identity;
use crate::report::{BenchReport, BenchRow, MatrixSummary};
use crate::solver::{NoMonitor, Params, bicgstab, cg};
use crate::sparse::CsrMatrix;
use cudarc::driver::sys::CUevent_flags;
use std::sync::Arc;

use super::device::driver_error;

const WARMUP: usize = 3;

struct Timer<'a> {
    gpu: &'a CudaBackend,
    reps: usize,
}

impl Timer<'_> {
    /// Median milliseconds of `f` over `reps` event-timed runs after a warm-up.
    fn median_ms(&self, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
        for _ in 0..WARMUP {
            f()?;
        }
        let ctx = self.gpu.context();
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT); // timing enabled
        let start = ctx
            .new_event(flags)
            .map_err(driver_error("creating an event"))?;
        let end = ctx
            .new_event(flags)
            .map_err(driver_error("creating an event"))?;
        let mut times = Vec::with_capacity(self.reps);
        for _ in 0..self.reps {
            start
                .record(self.gpu.stream())
                .map_err(driver_error("recording an event"))?;
            f()?;
            end.record(self.gpu.stream())
                .map_err(driver_error("recording an event"))?;
            end.synchronize()
                .map_err(driver_error("waiting for an event"))?;
            times.push(
                start
                    .elapsed_ms(&end)
                    .map_err(driver_error("reading an event"))? as f64,
            );
        }
        Ok(median(&mut times))
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn row(kernel: &str, precision: &'static str, ms: f64, bytes: f64, copy_gbs: f64) -> BenchRow {
    let gbs = bytes / (ms * 1e-3) / 1e9;
    BenchRow {
        kernel: kernel.into(),
        precision,
        median_ms: ms,
        bytes,
        gb_per_s: gbs,
        fraction_of_copy: gbs / copy_gbs,
        peer: None,
        speedup_vs_peer: None,
    }
}

/// Inputs that are not zeros (timing on zeros flatters nothing but is still wrong).
fn test_vector(n: usize, seed: u64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let h = (i as u64 ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            ((h >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        })
        .collect()
}

fn spmv_bytes(a: &CsrMatrix, s: usize) -> f64 {
    (a.nnz() * 12 + (a.nrows() + 1) * 4 + (a.ncols() + a.nrows()) * s) as f64
}

/// Benchmark the kernels of one matrix. `solve_iterations` sets the length of the timed solves.
/// With `sweep_lanes`, our SpMV is also timed with every lane count NT in 1..=32 (an experiment:
/// the solvers always use `spmv_lanes`, which the CPU shares).
pub fn run(
    gpu: &CudaBackend,
    name: &str,
    a: &Arc<CsrMatrix>,
    reps: usize,
    solve_iterations: usize,
    sweep_lanes: bool,
) -> Result<BenchReport> {
    let timer = Timer { gpu, reps };
    let n = a.nrows();
    let mut ga = gpu.matrix(a)?;

    // Reference: device-to-device copy of a buffer several times the L2 cache.
    let copy_words = (n * 2).max(1 << 26);
    let src = gpu.vector_from_f64::<f64>(&test_vector(copy_words, 1))?;
    let mut dst = gpu.zeros::<f64>(copy_words)?;
    let copy_ms = timer.median_ms(|| gpu.copy(&src, &mut dst))?;
    let copy_gbs = (2 * copy_words * 8) as f64 / (copy_ms * 1e-3) / 1e9;
    drop((src, dst));
    let mut rows = vec![row(
        "copy (reference)",
        "f64",
        copy_ms,
        (2 * copy_words * 8) as f64,
        copy_gbs,
    )];

    // SpMV: ours in f64 and DD, cuSPARSE in f64, on the same matrix and x.
    let xh = test_vector(n, 2);
    let x64 = gpu.vector_from_f64::<f64>(&xh)?;
    let xdd = gpu.vector_from_f64::<Dd>(&xh)?;
    let mut y64 = gpu.zeros::<f64>(n)?;
    let mut ydd = gpu.zeros::<Dd>(n)?;
    let mut y_peer = gpu.zeros::<f64>(n)?;
    let mut peer = CusparseSpmv::new(gpu, &ga, &x64, &mut y_peer)?;
    let peer_ms = timer.median_ms(|| peer.run(gpu))?;
    let ours_ms = timer.median_ms(|| gpu.spmv(&ga, &x64, &mut y64))?;
    let agreement = max_relative_difference(&gpu.to_host(&y64)?, &gpu.to_host(&y_peer)?);
    let dd_ms = timer.median_ms(|| gpu.spmv(&ga, &xdd, &mut ydd))?;
    let mut r = row(
        "spmv (cuSPARSE)",
        "f64",
        peer_ms,
        spmv_bytes(a, 8),
        copy_gbs,
    );
    r.peer = Some(format!("max relative difference from ours {agreement:.1e}"));
    rows.push(r);
    let mut r = row("spmv", "f64", ours_ms, spmv_bytes(a, 8), copy_gbs);
    r.peer = Some("cuSPARSE f64".into());
    r.speedup_vs_peer = Some(peer_ms / ours_ms);
    rows.push(r);
    let mut r = row("spmv", "dd", dd_ms, spmv_bytes(a, 16), copy_gbs);
    r.peer = Some("cuSPARSE f64".into());
    r.speedup_vs_peer = Some(peer_ms / dd_ms);
    rows.push(r);
    drop(peer);
    if sweep_lanes {
        let chosen = ga.lanes;
        for lanes in [1, 2, 4, 8, 16, 32] {
            ga.lanes = lanes;
            let f_ms = timer.median_ms(|| gpu.spmv(&ga, &x64, &mut y64))?;
            let d_ms = timer.median_ms(|| gpu.spmv(&ga, &xdd, &mut ydd))?;
            for (p, ms, s) in [("f64", f_ms, 8), ("dd", d_ms, 16)] {
                let mut r = row(
                    &format!("spmv with NT={lanes}"),
                    p,
                    ms,
                    spmv_bytes(a, s),
                    copy_gbs,
                );
                r.speedup_vs_peer = Some(peer_ms / ms);
                r.peer = Some("cuSPARSE f64".into());
                rows.push(r);
            }
        }
        ga.lanes = chosen;
    }

    rows.extend(vector_rows::<f64>(
        gpu, &timer, n, copy_gbs, &x64, &mut y64,
    )?);
    rows.extend(vector_rows::<Dd>(gpu, &timer, n, copy_gbs, &xdd, &mut ydd)?);
    drop((x64, xdd, y64, ydd, y_peer));

    // Whole iterations through the real solver loops (host clock, as the solver reports them).
    for use_cg in [true, false] {
        rows.push(iteration_row::<f64>(
            gpu,
            &ga,
            a,
            use_cg,
            solve_iterations,
            copy_gbs,
        )?);
        rows.push(iteration_row::<Dd>(
            gpu,
            &ga,
            a,
            use_cg,
            solve_iterations,
            copy_gbs,
        )?);
    }
    Ok(BenchReport {
        matrix: MatrixSummary::new(name, a),
        device: gpu.device_description(),
        reps,
        copy_gb_per_s: copy_gbs,
        rows,
    })
}

fn vector_rows<P: Precision>(
    gpu: &CudaBackend,
    timer: &Timer<'_>,
    n: usize,
    copy_gbs: f64,
    x: &CudaVector<P>,
    y: &mut CudaVector<P>,
) -> Result<Vec<BenchRow>> {
    let s = P::BYTES;
    let alpha = P::from_f64(1e-3);
    let axpy_ms = timer.median_ms(|| gpu.axpy(&alpha, x, y))?;
    let xpay_ms = timer.median_ms(|| gpu.xpay(x, &alpha, y))?;
    let dot_ms = timer.median_ms(|| gpu.dot(x, y).map(|_| ()))?;
    Ok(vec![
        row("axpy", P::NAME, axpy_ms, (3 * n * s) as f64, copy_gbs),
        row("xpay", P::NAME, xpay_ms, (3 * n * s) as f64, copy_gbs),
        row(
            "dot (incl. result to host)",
            P::NAME,
            dot_ms,
            (2 * n * s) as f64,
            copy_gbs,
        ),
    ])
}

fn iteration_row<P: Precision>(
    gpu: &CudaBackend,
    ga: &CudaMatrix,
    a: &CsrMatrix,
    use_cg: bool,
    iterations: usize,
    copy_gbs: f64,
) -> Result<BenchRow> {
    // tol below any attainable residual, so every run does exactly `iterations` steps.
    let params = Params {
        tol: 1e-300,
        max_iter: iterations,
        ..Params::default()
    };
    let b = gpu.vector_from_f64::<f64>(&vec![1.0; a.nrows()])?;
    let mut per_iteration = Vec::new();
    for _ in 0..3 {
        let mut x = gpu.zeros::<P>(a.nrows())?;
        let info = if use_cg {
            cg(gpu, ga, &b, &mut x, &Identity, &params, &mut NoMonitor)?
        } else {
            bicgstab(gpu, ga, &b, &mut x, &Identity, &params, &mut NoMonitor)?
        };
        per_iteration.push(info.time_per_iteration() * 1e3);
    }
    let (s, n, nnz) = (P::BYTES as f64, a.nrows() as f64, a.nnz() as f64);
    // Bytes per iteration from the loops' own accounting (src/solver/cg.rs, bicgstab.rs).
    let (label, bytes) = if use_cg {
        ("cg iteration", 12.0 * nnz + 8.0 * n + 13.0 * s * n)
    } else {
        ("bicgstab iteration", 24.0 * nnz + 16.0 * n + 25.0 * s * n)
    };
    Ok(row(
        label,
        P::NAME,
        median(&mut per_iteration),
        bytes,
        copy_gbs,
    ))
}

fn max_relative_difference(a: &[f64], b: &[f64]) -> f64 {
    let scale = b
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}
