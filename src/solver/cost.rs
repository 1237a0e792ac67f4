//! `--backend auto`: the backend whose iteration is estimated faster for the problem at hand.
//!
//! An iteration's time is modelled as a floor (launches and synchronisation: what an iteration
//! costs however small the matrix) plus the bytes it moves over a sustained rate. The bytes are
//! the solvers' own counts (`solver::cg`, `solver::bicgstab`): CG `12 nnz + 8 n + 10 s n`,
//! BiCGStab `24 nnz + 16 n + 21 s n` for `s` bytes a vector element, and an ILU(0) application
//! (in double) `12 nnz + 16 n` more, once a CG iteration and twice a BiCGStab one. The CPU's
//! rate is per thread, up to a memory-bound ceiling; extended formats are arithmetic-bound
//! there, so their rate is lower. The constants were measured on the lent H200 and its 16-core
//! host (`benches/results/gpu-resident.md`): they order the two backends, they do not predict
//! a time to better than a factor of about two.

use super::dispatch::{Method, WorkingPrecision};

/// The shape of one solve, as the model sees it.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub rows: usize,
    pub nnz: usize,
    pub precision: WorkingPrecision,
    /// Resolved: CG or BiCGStab.
    pub method: Method,
    pub ilu: bool,
}

impl Workload {
    /// Bytes an element of a vector takes.
    fn element_bytes(&self) -> f64 {
        match self.precision {
            WorkingPrecision::F64 => 8.0,
            WorkingPrecision::Td => 12.0,
            WorkingPrecision::Dd => 16.0,
            WorkingPrecision::Qd => 32.0,
            WorkingPrecision::Mp(bits) => 32.0 + f64::from(bits) / 8.0,
        }
    }

    /// Bytes one iteration moves: the SpMVs' matrix entries, the vector passes (the SpMVs'
    /// vectors included), the ILU(0) applications'.
    pub fn parts(&self) -> (f64, f64, f64) {
        let (n, nnz, s) = (self.rows as f64, self.nnz as f64, self.element_bytes());
        let (matrix, vectors, applications) = match self.method {
            Method::Cg => (12.0 * nnz, 8.0 * n + 10.0 * s * n, 1.0),
            Method::Bicgstab | Method::Auto => (24.0 * nnz, 16.0 * n + 21.0 * s * n, 2.0),
        };
        let ilu = if self.ilu {
            applications * (12.0 * nnz + 16.0 * n)
        } else {
            0.0
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
        }
    }

    /// The CPU backend's relative cost of an element (`backend::cpu::tasks::cost`): a pass is
    /// split over the threads from `PARALLEL_MIN_WORK` elements times this.
    fn cpu_element_cost(&self) -> f64 {
        match self.precision {
            WorkingPrecision::F64 => 1.0,
            WorkingPrecision::Dd | WorkingPrecision::Td => 4.0,
            WorkingPrecision::Qd => 16.0,
            WorkingPrecision::Mp(_) => 64.0,
        }
    }
}

/// The model's constants (seconds, bytes a second).
#[derive(Clone, Copy, Debug)]
pub struct CostModel {
    /// CPU: an iteration's floor; the rate of one thread in double, in double-double and td,
    /// and in qd (the extended formats are arithmetic-bound), up to `cpu_ceiling` for all
    /// threads together; the work (elements times their cost) from which a pass is split over
    /// the threads (`backend::cpu::tasks`), and what each such pass pays to fork and join.
    pub cpu_floor: f64,
    pub cpu_thread_rate: [f64; 3],
    pub cpu_ceiling: f64,
    pub cpu_parallel_work: f64,
    pub cpu_join: f64,
    pub cpu_threads: usize,
    /// GPU: the floor of an iteration whose scalars stay on the device (f64 and dd: CG, then
    /// BiCGStab, each in f64 then dd), of one that waits on the host (td, qd: CG, BiCGStab), an
    /// ILU(0) application's, and the sustained rate.
    pub gpu_floor_resident: [[f64; 2]; 2],
    pub gpu_floor_synchronous: [f64; 2],
    pub gpu_floor_ilu: f64,
    pub gpu_rate: f64,
}

impl CostModel {
    /// The constants measured on the lent H200 and its host (see the module's text), with this
    /// machine's thread count.
    pub fn measured(cpu_threads: usize) -> Self {
        CostModel {
            cpu_floor: 2e-6,
            cpu_thread_rate: [15e9, 10e9, 2.5e9],
            cpu_ceiling: 100e9,
            cpu_parallel_work: (1 << 17) as f64,
            cpu_join: 10e-6,
            cpu_threads: cpu_threads.max(1),
            gpu_floor_resident: [[12e-6, 17e-6], [28e-6, 40e-6]],
            gpu_floor_synchronous: [50e-6, 90e-6],
            gpu_floor_ilu: 40e-6,
            gpu_rate: 2.5e12,
        }
    }

    /// Estimated seconds an iteration on the CPU.
    pub fn cpu_iteration(&self, w: &Workload) -> f64 {
        let per_thread = match w.precision {
            WorkingPrecision::F64 => self.cpu_thread_rate[0],
            WorkingPrecision::Dd | WorkingPrecision::Td => self.cpu_thread_rate[1],
            WorkingPrecision::Qd | WorkingPrecision::Mp(_) => self.cpu_thread_rate[2],
        };
        let threads = self.cpu_threads as f64;
        let all = (per_thread * threads).min(self.cpu_ceiling);
        // a pass over `elements` runs on one thread below the grain, else on all of them
        let part = |bytes: f64, elements: usize, passes: f64| {
            let split = elements as f64 * w.cpu_element_cost() >= self.cpu_parallel_work;
            match split && self.cpu_threads > 1 {
                true => bytes / all + passes * self.cpu_join,
                false => bytes / per_thread,
            }
        };
        let (matrix, vectors, ilu) = w.parts();
        let (spmvs, passes) = w.passes();
        // the triangular solves run row by row (levels are rarely wide enough to split)
        self.cpu_floor
            + part(matrix, w.nnz, spmvs)
            + part(vectors, w.rows, passes)
            + ilu / per_thread
    }

    /// Estimated seconds an iteration on the GPU.
    pub fn gpu_iteration(&self, w: &Workload) -> f64 {
        let (method, applications) = match w.method {
            Method::Cg => (0, 1.0),
            Method::Bicgstab | Method::Auto => (1, 2.0),
        };
        let floor = match w.precision {
            WorkingPrecision::F64 => self.gpu_floor_resident[method][0],
            WorkingPrecision::Dd => self.gpu_floor_resident[method][1],
            _ => self.gpu_floor_synchronous[method],
        };
        let ilu = if w.ilu {
            applications * self.gpu_floor_ilu
        } else {
            0.0
        };
        floor + ilu + w.bytes() / self.gpu_rate
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
            ilu: false,
        }
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
        let ilu = Workload { ilu: true, ..bi };
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
            assert!(few.cpu_iteration(&large) > 2.0 * many.cpu_iteration(&large));
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

    /// Per-iteration times measured on the lent H200 and its 16-core host (microseconds, GPU
    /// then CPU; `benches/results/gpu-resident.md`): in every case where one backend was at
    /// least 1.5 times faster, the model picks it.
    #[test]
    fn the_model_picks_the_faster_backend_of_the_h200_measurements() {
        use Method::{Bicgstab, Cg};
        use WorkingPrecision::{Dd, F64};
        let measured: &[(&str, usize, usize, WorkingPrecision, Method, f64, f64)] = &[
            ("bcsstk01", 48, 400, F64, Cg, 11.9, 1.64),
            ("bcsstk01", 48, 400, Dd, Cg, 17.0, 4.64),
            ("bcsstk01", 48, 400, F64, Bicgstab, 27.9, 3.92),
            ("bcsstk01", 48, 400, Dd, Bicgstab, 38.1, 10.71),
            ("fs_183_4", 183, 1069, F64, Bicgstab, 32.8, 3.67),
            ("fs_183_4", 183, 1069, Dd, Bicgstab, 53.5, 16.68),
            ("cavity02", 317, 7327, F64, Bicgstab, 35.0, 10.06),
            ("1138_bus", 1138, 4054, F64, Cg, 12.4, 6.44),
            ("1138_bus", 1138, 4054, Dd, Cg, 17.3, 28.93),
            ("1138_bus", 1138, 4054, F64, Bicgstab, 28.7, 13.86),
            ("bcsstk16", 4884, 290_378, F64, Cg, 16.8, 102.54),
            ("bcsstk16", 4884, 290_378, Dd, Cg, 24.5, 172.81),
            ("bcsstk16", 4884, 290_378, F64, Bicgstab, 39.7, 221.32),
            ("bcsstk16", 4884, 290_378, Dd, Bicgstab, 61.8, 438.86),
            ("poisson3d:30", 27_000, 183_600, F64, Cg, 14.8, 188.85),
            ("poisson3d:30", 27_000, 183_600, Dd, Cg, 26.3, 407.24),
            ("poisson3d:30", 27_000, 183_600, F64, Bicgstab, 35.0, 393.22),
            ("poisson3d:30", 27_000, 183_600, Dd, Bicgstab, 67.5, 723.81),
            ("poisson3d:60", 216_000, 1_490_400, F64, Cg, 18.9, 315.13),
            (
                "poisson3d:60",
                216_000,
                1_490_400,
                Dd,
                Bicgstab,
                99.1,
                1256.48,
            ),
        ];
        let model = CostModel::measured(16);
        for &(name, rows, nnz, precision, method, gpu_us, cpu_us) in measured {
            let w = Workload {
                rows,
                nnz,
                precision,
                method,
                ilu: false,
            };
            let (gpu, why) = model.prefers_gpu(&[w]);
            assert_eq!(
                gpu,
                gpu_us < cpu_us,
                "{name} {precision:?} {method:?}: measured GPU {gpu_us} us, CPU {cpu_us} us; {why}"
            );
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
