//! `runs.jsonl`: one JSON line per finished run, appended and synced before the next run starts,
//! so an interrupted study (Ctrl-C, kill -9, power loss) loses at most the run in progress.
//!
//! A line is written with a single `write_all` of the complete line and its `\n`, then
//! `flush` + `sync_data`. A kill in the middle of that write leaves a last line without its
//! `\n`: opening the store for writing cuts that tail off (with a warning) and touches nothing
//! else; reading alone (`solver report`) just skips it. Complete lines that do not parse (a
//! disk fault) are skipped with a warning and never rewritten.

use super::grid::RunKey;
use crate::error::{Error, Result};
use crate::precond::ilu0::IluRemedy;
use crate::solver::bicgstab::Shadow;
use crate::solver::{HistoryPoint, StopReason};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The record file's name inside the study directory.
pub const RUNS_FILE: &str = "runs.jsonl";

/// Version of the line format, written in every line.
/// 2: ILU(0) runs without `ilu_shift` in their key use the automatic shift (version 1 had none:
/// its `precond-failed` records of such runs are run again, see [`RunRecord::is_stale`]).
/// 3: BiCGStab restarts after a breakdown (5 by default; keys without `max_restarts` mean it):
/// earlier versions' `breakdown` records are run again.
/// 4: BiCGStab's shadow residual is `random` by default (keys without `shadow` mean it; they
/// meant `r0`), and the automatic ILU(0) remedy permutes rows by a matching before it shifts:
/// earlier versions' BiCGStab runs with the default shadow, and their ILU(0) runs that needed
/// the automatic remedy with a method other than CG, are run again.
pub const FORMAT_VERSION: u32 = 4;

/// How a run ended. Failures to load or solve are recorded too, so a study goes on past them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    Converged,
    MaxIterations,
    Breakdown,
    NonFinite,
    Indefinite,
    TimeLimit,
    /// A precision ladder's rung stopped making progress where no iterations were left for
    /// the next.
    Stagnated,
    /// The matrix could not be read or is not a system the solvers take (not square...).
    LoadError,
    /// The solver returned an error (a backend failure), not an outcome.
    SolveError,
    /// The preconditioner cannot be built for this matrix (ILU(0): a zero pivot or a missing
    /// diagonal): an outcome of the matrix, not retried.
    PrecondFailed,
}

impl RunStatus {
    /// `None` for `Cancelled`: a cancelled run has no outcome and is not recorded.
    pub fn from_stop(reason: &StopReason) -> Option<Self> {
        Some(match reason {
            StopReason::ConvergedRtol | StopReason::ConvergedZeroResidual => RunStatus::Converged,
            StopReason::MaxIterations => RunStatus::MaxIterations,
            StopReason::Breakdown { .. } => RunStatus::Breakdown,
            StopReason::NonFinite { .. } => RunStatus::NonFinite,
            StopReason::Indefinite => RunStatus::Indefinite,
            StopReason::TimeLimit => RunStatus::TimeLimit,
            StopReason::Stagnated { .. } => RunStatus::Stagnated,
            StopReason::Cancelled => return None,
        })
    }

    /// Errors (not outcomes) are tried again when the study is resumed: loading is cheap next
    /// to solving, and a fixed file or a mount that is back should not need a manual edit. A
    /// repeated failure is not appended again. Numerical outcomes, time limits included, are
    /// the measurement itself and are never re-run.
    pub fn is_retried(self) -> bool {
        matches!(self, RunStatus::LoadError | RunStatus::SolveError)
    }

    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Converged => "converged",
            RunStatus::MaxIterations => "max-iterations",
            RunStatus::Breakdown => "breakdown",
            RunStatus::NonFinite => "non-finite",
            RunStatus::Indefinite => "indefinite",
            RunStatus::TimeLimit => "time-limit",
            RunStatus::Stagnated => "stagnated",
            RunStatus::LoadError => "load-error",
            RunStatus::SolveError => "solve-error",
            RunStatus::PrecondFailed => "precond-failed",
        }
    }
}

/// Size of the matrix a run solved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixShape {
    pub rows: usize,
    pub nnz: usize,
    pub symmetry: String,
}

impl MatrixShape {
    pub fn of(a: &crate::sparse::CsrMatrix) -> Self {
        MatrixShape {
            rows: a.nrows(),
            nnz: a.nnz(),
            symmetry: a.symmetry().to_string(),
        }
    }
}

/// The numbers of a finished solve. Residuals that are not finite are written as `null`
/// (serde_json's rule) and read back as NaN; `status`/`stop_reason` say what happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// What `auto` resolved to.
    pub method: String,
    pub backend: String,
    pub iterations: usize,
    pub stop_reason: StopReason,
    #[serde(with = "nullable_f64")]
    pub recurrence_residual: f64,
    #[serde(with = "nullable_f64")]
    pub true_residual: f64,
    /// Seconds: setup (work vectors, moving the problem to the backend), the iteration loop,
    /// the true-residual checks (periodic and final), and all of it.
    pub setup_time: f64,
    pub iteration_time: f64,
    pub true_residual_time: f64,
    pub total_time: f64,
    pub time_to_target: Option<f64>,
    /// The true residual went into the history every this many iterations (after
    /// `true_residual_points` of them, at twice the spacing each time the iterations doubled).
    pub true_residual_every: usize,
    /// 0 (and absent, in older files): the spacing stayed `true_residual_every`.
    #[serde(default)]
    pub true_residual_points: usize,
    /// Of `iteration_time`: applying the preconditioner (absent, 0, in older files).
    #[serde(default)]
    pub precond_time: f64,
    /// Of `setup_time`: building the preconditioner.
    #[serde(default)]
    pub precond_setup_time: f64,
    /// Solves the study kept in flight at once (`--in-flight`; 1 in older files): with more
    /// than one, the times include the others' contention for the device.
    #[serde(default = "one")]
    pub in_flight: usize,
    /// ILU(0)'s `sigma` where `A + sigma I` was factored (a fixed or automatic shift).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ilu_shift: Option<f64>,
    /// What the automatic shift did, where `A` itself had no ILU(0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ilu_remedy: Option<IluRemedy>,
    /// BiCGStab's restarts after breakdowns (0, and absent, in older files).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restarts: usize,
    /// The MPI ranks the solve was spread over (1, and absent, in one process).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ranks: usize,
    /// The GPUs of one process it was spread over (`--devices`; 1, and absent, otherwise).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub devices: usize,
    /// Of `total_time`: moving words between the ranks or devices (0, and absent, on one).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub communication_time: f64,
    /// A precision ladder's rungs, in the order they ran (absent for one precision).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseRecord>,
}

/// One rung of a ladder run ([`crate::solver::Phase`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub precision: String,
    pub iterations: usize,
    pub stop_reason: StopReason,
    #[serde(with = "nullable_f64")]
    pub true_residual: f64,
    pub seconds: f64,
}

impl PhaseRecord {
    pub fn of(phase: &crate::solver::Phase) -> Self {
        PhaseRecord {
            precision: phase.precision.to_string(),
            iterations: phase.iterations,
            stop_reason: phase.stop_reason.clone(),
            true_residual: phase.true_residual,
            seconds: phase.seconds,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

fn is_zero_f64(t: &f64) -> bool {
    *t == 0.0
}

impl RunResult {
    /// The time the f64/dd comparison uses: the iteration loop only, as the thesis measured
    /// ("only the iterative portion", section 4.4). Setup is left out because the first run of
    /// each matrix (f64) pays for first touches that the second does not, which decides the
    /// comparison on millisecond solves; the true-residual checks made for the plots are
    /// already outside the loop time.
    pub fn time(&self) -> f64 {
        self.iteration_time
    }

    pub fn time_per_iteration(&self) -> f64 {
        if self.iterations == 0 {
            0.0
        } else {
            self.iteration_time / self.iterations as f64
        }
    }
}

/// Convergence history kept for the plots: `[iteration, value]` pairs, non-finite values
/// dropped, values rounded to 4 significant digits, each series reduced to at most
/// [`SERIES_POINTS`] points by keeping the lowest and highest point of equal-width buckets (so
/// BiCGStab's spikes survive). Both series together: at most ~500 points, about 10 kB a line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactHistory {
    /// Iterations recorded before decimation.
    pub points: usize,
    /// Relative recurrence residual (by the stopping test's criterion).
    pub recurrence: Vec<(usize, f64)>,
    /// `||b - A x|| / ||b||` in double-double: the periodic checks and the final value.
    pub true_residual: Vec<(usize, f64)>,
}

/// Cap on each stored series.
pub const SERIES_POINTS: usize = 250;

impl CompactHistory {
    pub fn new(history: &[HistoryPoint], final_iteration: usize, final_true: f64) -> Self {
        let recurrence: Vec<(usize, f64)> = history
            .iter()
            .map(|h| (h.iteration, h.recurrence_residual))
            .collect();
        let mut true_residual: Vec<(usize, f64)> = history
            .iter()
            .filter_map(|h| h.true_residual.map(|t| (h.iteration, t)))
            .collect();
        if true_residual.last().map(|p| p.0) != Some(final_iteration) {
            true_residual.push((final_iteration, final_true));
        }
        CompactHistory {
            points: history.len(),
            recurrence: decimate(&recurrence, SERIES_POINTS),
            true_residual: decimate(&true_residual, SERIES_POINTS),
        }
    }
}

/// At most `budget` points (plus the first and last): the minimum and maximum of each of
/// `budget / 2` buckets of consecutive points, in iteration order.
pub fn decimate(points: &[(usize, f64)], budget: usize) -> Vec<(usize, f64)> {
    let finite: Vec<(usize, f64)> = points
        .iter()
        .filter(|p| p.1.is_finite())
        .map(|&(i, v)| (i, round4(v)))
        .collect();
    if finite.len() <= budget {
        return finite;
    }
    let buckets = (budget / 2).max(1);
    let mut keep = vec![0, finite.len() - 1];
    for b in 0..buckets {
        let lo = b * finite.len() / buckets;
        let hi = ((b + 1) * finite.len() / buckets).max(lo + 1);
        let range = lo..hi.min(finite.len());
        let by_value = |a: &usize, b: &usize| finite[*a].1.total_cmp(&finite[*b].1);
        keep.extend(range.clone().min_by(by_value));
        keep.extend(range.max_by(by_value));
    }
    keep.sort_unstable();
    keep.dedup();
    keep.into_iter().map(|i| finite[i]).collect()
}

/// Four significant digits: all a plot shows, and half the bytes of a shortest round-trip.
fn round4(v: f64) -> f64 {
    format!("{v:.3e}").parse().unwrap_or(v)
}

/// One line of `runs.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub v: u32,
    pub key: RunKey,
    pub name: String,
    pub status: RunStatus,
    /// Thesis definition: the stopping test converged AND the true residual is at most tol.
    pub solved: bool,
    pub matrix: Option<MatrixShape>,
    pub result: Option<RunResult>,
    /// The load or solve error message, for `load-error`/`solve-error`.
    pub error: Option<String>,
    pub history: Option<CompactHistory>,
    /// Seconds since the Unix epoch when the line was written.
    pub finished_at: u64,
    pub solver_version: String,
}

impl RunRecord {
    /// A run whose key means something else now, so a resumed study runs it again: a
    /// `precond-failed` ILU(0) run of version 1 (its key now means the automatic shift, and it
    /// was factored without one), a `breakdown` of version 1 or 2 (its key now means
    /// restarts after a breakdown, and it had none), and before version 4 a BiCGStab run with
    /// the default shadow (it meant `r0`, now `random`) or an ILU(0) run whose automatic
    /// remedy ran or failed for a method that may now permute rows.
    pub fn is_stale(&self) -> bool {
        let auto_ilu =
            self.key.precond == crate::precond::PrecondKind::Ilu0 && self.key.ilu_shift.is_auto();
        let unremedied = self.v < 2 && self.status == RunStatus::PrecondFailed && auto_ilu;
        let unrestarted = self.v < 3 && self.status == RunStatus::Breakdown;
        let method = self.result.as_ref().map(|r| r.method.as_str());
        let bicgstab = matches!(method, Some("bicgstab") | Some("bicgstab-l"))
            || (method.is_none() && self.key.method == crate::solver::dispatch::Method::Bicgstab);
        let old_shadow = self.v < 4 && bicgstab && self.key.bicgstab.shadow == Shadow::Random;
        let remedied = self.result.as_ref().is_some_and(|r| r.ilu_remedy.is_some());
        let unmatched = self.v < 4
            && auto_ilu
            && method != Some("cg")
            && (remedied || self.status == RunStatus::PrecondFailed);
        unremedied || unrestarted || old_shadow || unmatched
    }
}

/// Append-only writer of `runs.jsonl`.
pub struct Store {
    path: PathBuf,
    file: File,
}

impl Store {
    /// Create `dir` if needed, read what is recorded, cut off a partial last line, and open for
    /// appending.
    pub fn open(dir: &Path) -> Result<(Store, Vec<RunRecord>)> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(RUNS_FILE);
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let (records, complete) = parse_lines(&bytes, &path);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        if complete < bytes.len() {
            log::warn!(
                "{}: dropping an unfinished last line ({} bytes) left by an interrupted write",
                path.display(),
                bytes.len() - complete
            );
            file.set_len(complete as u64).map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        Ok((Store { path, file }, records))
    }

    /// Write one record as one line and make it durable before returning.
    pub fn append(&mut self, record: &RunRecord) -> Result<()> {
        let mut line = serde_json::to_vec(record).expect("run records serialize");
        line.push(b'\n');
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(&line).map_err(io)?;
        self.file.flush().map_err(io)?;
        self.file.sync_data().map_err(io)
    }
}

/// Read a study's records without changing anything (a partial last line is skipped).
pub fn read_records(dir: &Path) -> Result<Vec<RunRecord>> {
    let path = dir.join(RUNS_FILE);
    let bytes = std::fs::read(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let (records, complete) = parse_lines(&bytes, &path);
    if complete < bytes.len() {
        log::warn!(
            "{}: ignoring an unfinished last line ({} bytes)",
            path.display(),
            bytes.len() - complete
        );
    }
    Ok(records)
}

/// The records of every complete line, and the length of the complete lines.
fn parse_lines(bytes: &[u8], path: &Path) -> (Vec<RunRecord>, usize) {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut records = Vec::new();
    for (number, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RunRecord>(line) {
            Ok(r) => records.push(r),
            Err(e) => log::warn!(
                "{} line {}: skipping a line that is not a run record: {e}",
                path.display(),
                number + 1
            ),
        }
    }
    (records, complete)
}

/// The last record of each run key, in the order keys first appear: a load failure that a
/// resumed study retried successfully is superseded by the later line.
pub fn latest_by_key(records: Vec<RunRecord>) -> Vec<RunRecord> {
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    let mut out: Vec<RunRecord> = Vec::new();
    for r in records {
        match index.get(&r.key.id()) {
            Some(&i) => out[i] = r,
            None => {
                index.insert(r.key.id(), out.len());
                out.push(r);
            }
        }
    }
    out
}

/// serde_json writes NaN and infinity as `null`; read `null` back as NaN.
mod nullable_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}
