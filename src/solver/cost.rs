//! `--backend auto`: the backend whose iteration is estimated faster for the problem at hand.
//!
//! An iteration's time is modelled as a floor (launches and synchronisation: what an iteration
//! costs however small the matrix) plus the bytes it moves over a sustained rate. The bytes are
//! the solvers' own counts (`solver::cg`, `solver::bicgstab`): CG `12 nnz + 8 n + 10 s n`,
//! BiCGStab `24 nnz + 16 n + 21 s n` for `s` bytes a vector element, and an ILU(0) application
//! (in double) `12 nnz + 16 n` more, once a CG iteration and twice a BiCGStab one. The CPU's
//! rate is per thread, up to a memory-bound ceiling, and a pass runs on as many threads as the
//! CPU backend gives it (`backend::cpu::threads_for`: one below its grain); extended formats
//! are arithmetic-bound there, so their rate is lower. On the GPU the floor is that of the
//! kernels the CUDA backend runs: its persistent kernel where `backend::persistent_reach`
//! says (one tile's floor, or a grid's that grows with its tiles), else the step kernels';
//! an iteration also waits on its longest row (a row is one thread's chain of steps, or a few
//! lanes') and on the levels of ILU(0)'s triangular solves, or on the host's round trip where
//! it solves them. The GPU's floors and row costs were refitted on 2026-12-07 to three runs of
//! the shared matrices' suite (`solver bench --suite`) on a lent H100 and its 16-core host, the
//! CPU's constants and ILU(0)'s earlier to runs on an H200 and an H100; `tests/auto_backend.rs`
//! replays the committed runs (`benches/results/gpu-suite*.json`). They order the two
//! backends; they do not predict a time to better than a factor of about two.

use super::dispatch::{Method, WorkingPrecision};

/// The shape of one solve, as the model sees it.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub rows: usize,
    pub nnz: usize,
    pub precision: WorkingPrecision,
    /// Resolved: CG or BiCGStab.
    pub method: Method,
    /// Entries of the longest row: the GPU's SpMV gives a row one thread (or a few), so a
    /// long row is a long chain of dependent steps.
    pub max_row: usize,
    /// With ILU(0): the levels of its two triangular solves together (each level is a step
    /// the GPU's solve waits on).
    pub ilu_levels: Option<usize>,
}

impl Workload {
    /// Bytes an element of a vector takes.
    fn element_bytes(&self) -> f64 {
        match self.precision {
            WorkingPrecision::F64 => 8.0,
            WorkingPrecision::Td => 12.0,
            WorkingPrecision::Dd => 16.0,
            WorkingPrecision::Qd => 32.0,
            WorkingPrecision::Mp(bits) => crate::precision::mp::bytes_per_element(bits) as f64,
            WorkingPrecision::Mpfr(bits) => crate::precision::mp::mpfr_bytes_per_element(bits) as f64,
            // expanded into their rungs before the model sees them (`resolve_for_problem`)
            WorkingPrecision::Ladder(_) => 32.0,
        }
    }

    /// Bytes one iteration moves: the SpMVs' matrix entries, the vector passes (the SpMVs'
    /// vectors included), the ILU(0) applications'.
    pub fn parts(&self) -> (f64, f64, f64) {
        let (n, nnz, s) = (self.rows as f64, self.nnz as f64, self.element_bytes());
        let (matrix, vectors, applications) = match self.method {
            Method::Cg => (12.0 * nnz, 8.0 * n + 10.0 * s * n, 1.0),
            Method::Bicgstab | Method::Auto => (24.0 * nnz, 16.0 * n + 21.0 * s * n, 2.0),
            // per BiCG step of a cycle of l = 2: two SpMVs, the BiCG part's updates and dots,
            // and its share of the minimal-residual part
            Method::BicgstabL => (24.0 * nnz, 16.0 * n + 30.0 * s * n, 2.0),
            // half a cycle of 30 on average: 15 dots and axpys, the norm and the scaling
            Method::Gmres => (12.0 * nnz, 8.0 * n + (5.0 * 15.0 + 5.0) * s * n, 1.0),
        };
        let ilu = match self.ilu_levels {
            Some(_) => applications * (12.0 * nnz + 16.0 * n),
            None => 0.0,
        };
        (matrix, vectors, ilu)
    }

    /// Bytes one iteration moves in all.
    pub fn bytes(&self) -> f64 {
        let (matrix, vectors, ilu) = self.parts();
        matrix + vectors + ilu
    }

    /// SpMVs and vector passes an iteration makes.
    fn passes(&self) -> (f64, f64) {
        match self.method {
            Method::Cg => (1.0, 3.0),
            Method::Bicgstab | Method::Auto => (2.0, 5.0),
            Method::BicgstabL => (2.0, 9.0),
            Method::Gmres => (1.0, 32.0),
        }
    }

    /// Threads the CPU backend runs a pass over `elements` on, out of `threads`.
    fn cpu_threads_for(&self, elements: usize, threads: usize) -> usize {
        let cost = crate::backend::cpu::element_cost(self.element_bytes() as usize);
        crate::backend::cpu::threads_for(elements.saturating_mul(cost), threads)
    }
}

/// The model's constants (seconds, bytes a second).
#[derive(Clone, Copy, Debug)]
pub struct CostModel {
    /// CPU: an iteration's floor; the rate of one thread in double, in double-double and td,
    /// and in qd (the extended formats are arithmetic-bound), up to `cpu_ceiling` for the
    /// threads together; what each pass split over threads pays to hand out and join its tasks.
    pub cpu_floor: f64,
    pub cpu_thread_rate: [f64; 3],
    pub cpu_ceiling: f64,
    pub cpu_join: f64,
    pub cpu_threads: usize,
    /// GPU: the floor of an iteration (CG, then BiCGStab, each in f64 then dd) run as one
    /// persistent kernel a batch (`backend::persistent_reach`: no preconditioner, rows of one
    /// lane, up to 64 tiles of 256 rows): on one tile, and on a grid of several, where each
    /// tile adds its share of the grid barriers' wait; as the step kernels, scalars on the
    /// device; as the step kernels waiting on the host (td, qd: CG, BiCGStab). What each entry
    /// of the longest row adds to an SpMV (f64, then dd and the others); the sustained rate. An
    /// ILU(0) application runs where `backend::ilu_application_seconds` says is cheaper, and
    /// costs what it says, plus `gpu_ilu_host_extra` on the host (the vectors' copies and the
    /// stream's wait, which that estimate, made to choose the place, leaves out; with it the
    /// estimate is 1.37x the measured time in median on the H100's small matrices, without it
    /// 2,000-row solves were sent to a GPU 12-15% slower). A preconditioned BiCGStab iteration
    /// that the backend runs as the one block applying ILU(0) itself
    /// (`backend::ilu_block_reach`) costs that block's floor (f64, dd), each level of the two
    /// triangles, and each nonzero of the matrix.
    pub gpu_floor_one_tile: [[f64; 2]; 2],
    pub gpu_floor_grid: [[f64; 2]; 2],
    pub gpu_grid_tile: [[f64; 2]; 2],
    pub gpu_floor_steps: [[f64; 2]; 2],
    pub gpu_floor_synchronous: [f64; 2],
    /// GMRES(30)'s iteration on the GPU: its steps are the primitives, and each of its dots
    /// (about 17 an iteration) comes back to the host (benches/results/methods.md).
    pub gpu_floor_gmres: f64,
    pub gpu_row_entry: [f64; 2],
    pub gpu_rate: f64,
    pub gpu_ilu_host_extra: f64,
    pub gpu_ilu_block_floor: [f64; 2],
    pub gpu_ilu_block_level: f64,
    pub gpu_ilu_block_entry: [f64; 2],
}

impl CostModel {
    /// The constants measured on the lent H200 and H100 and their hosts (see the module's text),
    /// with this machine's thread count. The suite has no qd, td, GMRES or BiCGStab(l) solves and
    /// no matrix above 10,000 rows: their terms, and the GPU's rate, come from the runs of
    /// `benches/results/precisions-h200.md`, `methods.md` and `h200.md`; the CPU's ceiling from
    /// poisson3d:100 on 16 threads (`cpu-threads.md`); the persistent grids' cost a tile from
    /// up to 62 tiles (`gpu-resident.md`).
    pub fn measured(cpu_threads: usize) -> Self {
        CostModel {
            cpu_floor: 2e-6,
            cpu_thread_rate: [16.5e9, 11e9, 3e9],
            cpu_ceiling: 140e9,
            cpu_join: 6.5e-6,
            cpu_threads: cpu_threads.max(1),
            gpu_floor_one_tile: [[4.6e-6, 9.6e-6], [9.8e-6, 21.5e-6]],
            gpu_floor_grid: [[7e-6, 12.5e-6], [13.5e-6, 27e-6]],
            gpu_grid_tile: [[0.07e-6, 0.15e-6], [0.17e-6, 0.5e-6]],
            gpu_floor_steps: [[18e-6, 21e-6], [36e-6, 45e-6]],
            gpu_floor_synchronous: [50e-6, 90e-6],
            gpu_floor_gmres: 460e-6,
            gpu_row_entry: [0.08e-6, 0.15e-6],
            gpu_rate: 2.5e12,
            gpu_ilu_host_extra: 25e-6,
            gpu_ilu_block_floor: [12e-6, 25.5e-6],
            gpu_ilu_block_level: 0.9e-6,
            gpu_ilu_block_entry: [6.9e-9, 8.5e-9],
        }
    }

    /// Estimated seconds an iteration on the CPU.
    pub fn cpu_iteration(&self, w: &Workload) -> f64 {
        let per_thread = match w.precision {
            WorkingPrecision::F64 => self.cpu_thread_rate[0],
            WorkingPrecision::Dd | WorkingPrecision::Td => self.cpu_thread_rate[1],
            WorkingPrecision::Qd
            | WorkingPrecision::Mp(_)
            | WorkingPrecision::Mpfr(_)
            | WorkingPrecision::Ladder(_) => {
                self.cpu_thread_rate[2]
            }
        };
        // a pass over `elements` runs on the threads the backend gives it, up to the ceiling
        let part = |bytes: f64, elements: usize, passes: f64| {
            match w.cpu_threads_for(elements, self.cpu_threads) {
                1 => bytes / per_thread,
                used => bytes / (per_thread * used as f64).min(self.cpu_ceiling) + passes * self.cpu_join,
            }
        };
        let (matrix, vectors, ilu) = w.parts();
        let (spmvs, passes) = w.passes();
        // the triangular solves run row by row in double (levels are rarely wide enough to
        // split): their bytes on one thread, and the wait of each row's sum on the rows before it
        let ilu = match w.ilu_levels {
            Some(_) => {
                ilu / self.cpu_thread_rate[0] + spmvs * crate::backend::ilu_host_solve_seconds(w.nnz)
            }
            None => 0.0,
        };
        self.cpu_floor + part(matrix, w.nnz + w.rows, spmvs) + part(vectors, w.rows, passes) + ilu
    }

    /// Estimated seconds an iteration on the GPU.
    pub fn gpu_iteration(&self, w: &Workload) -> f64 {
        if let Some(levels) = w.ilu_levels
            && matches!(w.method, Method::Bicgstab | Method::Auto)
            && matches!(w.precision, WorkingPrecision::F64 | WorkingPrecision::Dd)
            && crate::backend::ilu_block_reach(w.rows, w.nnz, w.max_row, levels)
        {
            let dd = usize::from(matches!(w.precision, WorkingPrecision::Dd));
            return self.gpu_ilu_block_floor[dd]
                + self.gpu_ilu_block_level * levels as f64
                + self.gpu_ilu_block_entry[dd] * w.nnz as f64;
        }
        let (method, applications) = match w.method {
            Method::Cg => (0, 1.0),
            Method::Bicgstab | Method::Auto | Method::BicgstabL => (1, 2.0),
            Method::Gmres => (0, 1.0),
        };
        let lanes = crate::backend::spmv_lanes_for(w.nnz, w.rows);
        let persistent = w.ilu_levels.is_none()
            && crate::backend::persistent_reach(w.rows, lanes, w.max_row);
        let tiles = w.rows.div_ceil(crate::backend::PERSISTENT_TILE_ROWS) as f64;
        let floor = |precision: usize| match persistent {
            true if tiles <= 1.0 => self.gpu_floor_one_tile[method][precision],
            true => self.gpu_floor_grid[method][precision] + tiles * self.gpu_grid_tile[method][precision],
            false => self.gpu_floor_steps[method][precision],
        };
        let floor = match (w.method, w.precision) {
            // not measured: its dots come back to the host too, about 7 an iteration at l = 2
            (Method::Gmres | Method::BicgstabL, _) => self.gpu_floor_gmres,
            (_, WorkingPrecision::F64) => floor(0),
            (_, WorkingPrecision::Dd) => floor(1),
            _ => self.gpu_floor_synchronous[method],
        };
        // a CG iteration has one SpMV and one ILU(0) application, BiCGStab's two of each; a
        // row's lanes share its entries
        let entry = match w.precision {
            WorkingPrecision::F64 => self.gpu_row_entry[0],
            _ => self.gpu_row_entry[1],
        };
        let rows = applications * w.max_row.div_ceil(lanes) as f64 * entry;
        let ilu = match w.ilu_levels {
            Some(levels) => {
                let place = crate::backend::ilu_application_seconds(w.rows, w.nnz, levels);
                applications
                    * match place.host_is_faster() {
                        true => place.host + self.gpu_ilu_host_extra,
                        false => place.device,
                    }
            }
            None => 0.0,
        };
        floor + rows + ilu + w.bytes() / self.gpu_rate
    }

    /// Whether the GPU is estimated faster for every one of `workloads` together (one backend
    /// for the columns of one report), and the line that says why.
    pub fn prefers_gpu(&self, workloads: &[Workload]) -> (bool, String) {
        let gpu: f64 = workloads.iter().map(|w| self.gpu_iteration(w)).sum();
        let cpu: f64 = workloads.iter().map(|w| self.cpu_iteration(w)).sum();
        let w = workloads.first();
        let shape = w.map_or(String::new(), |w| {
            format!("{} rows, {} nonzeros", group(w.rows), group(w.nnz))
        });
        let us = |t: f64| format!("{:.0} us", t * 1e6);
        if gpu < cpu {
            (
                true,
                format!(
                    "auto: cuda ({shape}: GPU estimate {} an iteration < CPU estimate {} on {} threads)",
                    us(gpu),
                    us(cpu),
                    self.cpu_threads
                ),
            )
        } else {
            (
                false,
                format!(
                    "auto: cpu ({shape}: GPU estimate {} an iteration >= CPU estimate {} on {} threads)",
                    us(gpu),
                    us(cpu),
                    self.cpu_threads
                ),
            )
        }
    }
}

/// `1234567` as `1,234,567`.
fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(rows: usize, per_row: usize, precision: WorkingPrecision, method: Method) -> Workload {
        Workload {
            rows,
            nnz: rows * per_row,
            precision,
            method,
            max_row: per_row,
            ilu_levels: None,
        }
    }

    /// GMRES waits on the host for each of its dots: its GPU iteration costs at least that
    /// floor, so the matrix size where the GPU wins is far larger than CG's.
    #[test]
    fn gmres_moves_to_the_gpu_only_where_the_cpu_pass_outweighs_its_dots() {
        let model = CostModel::measured(16);
        let crossover = |method| {
            (1..=1000)
                .map(|k| k * 1_000)
                .find(|&rows| model.prefers_gpu(&[work(rows, 7, WorkingPrecision::F64, method)]).0)
        };
        let gmres = work(1_000, 7, WorkingPrecision::Dd, Method::Gmres);
        assert!(model.gpu_iteration(&gmres) >= model.gpu_floor_gmres);
        let (cg, gmres) = (crossover(Method::Cg), crossover(Method::Gmres));
        assert!(cg.is_some() && gmres.is_some(), "{cg:?} {gmres:?}");
        assert!(gmres > cg, "GMRES from {gmres:?} rows, CG from {cg:?}");
    }

    /// The GPU's floor is that of the kernels the CUDA backend runs: its persistent kernel
    /// where `backend::persistent_reach` says (one tile's floor below a grid's), else the step
    /// kernels'.
    #[test]
    fn the_gpu_floor_is_that_of_the_kernels_that_run() {
        let model = CostModel::measured(16);
        let bicgstab = |rows, per_row| work(rows, per_row, WorkingPrecision::F64, Method::Bicgstab);
        let steps = model.gpu_floor_steps[1][0];
        let one_tile = model.gpu_iteration(&bicgstab(200, 5));
        let grid = model.gpu_iteration(&bicgstab(2_048, 5));
        assert!(one_tile < grid && grid < steps, "{one_tile} {grid}");
        // several lanes a row (40 entries: 4 lanes), past 64 tiles, or with ILU(0): the steps
        for w in [bicgstab(2_048, 40), bicgstab(64 * 256 + 1, 5)] {
            assert!(model.gpu_iteration(&w) >= steps, "{w:?}");
        }
        // CG with ILU(0) runs the step kernels alone (the one block only beside other solves)
        let ilu = Workload {
            ilu_levels: Some(10),
            ..work(2_048, 5, WorkingPrecision::F64, Method::Cg)
        };
        assert!(model.gpu_iteration(&ilu) >= model.gpu_floor_steps[0][0]);
        // a row's lanes share its entries: 200 and 40 entries over 4 lanes, in two SpMVs
        let long = Workload {
            max_row: 200,
            ..bicgstab(2_048, 40)
        };
        let extra = model.gpu_iteration(&long) - model.gpu_iteration(&bicgstab(2_048, 40));
        assert!((extra - 2.0 * (50.0 - 10.0) * model.gpu_row_entry[0]).abs() < 1e-12);
    }

    #[test]
    fn bytes_follow_the_solvers_counts() {
        let cg = work(1000, 7, WorkingPrecision::Dd, Method::Cg);
        assert_eq!(cg.bytes(), 12.0 * 7000.0 + 8.0 * 1000.0 + 160.0 * 1000.0);
        let bi = work(1000, 7, WorkingPrecision::F64, Method::Bicgstab);
        assert_eq!(
            bi.bytes(),
            24.0 * 7000.0 + 16.0 * 1000.0 + 21.0 * 8.0 * 1000.0
        );
        let ilu = Workload {
            ilu_levels: Some(40),
            ..bi
        };
        assert_eq!(
            ilu.bytes() - bi.bytes(),
            2.0 * (12.0 * 7000.0 + 16.0 * 1000.0)
        );
    }

    #[test]
    fn small_matrices_stay_on_the_cpu_and_large_ones_go_to_the_gpu() {
        let model = CostModel::measured(16);
        for precision in [WorkingPrecision::F64, WorkingPrecision::Dd] {
            for method in [Method::Cg, Method::Bicgstab] {
                let (gpu, why) = model.prefers_gpu(&[work(100, 5, precision, method)]);
                assert!(!gpu, "100 rows: {why}");
                assert!(
                    why.starts_with("auto: cpu (100 rows, 500 nonzeros"),
                    "{why}"
                );
                let (gpu, why) = model.prefers_gpu(&[work(8_000_000, 7, precision, method)]);
                assert!(gpu, "8M rows: {why}");
                assert!(why.contains("8,000,000 rows"), "{why}");
            }
        }
    }

    #[test]
    fn the_crossover_moves_with_precision_threads_and_the_host_round_trip() {
        let rows_where_gpu_wins = |model: &CostModel, precision, method| {
            (6..24)
                .map(|e| 1usize << e)
                .find(|&n| model.prefers_gpu(&[work(n, 7, precision, method)]).0)
                .expect("the GPU wins somewhere")
        };
        let many = CostModel::measured(16);
        let few = CostModel::measured(2);
        assert!(rows_where_gpu_wins(&few, WorkingPrecision::F64, Method::Cg) > 64);
        for method in [Method::Cg, Method::Bicgstab] {
            // fewer CPU threads: a large matrix takes the CPU longer; a small one (no fork-joins)
            // does not
            let large = work(8_000_000, 7, WorkingPrecision::F64, method);
            assert!(few.cpu_iteration(&large) > 1.5 * many.cpu_iteration(&large));
            let small = work(500, 7, WorkingPrecision::F64, method);
            assert_eq!(few.cpu_iteration(&small), many.cpu_iteration(&small));
            // double-double costs the CPU more than the GPU: the GPU wins sooner
            assert!(
                rows_where_gpu_wins(&many, WorkingPrecision::Dd, method)
                    <= rows_where_gpu_wins(&many, WorkingPrecision::F64, method)
            );
        }
        // BiCGStab's iteration has more launches: the GPU needs a matrix at least as large
        assert!(
            rows_where_gpu_wins(&many, WorkingPrecision::Dd, Method::Cg)
                <= rows_where_gpu_wins(&many, WorkingPrecision::Dd, Method::Bicgstab)
        );
    }

    #[test]
    fn long_rows_and_ilu_levels_cost_the_gpu() {
        let model = CostModel::measured(16);
        let short = work(2000, 6, WorkingPrecision::F64, Method::Bicgstab);
        let long = Workload {
            max_row: 1300,
            ..short
        };
        assert!(model.gpu_iteration(&long) > model.gpu_iteration(&short) + 100e-6);
        assert_eq!(model.cpu_iteration(&long), model.cpu_iteration(&short));
        let cg = work(2000, 6, WorkingPrecision::F64, Method::Cg);
        let few = Workload {
            ilu_levels: Some(3),
            ..cg
        };
        let many = Workload {
            ilu_levels: Some(1400),
            ..cg
        };
        assert!(model.gpu_iteration(&many) > model.gpu_iteration(&few));
        // until the host's solve is the cheaper, which caps what levels cost
        let host = crate::backend::ilu_application_seconds(cg.rows, cg.nnz, 1400).host
            + model.gpu_ilu_host_extra;
        assert!(model.gpu_iteration(&many) <= model.gpu_iteration(&few) + host);
        assert_eq!(model.cpu_iteration(&many), model.cpu_iteration(&few));
    }

    /// A preconditioned BiCGStab that the backend runs as the one block applying ILU(0) itself
    /// costs that block's terms; past the block's reach (more levels than it pays for, or more
    /// rows) the step kernels' again.
    #[test]
    fn a_bicgstab_run_as_one_block_costs_the_blocks_terms() {
        let model = CostModel::measured(16);
        let ilu = |rows, levels, precision| Workload {
            ilu_levels: Some(levels),
            ..work(rows, 5, precision, Method::Bicgstab)
        };
        for (dd, precision) in [WorkingPrecision::F64, WorkingPrecision::Dd].into_iter().enumerate() {
            let small = ilu(400, 30, precision);
            assert!(crate::backend::ilu_block_reach(400, 2_000, 5, 30));
            let block = model.gpu_ilu_block_floor[dd]
                + 30.0 * model.gpu_ilu_block_level
                + 2_000.0 * model.gpu_ilu_block_entry[dd];
            assert!((model.gpu_iteration(&small) - block).abs() < 1e-15);
            for outside in [ilu(400, 2_000, precision), ilu(20_000, 30, precision)] {
                assert!(model.gpu_iteration(&outside) >= model.gpu_floor_steps[1][dd], "{outside:?}");
            }
        }
    }

    #[test]
    fn a_report_with_several_precisions_picks_one_backend_for_all() {
        let model = CostModel::measured(16);
        let f64_only = model
            .prefers_gpu(&[work(20_000, 7, WorkingPrecision::F64, Method::Cg)])
            .0;
        let both = model.prefers_gpu(&[
            work(20_000, 7, WorkingPrecision::F64, Method::Cg),
            work(20_000, 7, WorkingPrecision::Dd, Method::Cg),
        ]);
        // dd's cost on the CPU tips the pair to the GPU at least as soon as f64 alone
        assert!(both.0 || !f64_only, "{}", both.1);
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(12), "12");
    }
}
