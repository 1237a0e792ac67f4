//! The `batch` and `report` subcommands of the `solver` binary (declared in `main.rs`; not part
//! of the library): flags and `solver.toml` -> `batch::StudySpec`, a progress bar, Ctrl-C.

use crate::cli_args::{choice, count_arg, ilu_shift_arg, max_iter_arg, threads_arg, tol_arg};
use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use precsolve::batch::{
    self, BicgstabChoice, Grid, MethodOptions, Plan, PrecondChoice, RunKey, RunLimits, RunRecord,
    StudyObserver, StudySpec,
};
use precsolve::config::RawConfig;
use precsolve::precond::ilu0::IluShift;
use precsolve::report::study;
use precsolve::solver::ResidualNorm;
use precsolve::solver::bicgstab::Shadow;
use precsolve::solver::dispatch::{BackendChoice, Method, PrecisionChoice};
use precsolve::sparse::ReadLimits;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Exit code of a study stopped by Ctrl-C (128 + SIGINT, the shell's convention).
const EXIT_INTERRUPTED: u8 = 130;

#[derive(Args)]
pub struct BatchArgs {
    /// Directories (searched recursively for .mtx and .mtx.gz), globs, matrix files, generated
    /// matrices (poisson2d:N, poisson3d:N), or list files (one of those per line).
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<String>,
    /// Study directory: runs.jsonl (the records), summary.md, summary.csv, runs.csv, plots/,
    /// index.html. A study already there is resumed: recorded runs are skipped.
    #[arg(long, default_value = "study")]
    out: PathBuf,
    /// Working precisions, comma separated: f64, td, dd, qd, mp:<bits>, auto (escalation: f64,
    /// then dd, then qd), both (= f64,dd); `ladder:f64,td,dd` (last) escalates through those.
    #[arg(long, value_name = "LIST")]
    precision: Option<PrecisionChoice>,
    /// Tolerances on the stopping test, comma separated, each with 0 < TOL < 1.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, value_parser = tol_arg)]
    tol: Vec<f64>,
    /// Preconditioners, comma separated: none, ilu0. ILU(0) is factored once per matrix; a zero
    /// pivot the --ilu-shift rule does not get past is recorded as precond-failed.
    #[arg(long, value_enum, value_delimiter = ',')]
    precond: Vec<PrecondChoice>,
    /// ILU(0) remedy of the ilu0 runs for a zero pivot or a missing diagonal: auto (factor A; past one, permute
    /// the rows to put a maximum product matching on the diagonal, unless the method is CG,
    /// then shift by s max|a_ij| I with s growing until it factors; the report says what ran),
    /// match (always permute), shift (only the growing shift), none (or 0: a zero pivot is an
    /// error), or a fixed S > 0 (factor A + S max|a_ij| I, inserting missing diagonals).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = ilu_shift_arg)]
    ilu_shift: Option<IluShift>,
    /// BiCGStab's shadow residual r~: random (default: a seeded vector, the same on every
    /// backend and run), r0 (the thesis's) or rhs.
    #[arg(long, value_parser = choice::<Shadow>())]
    shadow: Option<Shadow>,
    /// BiCGStab: restarts from the current iterate with a fresh shadow residual after a
    /// breakdown of rho or <r~, v>; 0 stops at the first breakdown.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count_arg)]
    max_restarts: Option<usize>,
    #[command(flatten)]
    method_options: crate::cli_args::MethodArgs,
    #[command(flatten)]
    escalation: crate::cli_args::EscalationArgs,
    /// Methods, comma separated: auto (CG if stored symmetric, else BiCGStab), cg, bicgstab.
    #[arg(long, value_parser = choice::<Method>(), value_delimiter = ',')]
    method: Vec<Method>,
    /// Give up each run after N iterations (at least 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = max_iter_arg)]
    max_iter: Option<usize>,
    /// Wall-time limit of each solve: 90, 90s, 1.5m, 2h, 500ms (the run is recorded as
    /// time-limit).
    #[arg(long, value_parser = parse_time)]
    time_limit: Option<Duration>,
    /// Denominator of the stopping test's relative residual: initial (||r||/||r0||) or rhs
    /// (||r||/||b||).
    #[arg(long, value_parser = choice::<ResidualNorm>())]
    criterion: Option<ResidualNorm>,
    /// True residual into the plotted history every N iterations; 0 = auto (n/100 clamped to
    /// 1..10 for the first 256 points, then twice as far apart each time the iterations
    /// double; about 10% extra wall time at most, excluded from the reported times).
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true, value_parser = count_arg)]
    true_residual_every: usize,
    /// Where to run: auto (the backend a cost model of the matrix, precision and preconditioner
    /// finds faster, with a log line saying why; the CPU under mpirun), cpu, cuda (under
    /// mpirun: a GPU a rank).
    #[arg(long, value_parser = choice::<BackendChoice>())]
    backend: Option<BackendChoice>,
    /// CPU threads (0: all cores; at most 4 per core).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = threads_arg)]
    threads: Option<usize>,
    /// Solves in flight at once, each on a GPU stream of its own (0: 64 with
    /// --backend cuda, else 1). Each solve's bits are those it has alone; its times include
    /// the others' (the records say how many were in flight). A matrix that fills the GPU runs
    /// alone.
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true, value_parser = count_arg)]
    in_flight: usize,
    /// Spread each CUDA solve over this many GPUs of this host (`all`: every one), as `solver
    /// solve --devices` does; the solves then run one at a time.
    #[arg(long, value_name = "N|all")]
    devices: Option<crate::Devices>,
    /// No progress bar (the summary is still printed).
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Study directory written by `solver batch`.
    #[arg(default_value = "study")]
    dir: PathBuf,
    /// Write the files without printing the summary.
    #[arg(short, long)]
    quiet: bool,
}

fn parse_time(text: &str) -> Result<Duration, String> {
    batch::parse_duration(text).map_err(|e| e.to_string())
}

/// Flags override `solver.toml`, which overrides the built-in defaults.
fn spec(config: &precsolve::config::Config, args: &BatchArgs, limits: ReadLimits) -> StudySpec {
    let or = |flag: &[_], default| {
        if flag.is_empty() {
            vec![default]
        } else {
            flag.to_vec()
        }
    };
    let precisions = args
        .precision
        .as_ref()
        .unwrap_or(&config.precision)
        .precisions();
    let tols = if args.tol.is_empty() {
        vec![config.params.tol]
    } else {
        args.tol.clone()
    };
    StudySpec {
        inputs: args.inputs.clone(),
        grid: Grid {
            precisions,
            tols,
            preconds: if args.precond.is_empty() {
                vec![config.precond]
            } else {
                args.precond.clone()
            },
            methods: or(&args.method, config.method),
        },
        limits: RunLimits {
            max_iter: args.max_iter.unwrap_or(config.params.max_iter),
            time_limit: args.time_limit,
            criterion: args.criterion.unwrap_or(config.params.criterion),
            true_residual_every: args.true_residual_every,
            ilu_shift: args.ilu_shift.unwrap_or(config.ilu_shift),
            bicgstab: BicgstabChoice {
                shadow: args.shadow.unwrap_or(config.params.shadow),
                max_restarts: args.max_restarts.unwrap_or(config.params.max_restarts),
            },
            method_options: MethodOptions {
                restart: config.params.gmres_restart,
                orthogonalization: config.params.gmres_orthogonalization,
                l: config.params.bicgstab_l,
            },
            escalation: config.params.escalation,
        },
        backend: config.backend,
        out: args.out.clone(),
        read_limits: limits,
        in_flight: args.in_flight,
    }
}

pub fn run_batch(
    mut raw: RawConfig,
    args: BatchArgs,
    limits: ReadLimits,
    progress: &MultiProgress,
) -> anyhow::Result<u8> {
    if let Some(threads) = args.threads {
        raw.solve.threads = threads;
    }
    args.method_options.apply(&mut raw);
    args.escalation.apply(&mut raw);
    let mut config = raw.validate()?;
    config.backend = args.backend.unwrap_or(config.backend);
    config.quiet |= args.quiet;
    // Under `mpirun` every rank runs each solve, together; rank 0 records and reports.
    let ranks = crate::enter_ranks(&mut config, args.devices)?;
    let _devices = crate::enter_devices(&mut config, args.devices)?;
    let spec = spec(&config, &args, limits);
    // Everything the user can get wrong is refused here, before a directory is created.
    spec.validate()?;
    precsolve::backend::cpu::use_threads(config.threads)?;
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = stop.clone();
    // First Ctrl-C: stop after cancelling the run in progress (it is not recorded) and render
    // the summary. Second: leave at once; every finished run is on disk already.
    if let Err(e) = ctrlc::set_handler(move || {
        if handler_stop.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_INTERRUPTED.into());
        }
    }) {
        log::warn!("Ctrl-C will stop without a summary: {e}");
    }
    if !ranks.root {
        // Rank 0 reports, and its Ctrl-C stops every rank (`run_study` asks them all).
        let outcome =
            ranks.check(batch::run_study(&spec, &mut batch::Silent).map_err(Into::into))?;
        return Ok(if outcome.interrupted {
            EXIT_INTERRUPTED
        } else {
            0
        });
    }
    let mut observer = Progress::new(progress, config.quiet, stop);
    let outcome = ranks.check(batch::run_study(&spec, &mut observer).map_err(Into::into))?;
    observer.finish();
    let summary = batch::render_study(&spec.out)?;
    print!("{}", study::text(&summary));
    println!(
        "{} runs this time ({} errors); study in {}",
        outcome.executed,
        outcome.errors,
        spec.out.join(batch::INDEX_HTML).display()
    );
    if outcome.interrupted {
        eprintln!("interrupted: run the same command again to resume");
        return Ok(EXIT_INTERRUPTED);
    }
    Ok(0)
}

pub fn run_report(args: ReportArgs) -> anyhow::Result<u8> {
    let summary = batch::render_study(&args.dir)?;
    if !args.quiet {
        print!("{}", study::text(&summary));
        println!("rendered {}", args.dir.join(batch::INDEX_HTML).display());
    }
    Ok(0)
}

/// The study's bar: runs done and left, time left (from the mean time of this session's runs),
/// and the current matrix with its latest iteration.
struct Progress {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    current: String,
    last_draw: Instant,
}

impl Progress {
    const REDRAW_EVERY: Duration = Duration::from_millis(200);

    fn new(progress: &MultiProgress, quiet: bool, stop: Arc<AtomicBool>) -> Self {
        let bar = if quiet {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
        } else {
            progress.add(ProgressBar::new(0))
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} runs {prefix}[{elapsed} elapsed, ~{eta} left] {wide_msg}",
            )
            .expect("valid template"),
        );
        Progress {
            bar,
            stop,
            current: String::new(),
            last_draw: Instant::now(),
        }
    }

    fn finish(self) {
        self.bar.finish_and_clear();
    }
}

impl StudyObserver for Progress {
    fn planned(&mut self, plan: &Plan) {
        self.bar.set_length(plan.pending as u64);
        if plan.recorded > 0 {
            self.bar
                .set_prefix(format!("(+{} recorded before) ", plan.recorded));
        }
        log::info!(
            "{} matrices x grid = {} runs: {} recorded, {} to run",
            plan.matrices,
            plan.runs,
            plan.recorded,
            plan.pending
        );
    }

    fn run_started(&mut self, name: &str, key: &RunKey) {
        self.current = format!("{name} {} tol {:e}", key.precision.name(), key.tol);
        self.bar.set_message(self.current.clone());
    }

    fn iteration(&mut self, iteration: usize, relative_residual: f64) -> bool {
        if self.last_draw.elapsed() >= Self::REDRAW_EVERY {
            self.last_draw = Instant::now();
            self.bar.set_message(format!(
                "{}: iteration {iteration}, residual {relative_residual:.2e}",
                self.current
            ));
        }
        !self.stop.load(Ordering::Relaxed)
    }

    fn run_finished(&mut self, record: &RunRecord, _recorded: bool) {
        log::info!(
            "{} {} tol {:e}: {}",
            record.name,
            record.key.precision.name(),
            record.key.tol,
            record.status.name()
        );
        self.bar.inc(1);
    }

    fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}
