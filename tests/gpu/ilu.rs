//! ILU(0) on the GPU against the CPU: every schedule of the triangular solves, then
//! preconditioned solves.

use super::common::*;
use super::solves::{poisson_solves_in_both_layouts, shared_solves};
use precsolve::backend::Backend;
use precsolve::backend::cpu::{CpuBackend, CpuVector};
use precsolve::backend::cuda::CudaBackend;
use precsolve::backend::cuda::{IluConfig, IluPlacement, IluSchedule};
use precsolve::precision::Td;
use precsolve::precond::ilu0::Ilu0Factors;
use precsolve::sparse::{CsrMatrix, Symmetry, poisson3d};
use precsolve::{Dd, Precision, Qd};
use std::sync::Arc;

/// A square matrix whose ILU(0) exists: `random_matrix`'s pattern plus every diagonal
/// entry, made strictly diagonally dominant.
fn dominant_matrix(rng: &mut Rng, n: usize, mean: f64) -> CsrMatrix {
    let r = random_matrix(rng, n, mean);
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        let (c, v) = r.row(i);
        let mut sum = 0.0;
        for (&j, &x) in c.iter().zip(v) {
            if j as usize != i {
                rows.push(i as u32);
                cols.push(j as u32);
                vals.push(x);
                sum += x.abs();
            }
        }
        rows.push(i as u32);
        cols.push(i as u32);
        vals.push((1.0 + sum) * if rng.below(2) == 0 { 1.0 } else { -1.0 });
    }
    CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
}

/// Tridiagonal with a random dominant diagonal: one dependency chain of `n` rows in each
/// triangle, so every warp of the sync-free solve waits on its own lanes.
fn chain_matrix(rng: &mut Rng, n: usize, lower_only: bool) -> CsrMatrix {
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        if i > 0 {
            rows.push(i as u32);
            cols.push(i as u32 - 1);
            vals.push(rng.value());
        }
        rows.push(i as u32);
        cols.push(i as u32);
        vals.push(4000.0 + rng.value().abs());
        if i + 1 < n && !lower_only {
            rows.push(i as u32);
            cols.push(i as u32 + 1);
            vals.push(rng.value());
        }
    }
    CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
}

fn diagonal_matrix(rng: &mut Rng, n: usize) -> CsrMatrix {
    let idx: Vec<u32> = (0..n as u32).collect();
    let vals: Vec<f64> = (0..n).map(|_| 1.0 + rng.value().abs()).collect();
    CsrMatrix::from_coo(n, n, &idx, &idx, &vals, Symmetry::General).unwrap()
}

/// GPU `ilu_apply` against the CPU's, bit for bit, with `r` changing between applications
/// (the generation flags must not let one solve read the last one's values).
fn ilu_apply_for<P: Precision>(
    gpu: &CudaBackend,
    rng: &mut Rng,
    label: &str,
    factors: &Arc<Ilu0Factors>,
    config: IluConfig,
) -> Result<(), String> {
    let cpu = CpuBackend::new();
    let n = factors.n();
    let mut g = gpu.ilu(factors).map_err(err)?;
    g.set_config(config);
    let mut c = cpu.ilu(factors).map_err(err)?;
    let mut gz = gpu.zeros::<P>(n).map_err(err)?;
    let mut cz = cpu.zeros::<P>(n).map_err(err)?;
    let mut gz64 = gpu.zeros::<f64>(n).map_err(err)?;
    let mut cz64 = cpu.zeros::<f64>(n).map_err(err)?;
    for round in 0..3 {
        let r: Vec<P> = random_vec(rng, n);
        let (gr, cr) = (upload(gpu, &r)?, CpuVector::from(r));
        gpu.ilu_apply(&mut g, &gr, &mut gz).map_err(err)?;
        cpu.ilu_apply(&mut c, &cr, &mut cz).map_err(err)?;
        same_bits(
            &format!("ilu_apply {label} {config:?} round {round}"),
            &gpu.to_host(&gz).map_err(err)?,
            &cz.to_values(),
        )?;
        // The result kept in double (CG's z): the same values before the widening.
        gpu.ilu_apply(&mut g, &gr, &mut gz64).map_err(err)?;
        cpu.ilu_apply(&mut c, &cr, &mut cz64).map_err(err)?;
        let z64 = gpu.to_host(&gz64).map_err(err)?;
        same_bits(
            &format!("ilu_apply to f64 {label} {config:?} round {round}"),
            &z64,
            &cz64.to_values(),
        )?;
        let widened: Vec<P> = z64.iter().map(|&v| P::from_f64(v)).collect();
        same_bits(
            &format!("ilu_apply to f64 {label} {config:?} round {round}, widened"),
            &widened,
            &cz.to_values(),
        )?;
    }
    Ok(())
}

/// Parts of ~4500 rows with one part per SM (132 on the H200): levels wider than the
/// partitioned kernel's shared window of 4096 results, and dependencies inside a part but
/// behind the window (read from L2). Only the partitioned schedule runs on it.
const BIG_CASE: &str = "random n=600000 mean=3";

pub fn ilu_apply(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_0005);
    let mut cases: Vec<(String, CsrMatrix)> =
        vec![(BIG_CASE.into(), dominant_matrix(&mut rng, 600_000, 3.0))];
    for (n, mean) in [
        (1000, 0.5),
        (4099, 3.0),
        (3000, 6.0),
        (2049, 12.0),
        (777, 40.0),
    ] {
        cases.push((
            format!("random n={n} mean={mean}"),
            dominant_matrix(&mut rng, n, mean),
        ));
    }
    cases.push((
        "tridiagonal n=20000".into(),
        chain_matrix(&mut rng, 20_000, false),
    ));
    cases.push((
        "bidiagonal n=5000".into(),
        chain_matrix(&mut rng, 5000, true),
    ));
    cases.push(("diagonal n=10000".into(), diagonal_matrix(&mut rng, 10_000)));
    cases.push(("diagonal n=1".into(), diagonal_matrix(&mut rng, 1)));
    cases.push(("poisson3d:20".into(), poisson3d(20)));
    cases.push(("poisson3d:50".into(), poisson3d(50)));
    for (label, a) in &cases {
        let f = Arc::new(Ilu0Factors::new(a, None).map_err(err)?);
        // Blocks of one warp to 1024 threads; a grid of one small block per SM (each
        // block solves many chunks in turn); polling with back-off; one launch per level.
        let sync_free = |block, threads_per_sm, sleep_ns| IluConfig {
            placement: IluPlacement::Device,
            schedule: IluSchedule::SyncFree,
            block,
            threads_per_sm,
            sleep_ns,
            ..IluConfig::default()
        };
        // Partitioned: one part per block, 132 to 1056 parts on the H200.
        let parts = |block, threads_per_sm, hop| IluConfig {
            placement: IluPlacement::Device,
            schedule: IluSchedule::Partitioned,
            block,
            threads_per_sm,
            hop,
            ..IluConfig::default()
        };
        let runs = [
            IluConfig::default(),
            parts(128, 256, 8),
            parts(32, 32, 1),
            parts(512, 512, 8),
            parts(64, 512, 3),
            sync_free(32, 2048, 0),
            sync_free(1024, 2048, 0),
            sync_free(64, 64, 0),
            sync_free(128, 256, 100),
            IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::SyncFreeWarps,
                ..IluConfig::default()
            },
            IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::SyncFreeGpuScope,
                ..IluConfig::default()
            },
            IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::SyncFreeWarps,
                block: 64,
                threads_per_sm: 64,
                ..IluConfig::default()
            },
            IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::Levels,
                block: 128,
                ..IluConfig::default()
            },
            // one block (the default's choice up to about 25,000 rows; above, partitioned)
            IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::OneBlock,
                block: 1024,
                ..IluConfig::default()
            },
            IluConfig {
                placement: IluPlacement::Device,
                schedule: IluSchedule::OneBlock,
                block: 32,
                sleep_ns: 40,
                ..IluConfig::default()
            },
        ];
        let big = [parts(512, 512, 8), parts(32, 32, 1)];
        let runs = if label == BIG_CASE {
            &big[..]
        } else {
            &runs[..]
        };
        for &config in runs {
            ilu_apply_for::<f64>(gpu, &mut rng, label, &f, config)?;
            ilu_apply_for::<Dd>(gpu, &mut rng, label, &f, config)?;
            ilu_apply_for::<Td>(gpu, &mut rng, label, &f, config)?;
            ilu_apply_for::<Qd>(gpu, &mut rng, label, &f, config)?;
        }
        println!(
            "    {label:>28}: L {} levels, U {} levels, identical in f64, dd, td and qd",
            f.lower_levels().count(),
            f.upper_levels().count()
        );
    }
    Ok(())
}

pub fn precond_solves_poisson(gpu: &CudaBackend) -> Result<(), String> {
    let a = poisson3d(40);
    let f = Arc::new(Ilu0Factors::new(&a, None).map_err(err)?);
    poisson_solves_in_both_layouts(gpu, Some(&f))
}

pub fn precond_solves_shared(gpu: &CudaBackend) -> Result<(), String> {
    shared_solves(gpu, true)
}
