//! GPU kernels against the CPU backend, bit for bit, then whole solves.
//!
//! A custom harness (`harness = false`): where no GPU is usable every test is reported as
//! skipped with the reason, never as passed. Run on a GPU machine with
//! `cargo test --release --test gpu`; `PRECSOLVE_MATRICES` names a folder of `.mtx` files for the
//! whole-solve checks (default `../shared/matrices`).

#[cfg(feature = "cuda")]
#[path = "gpu/mp_arithmetic.rs"]
mod mp_arithmetic;

#[cfg(feature = "cuda")]
#[path = "gpu/ranks.rs"]
mod ranks;

#[cfg(feature = "cuda")]
mod gpu_checks {
    use precsolve::backend::cpu::{CpuBackend, CpuVector};
    use precsolve::backend::cuda::{CudaBackend, Persistent};
    use precsolve::backend::cuda::{IluConfig, IluPlacement, IluSchedule, SpmvLayout};
    use precsolve::backend::{Backend, Operand, TiledDots, spmv_lanes};
    use precsolve::precision::Td;
    use precsolve::precond::ilu0::Ilu0Factors;
    use precsolve::precond::{Identity, Ilu0, Preconditioner};
    use precsolve::solver::{
        BicgstabKernels, BicgstabSteps, CgKernels, CgSteps, NoMonitor, Params, SolveInfo, bicgstab,
        cg,
    };
    use precsolve::sparse::{CsrMatrix, Symmetry, poisson3d};
    use precsolve::{Dd, Precision, Qd};
    use std::sync::Arc;

    pub type Check = fn(&CudaBackend) -> Result<(), String>;
    use super::mp_arithmetic;

    pub const CHECKS: &[(&str, Check)] = &[
        (
            "spmv_and_residual_match_cpu_for_every_lane_count",
            spmv_and_residual,
        ),
        ("dot_matches_cpu_at_awkward_lengths", dot),
        ("vector_updates_match_cpu", vector_updates),
        ("wide_reads_match_cpu", wide_reads),
        ("cg_step_and_fused_spmv_dots_match_cpu", cg_steps),
        ("conversions_and_copies_match_cpu", conversions),
        ("whole_solves_match_cpu_on_poisson", solves_poisson),
        ("whole_solves_match_cpu_on_shared_matrices", solves_shared),
        ("ilu_apply_matches_cpu_for_every_schedule", ilu_apply),
        (
            "preconditioned_solves_match_cpu_on_poisson",
            precond_solves_poisson,
        ),
        (
            "preconditioned_solves_match_cpu_on_shared_matrices",
            precond_solves_shared,
        ),
        (
            "device_resident_solves_match_cpu_point_by_point",
            device_resident_solves,
        ),
        (
            "concurrent_solves_on_own_streams_match_cpu",
            concurrent_solves,
        ),
        (
            "front_door_solves_match_cpu_with_a_program_s_preconditioner",
            front_door_solves,
        ),
        ("bicgstab_restarts_and_shadows_match_cpu", bicgstab_restarts),
        ("matched_ilu0_solves_match_cpu", matched_ilu0),
        ("precision_ladders_match_cpu", ladders),
        ("gmres_matches_cpu", gmres_solves),
        ("bicgstab_l_matches_cpu", bicgstab_l_solves),
        (
            "mp_arithmetic_matches_cpu_bit_for_bit",
            mp_arithmetic::mp_arithmetic,
        ),
        ("mp_solves_match_cpu", mp_arithmetic::mp_solves),
        (
            "ranks_sharing_one_gpu_match_cpu",
            super::ranks::ranks_share_one_gpu,
        ),
    ];

    /// xorshift64*: reproducible inputs without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        /// Values of mixed sign and magnitude (about 1e-3 to 1e3), so DD rounding is exercised.
        fn value(&mut self) -> f64 {
            let mantissa = (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            mantissa * 10f64.powi(self.below(7) as i32 - 3)
        }
        /// A quad-double with all four components in use.
        fn qd(&mut self) -> Qd {
            let hi = self.value();
            Qd::from_f64(hi)
                .add_f64(hi * 1e-17 * self.value())
                .add_f64(hi * 1e-34 * self.value())
                .add_f64(hi * 1e-51 * self.value())
        }
        /// A value of `P` using all of its format (four components for qd).
        fn of<P: Precision>(&mut self) -> P {
            let q = self.qd();
            match (&q as &dyn std::any::Any).downcast_ref::<P>() {
                Some(p) => p.clone(),
                None => P::from_dd(q.to_dd()),
            }
        }
    }

    /// A random square matrix with about `mean` entries per row, some empty rows, and one
    /// dense row (the worst case for a row-per-thread-group kernel).
    fn random_matrix(rng: &mut Rng, n: usize, mean: f64) -> CsrMatrix {
        let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
        for i in 0..n {
            let count = match i % 97 {
                13 => 0,
                _ if i == n / 2 => n.min(3000),
                _ => rng.below((2.0 * mean) as u64 + 1) as usize,
            };
            for _ in 0..count {
                rows.push(i as u32);
                cols.push(rng.below(n as u64) as u32);
                vals.push(rng.value());
            }
        }
        CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
    }

    fn same_bits<P: Precision>(what: &str, gpu: &[P], cpu: &[P]) -> Result<(), String> {
        if gpu.len() != cpu.len() {
            return Err(format!("{what}: lengths {} vs {}", gpu.len(), cpu.len()));
        }
        for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
            // Debug prints every stored part exactly (qd's four components, td's int).
            let (gs, cs) = (format!("{g:?}"), format!("{c:?}"));
            let (g, c) = (g.to_dd(), c.to_dd());
            if gs != cs || g.hi.to_bits() != c.hi.to_bits() || g.lo.to_bits() != c.lo.to_bits() {
                return Err(format!(
                    "{what} ({}): element {i} differs: GPU {g:?}, CPU {c:?}",
                    P::NAME
                ));
            }
        }
        Ok(())
    }

    fn err(e: precsolve::Error) -> String {
        e.to_string()
    }

    fn random_vec<P: Precision>(rng: &mut Rng, n: usize) -> Vec<P> {
        (0..n).map(|_| rng.of::<P>()).collect()
    }

    fn upload<P: Precision>(
        gpu: &CudaBackend,
        host: &[P],
    ) -> Result<<CudaBackend as Backend>::Vector<P>, String> {
        let v = gpu.upload::<P>(host).map_err(err)?;
        let back = gpu.to_host(&v).map_err(err)?;
        same_bits("upload", &back, host)?;
        Ok(v)
    }

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

    fn spmv_and_residual(gpu: &CudaBackend) -> Result<(), String> {
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

    fn dot(gpu: &CudaBackend) -> Result<(), String> {
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

    fn wide_reads(gpu: &CudaBackend) -> Result<(), String> {
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

    fn vector_updates(gpu: &CudaBackend) -> Result<(), String> {
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

    fn cg_steps(gpu: &CudaBackend) -> Result<(), String> {
        let mut rng = Rng(0x5eed_0007);
        cg_steps_for::<f64>(gpu, &mut rng)?;
        cg_steps_for::<Dd>(gpu, &mut rng)?;
        cg_steps_for::<Td>(gpu, &mut rng)?;
        cg_steps_for::<Qd>(gpu, &mut rng)
    }

    fn conversions(gpu: &CudaBackend) -> Result<(), String> {
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

    /// One solve through the real loop on any backend.
    fn solve_on<B: CgSteps + BicgstabSteps, P: Precision, M: Preconditioner<B>>(
        backend: &B,
        a: &Arc<CsrMatrix>,
        precond: &M,
        use_cg: bool,
        params: &Params,
    ) -> Result<(SolveInfo, Vec<P>), String> {
        let ga = backend.matrix(a).map_err(err)?;
        let gb = backend
            .vector_from_f64::<f64>(&vec![1.0; a.nrows()])
            .map_err(err)?;
        let mut gx = backend.zeros::<P>(a.nrows()).map_err(err)?;
        let info = if use_cg {
            cg(backend, &ga, &gb, &mut gx, precond, params, &mut NoMonitor)
        } else {
            bicgstab(backend, &ga, &gb, &mut gx, precond, params, &mut NoMonitor)
        }
        .map_err(err)?;
        Ok((info, backend.to_host(&gx).map_err(err)?))
    }

    /// Run one solve on both backends; iterations, outcome, residuals and x must agree exactly.
    /// With `factors`, both solves are preconditioned by ILU(0) with those factors.
    fn compare_solve<P: Precision>(
        gpu: &CudaBackend,
        a: &Arc<CsrMatrix>,
        use_cg: bool,
        label: &str,
        factors: Option<&Arc<Ilu0Factors>>,
    ) -> Result<SolveInfo, String> {
        let cpu = CpuBackend::new();
        let params = Params {
            max_iter: 3000,
            ..Params::default()
        };
        let ((gi, gx), (ci, cx)) = match factors {
            None => (
                solve_on::<_, P, _>(gpu, a, &Identity, use_cg, &params)?,
                solve_on::<_, P, _>(&cpu, a, &Identity, use_cg, &params)?,
            ),
            Some(f) => {
                let g = Ilu0::new(gpu, f).map_err(err)?;
                let c = Ilu0::new(&cpu, f).map_err(err)?;
                (
                    solve_on::<_, P, _>(gpu, a, &g, use_cg, &params)?,
                    solve_on::<_, P, _>(&cpu, a, &c, use_cg, &params)?,
                )
            }
        };
        if gi.iterations != ci.iterations || gi.stop_reason != ci.stop_reason {
            return Err(format!(
                "{label} {}: GPU {} iterations ({}), CPU {} ({})",
                P::NAME,
                gi.iterations,
                gi.stop_reason,
                ci.iterations,
                ci.stop_reason
            ));
        }
        if gi.recurrence_residual.to_bits() != ci.recurrence_residual.to_bits()
            || gi.true_residual.to_bits() != ci.true_residual.to_bits()
        {
            return Err(format!(
                "{label} {}: residuals GPU {:e}/{:e}, CPU {:e}/{:e}",
                P::NAME,
                gi.recurrence_residual,
                gi.true_residual,
                ci.recurrence_residual,
                ci.true_residual
            ));
        }
        same_bits(&format!("{label} solution"), &gx, &cx)?;
        println!(
            "    {label:>28} {:>4} {:>9}{}: {:>5} iterations, true residual {:.3e}, identical",
            P::NAME,
            if use_cg { "cg" } else { "bicgstab" },
            if factors.is_some() { "+ilu0" } else { "" },
            gi.iterations,
            gi.true_residual
        );
        Ok(gi)
    }

    /// CG and BiCGStab with the scalars on the device (f64 and dd: batches of iterations read
    /// back at once) against the CPU, history point by point: stops at max_iter inside a batch, periodic true
    /// residuals (batches end where x is read), convergence, an indefinite matrix (the stop on
    /// `<p, Ap>`), with and without ILU(0).
    fn device_resident_solves(gpu: &CudaBackend) -> Result<(), String> {
        let cpu = CpuBackend::new();
        let spd = Arc::new(poisson3d(12));
        // poisson3d(12) shifted by -2 I: symmetric, indefinite
        let indefinite = {
            let mut values = spd.values().to_vec();
            for (i, ends) in spd.row_ptr().windows(2).enumerate() {
                let diagonal = (ends[0]..ends[1]).find(|&k| spd.col_idx()[k] as usize == i);
                values[diagonal.expect("poisson3d stores its diagonal")] -= 2.0;
            }
            let parts = (spd.row_ptr().to_vec(), spd.col_idx().to_vec(), values);
            Arc::new(
                CsrMatrix::try_from_parts(
                    spd.nrows(),
                    spd.ncols(),
                    parts.0,
                    parts.1,
                    parts.2,
                    Symmetry::Symmetric,
                )
                .map_err(|e| e.to_string())?,
            )
        };
        let larger = Arc::new(poisson3d(24));
        let full = |tol: f64, max_iter: usize| Params {
            tol,
            max_iter,
            ..Params::default()
        };
        let cases: [(&str, &Arc<CsrMatrix>, Params); 6] = [
            // past the batches that grow to full ones, which replay a CUDA graph
            ("full batches, max_iter 200", &spd, full(1e-300, 200)),
            ("full batches, converges", &larger, full(1e-13, 30_000)),
            (
                "max_iter 37",
                &spd,
                Params {
                    max_iter: 37,
                    tol: 1e-300,
                    ..Params::default()
                },
            ),
            (
                "true residual every 5",
                &spd,
                Params {
                    true_residual_every: 5,
                    ..Params::default()
                },
            ),
            (
                "converges",
                &spd,
                Params {
                    tol: 1e-12,
                    ..Params::default()
                },
            ),
            (
                "indefinite",
                &indefinite,
                Params {
                    tol: 1e-14,
                    ..Params::default()
                },
            ),
        ];
        // (CUDA graphs, persistent kernel): each way of running the device steps
        let modes = [
            (true, Persistent::Everywhere),
            (true, Persistent::OneBlock),
            (true, Persistent::Off),
            (false, Persistent::Off),
        ];
        let runs = modes
            .into_iter()
            .flat_map(|m| cases.iter().map(move |c| (m, c)));
        // with a nonsymmetric matrix for BiCGStab: cavity02 (SuiteSparse), and bcsstk16 (four
        // lanes a row in the SpMV), where present
        let shared = |name: &str| -> Result<Option<Arc<CsrMatrix>>, String> {
            let path = format!("{}/{name}.mtx", matrix_dir());
            match std::path::Path::new(&path).exists() {
                true => Ok(Some(Arc::new(precsolve::load_matrix(&path).map_err(err)?))),
                false => Ok(None),
            }
        };
        let (nonsymmetric, wide_rows) = (shared("cavity02")?, shared("bcsstk16")?);
        let mut all: Vec<(&str, &Arc<CsrMatrix>, Params)> = cases.to_vec();
        if let Some(a) = nonsymmetric.as_ref() {
            all.push(("cavity02 (bicgstab only)", a, full(1e-12, 3000)));
        }
        if let Some(a) = wide_rows.as_ref() {
            all.push(("bcsstk16, max_iter 150", a, full(1e-300, 150)));
        }
        for ((graphs, persistent), (label, a, params)) in runs.chain(
            modes
                .into_iter()
                .flat_map(|m| all[cases.len()..].iter().map(move |c| (m, c))),
        ) {
            gpu.set_graphs(graphs);
            gpu.set_persistent(persistent);
            let params = Params {
                record_history: true,
                ..params.clone()
            };
            for (use_cg, ilu) in [(true, false), (true, true), (false, false), (false, true)] {
                if (ilu && label.starts_with("indefinite"))
                    || (use_cg && label.contains("bicgstab only"))
                {
                    continue;
                }
                let method = if use_cg { "cg" } else { "bicgstab" };
                let label = &format!("{label} graphs {graphs} persistent {persistent:?} {method}");
                let check = |name: &str, g: (SolveInfo, Vec<f64>), c: (SolveInfo, Vec<f64>)| {
                    same_history(&format!("{label} {name} ilu {ilu}"), &g.0, &c.0)?;
                    same_bits(&format!("{label} {name} solution"), &g.1, &c.1)
                };
                let factors = match ilu {
                    // the matrix's own factors, shifted where a pivot would vanish
                    true => Some(Arc::new(Ilu0Factors::new(a, Some(1e-8)).map_err(err)?)),
                    false => None,
                };
                match factors {
                    Some(factors) => {
                        let (g, c) = (
                            Ilu0::new(gpu, &factors).map_err(err)?,
                            Ilu0::new(&cpu, &factors).map_err(err)?,
                        );
                        check(
                            "f64",
                            widen(solve_on::<_, f64, _>(gpu, a, &g, use_cg, &params)?),
                            widen(solve_on::<_, f64, _>(&cpu, a, &c, use_cg, &params)?),
                        )?;
                        check(
                            "dd",
                            widen(solve_on::<_, Dd, _>(gpu, a, &g, use_cg, &params)?),
                            widen(solve_on::<_, Dd, _>(&cpu, a, &c, use_cg, &params)?),
                        )?;
                    }
                    None => {
                        check(
                            "f64",
                            widen(solve_on::<_, f64, _>(gpu, a, &Identity, use_cg, &params)?),
                            widen(solve_on::<_, f64, _>(&cpu, a, &Identity, use_cg, &params)?),
                        )?;
                        check(
                            "dd",
                            widen(solve_on::<_, Dd, _>(gpu, a, &Identity, use_cg, &params)?),
                            widen(solve_on::<_, Dd, _>(&cpu, a, &Identity, use_cg, &params)?),
                        )?;
                    }
                }
            }
        }
        gpu.set_graphs(true);
        gpu.set_persistent(Persistent::from_env());
        Ok(())
    }

    /// One solve of a concurrent batch: matrix, method, precision, ILU(0) or not.
    type Job = (String, Arc<CsrMatrix>, bool, bool, bool);
    /// A solve's outcome and its solution as words.
    type Solved = (SolveInfo, Vec<f64>);

    /// Run `job` on `backend` (f64 where `dd` is false), as words.
    fn run_job<B: CgSteps + BicgstabSteps>(
        backend: &B,
        job: &Job,
        params: &Params,
    ) -> Result<Solved, String> {
        let (_, a, use_cg, dd, ilu) = job;
        let factors = match ilu {
            true => Some(Arc::new(Ilu0Factors::new(a, Some(1e-8)).map_err(err)?)),
            false => None,
        };
        let ilu0 = match &factors {
            Some(f) => Some(Ilu0::new(backend, f).map_err(err)?),
            None => None,
        };
        match (ilu0.as_ref(), dd) {
            (Some(m), true) => Ok(widen(solve_on::<_, Dd, _>(backend, a, m, *use_cg, params)?)),
            (Some(m), false) => Ok(widen(solve_on::<_, f64, _>(
                backend, a, m, *use_cg, params,
            )?)),
            (None, true) => Ok(widen(solve_on::<_, Dd, _>(
                backend, a, &Identity, *use_cg, params,
            )?)),
            (None, false) => Ok(widen(solve_on::<_, f64, _>(
                backend, a, &Identity, *use_cg, params,
            )?)),
        }
    }

    /// Solves in six threads at once, each on a sibling backend (a stream of its own), as
    /// `solver batch --in-flight` runs them: every one identical to the CPU's, point by point.
    fn concurrent_solves(gpu: &CudaBackend) -> Result<(), String> {
        let mut matrices: Vec<(String, Arc<CsrMatrix>)> = [9, 12, 16, 20]
            .into_iter()
            .map(|n| (format!("poisson3d:{n}"), Arc::new(poisson3d(n))))
            .collect();
        for name in ["1138_bus", "bcsstk16", "cavity02", "sherman5"] {
            let path = format!("{}/{name}.mtx", matrix_dir());
            if std::path::Path::new(&path).exists() {
                matrices.push((
                    name.into(),
                    Arc::new(precsolve::load_matrix(&path).map_err(err)?),
                ));
            }
        }
        let mut jobs: Vec<Job> = vec![];
        for (name, a) in &matrices {
            for use_cg in [true, false] {
                for dd in [false, true] {
                    for ilu in [false, true] {
                        jobs.push((name.clone(), a.clone(), use_cg, dd, ilu));
                    }
                }
            }
        }
        let params = Params {
            tol: 1e-12,
            max_iter: 2000,
            record_history: true,
            ..Params::default()
        };
        const THREADS: usize = 6;
        let results: Vec<Result<Vec<(usize, Solved)>, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (jobs, params) = (&jobs, &params);
                    scope.spawn(move || {
                        let own = gpu.sibling().map_err(err)?;
                        // as `solver batch` runs them (`Lane::own`)
                        own.set_persistent(Persistent::OneBlock);
                        (t..jobs.len())
                            .step_by(THREADS)
                            .map(|i| Ok((i, run_job(&own, &jobs[i], params)?)))
                            .collect()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a solving thread"))
                .collect()
        });
        let cpu = CpuBackend::new();
        let mut compared = 0;
        for result in results {
            for (i, g) in result? {
                let job = &jobs[i];
                let c = run_job(&cpu, job, &params)?;
                let (name, _, use_cg, dd, ilu) = job;
                let label = format!("{name} cg {use_cg} dd {dd} ilu {ilu}");
                same_history(&label, &g.0, &c.0)?;
                same_bits(&format!("{label} solution"), &g.1, &c.1)?;
                compared += 1;
            }
        }
        println!("    {compared} solves in {THREADS} threads at once, each identical to the CPU");
        Ok(())
    }

    /// A solution as the words of its elements (double-double: both halves).
    fn widen<P: Precision>((info, x): (SolveInfo, Vec<P>)) -> (SolveInfo, Vec<f64>) {
        let words = x
            .iter()
            .flat_map(|v| {
                let d = v.to_dd();
                [d.hi, d.lo]
            })
            .collect();
        (info, words)
    }

    /// Outcome, iterations, residuals and every history point the same, bit for bit.
    fn same_history(label: &str, g: &SolveInfo, c: &SolveInfo) -> Result<(), String> {
        if g.iterations != c.iterations || g.stop_reason != c.stop_reason {
            return Err(format!(
                "{label}: GPU {} iterations ({}), CPU {} ({})",
                g.iterations, g.stop_reason, c.iterations, c.stop_reason
            ));
        }
        if g.history.len() != c.history.len() {
            return Err(format!(
                "{label}: {} history points against {}",
                g.history.len(),
                c.history.len()
            ));
        }
        for (gp, cp) in g.history.iter().zip(&c.history) {
            let bits = |p: &precsolve::solver::HistoryPoint| {
                (
                    p.iteration,
                    p.half_step,
                    p.recurrence_residual.to_bits(),
                    p.true_residual.map(f64::to_bits),
                )
            };
            if bits(gp) != bits(cp) {
                return Err(format!("{label}: history point GPU {gp:?}, CPU {cp:?}"));
            }
        }
        if g.true_residual.to_bits() != c.true_residual.to_bits() {
            return Err(format!(
                "{label}: true residual GPU {:e}, CPU {:e}",
                g.true_residual, c.true_residual
            ));
        }
        println!(
            "    {label:>36}: {:>4} iterations ({}), {} history points identical",
            g.iterations,
            g.stop_reason,
            g.history.len()
        );
        Ok(())
    }

    fn solves_poisson(gpu: &CudaBackend) -> Result<(), String> {
        poisson_solves_in_both_layouts(gpu, None)
    }

    /// CG and BiCGStab on poisson3d:40 in every precision, with `factors` as ILU(0) if given,
    /// once with the automatic layout (CSR: fewer rows than the H200 keeps threads) and once
    /// with the sliced one forced.
    fn poisson_solves_in_both_layouts(
        gpu: &CudaBackend,
        factors: Option<&Arc<Ilu0Factors>>,
    ) -> Result<(), String> {
        let a = Arc::new(poisson3d(40));
        for layout in [None, Some(SpmvLayout::Sell)] {
            gpu.set_spmv_layout(layout);
            let label = format!("poisson3d:40 {layout:?}");
            let result = (|| -> Result<(), String> {
                for use_cg in [true, false] {
                    compare_solve::<f64>(gpu, &a, use_cg, &label, factors)?;
                    compare_solve::<Dd>(gpu, &a, use_cg, &label, factors)?;
                    compare_solve::<Td>(gpu, &a, use_cg, &label, factors)?;
                    compare_solve::<Qd>(gpu, &a, use_cg, &label, factors)?;
                }
                Ok(())
            })();
            gpu.set_spmv_layout(None);
            result?;
        }
        Ok(())
    }

    /// The shared matrices also solved in qd (the CPU's qd reference solves of the larger ones
    /// take minutes).
    const QD_SHARED: &[&str] = &["1138_bus", "nos1", "fs_183_4", "olm500", "e05r0100"];

    fn matrix_dir() -> String {
        std::env::var("PRECSOLVE_MATRICES")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/matrices").into())
    }

    fn solves_shared(gpu: &CudaBackend) -> Result<(), String> {
        let dir = matrix_dir();
        let names = [
            "bcsstk16", "1138_bus", "nos1", "fs_183_4", "olm500", "rdb200l", "sherman5",
            "cavity02", "e05r0100", "Pd",
        ];
        let mut found = 0;
        for name in names {
            let path = format!("{dir}/{name}.mtx");
            if !std::path::Path::new(&path).exists() {
                continue;
            }
            found += 1;
            let a = Arc::new(precsolve::load_matrix(&path).map_err(err)?);
            let use_cg = a.symmetry() == Symmetry::Symmetric;
            compare_solve::<f64>(gpu, &a, use_cg, name, None)?;
            compare_solve::<Dd>(gpu, &a, use_cg, name, None)?;
            compare_solve::<Td>(gpu, &a, use_cg, name, None)?;
            if QD_SHARED.contains(&name) {
                compare_solve::<Qd>(gpu, &a, use_cg, name, None)?;
            }
        }
        if found == 0 {
            return Err(format!(
                "no matrices found in {dir} (set PRECSOLVE_MATRICES)"
            ));
        }
        Ok(())
    }

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

    fn ilu_apply(gpu: &CudaBackend) -> Result<(), String> {
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

    fn precond_solves_poisson(gpu: &CudaBackend) -> Result<(), String> {
        let a = poisson3d(40);
        let f = Arc::new(Ilu0Factors::new(&a, None).map_err(err)?);
        poisson_solves_in_both_layouts(gpu, Some(&f))
    }

    fn precond_solves_shared(gpu: &CudaBackend) -> Result<(), String> {
        let dir = matrix_dir();
        let names = [
            "bcsstk16", "1138_bus", "nos1", "fs_183_4", "olm500", "rdb200l", "sherman5",
            "cavity02", "e05r0100", "Pd",
        ];
        let mut compared = 0;
        for name in names {
            let path = format!("{dir}/{name}.mtx");
            if !std::path::Path::new(&path).exists() {
                continue;
            }
            let a = Arc::new(precsolve::load_matrix(&path).map_err(err)?);
            let f = match Ilu0Factors::new(&a, None) {
                Ok(f) => Arc::new(f),
                Err(e) => {
                    println!("    {name:>28}: no ILU(0) ({e}), skipped");
                    continue;
                }
            };
            compared += 1;
            let use_cg = a.symmetry() == Symmetry::Symmetric;
            compare_solve::<f64>(gpu, &a, use_cg, name, Some(&f))?;
            compare_solve::<Dd>(gpu, &a, use_cg, name, Some(&f))?;
            compare_solve::<Td>(gpu, &a, use_cg, name, Some(&f))?;
            if QD_SHARED.contains(&name) {
                compare_solve::<Qd>(gpu, &a, use_cg, name, Some(&f))?;
            }
        }
        if compared == 0 {
            return Err(format!(
                "no factorable matrices found in {dir} (set PRECSOLVE_MATRICES)"
            ));
        }
        Ok(())
    }

    /// A GPU solve (`g`) and a CPU solve (`c`) through the front door: each on its backend,
    /// with the same iterations, restarts, stop reason, residual bits and solution.
    fn same_solve(
        label: &str,
        g: &precsolve::Solution,
        c: &precsolve::Solution,
    ) -> Result<(), String> {
        let (gi, ci) = (&g.info, &c.info);
        if gi.backend != "cuda" || ci.backend != "cpu" {
            return Err(format!("{label}: ran on {} and {}", gi.backend, ci.backend));
        }
        // the same bits, or NaN on both sides (a solve that blew up on both backends); the
        // vectors by their exact decimal forms, in which every NaN reads `NaN`
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        if gi.iterations != ci.iterations
            || gi.restarts != ci.restarts
            || gi.stop_reason != ci.stop_reason
            || !same(gi.recurrence_residual, ci.recurrence_residual)
            || !same(gi.true_residual, ci.true_residual)
            || (g.x != c.x && format!("{:?}", g.x) != format!("{:?}", c.x))
        {
            return Err(format!(
                "{label}: GPU {} iterations, {} restarts, {}, true residual {:e}; \
                 CPU {}, {}, {}, {:e}",
                gi.iterations,
                gi.restarts,
                gi.stop_reason,
                gi.true_residual,
                ci.iterations,
                ci.restarts,
                ci.stop_reason,
                ci.true_residual
            ));
        }
        println!(
            "    {label:>32}: {:>5} iterations, {} restarts, {}, true residual {:.3e}, identical",
            gi.iterations, gi.restarts, gi.stop_reason, gi.true_residual
        );
        Ok(())
    }

    /// BiCGStab's restarts after breakdowns and its shadow residuals, on the shared matrices
    /// where double breaks down (cage8 on `<r~, v>`, rdb200l and str_0 on `rho`, str_0 until its
    /// restarts run out), f64 and dd, with and without ILU(0): the GPU's device-resident steps
    /// restart where the CPU's do, with the same bits.
    /// ILU(0) past a zero pivot by the matching (the solve iterates on `P A x = P b`):
    /// BiCGStab and GMRES in f64, dd and qd, the GPU's solves against the CPU's.
    fn matched_ilu0(_gpu: &CudaBackend) -> Result<(), String> {
        use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
        for name in ["gre_216a", "west0497", "str_200", "impcol_c"] {
            let path = format!("{}/{name}.mtx", matrix_dir());
            let a = precsolve::read_matrix_market(&path).map_err(err)?;
            let b = vec![1.0; a.nrows()];
            for method in [Method::Bicgstab, Method::Gmres] {
                for p in [
                    WorkingPrecision::F64,
                    WorkingPrecision::Dd,
                    WorkingPrecision::Qd,
                ] {
                    let run = |backend| {
                        let mut solver = Solver::with_method(method).ilu0().backend(backend);
                        solver.solve_in(p, &a, &b).map_err(err)
                    };
                    let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                    let label = format!("{name} {} {}", g.info.method, p.name());
                    let moved = c.info.ilu_remedy.as_ref().map_or(0, |r| r.permuted_rows);
                    if moved == 0 {
                        return Err(format!("{label}: no rows permuted"));
                    }
                    same_solve(&label, &g, &c)?;
                }
            }
        }
        Ok(())
    }

    fn bicgstab_restarts(_gpu: &CudaBackend) -> Result<(), String> {
        use precsolve::{BackendChoice, Shadow, Solver, WorkingPrecision};
        for name in ["cage8", "rdb200l", "str_0"] {
            let path = format!("{}/{name}.mtx", matrix_dir());
            let a = precsolve::read_matrix_market(&path).map_err(err)?;
            let b = vec![1.0; a.nrows()];
            for shadow in [Shadow::R0, Shadow::Random] {
                for ilu in [false, true] {
                    for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
                        let run = |backend| {
                            let solver = Solver::bicgstab().shadow(shadow).backend(backend);
                            let mut solver = if ilu {
                                solver.ilu0_shifted(1e-8)
                            } else {
                                solver
                            };
                            solver.solve_in(p, &a, &b).map_err(err)
                        };
                        let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                        let label = format!("{name} {} ilu {ilu} {}", shadow.name(), p.name());
                        same_solve(&label, &g, &c)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Precision ladders (`auto`: f64, dd, qd) on matrices where they climb: graded_spd_400 and
    /// 1138_bus (CG: double's true residual stops following its recurrence residual, or its
    /// recurrence meets tol while the true residual misses), fs_183_4 and gre_216a (BiCGStab:
    /// no progress in double; gre_216a goes on to qd), with and without ILU(0). The stagnation
    /// checks fall where the device ends its batches, so every rung ends at the same iteration
    /// as on the CPU, with the same bits.
    fn ladders(_gpu: &CudaBackend) -> Result<(), String> {
        use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
        let auto = WorkingPrecision::Ladder(precsolve::Ladder::AUTO);
        let cases = [
            ("graded_spd_400", Method::Cg),
            ("1138_bus", Method::Cg),
            ("fs_183_4", Method::Bicgstab),
            ("gre_216a", Method::Bicgstab),
        ];
        for (name, method) in cases {
            // graded_spd_400 is the bundled sample; the others are shared
            let bundled = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices").to_string();
            let path = [matrix_dir(), bundled]
                .iter()
                .map(|dir| format!("{dir}/{name}.mtx"))
                .find(|path| std::path::Path::new(path).exists())
                .ok_or_else(|| format!("{name}.mtx is neither shared nor bundled here"))?;
            let a = precsolve::read_matrix_market(&path).map_err(err)?;
            let b = vec![1.0; a.nrows()];
            for ilu in [false, true] {
                let run = |backend| {
                    let solver = Solver::with_method(method).tol(1e-12).backend(backend);
                    let mut solver = if ilu { solver.ilu0() } else { solver };
                    solver.solve_in(auto, &a, &b).map_err(err)
                };
                let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                let rungs = |s: &precsolve::Solution| {
                    let steps: Vec<String> = s
                        .info
                        .phases
                        .iter()
                        .map(|p| format!("{} {} ({})", p.precision, p.iterations, p.stop_reason))
                        .collect();
                    steps.join(" > ")
                };
                let label = format!("auto {name} ilu {ilu}");
                // every rung's outcome; its seconds are the backend's own
                let untimed = |s: &precsolve::Solution| {
                    let phases = s.info.phases.iter().cloned();
                    phases
                        .map(|p| precsolve::Phase { seconds: 0.0, ..p })
                        .collect::<Vec<_>>()
                };
                if untimed(&g) != untimed(&c) {
                    return Err(format!("{label}: GPU {}; CPU {}", rungs(&g), rungs(&c)));
                }
                same_solve(&label, &g, &c)?;
                println!("    {:>32}  {}", "", rungs(&g));
            }
        }
        Ok(())
    }

    /// GMRES(30), written once from the backends' primitives: in every precision, with and
    /// without ILU(0), with both orthogonalisations, the GPU's solves equal the CPU's.
    fn gmres_solves(_gpu: &CudaBackend) -> Result<(), String> {
        use precsolve::{BackendChoice, Orthogonalization, Solver, WorkingPrecision};
        for name in ["cage8", "fs_183_4", "sherman5"] {
            let path = format!("{}/{name}.mtx", matrix_dir());
            let a = precsolve::read_matrix_market(&path).map_err(err)?;
            let b = vec![1.0; a.nrows()];
            for how in [Orthogonalization::Mgs, Orthogonalization::Cgs2] {
                for ilu in [false, true] {
                    for p in WorkingPrecision::ALL {
                        let run = |backend| {
                            let solver = Solver::gmres()
                                .orthogonalization(how)
                                .max_iter(600)
                                .backend(backend);
                            let mut solver = if ilu { solver.ilu0() } else { solver };
                            solver.solve_in(p, &a, &b).map_err(err)
                        };
                        let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                        let label = format!("gmres {name} {} ilu {ilu} {}", how.name(), p.name());
                        same_solve(&label, &g, &c)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// BiCGStab(l), written once from the backends' primitives: l = 2 and 4, every precision,
    /// with and without ILU(0) (impcol_c's and gre_216a's blow up to NaN, on both backends
    /// alike), restarts after breakdowns (gre_216a), the GPU's solves equal the CPU's.
    fn bicgstab_l_solves(_gpu: &CudaBackend) -> Result<(), String> {
        use precsolve::{BackendChoice, Method, Solver, WorkingPrecision};
        for name in ["impcol_c", "fs_183_4", "sherman5", "gre_216a"] {
            let path = format!("{}/{name}.mtx", matrix_dir());
            let a = precsolve::read_matrix_market(&path).map_err(err)?;
            let b = vec![1.0; a.nrows()];
            for l in [2, 4] {
                for ilu in [false, true] {
                    for p in WorkingPrecision::ALL {
                        let run = |backend| {
                            let solver = Solver::with_method(Method::BicgstabL)
                                .bicgstab_l(l)
                                .max_iter(600)
                                .backend(backend);
                            let mut solver = if ilu { solver.ilu0() } else { solver };
                            solver.solve_in(p, &a, &b).map_err(err)
                        };
                        let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                        let label = format!("bicgstab({l}) {name} ilu {ilu} {}", p.name());
                        same_solve(&label, &g, &c)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `z_i = r_i / a_ii`, as an embedding program writes it.
    struct Jacobi(Vec<f64>);

    impl precsolve::Preconditioner for Jacobi {
        fn apply(&self, r: &[f64], z: &mut [f64]) {
            for ((z, r), d) in z.iter_mut().zip(r).zip(&self.0) {
                *z = r / d;
            }
        }
        fn name(&self) -> &'static str {
            "jacobi"
        }
    }

    /// The library's front door (`precsolve::Solver`) with `BackendChoice::Cuda` against
    /// `Cpu`: without a preconditioner, with ILU(0), and with a program's own preconditioner
    /// (applied on the host between device steps), every precision; and a callback's stop,
    /// which the GPU honours at the end of its batch, leaves the state of a CPU solve of that
    /// many iterations.
    fn front_door_solves(_gpu: &CudaBackend) -> Result<(), String> {
        use precsolve::{BackendChoice, Control, Solver, StopReason, WorkingPrecision};
        let a = poisson3d(10);
        let b = vec![1.0; a.nrows()];
        for precond in ["none", "ilu0", "jacobi"] {
            for p in WorkingPrecision::ALL {
                let run = |backend| {
                    let solver = Solver::cg().tol(1e-12).backend(backend);
                    let mut solver = match precond {
                        "ilu0" => solver.ilu0(),
                        "jacobi" => solver.preconditioner(Jacobi(a.diagonal())),
                        _ => solver,
                    };
                    solver.solve_in(p, &a, &b).map_err(err)
                };
                let (g, c) = (run(BackendChoice::Cuda)?, run(BackendChoice::Cpu)?);
                let label = format!("front door {precond} {}", p.name());
                same_solve(&label, &g, &c)?;
            }
        }
        let stopped = Solver::cg()
            .precision::<Dd>()
            .backend(BackendChoice::Cuda)
            .on_iteration(|at| {
                if at.iteration >= 5 {
                    Control::Stop
                } else {
                    Control::Continue
                }
            })
            .solve(&a, &b)
            .map_err(err)?;
        if stopped.stop_reason != StopReason::Cancelled
            || !(5..=5 + 64).contains(&stopped.iterations)
        {
            return Err(format!(
                "callback stop: {} after {}",
                stopped.stop_reason, stopped.iterations
            ));
        }
        let limited = Solver::cg()
            .precision::<Dd>()
            .backend(BackendChoice::Cpu)
            .max_iter(stopped.iterations)
            .solve(&a, &b)
            .map_err(err)?;
        same_bits("callback stop vs max_iter", &stopped.x, &limited.x)?;
        println!(
            "    a callback's stop at 5 took effect at {} on the GPU, identical to the CPU",
            stopped.iterations
        );
        Ok(())
    }
}

fn main() {
    let mut passed = 0;
    let mut failed = 0;
    let mut skipped = 0;
    #[cfg(feature = "cuda")]
    {
        let gpu = precsolve::solver::dispatch::cuda_backend();
        // As libtest: arguments that are not flags select the checks whose names contain one.
        let filters: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let selected = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
        for (name, check) in gpu_checks::CHECKS.iter().filter(|(name, _)| selected(name)) {
            match &gpu {
                Err(e) => {
                    println!("test {name} ... skipped ({e})");
                    skipped += 1;
                }
                Ok(gpu) => {
                    let start = std::time::Instant::now();
                    let result = std::panic::catch_unwind(|| check(gpu))
                        .unwrap_or_else(|_| Err("panicked".into()));
                    match result {
                        Ok(()) => {
                            println!(
                                "test {name} ... ok ({:.2} s)",
                                start.elapsed().as_secs_f64()
                            );
                            passed += 1;
                        }
                        Err(e) => {
                            println!("test {name} ... FAILED: {e}");
                            failed += 1;
                        }
                    }
                }
            }
        }
        if let Ok(gpu) = &gpu {
            println!("device: {}", gpu.device_description());
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        println!("test gpu ... skipped (built without the `cuda` feature)");
        skipped += 1;
    }
    println!("\ngpu: {passed} passed, {failed} failed, {skipped} skipped");
    if failed > 0 {
        std::process::exit(1);
    }
}
