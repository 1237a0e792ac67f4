//! `solver bench`: our kernels against cuSPARSE and the measured copy bandwidth, in one process.
//! Each kernel is warmed up, then timed with CUDA events around each of `reps` runs; the median
//! is reported with the minimum bytes the operation must move.

mod cusparse;
mod cusparse_ilu;

use crate::backend::Backend;
use crate::backend::cuda::device::driver_error;
use crate::backend::cuda::{
    CudaBackend, CudaMatrix, CudaVector, IluConfig, IluPlacement, IluSchedule, SpmvLayout,
};
use crate::error::Result;
use crate::precision::{Dd, Precision, Qd, Td};
use crate::precond::ilu0::Ilu0Factors;
use crate::precond::{Identity, Ilu0};
use crate::report::{BenchReport, BenchRow, MatrixSummary};
use crate::solver::{NoMonitor, Params, bicgstab, cg};
use crate::sparse::CsrMatrix;
use cudarc::driver::sys::CUevent_flags;
use cusparse::CusparseSpmv;
use cusparse_ilu::CusparseIlu;
use std::sync::Arc;

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

/// The yardstick: a device-to-device copy of a buffer several times the L2 cache (at least
/// `2 n` doubles). Returns its bandwidth in GB/s and its row.
fn copy_reference(gpu: &CudaBackend, timer: &Timer, n: usize) -> Result<(f64, BenchRow)> {
    let copy_words = (n * 2).max(1 << 26);
    let src = gpu.vector_from_f64::<f64>(&test_vector(copy_words, 1))?;
    let mut dst = gpu.zeros::<f64>(copy_words)?;
    let copy_ms = timer.median_ms(|| gpu.copy(&src, &mut dst))?;
    let bytes = (2 * copy_words * 8) as f64;
    let copy_gbs = bytes / (copy_ms * 1e-3) / 1e9;
    Ok((
        copy_gbs,
        row("copy (reference)", "f64", copy_ms, bytes, copy_gbs),
    ))
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
    // cuSPARSE and the lane sweep read CSR: a CSR copy where the solvers' layout is another
    let mut csr_copy = match ga.layout() {
        SpmvLayout::Csr => None,
        SpmvLayout::Sell => Some(gpu.matrix_with_layout(a, SpmvLayout::Csr)?),
    };

    let (copy_gbs, copy_row) = copy_reference(gpu, &timer, n)?;
    let mut rows = vec![copy_row];

    // SpMV: ours in f64 and DD, cuSPARSE in f64, on the same matrix and x.
    let xh = test_vector(n, 2);
    let x64 = gpu.vector_from_f64::<f64>(&xh)?;
    let xdd = gpu.vector_from_f64::<Dd>(&xh)?;
    let mut y64 = gpu.zeros::<f64>(n)?;
    let mut ydd = gpu.zeros::<Dd>(n)?;
    let mut y_peer = gpu.zeros::<f64>(n)?;
    let mut peer = CusparseSpmv::new(gpu, csr_copy.as_ref().unwrap_or(&ga), &x64, &mut y_peer)?;
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
    if let Some(csr) = &csr_copy {
        // the layout the solvers do not use, for comparison
        let f_ms = timer.median_ms(|| gpu.spmv(csr, &x64, &mut y64))?;
        let d_ms = timer.median_ms(|| gpu.spmv(csr, &xdd, &mut ydd))?;
        for (p, ms, s) in [("f64", f_ms, 8), ("dd", d_ms, 16)] {
            let label = format!("spmv, CSR with NT={}", csr.lanes);
            let mut r = row(&label, p, ms, spmv_bytes(a, s), copy_gbs);
            r.speedup_vs_peer = Some(peer_ms / ms);
            r.peer = Some("cuSPARSE f64".into());
            rows.push(r);
        }
    }
    if sweep_lanes {
        let csr = csr_copy.as_mut().unwrap_or(&mut ga);
        let chosen = csr.lanes;
        for lanes in [1, 2, 4, 8, 16, 32] {
            csr.lanes = lanes;
            let f_ms = timer.median_ms(|| gpu.spmv(csr, &x64, &mut y64))?;
            let d_ms = timer.median_ms(|| gpu.spmv(csr, &xdd, &mut ydd))?;
            for (p, ms, s) in [("f64", f_ms, 8), ("dd", d_ms, 16)] {
                let mut r = row(
                    &format!("spmv, CSR with NT={lanes}"),
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
        csr.lanes = chosen;
    }

    rows.extend(vector_rows::<f64>(
        gpu, &timer, n, copy_gbs, &x64, &mut y64,
    )?);
    rows.extend(vector_rows::<Dd>(gpu, &timer, n, copy_gbs, &xdd, &mut ydd)?);
    if a.nrows() == a.ncols() {
        rows.extend(spmv_dot_rows::<f64>(
            gpu, &timer, &ga, a, &x64, &mut y64, copy_gbs,
        )?);
        rows.extend(spmv_dot_rows::<Dd>(
            gpu, &timer, &ga, a, &xdd, &mut ydd, copy_gbs,
        )?);
    }
    drop((x64, xdd, y64, ydd, y_peer, csr_copy));
    // td and qd (issue #6): SpMV and the vector kernels on values that use the whole format.
    rows.extend(extended_rows::<Td>(
        gpu, &timer, &ga, a, &xh, copy_gbs, peer_ms,
    )?);
    rows.extend(extended_rows::<Qd>(
        gpu, &timer, &ga, a, &xh, copy_gbs, peer_ms,
    )?);

    // Whole iterations through the real solver loops (host clock, as the solver reports them).
    type IterationRow =
        fn(&CudaBackend, &CudaMatrix, &CsrMatrix, bool, usize, f64) -> Result<BenchRow>;
    let precisions: [IterationRow; 4] = [
        iteration_row::<f64>,
        iteration_row::<Dd>,
        iteration_row::<Td>,
        iteration_row::<Qd>,
    ];
    for use_cg in [true, false] {
        for row in precisions {
            rows.push(row(gpu, &ga, a, use_cg, solve_iterations, copy_gbs)?);
        }
    }
    Ok(BenchReport {
        matrix: MatrixSummary::new(name, a),
        device: gpu.device_description(),
        reps,
        copy_gb_per_s: copy_gbs,
        rows,
    })
}

/// `xh` widened to `P` with every component in use (qd: four, td: a full 20-bit `lo`), so no
/// kernel is timed on trailing zeros.
fn full_values<P: Precision>(xh: &[f64]) -> Vec<P> {
    xh.iter()
        .enumerate()
        .map(|(i, &v)| {
            let c = ((i % 7) as f64 - 3.0) * 0.37 + 0.11;
            let q = Qd::from_f64(v)
                .add_f64(v * 1e-17 * c)
                .add_f64(v * 1e-34 * c)
                .add_f64(v * 1e-51 * c);
            match (&q as &dyn std::any::Any).downcast_ref::<P>() {
                Some(p) => p.clone(),
                None => P::from_dd(q.to_dd()),
            }
        })
        .collect()
}

/// SpMV and vector rows for a precision without a cuSPARSE peer of its own.
#[allow(clippy::too_many_arguments)]
fn extended_rows<P: Precision>(
    gpu: &CudaBackend,
    timer: &Timer<'_>,
    ga: &CudaMatrix,
    a: &CsrMatrix,
    xh: &[f64],
    copy_gbs: f64,
    peer_ms: f64,
) -> Result<Vec<BenchRow>> {
    let n = xh.len();
    let x = gpu.upload::<P>(&full_values::<P>(xh))?;
    let mut y = gpu.zeros::<P>(n)?;
    let ms = timer.median_ms(|| gpu.spmv(ga, &x, &mut y))?;
    let mut r = row("spmv", P::NAME, ms, spmv_bytes(a, P::BYTES), copy_gbs);
    r.peer = Some("cuSPARSE f64".into());
    r.speedup_vs_peer = Some(peer_ms / ms);
    let mut rows = vec![r];
    rows.extend(vector_rows::<P>(gpu, timer, n, copy_gbs, &x, &mut y)?);
    Ok(rows)
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

/// CG's `q = A p` with `<p, q>` in the tiled order (result on the host): `spmv` then the dot,
/// and the fused kernel where the matrix gives each row one thread. Bytes: the SpMV's minimum.
fn spmv_dot_rows<P: Precision>(
    gpu: &CudaBackend,
    timer: &Timer<'_>,
    ga: &CudaMatrix,
    a: &CsrMatrix,
    p: &CudaVector<P>,
    q: &mut CudaVector<P>,
    copy_gbs: f64,
) -> Result<Vec<BenchRow>> {
    let bytes = spmv_bytes(a, P::BYTES);
    let separate_ms = timer.median_ms(|| gpu.spmv_dot(ga, p, q, false).map(|_| ()))?;
    let mut rows = vec![row("spmv then dot", P::NAME, separate_ms, bytes, copy_gbs)];
    if ga.lanes != 1 {
        return Ok(rows);
    }
    let ms = timer.median_ms(|| gpu.spmv_dot(ga, p, q, true).map(|_| ()))?;
    let mut r = row("spmv+dot fused", P::NAME, ms, bytes, copy_gbs);
    r.peer = Some("spmv then dot".into());
    r.speedup_vs_peer = Some(separate_ms / ms);
    rows.push(r);
    Ok(rows)
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

/// The ILU(0) rows of `solver bench --precond ilu0`: cuSPARSE's csrilu02 + SpSV against our
/// triangular solves (every schedule we built, checked against the CPU bit for bit), then whole
/// preconditioned CG and BiCGStab iterations in f64 and DD.
pub fn run_ilu0(
    gpu: &CudaBackend,
    name: &str,
    a: &Arc<CsrMatrix>,
    reps: usize,
    solve_iterations: usize,
) -> Result<BenchReport> {
    let timer = Timer { gpu, reps };
    let n = a.nrows();
    let factors = Arc::new(Ilu0Factors::new(a, None)?);
    eprintln!(
        "ILU(0) on the CPU: {:.2} s; L {} levels ({:.0} rows each), U {} levels ({:.0} rows each)",
        factors.setup_seconds(),
        factors.lower_levels().count(),
        factors.lower_levels().mean_width(),
        factors.upper_levels().count(),
        factors.upper_levels().mean_width(),
    );
    let (copy_gbs, copy_row) = copy_reference(gpu, &timer, n)?;
    let mut rows = vec![copy_row];

    // The CPU's answer, the bits every GPU schedule must give.
    let rh = test_vector(n, 3);
    let cpu = crate::backend::cpu::CpuBackend::new();
    let mut cpu_ilu = cpu.ilu(&factors)?;
    let mut z_cpu = cpu.zeros::<f64>(n)?;
    cpu.ilu_apply(&mut cpu_ilu, &cpu.upload(&rh)?, &mut z_cpu)?;
    let z_cpu = z_cpu.to_values();
    let rh_dd: Vec<Dd> = rh
        .iter()
        .enumerate()
        .map(|(i, &v)| Dd::new(v, v * 1e-17 * ((i % 7) as f64 - 3.0)))
        .collect();
    let mut z_cpu_dd = cpu.zeros::<Dd>(n)?;
    cpu.ilu_apply(&mut cpu_ilu, &cpu.upload(&rh_dd)?, &mut z_cpu_dd)?;
    let z_cpu_dd = z_cpu_dd.to_values();
    drop(cpu_ilu);

    let r64 = gpu.vector_from_f64::<f64>(&rh)?;
    let rdd = gpu.upload::<Dd>(&rh_dd)?;
    let mut z64 = gpu.zeros::<f64>(n)?;
    let mut zdd = gpu.zeros::<Dd>(n)?;
    let bytes64 = factors.apply_bytes(8, 8);
    let bytes_dd = factors.apply_bytes(16, 16);

    let mut z_peer = gpu.zeros::<f64>(n)?;
    let peer_ms = match CusparseIlu::new(gpu, a, &factors, &r64, &mut z_peer) {
        Ok(mut peer) => {
            let ms = timer.median_ms(|| peer.run())?;
            let f = peer.agreement;
            let solve_diff = max_relative_difference(&gpu.to_host(&z_peer)?, &z_cpu);
            let mut r = row("ilu0 L+U (cuSPARSE SpSV)", "f64", ms, bytes64, copy_gbs);
            r.peer = Some(format!(
                "csrilu02 {:.2} s; factors: {} of {} entries identical to ours, max rel. diff \
                 {:.1e}; solve max rel. diff from ours {:.1e}",
                peer.factor_seconds, f.identical, f.entries, f.max_relative, solve_diff
            ));
            rows.push(r);
            Some(ms)
        }
        Err(e) => {
            eprintln!("no cuSPARSE peer: {e}");
            None
        }
    };
    drop(z_peer);

    let mut ilu = gpu.ilu(&factors)?;
    let one_block_fits = ilu.fits_one_block();
    let mut variant = |cfg: IluConfig, dd: bool, rows: &mut Vec<BenchRow>| -> Result<f64> {
        ilu.set_config(cfg);
        let label = match cfg.schedule {
            _ if cfg.placement == IluPlacement::Host => "ilu0 on the host (2 copies)".into(),
            IluSchedule::Partitioned => format!(
                "ilu0 parts b{} t{} h{}",
                cfg.block, cfg.threads_per_sm, cfg.hop
            ),
            IluSchedule::SyncFree => format!(
                "ilu0 sync-free b{} t{} s{}",
                cfg.block, cfg.threads_per_sm, cfg.sleep_ns
            ),
            IluSchedule::SyncFreeGpuScope => format!(
                "ilu0 sync-free/gpu b{} t{} s{}",
                cfg.block, cfg.threads_per_sm, cfg.sleep_ns
            ),
            IluSchedule::SyncFreeWarps => format!(
                "ilu0 sync-free/warps b{} t{} s{}",
                cfg.block, cfg.threads_per_sm, cfg.sleep_ns
            ),
            IluSchedule::Levels => format!("ilu0 levels b{}", cfg.block),
            IluSchedule::BySize => "ilu0 by size".into(),
            IluSchedule::OneBlock => format!("ilu0 one block b{} s{}", cfg.block, cfg.sleep_ns),
        };
        let (ms, same, precision, bytes) = if dd {
            gpu.memset_zero(&mut zdd)?;
            let ms = timer.median_ms(|| gpu.ilu_apply(&mut ilu, &rdd, &mut zdd))?;
            (
                ms,
                bits_equal(&gpu.to_host(&zdd)?, &z_cpu_dd),
                "dd",
                bytes_dd,
            )
        } else {
            gpu.memset_zero(&mut z64)?;
            let ms = timer.median_ms(|| gpu.ilu_apply(&mut ilu, &r64, &mut z64))?;
            (ms, bits_equal(&gpu.to_host(&z64)?, &z_cpu), "f64", bytes64)
        };
        let mut r = row(&label, precision, ms, bytes, copy_gbs);
        let check = if same {
            "= CPU bitwise"
        } else {
            "DIFFERS FROM CPU"
        };
        r.peer = Some(match peer_ms {
            Some(_) => format!("{check}; cuSPARSE f64"),
            None => check.into(),
        });
        r.speedup_vs_peer = peer_ms.map(|p| p / ms);
        rows.push(r);
        Ok(ms)
    };
    // Every launch setting we built, in f64; then the default in f64 and dd.
    let mut best = (f64::INFINITY, IluConfig::default());
    // Partitioned: SMs * threads_per_sm / block parts, 132 or 264 on the H200.
    let partitioned = [
        (512, 512, 2),
        (448, 448, 2),
        (384, 384, 2),
        (384, 384, 8),
        (256, 256, 2),
        (256, 512, 2),
    ];
    for (block, threads_per_sm, hop) in partitioned {
        let cfg = IluConfig {
            placement: IluPlacement::Device,
            schedule: IluSchedule::Partitioned,
            block,
            threads_per_sm,
            hop,
            ..IluConfig::default()
        };
        let ms = variant(cfg, false, &mut rows)?;
        if ms < best.0 {
            best = (ms, cfg);
        }
    }
    for schedule in [
        IluSchedule::SyncFree,
        IluSchedule::SyncFreeGpuScope,
        IluSchedule::SyncFreeWarps,
    ] {
        for block in [64, 128, 256] {
            for threads_per_sm in [2048, 1024, 768, 512, 384, 256] {
                for sleep_ns in [0, 200] {
                    let finer = threads_per_sm == 768 || threads_per_sm == 384;
                    let warps = schedule == IluSchedule::SyncFreeWarps;
                    if (sleep_ns > 0 && block != 128) || (finer && (warps || block == 64)) {
                        continue;
                    }
                    if warps && (block != 128 || sleep_ns > 0) {
                        continue;
                    }
                    let cfg = IluConfig {
                        placement: IluPlacement::Device,
                        schedule,
                        block,
                        threads_per_sm,
                        sleep_ns,
                        ..IluConfig::default()
                    };
                    let ms = variant(cfg, false, &mut rows)?;
                    if ms < best.0 {
                        best = (ms, cfg);
                    }
                }
            }
        }
    }
    let levels = |block| IluConfig {
        placement: IluPlacement::Device,
        schedule: IluSchedule::Levels,
        block,
        ..IluConfig::default()
    };
    variant(levels(128), false, &mut rows)?;
    variant(levels(256), false, &mut rows)?;
    let host = IluConfig {
        placement: IluPlacement::Host,
        ..IluConfig::default()
    };
    variant(host, false, &mut rows)?;
    for block in [256, 1024] {
        for sleep_ns in [0, 40] {
            let one_block = IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::OneBlock,
                block,
                sleep_ns,
                ..IluConfig::default()
            };
            if one_block_fits {
                let ms = variant(one_block, false, &mut rows)?;
                if ms < best.0 {
                    best = (ms, one_block);
                }
            }
        }
    }
    eprintln!("fastest setting: {:?}, {:.4} ms", best.1, best.0);
    // The rows below, and the preconditioned iterations, use the fastest setting measured.
    let default = best.1;
    gpu.set_ilu_config(default);
    let ours64 = variant(default, false, &mut rows)?;
    let ours_dd = variant(default, true, &mut rows)?;
    variant(levels(128), true, &mut rows)?;
    drop((ilu, r64, rdd, z64, zdd));
    eprintln!(
        "ours ({default:?}): f64 {ours64:.4} ms, dd {ours_dd:.4} ms{}",
        peer_ms
            .map(|p| format!("; cuSPARSE {p:.4} ms, speedup {:.2}x", p / ours64))
            .unwrap_or_default()
    );

    let ga = gpu.matrix(a)?;
    for use_cg in [true, false] {
        let f = precond_iteration_row::<f64>(gpu, &ga, a, &factors, use_cg, solve_iterations)?;
        let d = precond_iteration_row::<Dd>(gpu, &ga, a, &factors, use_cg, solve_iterations)?;
        let ratio = d.0 / f.0;
        for (p, (ms, share), s) in [("f64", f, 8usize), ("dd", d, 16)] {
            let (n_f, nnz, s_f) = (n as f64, a.nnz() as f64, s as f64);
            let (label, bytes) = if use_cg {
                (
                    "pcg iteration (ilu0)",
                    12.0 * nnz + 8.0 * n_f + 15.0 * s_f * n_f + factors.apply_bytes(s, s),
                )
            } else {
                (
                    "pbicgstab iteration (ilu0)",
                    24.0 * nnz + 16.0 * n_f + 25.0 * s_f * n_f + 2.0 * factors.apply_bytes(s, s),
                )
            };
            let mut r = row(label, p, ms, bytes, copy_gbs);
            r.peer = Some(format!(
                "precond {:.0}% of the iteration; dd/f64 {ratio:.3}",
                100.0 * share
            ));
            rows.push(r);
        }
    }
    Ok(BenchReport {
        matrix: MatrixSummary::new(name, a),
        device: gpu.device_description(),
        reps,
        copy_gb_per_s: copy_gbs,
        rows,
    })
}

fn bits_equal<P: Precision>(a: &[P], b: &[P]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            let (x, y) = (x.to_dd(), y.to_dd());
            x.hi.to_bits() == y.hi.to_bits() && x.lo.to_bits() == y.lo.to_bits()
        })
}

/// Median milliseconds per iteration of preconditioned solves of `iterations` steps through the
/// real loops, and the preconditioner's share of the loop time.
fn precond_iteration_row<P: Precision>(
    gpu: &CudaBackend,
    ga: &CudaMatrix,
    a: &CsrMatrix,
    factors: &Arc<Ilu0Factors>,
    use_cg: bool,
    iterations: usize,
) -> Result<(f64, f64)> {
    let params = Params {
        tol: 1e-300,
        max_iter: iterations,
        ..Params::default()
    };
    let b = gpu.vector_from_f64::<f64>(&vec![1.0; a.nrows()])?;
    let mut per_iteration = Vec::new();
    let mut shares = Vec::new();
    for _ in 0..3 {
        let ilu = Ilu0::new(gpu, factors)?;
        let mut x = gpu.zeros::<P>(a.nrows())?;
        let info = if use_cg {
            cg(gpu, ga, &b, &mut x, &ilu, &params, &mut NoMonitor)?
        } else {
            bicgstab(gpu, ga, &b, &mut x, &ilu, &params, &mut NoMonitor)?
        };
        per_iteration.push(info.time_per_iteration() * 1e3);
        shares.push(ilu.seconds_on(gpu)? / info.times.iterations);
    }
    Ok((median(&mut per_iteration), median(&mut shares)))
}
