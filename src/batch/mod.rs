//! Batch studies (thesis section 4.4 as a tool): every matrix of a set solved at every point of a
//! grid (precision x tolerance x preconditioner x method), each finished run appended to
//! `runs.jsonl` before the next starts, so a study can be interrupted at any moment and
//! resumed with the same arguments (runs already recorded are skipped; a changed grid adds only
//! its new runs). `render_study` turns the records into `summary.md`, `summary.csv`,
//! `runs.csv`, per-matrix SVG plots and `index.html`, through `report::study` and
//! `report::plot`.
//!
//! The library never prints: progress and cancellation go through `StudyObserver`.

mod grid;
mod inputs;
mod lock;
pub mod profile;
mod schedule;
mod store;
mod summary;

pub use grid::{
    AUTO_TRUE_RESIDUAL_POINTS, BicgstabChoice, Condition, Grid, MethodOptions, PrecondChoice,
    RunKey, RunLimits, auto_true_residual_every, method_name, parse_duration,
};
pub use inputs::{MatrixInput, expand_inputs, matrix_name};
pub use lock::{LOCK_FILE, StudyLock};
pub use store::{
    CompactHistory, FORMAT_VERSION, MatrixShape, RUNS_FILE, RunRecord, RunResult, RunStatus,
    SERIES_POINTS, Store, decimate, latest_by_key, read_records,
};
pub use summary::{Category, ConditionSummary, MatrixRow, Ratios, Summary};

use crate::distributed::from_root;
use crate::error::{Error, Result};
use crate::precond::Preconditioning;
use crate::precond::ilu0::IluShift;
use crate::solver::dispatch::{
    BackendChoice, Lane, Problem, Recipe, cpu_only_error, solve, solve_on,
};
use crate::solver::{Iteration, Monitor, Params};
use crate::sparse::CsrMatrix;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Everything a study needs; [`StudySpec::validate`] runs before any work.
#[derive(Clone, Debug)]
pub struct StudySpec {
    /// Directories, globs, matrix files, generated matrices (`poisson2d:N`) or list files.
    pub inputs: Vec<String>,
    pub grid: Grid,
    pub limits: RunLimits,
    pub backend: BackendChoice,
    /// The study directory (created if needed).
    pub out: PathBuf,
    /// Limits on reading each matrix file; a matrix beyond them is recorded as a load error.
    pub read_limits: crate::sparse::ReadLimits,
    /// Solves in flight at once (`schedule`): 1 runs one at a time, as the times of a
    /// comparison are cleanest; more keep a GPU busy on small matrices. 0: [`default_in_flight`].
    pub in_flight: usize,
}

/// Solves in flight when a study does not say: several where the runs go to the GPU, whose
/// small solves each leave it mostly idle; one on the CPU, whose solves share its cores.
pub fn default_in_flight(backend: BackendChoice) -> usize {
    match backend {
        BackendChoice::Cuda => schedule::GPU_IN_FLIGHT,
        BackendChoice::Cpu | BackendChoice::Auto => 1,
    }
}

impl StudySpec {
    pub fn validate(&self) -> Result<()> {
        self.grid.validate()?;
        if self.limits.max_iter == 0 {
            return Err(Error::Config("max_iter must be at least 1".into()));
        }
        if self.inputs.is_empty() {
            return Err(Error::InvalidInput(
                "a study needs at least one input".into(),
            ));
        }
        // A precision this build lacks (mp without the `mpfr` feature): refused before any run.
        if let Some(why) = self.grid.precisions.iter().find_map(|p| p.unavailable()) {
            return Err(Error::Config(why));
        }
        // A precision the GPU lacks (qd, mp) with --backend cuda: refused before any run. With
        // auto, each such run falls back to the CPU (`dispatch::solve`); its record says so.
        if self.backend == BackendChoice::Cuda
            && let Some(&p) = self.grid.precisions.iter().find(|p| !p.runs_on_gpu())
        {
            return Err(cpu_only_error(p));
        }
        Ok(())
    }
}

/// What a study has to do, known before the first run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub matrices: usize,
    /// Matrices x grid.
    pub runs: usize,
    /// Already recorded with an outcome: skipped.
    pub recorded: usize,
    /// To run now (includes earlier load or solve errors, which are retried).
    pub pending: usize,
}

/// Progress and cancellation. Every method has a do-nothing default.
pub trait StudyObserver {
    fn planned(&mut self, _plan: &Plan) {}
    /// A run is about to start (or a load is: `key` is its first pending run).
    fn run_started(&mut self, _name: &str, _key: &RunKey) {}
    /// Once per solver iteration; `false` cancels the run (it is not recorded) and the study.
    fn iteration(&mut self, _iteration: usize, _relative_residual: f64) -> bool {
        true
    }
    /// A run ended; `recorded` is false for a repeated error that was already on file.
    fn run_finished(&mut self, _record: &RunRecord, _recorded: bool) {}
    /// Checked between runs: true stops the study before the next one.
    fn stop_requested(&self) -> bool {
        false
    }
}

/// The observer that watches nothing.
pub struct Silent;
impl StudyObserver for Silent {}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StudyOutcome {
    pub executed: usize,
    /// Runs that ended in a load or solve error this time.
    pub errors: usize,
    /// Stopped by the observer before every pending run was done.
    pub interrupted: bool,
}

/// Run every pending run of the study, appending each result as it finishes.
pub fn run_study(spec: &StudySpec, observer: &mut dyn StudyObserver) -> Result<StudyOutcome> {
    spec.validate()?;
    let matrices = expand_inputs(&spec.inputs)?;
    // Over MPI ranks (`mpirun ... solver batch`) every rank runs each solve, together; rank 0
    // alone holds the lock and the records, and tells the others which runs are pending.
    let ranks = crate::distributed::current();
    let root = ranks.as_ref().is_none_or(|comm| comm.rank() == 0);
    let opened = match root {
        // Held until the study returns: a second `solver batch` on this directory fails at once.
        true => StudyLock::acquire(&spec.out)
            .and_then(|lock| Ok((lock, Store::open(&spec.out)?)))
            .map(Some),
        false => Ok(None),
    };
    let (_lock, mut store, records) = match opened {
        Ok(Some((lock, (store, records)))) => (Some(lock), Some(store), records),
        Ok(None) => (None, None, Vec::new()),
        Err(e) => {
            if let Some(comm) = &ranks {
                from_root(&**comm, format!("{FAILED}{e}").as_bytes());
            }
            return Err(e);
        }
    };
    let latest = latest_by_key(records);
    // (records of an older version that the automatic ILU(0) shift would now get past)
    let stale: std::collections::HashSet<String> = latest
        .iter()
        .filter(|r| r.is_stale())
        .map(|r| r.key.id())
        .collect();
    let latest: HashMap<String, RunStatus> =
        latest.into_iter().map(|r| (r.key.id(), r.status)).collect();

    let mut work: Vec<(&MatrixInput, Vec<RunKey>)> = Vec::new();
    let mut plan = Plan {
        matrices: matrices.len(),
        runs: 0,
        recorded: 0,
        pending: 0,
    };
    for m in &matrices {
        let keys = run_keys(m, &spec.grid, &spec.limits);
        plan.runs += keys.len();
        let pending: Vec<RunKey> = keys
            .into_iter()
            .filter(|k| {
                let id = k.id();
                latest.get(&id).is_none_or(|s| s.is_retried()) || stale.contains(&id)
            })
            .collect();
        plan.recorded += spec.grid.len() - pending.len();
        plan.pending += pending.len();
        if !pending.is_empty() {
            work.push((m, pending));
        }
    }
    if let Some(comm) = &ranks {
        let pending = pending_on_every_rank(&**comm, &work)?;
        for (_, keys) in &mut work {
            keys.retain(|k| pending.contains(&k.id()));
        }
        work.retain(|(_, keys)| !keys.is_empty());
    }
    observer.planned(&plan);
    if !work.is_empty() {
        warm_up(spec);
    }

    let mut outcome = StudyOutcome::default();
    let mut recorder = Recorder {
        store: store.as_mut(),
        latest: &latest,
        outcome: &mut outcome,
        observer,
        ranks: ranks.as_deref(),
    };
    let in_flight = match spec.in_flight {
        // (solves spread over ranks or GPUs run on this thread, whose scopes say so)
        _ if crate::distributed::spread() => 1,
        0 => default_in_flight(spec.backend),
        n => n,
    };
    // (the unit in flight is a run: one matrix's runs go side by side too)
    let runs: usize = work.iter().map(|(_, keys)| keys.len()).sum();
    if in_flight > 1 && runs > 1 {
        schedule::run_in_flight(spec, work, in_flight, &mut recorder)?;
    } else {
        let lane = Lane::default();
        for (m, keys) in work {
            if !run_matrix(m, keys, spec, &lane, in_flight, &mut recorder)? {
                recorder.outcome.interrupted = true;
                break;
            }
        }
    }
    Ok(outcome)
}

/// What rank 0 sends in place of the pending runs when it could not open the study.
const FAILED: &str = "failed: ";

/// The ids of the runs rank 0 found pending, on every rank (rank 0's `work`; the others'
/// hold every run, not having read the records), or rank 0's failure to open the study.
fn pending_on_every_rank(
    comm: &dyn crate::distributed::Communicator,
    work: &[(&MatrixInput, Vec<RunKey>)],
) -> Result<std::collections::HashSet<String>> {
    let ids: Vec<String> = work
        .iter()
        .flat_map(|(_, keys)| keys.iter().map(RunKey::id))
        .collect();
    let shared = from_root(comm, ids.join("\n").as_bytes());
    let shared = String::from_utf8_lossy(&shared);
    if let Some(why) = shared.strip_prefix(FAILED) {
        return Err(Error::Config(format!(
            "rank 0 could not open the study: {why}"
        )));
    }
    Ok(shared.lines().map(str::to_string).collect())
}

/// Where the runs of a matrix report: straight to the study ([`Recorder`], one solve at a
/// time), or to the thread that records them (`schedule`, several in flight).
trait RunSink {
    /// Checked before each run: true stops the study.
    fn stop_requested(&self) -> bool;
    /// `a` is loaded and its runs are about to start (`schedule` decides here whether they
    /// run beside others).
    fn loaded(&mut self, _a: &CsrMatrix) {}
    fn run_started(&mut self, name: &str, key: &RunKey);
    /// Once per solver iteration; `false` cancels the run (not recorded) and the study.
    fn iteration(&mut self, iteration: usize, relative_residual: f64) -> bool;
    fn run_finished(&mut self, record: RunRecord) -> Result<()>;
}

/// The study's own sink: the store (rank 0's), what it held before, the counts, the observer,
/// and the ranks that run the study together.
struct Recorder<'a> {
    store: Option<&'a mut Store>,
    latest: &'a HashMap<String, RunStatus>,
    outcome: &'a mut StudyOutcome,
    observer: &'a mut dyn StudyObserver,
    ranks: Option<&'a dyn crate::distributed::Communicator>,
}

impl RunSink for Recorder<'_> {
    /// Over ranks, where any rank was asked to stop: each asks at the same points.
    fn stop_requested(&self) -> bool {
        let mine = self.observer.stop_requested();
        match self.ranks {
            Some(comm) => crate::distributed::any_rank(comm, mine as u64) != 0,
            None => mine,
        }
    }
    fn run_started(&mut self, name: &str, key: &RunKey) {
        self.observer.run_started(name, key);
    }
    fn iteration(&mut self, iteration: usize, relative_residual: f64) -> bool {
        self.observer.iteration(iteration, relative_residual)
    }
    fn run_finished(&mut self, record: RunRecord) -> Result<()> {
        let store = self.store.as_deref_mut();
        finish_record(store, self.latest, record, self.outcome, self.observer)
    }
}

/// A matrix loaded for its runs (or why it could not be), and its preconditioners, each built
/// once for all the runs that use it.
struct Loaded {
    /// Shared with the runs in flight (`schedule`), which hold it while the matrix's slot may
    /// already have dropped it.
    problem: Arc<std::result::Result<Problem, String>>,
    /// By kind, and whether ILU(0)'s remedy may permute rows for the method (not for CG).
    preconds: HashMap<(PrecondChoice, bool), Arc<Prepared>>,
}

/// A preconditioner ready for the runs that use it, or why it could not be built.
type Prepared = std::result::Result<Preconditioning, String>;

impl Loaded {
    fn load(m: &MatrixInput, spec: &StudySpec) -> Loaded {
        let problem = crate::sparse::load_matrix_with(&m.key, &spec.read_limits)
            .and_then(|a| Problem::new(Arc::new(a), None, None))
            .map_err(|e| e.to_string());
        Loaded {
            problem: Arc::new(problem),
            preconds: HashMap::new(),
        }
    }

    /// The preconditioner of `key`, built the first time it is asked for.
    fn precond(&mut self, key: &RunKey) -> Arc<Prepared> {
        let Ok(problem) = &*self.problem else {
            unreachable!("preconditioners are asked only of loaded matrices")
        };
        let may_permute = Preconditioning::may_permute(key.method, &problem.a);
        self.preconds
            .entry((key.precond, may_permute))
            .or_insert_with(|| {
                let prepared =
                    Preconditioning::prepare(key.precond, &problem.a, key.ilu_shift, key.method);
                Arc::new(prepared.map_err(|e| e.to_string()))
            })
            .clone()
    }
}

/// Every pending run of one matrix, its GPU work on `lane`; `false` when the study was
/// stopped or a run cancelled (that run is not recorded).
fn run_matrix(
    m: &MatrixInput,
    keys: Vec<RunKey>,
    spec: &StudySpec,
    lane: &Lane,
    in_flight: usize,
    sink: &mut dyn RunSink,
) -> Result<bool> {
    if sink.stop_requested() {
        return Ok(false);
    }
    sink.run_started(&m.name, &keys[0]);
    let mut loaded = Loaded::load(m, spec);
    let run = RunContext {
        spec,
        lane,
        in_flight,
    };
    for key in keys {
        if sink.stop_requested() {
            return Ok(false);
        }
        let precond = loaded.problem.is_ok().then(|| loaded.precond(&key));
        match run_key(m, key, &loaded.problem, precond.as_deref(), &run, sink) {
            Some(record) => sink.run_finished(record)?,
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// One run of a matrix loaded (or not) with its preconditioner prepared (or not): its record,
/// or `None` when the sink cancelled it.
fn run_key(
    m: &MatrixInput,
    key: RunKey,
    problem: &std::result::Result<Problem, String>,
    precond: Option<&Prepared>,
    run: &RunContext<'_>,
    sink: &mut dyn RunSink,
) -> Option<RunRecord> {
    let problem = match problem {
        Ok(problem) => problem,
        Err(message) => {
            return Some(error_record(m, key, None, RunStatus::LoadError, message));
        }
    };
    sink.loaded(&problem.a);
    sink.run_started(&m.name, &key);
    match precond.expect("a loaded matrix's runs have their preconditioner") {
        Ok(precond) => run_one(m, key, problem, precond, run, sink),
        Err(message) => {
            let shape = MatrixShape::of(&problem.a);
            let status = RunStatus::PrecondFailed;
            Some(error_record(m, key, Some(shape), status, message))
        }
    }
}

/// Count a finished run and append it, unless it repeats a recorded error.
fn finish_record(
    store: Option<&mut Store>,
    latest: &HashMap<String, RunStatus>,
    record: RunRecord,
    outcome: &mut StudyOutcome,
    observer: &mut dyn StudyObserver,
) -> Result<()> {
    outcome.executed += 1;
    let repeated_error =
        record.status.is_retried() && latest.get(&record.key.id()).is_some_and(|s| s.is_retried());
    if record.status.is_retried() {
        outcome.errors += 1;
    }
    if !repeated_error && let Some(store) = store {
        store.append(&record)?;
    }
    observer.run_finished(&record, !repeated_error);
    Ok(())
}

/// An untimed solve of a small generated problem in each precision of the grid, so that the
/// first timed run does not pay for starting the backend (the CPU backend's thread pool starts
/// on first use: it tripled the time per iteration of a study's first solve when measured).
fn warm_up(spec: &StudySpec) {
    let a = Arc::new(crate::sparse::poisson2d(16));
    let Ok(problem) = Problem::new(a, None, None) else {
        return;
    };
    for &precision in &spec.grid.precisions {
        let recipe = Recipe {
            method: crate::solver::dispatch::Method::Cg,
            precision,
            precond: &Preconditioning::None,
        };
        let _ = solve(
            &problem,
            spec.backend,
            recipe,
            &Params::default(),
            &mut crate::solver::NoMonitor,
        );
    }
}

/// The grid's keys for one matrix, in the order they run: tolerance, preconditioner, method,
/// then precision (so f64 and dd of one comparison run back to back).
fn run_keys(m: &MatrixInput, grid: &Grid, limits: &RunLimits) -> Vec<RunKey> {
    let mut keys = Vec::with_capacity(grid.len());
    for &tol in &grid.tols {
        for &precond in &grid.preconds {
            for &method in &grid.methods {
                for &precision in &grid.precisions {
                    keys.push(RunKey {
                        matrix: m.key.clone(),
                        precision,
                        tol,
                        precond,
                        method,
                        max_iter: limits.max_iter,
                        time_limit_s: limits.time_limit.map(|d| d.as_secs_f64()),
                        criterion: limits.criterion,
                        ilu_shift: match precond {
                            PrecondChoice::Ilu0 | PrecondChoice::BlockJacobi => limits.ilu_shift,
                            PrecondChoice::None => IluShift::Auto,
                        },
                        bicgstab: limits.bicgstab,
                        method_options: RunKey::method_options_of(method, limits),
                        escalation: RunKey::escalation_of(precision, limits),
                    });
                }
            }
        }
    }
    keys
}

/// Forwards the solver's iterations to the sink.
struct Relay<'a>(&'a mut dyn RunSink);

impl Monitor for Relay<'_> {
    fn iteration(&mut self, at: &Iteration) -> bool {
        self.0.iteration(at.iteration, at.recurrence_residual)
    }
}

/// What a run needs besides its key: the study, and where and beside how many others it runs.
struct RunContext<'a> {
    spec: &'a StudySpec,
    lane: &'a Lane,
    in_flight: usize,
}

/// One solve; `None` when the sink cancelled it.
fn run_one(
    m: &MatrixInput,
    key: RunKey,
    problem: &Problem,
    precond: &Preconditioning,
    run: &RunContext<'_>,
    sink: &mut dyn RunSink,
) -> Option<RunRecord> {
    let spec = run.spec;
    let a: &CsrMatrix = &problem.a;
    let (every, points) = match spec.limits.true_residual_every {
        0 => (
            auto_true_residual_every(a.nrows()),
            AUTO_TRUE_RESIDUAL_POINTS,
        ),
        k => (k, 0),
    };
    let options = key.method_options.unwrap_or_default();
    // Fields Params gains later keep their defaults.
    #[allow(clippy::needless_update)]
    let params = Params {
        tol: key.tol,
        max_iter: key.max_iter,
        criterion: key.criterion,
        true_residual_every: every,
        true_residual_points: points,
        record_history: true,
        time_limit: spec.limits.time_limit,
        shadow: key.bicgstab.shadow,
        max_restarts: key.bicgstab.max_restarts,
        gmres_restart: options.restart,
        gmres_orthogonalization: options.orthogonalization,
        bicgstab_l: options.l,
        escalation: key.escalation.unwrap_or_default(),
        ..Params::default()
    };
    let shape = MatrixShape::of(a);
    let recipe = Recipe {
        method: key.method,
        precision: key.precision,
        precond,
    };
    let solved = solve_on(
        run.lane,
        problem,
        spec.backend,
        recipe,
        &params,
        &mut Relay(sink),
    );
    let solution = match solved {
        Ok(s) => s,
        Err(e) => {
            let status = RunStatus::SolveError;
            return Some(error_record(m, key, Some(shape), status, &e.to_string()));
        }
    };
    let info = solution.info;
    let status = RunStatus::from_stop(&info.stop_reason)?;
    let history = CompactHistory::new(&info.history, info.iterations, info.true_residual);
    let solved = info.stop_reason.converged() && info.true_residual <= key.tol;
    let result = RunResult {
        method: info.method.to_string(),
        backend: info.backend.to_string(),
        iterations: info.iterations,
        stop_reason: info.stop_reason,
        recurrence_residual: info.recurrence_residual,
        true_residual: info.true_residual,
        setup_time: info.times.setup,
        iteration_time: info.times.iterations,
        true_residual_time: info.times.true_residual,
        total_time: info.times.total,
        time_to_target: info.time_to_target,
        true_residual_every: every,
        true_residual_points: points,
        precond_time: info.times.precond,
        precond_setup_time: info.times.precond_setup,
        in_flight: run.in_flight,
        ilu_shift: info.ilu_shift,
        ilu_remedy: info.ilu_remedy.clone(),
        restarts: info.restarts,
        ranks: info.ranks,
        devices: info.devices,
        communication_time: info.times.communication,
        phases: info.phases.iter().map(store::PhaseRecord::of).collect(),
    };
    Some(RunRecord {
        v: FORMAT_VERSION,
        key,
        name: m.name.clone(),
        status,
        solved,
        matrix: Some(shape),
        result: Some(result),
        error: None,
        history: Some(history),
        finished_at: now(),
        solver_version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

fn error_record(
    m: &MatrixInput,
    key: RunKey,
    shape: Option<MatrixShape>,
    status: RunStatus,
    message: &str,
) -> RunRecord {
    RunRecord {
        v: FORMAT_VERSION,
        key,
        name: m.name.clone(),
        status,
        solved: false,
        matrix: shape,
        result: None,
        error: Some(message.to_string()),
        history: None,
        finished_at: now(),
        solver_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Files `render_study` writes inside the study directory.
pub const SUMMARY_MD: &str = "summary.md";
pub const SUMMARY_CSV: &str = "summary.csv";
pub const RUNS_CSV: &str = "runs.csv";
pub const INDEX_HTML: &str = "index.html";
pub const PLOTS_DIR: &str = "plots";

/// Read a study's records and (re)write its summary, CSVs, plots and `index.html`. Each file
/// is written whole under a temporary name and renamed, so an interrupted render leaves the
/// previous version, never half a file.
pub fn render_study(dir: &Path) -> Result<Summary> {
    use crate::report::{plot, study, study_plots};
    let summary = Summary::new(latest_by_key(read_records(dir)?));
    let plots = dir.join(PLOTS_DIR);
    std::fs::create_dir_all(&plots).map_err(|source| Error::Io {
        path: plots.clone(),
        source,
    })?;
    for profile in &summary.profiles {
        if let Some(svg) = study_plots::profile_svg(profile) {
            write_atomic(&dir.join(study::profile_file(profile)), svg.as_bytes())?;
        }
    }
    for cs in &summary.conditions {
        if let Some(scatter) = &cs.residuals {
            let title = format!("true residual per matrix: {}", cs.condition.label());
            if let Some(svg) = study_plots::residual_scatter_svg(scatter, cs.condition.tol, &title)
            {
                write_atomic(&dir.join(study::scatter_file(cs)), svg.as_bytes())?;
            }
        }
        for row in &cs.rows {
            let Some(svg) = plot::convergence_svg(cs, row) else {
                continue;
            };
            write_atomic(&dir.join(study::plot_file(cs, row)), svg.as_bytes())?;
        }
    }
    write_atomic(&dir.join(SUMMARY_MD), study::markdown(&summary).as_bytes())?;
    write_atomic(&dir.join(SUMMARY_CSV), &study::summary_csv(&summary)?)?;
    write_atomic(&dir.join(RUNS_CSV), &study::runs_csv(&summary)?)?;
    write_atomic(&dir.join(INDEX_HTML), study::html(&summary).as_bytes())?;
    Ok(summary)
}

use crate::output::write_atomic;
