//! Each kernel family on the GPU against the CPU backend, bit for bit: SpMV in both layouts,
//! dots, vector updates, wide reads, CG's fused steps, conversions.

use super::common::*;
use precsolve::backend::cpu::{CpuBackend, CpuVector};
use precsolve::backend::cuda::CudaBackend;
use precsolve::backend::cuda::SpmvLayout;
use precsolve::backend::{Backend, Operand, TiledDots, spmv_lanes};
use precsolve::precision::Td;
use precsolve::solver::{BicgstabKernels, CgKernels};
use precsolve::sparse::{CsrMatrix, Symmetry};
use precsolve::{Dd, Precision, Qd};
use std::sync::Arc;

/// Both GPU layouts (CSR with the CPU's lane count, and sliced) on random matrices, and on
/// the same without the dense row (the shape the automatic choice slices).
fn spmv_for<P: Precision>(gpu: &CudaBackend, rng: &mut Rng) -> Result<(), String> {
    let cpu = CpuBackend::new();
    for (n, mean) in [
        (1000, 0.5),
        (1001, 1.5),
        (4099, 3.0),
        (3000, 6.0),
        (2049, 12.0),
        (777, 40.0),
    ] {
        let dense = random_matrix(rng, n, mean);
        let regular = without_dense_row(&dense);
        for a in [dense, regular] {
            let a = Arc::new(a);
            let x: Vec<P> = random_vec(rng, n);
            let b: Vec<f64> = (0..n).map(|_| rng.value()).collect();
            spmv_layout_for(gpu, &cpu, &a, SpmvLayout::Csr, &x, &b)?;
            // the sliced layout sums a row in one thread, as the CPU does for these only
            if spmv_lanes(&a) == 1 {
                spmv_layout_for(gpu, &cpu, &a, SpmvLayout::Sell, &x, &b)?;
            }
        }
    }
    Ok(())
}

fn spmv_layout_for<P: Precision>(
    gpu: &CudaBackend,
    cpu: &CpuBackend,
    a: &Arc<CsrMatrix>,
    layout: SpmvLayout,
    x: &[P],
    b: &[f64],
) -> Result<(), String> {
    let n = a.nrows();
    let ga = gpu.matrix_with_layout(a, layout).map_err(err)?;
    let ca = cpu.matrix(a).map_err(err)?;
    let gx = upload(gpu, x)?;
    let gb = gpu.vector_from_f64::<f64>(b).map_err(err)?;
    let mut gy = gpu.zeros::<P>(n).map_err(err)?;
    let mut cy = cpu.zeros::<P>(n).map_err(err)?;
    let (cx, cb) = (CpuVector::from(x.to_vec()), CpuVector::from(b.to_vec()));
    let shape = format!("n={n} nnz={} lanes={} {layout:?}", a.nnz(), ca.lanes);
    gpu.spmv(&ga, &gx, &mut gy).map_err(err)?;
    cpu.spmv(&ca, &cx, &mut cy).map_err(err)?;
    same_bits(
        &format!("spmv {shape}"),
        &gpu.to_host(&gy).map_err(err)?,
        &cy.to_values(),
    )?;
    gpu.residual(&ga, &gb, &gx, &mut gy).map_err(err)?;
    cpu.residual(&ca, &cb, &cx, &mut cy).map_err(err)?;
    same_bits(
        &format!("residual {shape}"),
        &gpu.to_host(&gy).map_err(err)?,
        &cy.to_values(),
    )?;
    // BiCGStab's A p^ with p^ in double, read widened: against the CPU's, and against
    // spmv on the converted vector on the GPU.
    let xd = CpuVector::from(b.to_vec());
    let gxd = gpu.vector_from_f64::<f64>(b).map_err(err)?;
    gpu.spmv_wide(&ga, &gxd, &mut gy).map_err(err)?;
    cpu.spmv_wide(&ca, &xd, &mut cy).map_err(err)?;
    let got = gpu.to_host(&gy).map_err(err)?;
    let what = format!("spmv_wide {shape}");
    same_bits(&what, &got, &cy.to_values())?;
    let mut gxw = gpu.zeros::<P>(n).map_err(err)?;
    gpu.convert(&gxd, &mut gxw).map_err(err)?;
    gpu.spmv(&ga, &gxw, &mut gy).map_err(err)?;
    same_bits(
        &format!("{what} vs spmv"),
        &got,
        &gpu.to_host(&gy).map_err(err)?,
    )
}

/// `a` without the entries of its dense row (`random_matrix` puts it at `n / 2`).
fn without_dense_row(a: &CsrMatrix) -> CsrMatrix {
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in (0..a.nrows()).filter(|&i| i != a.nrows() / 2) {
        for k in a.row_ptr()[i]..a.row_ptr()[i + 1] {
            rows.push(i as u32);
            cols.push(a.col_idx()[k] as u32);
            vals.push(a.values()[k]);
        }
    }
    CsrMatrix::from_coo(a.nrows(), a.ncols(), &rows, &cols, &vals, Symmetry::General).unwrap()
}

pub fn spmv_and_residual(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_0001);
    spmv_for::<f64>(gpu, &mut rng)?;
    spmv_for::<Dd>(gpu, &mut rng)?;
    spmv_for::<Td>(gpu, &mut rng)?;
    spmv_for::<Qd>(gpu, &mut rng)
}

const LENGTHS: [usize; 9] = [
    1,
    255,
    257,
    8191,
    8193,
    3 * 8192 + 5,
    100_003,
    256 * 8192 + 77,
    3_000_017,
];

fn dot_for<P: Precision>(gpu: &CudaBackend, rng: &mut Rng) -> Result<(), String> {
    let cpu = CpuBackend::new();
    for n in LENGTHS {
        let (x, y): (Vec<P>, Vec<P>) = (random_vec(rng, n), random_vec(rng, n));
        let (gx, gy) = (upload(gpu, &x)?, upload(gpu, &y)?);
        let g = gpu.dot(&gx, &gy).map_err(err)?;
        let c = cpu
            .dot(&CpuVector::from(x), &CpuVector::from(y))
            .map_err(err)?;
        same_bits(&format!("dot n={n}"), &[g], &[c])?;
    }
    Ok(())
}

pub fn dot(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_0002);
    dot_for::<f64>(gpu, &mut rng)?;
    dot_for::<Dd>(gpu, &mut rng)?;
    dot_for::<Td>(gpu, &mut rng)?;
    dot_for::<Qd>(gpu, &mut rng)
}

/// `dot_wide` and `xpay_wide` (CG's reads of its double preconditioned residual) against
/// the CPU's, and against `dot` and `xpay` on the residual converted to `P` on the GPU.
fn wide_reads_for<P: Precision>(gpu: &CudaBackend, rng: &mut Rng) -> Result<(), String> {
    let cpu = CpuBackend::new();
    for n in [1, 255, 8193, 3 * 8192 + 5, 100_003] {
        let (x, z): (Vec<P>, Vec<f64>) = (random_vec(rng, n), random_vec(rng, n));
        let beta = rng.of::<P>();
        let (gx, gz) = (upload(gpu, &x)?, upload(gpu, &z)?);
        let (cx, cz) = (CpuVector::from(x), CpuVector::from(z));
        let mut gz_wide = gpu.zeros::<P>(n).map_err(err)?;
        gpu.convert(&gz, &mut gz_wide).map_err(err)?;
        let g = gpu.dot_wide(&gx, &gz).map_err(err)?;
        let c = cpu.dot_wide(&cx, &cz).map_err(err)?;
        same_bits(&format!("dot_wide n={n}"), std::slice::from_ref(&g), &[c])?;
        let g_converted = gpu.dot(&gx, &gz_wide).map_err(err)?;
        same_bits(&format!("dot_wide n={n} vs dot"), &[g], &[g_converted])?;
        let (mut gy, mut cy) = (upload(gpu, &cx.to_values())?, cx.clone());
        gpu.xpay_wide(&gz, &beta, &mut gy).map_err(err)?;
        cpu.xpay_wide(&cz, &beta, &mut cy).map_err(err)?;
        let got = gpu.to_host(&gy).map_err(err)?;
        same_bits(&format!("xpay_wide n={n}"), &got, &cy.to_values())?;
        let mut gy = upload(gpu, &cx.to_values())?;
        gpu.xpay(&gz_wide, &beta, &mut gy).map_err(err)?;
        same_bits(
            &format!("xpay_wide n={n} vs xpay"),
            &got,
            &gpu.to_host(&gy).map_err(err)?,
        )?;
        // CG's direction update with the deferred x update, z widened and z in P: against
        // the CPU's, and against axpy then xpay on the GPU.
        let alpha = rng.of::<P>();
        let s: Vec<P> = random_vec(rng, n);
        for wide in [true, false] {
            let what = format!("cg_direction wide={wide} n={n}");
            let (mut gp, mut gs) = (upload(gpu, &cx.to_values())?, upload(gpu, &s)?);
            let (mut cp, mut cs) = (cx.clone(), CpuVector::from(s.clone()));
            let (mut wp, mut ws) = (upload(gpu, &cx.to_values())?, upload(gpu, &s)?);
            gpu.axpy(&alpha, &wp, &mut ws).map_err(err)?;
            if wide {
                gpu.cg_direction_wide(&alpha, &gz, &beta, &mut gp, &mut gs)
                    .map_err(err)?;
                cpu.cg_direction_wide(&alpha, &cz, &beta, &mut cp, &mut cs)
                    .map_err(err)?;
                gpu.xpay(&gz_wide, &beta, &mut wp).map_err(err)?;
            } else {
                gpu.cg_direction(&alpha, &gz_wide, &beta, &mut gp, &mut gs)
                    .map_err(err)?;
                let cz_wide = CpuVector::from(gpu.to_host(&gz_wide).map_err(err)?);
                cpu.cg_direction(&alpha, &cz_wide, &beta, &mut cp, &mut cs)
                    .map_err(err)?;
                gpu.xpay(&gz_wide, &beta, &mut wp).map_err(err)?;
            }
            let (gp, gs) = (
                gpu.to_host(&gp).map_err(err)?,
                gpu.to_host(&gs).map_err(err)?,
            );
            same_bits(&format!("{what}: p"), &gp, &cp.to_values())?;
            same_bits(&format!("{what}: x"), &gs, &cs.to_values())?;
            same_bits(
                &format!("{what}: p vs xpay"),
                &gp,
                &gpu.to_host(&wp).map_err(err)?,
            )?;
            same_bits(
                &format!("{what}: x vs axpy"),
                &gs,
                &gpu.to_host(&ws).map_err(err)?,
            )?;
        }
    }
    Ok(())
}

pub fn wide_reads(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_000b);
    wide_reads_for::<f64>(gpu, &mut rng)?;
    wide_reads_for::<Dd>(gpu, &mut rng)?;
    wide_reads_for::<Td>(gpu, &mut rng)?;
    wide_reads_for::<Qd>(gpu, &mut rng)
}

fn updates_for<P: Precision>(gpu: &CudaBackend, rng: &mut Rng) -> Result<(), String> {
    let cpu = CpuBackend::new();
    for n in [1, 257, 100_003] {
        let (x, y, z): (Vec<P>, Vec<P>, Vec<P>) =
            (random_vec(rng, n), random_vec(rng, n), random_vec(rng, n));
        let (alpha, beta) = (rng.of::<P>(), rng.of::<P>());
        let (gx, gy) = (upload(gpu, &x)?, upload(gpu, &y)?);
        let mut gz = upload(gpu, &z)?;
        let (cx, cy) = (CpuVector::from(x), CpuVector::from(y));
        let mut cz = CpuVector::from(z.clone());
        gpu.axpy(&alpha, &gx, &mut gz).map_err(err)?;
        cpu.axpy(&alpha, &cx, &mut cz).map_err(err)?;
        same_bits("axpy", &gpu.to_host(&gz).map_err(err)?, &cz.to_values())?;
        gpu.xpay(&gx, &beta, &mut gz).map_err(err)?;
        cpu.xpay(&cx, &beta, &mut cz).map_err(err)?;
        same_bits("xpay", &gpu.to_host(&gz).map_err(err)?, &cz.to_values())?;
        gpu.axpyz(&alpha, &gx, &gy, &mut gz).map_err(err)?;
        cpu.axpyz(&alpha, &cx, &cy, &mut cz).map_err(err)?;
        same_bits("axpyz", &gpu.to_host(&gz).map_err(err)?, &cz.to_values())?;
        let mut gp = upload(gpu, &z)?;
        let mut cp = CpuVector::from(z);
        gpu.bicgstab_direction(&gx, &beta, &alpha, &gy, &mut gp)
            .map_err(err)?;
        cpu.bicgstab_direction(&cx, &beta, &alpha, &cy, &mut cp)
            .map_err(err)?;
        same_bits(
            "bicgstab_direction",
            &gpu.to_host(&gp).map_err(err)?,
            &cp.to_values(),
        )?;
        // Fused updates with their norms: the same bits as the unfused CPU operations.
        let g = gpu.axpy_norm(&alpha, &gx, &mut gp).map_err(err)?;
        cpu.axpy(&alpha, &cx, &mut cp).map_err(err)?;
        let c = cpu.dot(&cp, &cp).map_err(err)?;
        same_bits(
            "axpy_norm",
            &gpu.to_host(&gp).map_err(err)?,
            &cp.to_values(),
        )?;
        same_bits("axpy_norm's norm", &[g], &[c])?;
        let g = gpu.axpyz_norm(&beta, &gx, &gy, &mut gp).map_err(err)?;
        cpu.axpyz(&beta, &cx, &cy, &mut cp).map_err(err)?;
        let c = cpu.dot(&cp, &cp).map_err(err)?;
        same_bits(
            "axpyz_norm",
            &gpu.to_host(&gp).map_err(err)?,
            &cp.to_values(),
        )?;
        same_bits("axpyz_norm's norm", &[g], &[c])?;
        gpu.x_update(&alpha, &gx, &beta, &gy, &mut gp)
            .map_err(err)?;
        cpu.axpy(&alpha, &cx, &mut cp).map_err(err)?;
        cpu.axpy(&beta, &cy, &mut cp).map_err(err)?;
        same_bits("x_update", &gpu.to_host(&gp).map_err(err)?, &cp.to_values())?;
    }
    Ok(())
}

pub fn vector_updates(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_0003);
    updates_for::<f64>(gpu, &mut rng)?;
    updates_for::<Dd>(gpu, &mut rng)?;
    updates_for::<Td>(gpu, &mut rng)?;
    updates_for::<Qd>(gpu, &mut rng)
}

/// `a` with every value negated: of `<p, A p>` and `<p, -A p>` one is positive, so each
/// matrix gives CG one accepted and one rejected step.
fn negated(a: &CsrMatrix) -> CsrMatrix {
    let values = a.values().iter().map(|v| -v).collect();
    CsrMatrix::try_from_parts(
        a.nrows(),
        a.ncols(),
        a.row_ptr().to_vec(),
        a.col_idx().to_vec(),
        values,
        Symmetry::General,
    )
    .unwrap()
}

/// `Backend::cg_step` on both layouts, `spmv_dot` fused (one thread per row) and not, the
/// tiled dot alone, and BiCGStab's `spmv_dots` (own and widened `x`, one and two dots, fused
/// and not), against the CPU's step and dots on the same inputs.
fn cg_steps_for<P: Precision>(gpu: &CudaBackend, rng: &mut Rng) -> Result<(), String> {
    let cpu = CpuBackend::new();
    let mut accepted = 0;
    for (n, mean) in [(1000, 0.5), (8193, 3.0), (3 * 8192 + 5, 6.0), (2049, 40.0)] {
        let random = random_matrix(rng, n, mean);
        // The same step on A and on -A: one of the two is accepted.
        let (p, r): (Vec<P>, Vec<P>) = (random_vec(rng, n), random_vec(rng, n));
        let rho = rng.of::<P>();
        // the sliced layout where it applies (one thread per row), on one of the two signs
        let sliced = match spmv_lanes(&random) {
            1 => SpmvLayout::Sell,
            _ => SpmvLayout::Csr,
        };
        for (a, layout) in [(negated(&random), SpmvLayout::Csr), (random, sliced)] {
            let a = Arc::new(a);
            let ga = gpu.matrix_with_layout(&a, layout).map_err(err)?;
            let ca = cpu.matrix(&a).map_err(err)?;
            let what = format!("cg_step n={n} lanes={} {layout:?}", ca.lanes);
            let gp = upload(gpu, &p)?;
            let (mut gq, mut gr) = (gpu.zeros::<P>(n).map_err(err)?, upload(gpu, &r)?);
            let cp = CpuVector::from(p.clone());
            let mut cq = cpu.zeros::<P>(n).map_err(err)?;
            let mut cr = CpuVector::from(r.clone());
            let g = gpu.cg_step(&ga, &rho, &gp, &mut gq, &mut gr).map_err(err)?;
            let c = cpu.cg_step(&ca, &rho, &cp, &mut cq, &mut cr).map_err(err)?;
            same_bits(
                &format!("{what} (<p,q>, <r,r>)"),
                &[g.0, g.1],
                &[c.0.clone(), c.1.clone()],
            )?;
            same_bits(
                &format!("{what} q"),
                &gpu.to_host(&gq).map_err(err)?,
                &cq.to_values(),
            )?;
            same_bits(
                &format!("{what} r"),
                &gpu.to_host(&gr).map_err(err)?,
                &cr.to_values(),
            )?;
            accepted += usize::from(precsolve::backend::cg_step_accepts(&c.0));
            for fuse in [false, true] {
                let mut gq = gpu.zeros::<P>(n).map_err(err)?;
                let pq = gpu.spmv_dot(&ga, &gp, &mut gq, fuse).map_err(err)?;
                let what = format!("{what} spmv_dot fuse={fuse}");
                same_bits(&what, &[pq], std::slice::from_ref(&c.0))?;
                same_bits(&what, &gpu.to_host(&gq).map_err(err)?, &cq.to_values())?;
            }
            // the tiled dot alone, on p and r (lengths that end mid-tile)
            let tiled = gpu.dot_tiled(&gp, &gr).map_err(err)?;
            let want = cpu.dot_tiled(&cp, &cr).map_err(err)?;
            same_bits(&format!("{what} dot_tiled"), &[tiled], &[want])?;
            // BiCGStab's SpMVs with their dots (v = A p^ with <r~, v>; t = A s^ with
            // <t, t> and <t, s>), x of P and of doubles read widened, fused and not
            let wide: Vec<f64> = (0..n).map(|_| rng.value()).collect();
            let (gwide, cwide) = (upload(gpu, &wide)?, CpuVector::from(wide));
            let xs = [
                (Operand::Own(&gp), Operand::Own(&cp), "own"),
                (Operand::Wide(&gwide), Operand::Wide(&cwide), "wide"),
            ];
            for (gx, cx, kind) in xs {
                let dots = [
                    (TiledDots::With(&gr), TiledDots::With(&cr)),
                    (TiledDots::SelfAnd(&gr), TiledDots::SelfAnd(&cr)),
                ];
                for (gd, cd) in dots {
                    let mut cq = cpu.zeros::<P>(n).map_err(err)?;
                    let want = cpu.spmv_dots_tiled(&ca, cx, cd, &mut cq).map_err(err)?;
                    for fuse in [false, true] {
                        let mut gq = gpu.zeros::<P>(n).map_err(err)?;
                        let got = gpu.spmv_dots(&ga, gx, gd, &mut gq, fuse).map_err(err)?;
                        let two = matches!(gd, TiledDots::SelfAnd(_));
                        let what = format!("{what} spmv_dots x {kind} two {two} fuse={fuse}");
                        same_bits(&what, &[got.0, got.1], &[want.0.clone(), want.1.clone()])?;
                        same_bits(&what, &gpu.to_host(&gq).map_err(err)?, &cq.to_values())?;
                    }
                }
            }
        }
    }
    if accepted < 4 {
        return Err(format!("{}: only {accepted} of 8 steps accepted", P::NAME));
    }
    Ok(())
}

pub fn cg_steps(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_0007);
    cg_steps_for::<f64>(gpu, &mut rng)?;
    cg_steps_for::<Dd>(gpu, &mut rng)?;
    cg_steps_for::<Td>(gpu, &mut rng)?;
    cg_steps_for::<Qd>(gpu, &mut rng)
}

pub fn conversions(gpu: &CudaBackend) -> Result<(), String> {
    let mut rng = Rng(0x5eed_0004);
    let cpu = CpuBackend::new();
    for n in [1, 257, 100_003] {
        let d: Vec<Dd> = random_vec(&mut rng, n);
        let gd = upload(gpu, &d)?;
        let mut gf = gpu.zeros::<f64>(n).map_err(err)?;
        let mut cf = cpu.zeros::<f64>(n).map_err(err)?;
        gpu.convert(&gd, &mut gf).map_err(err)?;
        cpu.convert(&CpuVector::from(d.clone()), &mut cf)
            .map_err(err)?;
        same_bits(
            "convert dd->f64",
            &gpu.to_host(&gf).map_err(err)?,
            &cf.to_values(),
        )?;
        let mut gd2 = gpu.zeros::<Dd>(n).map_err(err)?;
        let mut cd2 = cpu.zeros::<Dd>(n).map_err(err)?;
        gpu.convert(&gf, &mut gd2).map_err(err)?;
        cpu.convert(&cf, &mut cd2).map_err(err)?;
        same_bits(
            "convert f64->dd",
            &gpu.to_host(&gd2).map_err(err)?,
            &cd2.to_values(),
        )?;
        let mut gc = gpu.zeros::<Dd>(n).map_err(err)?;
        gpu.copy(&gd, &mut gc).map_err(err)?;
        same_bits("copy", &gpu.to_host(&gc).map_err(err)?, &d)?;
        // td and qd against every other precision, both ways
        let t: Vec<Td> = random_vec(&mut rng, n);
        let q: Vec<Qd> = random_vec(&mut rng, n);
        convert_pair::<Td, f64>(gpu, &t)?;
        convert_pair::<Td, Dd>(gpu, &t)?;
        convert_pair::<Td, Qd>(gpu, &t)?;
        convert_pair::<Qd, f64>(gpu, &q)?;
        convert_pair::<Qd, Dd>(gpu, &q)?;
        convert_pair::<Qd, Td>(gpu, &q)?;
        convert_pair::<f64, Td>(gpu, &cf.to_values())?;
        convert_pair::<f64, Qd>(gpu, &cf.to_values())?;
        convert_pair::<Dd, Td>(gpu, &d)?;
        convert_pair::<Dd, Qd>(gpu, &d)?;
        let gq = upload(gpu, &q)?;
        let mut gc = gpu.zeros::<Qd>(n).map_err(err)?;
        gpu.copy(&gq, &mut gc).map_err(err)?;
        same_bits("copy qd", &gpu.to_host(&gc).map_err(err)?, &q)?;
        let gt = upload(gpu, &t)?;
        let mut gc = gpu.zeros::<Td>(n).map_err(err)?;
        gpu.copy(&gt, &mut gc).map_err(err)?;
        same_bits("copy td", &gpu.to_host(&gc).map_err(err)?, &t)?;
    }
    Ok(())
}

/// `convert::<P, Q>` on both backends, bit for bit.
fn convert_pair<P: Precision, Q: Precision>(gpu: &CudaBackend, x: &[P]) -> Result<(), String> {
    let cpu = CpuBackend::new();
    let n = x.len();
    let gx = upload(gpu, x)?;
    let mut gy = gpu.zeros::<Q>(n).map_err(err)?;
    let mut cy = cpu.zeros::<Q>(n).map_err(err)?;
    gpu.convert(&gx, &mut gy).map_err(err)?;
    cpu.convert(&CpuVector::from(x.to_vec()), &mut cy)
        .map_err(err)?;
    same_bits(
        &format!("convert {}->{}", P::NAME, Q::NAME),
        &gpu.to_host(&gy).map_err(err)?,
        &cy.to_values(),
    )
}
