//! The only module that formats results: the side-by-side text table, JSON, and history CSV;
//! batch studies' summaries in [`study`] and their plots in [`plot`].

pub mod plot;
pub mod study;
pub mod study_plots;

use crate::error::{Error, Result};
use crate::precond::ilu0::IluRemedy;
use crate::solver::{Phase, ResidualNorm, SolveInfo, StopReason};
use crate::sparse::CsrMatrix;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Clone, Debug, Serialize)]
pub struct MatrixSummary {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz: usize,
    pub symmetry: String,
    pub nnz_per_row_mean: f64,
    pub nnz_per_row_max: usize,
    pub missing_diagonal: usize,
}

impl MatrixSummary {
    pub fn new(name: &str, a: &CsrMatrix) -> Self {
        MatrixSummary {
            name: name.to_string(),
            rows: a.nrows(),
            cols: a.ncols(),
            nnz: a.nnz(),
            symmetry: a.symmetry().to_string(),
            nnz_per_row_mean: a.nnz_per_row_mean(),
            nnz_per_row_max: a.nnz_per_row_max(),
            missing_diagonal: a.rows_missing_diagonal().len(),
        }
    }
}

/// One precision's row of the report. Every number that can fail to exist sits beside
/// `stop_reason`/`converged` (JSON writes NaN and infinity as null).
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub precision: &'static str,
    pub method: &'static str,
    pub backend: &'static str,
    /// `none` or `ilu0`.
    pub precond: &'static str,
    pub converged: bool,
    pub stop_reason: StopReason,
    pub iterations: usize,
    pub recurrence_residual: f64,
    pub true_residual: f64,
    pub setup_time: f64,
    pub time_per_iteration: f64,
    pub total_time: f64,
    pub time_to_target: Option<f64>,
    /// Of `setup_time`: building the preconditioner (ILU(0) factorization, then its upload).
    pub precond_setup_time: f64,
    /// Fraction of the iteration time spent applying the preconditioner (thesis Table 4.8's
    /// "Precond [%]" divided by 100).
    pub precond_share: f64,
    /// ILU(0)'s `sigma` where `A + sigma I` was factored (a fixed or automatic shift).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ilu_shift: Option<f64>,
    /// What the automatic shift did, where `A` itself had no ILU(0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ilu_remedy: Option<IluRemedy>,
    /// BiCGStab's restarts after breakdowns.
    pub restarts: usize,
    /// A precision ladder's rungs, in the order they ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// The processes (MPI ranks) the rows were spread over.
    pub ranks: usize,
    /// The GPUs of one process the rows were spread over (`--devices`).
    pub devices: usize,
    /// Of `total_time`: moving words between ranks (0 in one process).
    pub communication_time: f64,
}

impl From<&SolveInfo> for RunReport {
    fn from(info: &SolveInfo) -> Self {
        RunReport {
            precision: info.precision,
            method: info.method,
            backend: info.backend,
            precond: info.precond,
            converged: info.stop_reason.converged(),
            stop_reason: info.stop_reason.clone(),
            iterations: info.iterations,
            recurrence_residual: info.recurrence_residual,
            true_residual: info.true_residual,
            setup_time: info.times.setup,
            time_per_iteration: info.time_per_iteration(),
            total_time: info.times.total,
            time_to_target: info.time_to_target,
            precond_setup_time: info.times.precond_setup,
            precond_share: info.precond_share(),
            ilu_shift: info.ilu_shift,
            ilu_remedy: info.ilu_remedy.clone(),
            restarts: info.restarts,
            phases: info.phases.clone(),
            ranks: info.ranks,
            devices: info.devices,
            communication_time: info.times.communication,
        }
    }
}

/// Ratios of a run against the first (double) run, as in thesis Table 4.3(d).
#[derive(Clone, Debug, Serialize)]
pub struct Ratios {
    pub precision: &'static str,
    pub against: &'static str,
    pub iterations: f64,
    pub time_per_iteration: f64,
    pub total_time: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SolveReport {
    pub matrix: MatrixSummary,
    pub tol: f64,
    pub criterion: ResidualNorm,
    pub runs: Vec<RunReport>,
    pub ratios: Vec<Ratios>,
}

impl SolveReport {
    pub fn new(
        matrix: MatrixSummary,
        tol: f64,
        criterion: ResidualNorm,
        infos: &[SolveInfo],
    ) -> Self {
        let runs: Vec<RunReport> = infos.iter().map(RunReport::from).collect();
        let ratios = match runs.split_first() {
            Some((base, rest)) => rest
                .iter()
                .map(|run| Ratios {
                    precision: run.precision,
                    against: base.precision,
                    iterations: ratio(run.iterations as f64, base.iterations as f64),
                    time_per_iteration: ratio(run.time_per_iteration, base.time_per_iteration),
                    total_time: ratio(run.total_time, base.total_time),
                })
                .collect(),
            None => Vec::new(),
        };
        SolveReport {
            matrix,
            tol,
            criterion,
            runs,
            ratios,
        }
    }

    pub fn all_converged(&self) -> bool {
        self.runs.iter().all(|r| r.converged)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serializes")
    }

    /// Side-by-side table: one column per precision, then the ratio columns.
    pub fn to_table(&self) -> String {
        let m = &self.matrix;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "matrix   {}: {} x {}, {} nonzeros ({:.1}/row, max {}), {}",
            m.name, m.rows, m.cols, m.nnz, m.nnz_per_row_mean, m.nnz_per_row_max, m.symmetry
        );
        if let Some(first) = self.runs.first() {
            let criterion = match self.criterion {
                ResidualNorm::Initial => "||r||/||r0||",
                ResidualNorm::Rhs => "||r||/||b||",
            };
            let precond = if first.precond == "none" {
                String::new()
            } else {
                format!(", precond {}", first.precond)
            };
            let _ = writeln!(
                out,
                "method   {}{precond}, stop at {criterion} <= {:e}, backend {}\n",
                first.method, self.tol, first.backend
            );
            if let Some(line) = shift_line(first) {
                out.insert_str(out.len() - 1, &line);
            }
        }
        let mut header = vec![String::new()];
        header.extend(self.runs.iter().map(|r| r.precision.to_string()));
        header.extend(
            self.ratios
                .iter()
                .map(|q| format!("{}/{}", q.precision, q.against)),
        );
        let mut rows = vec![header];
        let ratio_cells = |f: fn(&Ratios) -> f64| -> Vec<String> {
            self.ratios.iter().map(|q| ratio_cell(f(q))).collect()
        };
        let mut row = |label: &str, f: &dyn Fn(&RunReport) -> String, ratios: Vec<String>| {
            let mut cells = vec![label.to_string()];
            cells.extend(self.runs.iter().map(f));
            cells.extend(ratios);
            rows.push(cells);
        };
        let blanks = || vec![String::new(); self.ratios.len()];
        row(
            "iterations",
            &|r| r.iterations.to_string(),
            ratio_cells(|q| q.iterations),
        );
        row("stop reason", &|r| r.stop_reason.to_string(), blanks());
        if self.runs.iter().any(|r| !r.phases.is_empty()) {
            row("precisions", &|r| phase_path(r), blanks());
        }
        if self.runs.iter().any(|r| r.restarts > 0) {
            row("restarts", &|r| r.restarts.to_string(), blanks());
        }
        row(
            "recurrence residual",
            &|r| sci(r.recurrence_residual),
            blanks(),
        );
        row("true residual", &|r| sci(r.true_residual), blanks());
        row("setup time [s]", &|r| sci(r.setup_time), blanks());
        row(
            "time / iteration [s]",
            &|r| sci(r.time_per_iteration),
            ratio_cells(|q| q.time_per_iteration),
        );
        if self.runs.iter().any(|r| r.precond != "none") {
            row(
                "precond [% of iter.]",
                &|r| format!("{:.1}", 100.0 * r.precond_share),
                blanks(),
            );
            row(
                "precond setup [s]",
                &|r| sci(r.precond_setup_time),
                blanks(),
            );
        }
        row(
            "total time [s]",
            &|r| sci(r.total_time),
            ratio_cells(|q| q.total_time),
        );
        row(
            "time to true res. [s]",
            &|r| r.time_to_target.map_or("not reached".into(), sci),
            blanks(),
        );
        if self.runs.iter().any(|r| r.ranks > 1 || r.devices > 1) {
            row("ranks", &|r| r.ranks.to_string(), blanks());
            row("devices", &|r| r.devices.to_string(), blanks());
            row(
                "communication [s]",
                &|r| sci(r.communication_time),
                blanks(),
            );
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let mut line = format!("{:<w$}", r[0], w = widths[0]);
            for (c, cell) in r.iter().enumerate().skip(1) {
                let _ = write!(line, "  {:>w$}", cell, w = widths[c]);
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
        for run in self.runs.iter().filter(|r| !r.phases.is_empty()) {
            let _ = writeln!(out, "\n{}: each precision in turn", run.precision);
            for (i, p) in run.phases.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "  {}. {:<4} {:>7} iterations  {} s  true residual {}  {}",
                    i + 1,
                    p.precision,
                    p.iterations,
                    sci(p.seconds),
                    sci(p.true_residual),
                    p.stop_reason
                );
            }
        }
        out
    }
}

/// `f64 1200 > dd 310`: a ladder's rungs with their iterations; a single precision's name.
fn phase_path(run: &RunReport) -> String {
    if run.phases.is_empty() {
        return run.precision.to_string();
    }
    let steps: Vec<String> = run
        .phases
        .iter()
        .map(|p| format!("{} {}", p.precision, p.iterations))
        .collect();
    steps.join(" > ")
}

/// `a / b`, undefined (NaN, shown `-` and written null) when `b` is zero: two runs of 0
/// iterations have no ratio.
/// `ILU(0)   ...`: the remedy where the automatic one ran (a matching, a shift), or the shift
/// `sigma` the user gave.
fn shift_line(run: &RunReport) -> Option<String> {
    match (&run.ilu_remedy, run.ilu_shift) {
        (Some(r), Some(sigma)) => Some(format!("ILU(0)   remedy: {r}; sigma = {sigma:.3e}\n")),
        (Some(r), None) => Some(format!("ILU(0)   remedy: {r}\n")),
        (None, Some(sigma)) => Some(format!(
            "ILU(0)   shift sigma = {sigma:.3e} (given: --ilu-shift)\n"
        )),
        (None, None) => None,
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 { f64::NAN } else { a / b }
}

/// A ratio for a table: two decimals, three significant digits below 0.01 (135 iterations
/// against 30000 is `4.50e-3`, not `0.00`), `-` where undefined.
pub fn ratio_cell(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x != 0.0 && x.abs() < 0.01 {
        format!("{x:.2e}")
    } else {
        format!("{x:.2}")
    }
}

fn sci(x: f64) -> String {
    format!("{x:.3e}")
}

/// `--history FILE.csv`: one row per recorded iteration of every run. BiCGStab records two
/// points an iteration: `step` is `half` for the residual `s` of its half step, `full` for the
/// residual that ends the iteration (CG's points are all `full`).
pub fn history_csv(infos: &[SolveInfo]) -> Result<Vec<u8>> {
    let io_err = |e: csv::Error| Error::Io {
        path: "history CSV".into(),
        source: std::io::Error::other(e),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "precision",
        "method",
        "iteration",
        "step",
        "recurrence_residual",
        "true_residual",
        "elapsed_s",
    ])
    .map_err(io_err)?;
    for info in infos {
        for h in &info.history {
            w.write_record([
                info.precision.to_string(),
                info.method.to_string(),
                h.iteration.to_string(),
                if h.half_step { "half" } else { "full" }.to_string(),
                format!("{:e}", h.recurrence_residual),
                h.true_residual.map_or(String::new(), |t| format!("{t:e}")),
                format!("{:e}", h.elapsed),
            ])
            .map_err(io_err)?;
        }
    }
    w.into_inner().map_err(|e| io_err(e.into_error().into()))
}

/// `--write-x FILE`: the solution as a Matrix Market `n x 1` array in the precision it was
/// computed in, one decimal number per line with the digits that read back to exactly the same
/// value (`precision::exact_decimal`: the shortest round trip for a double, about 33
/// significant digits for a dd, 23 for a td, 65 for a qd, MPFR's for `mp:<bits>`), so that
/// `--x0 FILE` gives the solve the same vector and anyone can check the true residual from the
/// file with exact arithmetic. A comment line names the precision. A non-finite entry (a
/// breakdown's NaN) is written `nan`, `inf` or `-inf`, with a second comment counting them:
/// readers (`--x0` included) refuse such a file, naming the line.
pub fn solution_text(x: &crate::SolutionVector, precision: &str) -> String {
    use crate::SolutionVector;
    use crate::precision::exact_decimal as text;
    use rayon::prelude::*;
    fn lines<T: Sync>(x: &[T], f: impl Fn(&T) -> String + Sync + Send) -> Vec<String> {
        x.par_iter().map(f).collect()
    }
    let values = match x {
        SolutionVector::F64(v) => lines(v, |&x| text::write_f64(x)),
        SolutionVector::Td(v) => lines(v, |&x| text::write_td(x)),
        SolutionVector::Dd(v) => lines(v, |&x| text::write_dd(x)),
        SolutionVector::Qd(v) => lines(v, |&x| text::write_qd(x)),
        SolutionVector::Mp(v) => {
            crate::precision::mpfloat::with_mp_vector!(v, x => lines(x, text::write_mpfloat))
        }
        #[cfg(feature = "mpfr")]
        SolutionVector::Mpfr(v) => lines(v, text::write_mpfr),
    };
    let non_finite = values
        .iter()
        .filter(|v| matches!(v.as_str(), "nan" | "inf" | "-inf"))
        .count();
    let width = values.iter().map(String::len).sum::<usize>();
    let mut out = String::with_capacity(width + values.len() + 256);
    let _ = writeln!(out, "%%MatrixMarket matrix array real general");
    let _ = writeln!(
        out,
        "% precision {precision}: each value is written with enough digits to read back exactly"
    );
    if non_finite > 0 {
        let _ = writeln!(
            out,
            "% {non_finite} entries are not finite (nan, inf): no reader takes this file as a vector"
        );
    }
    let _ = writeln!(out, "{} 1", values.len());
    for v in &values {
        out.push_str(v);
        out.push('\n');
    }
    out
}

/// One timed kernel of `solver bench`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub kernel: String,
    pub precision: &'static str,
    pub median_ms: f64,
    /// Minimum bytes the operation must move.
    pub bytes: f64,
    pub gb_per_s: f64,
    /// Achieved bandwidth over the measured device-to-device copy bandwidth.
    pub fraction_of_copy: f64,
    pub peer: Option<String>,
    /// Peer time over ours (> 1: ours is faster).
    pub speedup_vs_peer: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub matrix: MatrixSummary,
    pub device: String,
    pub reps: usize,
    pub copy_gb_per_s: f64,
    pub rows: Vec<BenchRow>,
}

impl BenchReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("bench report serializes")
    }

    pub fn to_table(&self) -> String {
        let m = &self.matrix;
        let mut out = format!(
            "matrix   {}: {} x {}, {} nonzeros ({:.1}/row)\ndevice   {}, copy bandwidth {:.0} GB/s, median of {} runs\n\n",
            m.name,
            m.rows,
            m.cols,
            m.nnz,
            m.nnz_per_row_mean,
            self.device,
            self.copy_gb_per_s,
            self.reps
        );
        let _ = writeln!(
            out,
            "{:<28} {:>4} {:>11} {:>9} {:>7}  vs peer",
            "kernel", "prec", "median [ms]", "GB/s", "% copy"
        );
        for r in &self.rows {
            let peer = match (&r.peer, r.speedup_vs_peer) {
                (Some(p), Some(s)) => format!("{s:.2}x faster than {p}"),
                (Some(p), None) => p.clone(),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "{:<28} {:>4} {:>11.4} {:>9.0} {:>6.0}%  {}",
                r.kernel,
                r.precision,
                r.median_ms,
                r.gb_per_s,
                100.0 * r.fraction_of_copy,
                peer
            );
        }
        let ratio = |kernel: &str| {
            let t = |p: &str| {
                self.rows
                    .iter()
                    .find(|r| r.kernel == kernel && r.precision == p)
                    .map(|r| r.median_ms)
            };
            Some(t("dd")? / t("f64")?)
        };
        for kernel in ["spmv", "cg iteration", "bicgstab iteration"] {
            if let Some(q) = ratio(kernel) {
                let _ = writeln!(out, "dd/f64 time of {kernel}: {q:.2}");
            }
        }
        out
    }
}
