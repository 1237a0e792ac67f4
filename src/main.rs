//! `solver`: a thin command-line shell over the library. Flags override `solver.toml`, which
//! overrides the built-in defaults; then validate, run, report.

mod cli_batch;
#[cfg(feature = "cuda")]
mod cli_suite;

mod cli_args;

use anyhow::Context as _;
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use cli_args::{
    choice, count_arg, ilu_shift_arg, max_iter_arg, positive_count_arg, threads_arg, tol_arg,
};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use precsolve::Error;
use precsolve::config::{Config, OutputFormat, RawConfig};
use precsolve::output::OutputFile;
use precsolve::precision::exact_decimal::{self, Decimal};
use precsolve::precision::exact_values::ExactValues;
use precsolve::precond::ilu0::IluShift;
use precsolve::precond::{PrecondKind, Preconditioning};
use precsolve::report::{MatrixSummary, SolveReport, history_csv, solution_text};
use precsolve::solver::bicgstab::Shadow;
use precsolve::solver::dispatch::{
    BackendChoice, Method, PrecisionChoice, Problem, Recipe, WorkingPrecision, solve,
};
use precsolve::solver::{Iteration, Monitor, ResidualNorm};
use precsolve::sparse::{
    MmError, MmErrorKind, ReadLimits, VectorText, load_matrix_with, read_vector_text_with,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit codes: 0 every requested solve converged; 1 internal failure; 2 command-line usage
/// (clap's own, and a device or feature this machine or build lacks); 3 a solve did not
/// converge; 4 bad input (matrix, vector, configuration, or an output that cannot be used).
const EXIT_USAGE: u8 = 2;
const EXIT_NOT_CONVERGED: u8 = 3;
const EXIT_BAD_INPUT: u8 = 4;
const EXIT_INTERNAL: u8 = 1;

#[derive(Parser)]
#[command(
    name = "solver",
    version,
    about = "Sparse CG/BiCGStab in double and double-double, side by side"
)]
struct Cli {
    /// Configuration file (default: ./solver.toml when present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Show informational log lines (RUST_LOG overrides).
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Read matrix and vector files that are FIFOs, devices or other non-regular files
    /// (refused by default: such a read can block for ever or never end). Reading stays
    /// bounded by the memory available.
    #[arg(long, global = true)]
    allow_special_files: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Solve A x = b (b = ones unless --rhs) in each requested precision and compare.
    Solve(SolveArgs),
    /// Print what a matrix looks like: size, nonzeros per row, symmetry, diagonal.
    Info(InfoArgs),
    /// Time our GPU kernels against cuSPARSE and the copy bandwidth (needs a GPU).
    Bench(BenchArgs),
    /// Solve many matrices over a grid of precisions, tolerances, preconditioners and methods;
    /// resumable, with the thesis's summary table and convergence plots.
    Batch(cli_batch::BatchArgs),
    /// Re-render a batch study's summary, CSVs, plots and index.html from its records.
    Report(cli_batch::ReportArgs),
}

#[derive(Args)]
struct BenchArgs {
    /// Matrix Market file or generated matrix (e.g. poisson3d:200); with --suite, a folder.
    matrix: String,
    /// Time whole iterations of every matrix in the folder MATRIX on the GPU and on the CPU (all
    /// cores) in f64 and dd, with CuPy's where CuPy is present, and what --backend auto picks:
    /// a table, and with --json one object per matrix and precision.
    #[arg(long)]
    suite: bool,
    /// Timed runs per kernel (the median is reported; default 20); with --suite, timed solves
    /// per backend and matrix, alternated GPU then CPU (the median is reported; default 1).
    #[arg(long, allow_negative_numbers = true, value_parser = positive_count_arg)]
    reps: Option<usize>,
    /// Iterations of each timed CG/BiCGStab solve.
    #[arg(long, default_value_t = 100, allow_negative_numbers = true, value_parser = positive_count_arg)]
    iterations: usize,
    /// Also write the results as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also time our SpMV with every threads-per-row count, and CG's SpMV fused with its dot
    /// product (experiments the solvers do not use).
    #[arg(long)]
    sweep_lanes: bool,
    /// `ilu0`: time our ILU(0) triangular solves against cuSPARSE's (csrilu02 + SpSV) and
    /// whole preconditioned iterations, instead of the SpMV and vector kernels.
    #[arg(long, value_parser = choice::<PrecondKind>(), default_value = "none")]
    precond: PrecondKind,
}

#[derive(Args)]
struct SolveArgs {
    /// Matrix Market file (.mtx, .mtx.gz) or generated matrix (poisson2d:N, poisson3d:N).
    matrix: String,
    /// Krylov method: auto (CG for a matrix stored as symmetric, else BiCGStab), cg, bicgstab.
    #[arg(long, value_parser = choice::<Method>())]
    method: Option<Method>,
    /// Working precisions, side by side in this order with ratios against the first: a comma
    /// list of f64, td, dd, qd, mp:<bits> (our correctly rounded type, CPU and GPU),
    /// mp-mpfr:<bits> (MPFR, feature mpfr), auto (escalation: f64, then dd, then qd where the
    /// one before stagnates); or `both` (= f64,dd). `ladder:f64,td,dd` (last in the list)
    /// escalates through the precisions given.
    #[arg(long, value_name = "LIST")]
    precision: Option<PrecisionChoice>,
    /// Stop when the relative recurrence residual (see --criterion) is at or below TOL, with
    /// 0 < TOL < 1.
    #[arg(long, allow_negative_numbers = true, value_parser = tol_arg)]
    tol: Option<f64>,
    /// Give up after N iterations (at least 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = max_iter_arg)]
    max_iter: Option<usize>,
    /// Denominator of the stopping test's relative residual: initial (||r||/||r0||, the
    /// thesis's) or rhs (||r||/||b||).
    #[arg(long, value_parser = choice::<ResidualNorm>())]
    criterion: Option<ResidualNorm>,
    /// Recompute the true residual every N iterations into the history (0: only at the end).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count_arg)]
    true_residual_every: Option<usize>,
    /// Where to run: auto (the backend a cost model of the matrix, precision and preconditioner
    /// finds faster, with a log line saying why; the CPU under mpirun), cpu, cuda (under
    /// mpirun: a GPU a rank).
    #[arg(long, value_parser = choice::<BackendChoice>())]
    backend: Option<BackendChoice>,
    /// CPU threads (0: all cores; at most 4 per core).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = threads_arg)]
    threads: Option<usize>,
    /// Preconditioner, applied in double in both precisions.
    #[arg(long, value_parser = choice::<PrecondKind>())]
    precond: Option<PrecondKind>,
    /// ILU(0) remedy for a zero pivot or a missing diagonal: auto (factor A; past one, permute
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
    method_options: cli_args::MethodArgs,
    #[command(flatten)]
    escalation: cli_args::EscalationArgs,
    /// Right-hand side as a Matrix Market n x 1 array or coordinate file (default: all ones),
    /// kept in double: values with more digits than a double holds are rounded, with a warning.
    #[arg(long, value_name = "FILE")]
    rhs: Option<PathBuf>,
    /// Initial guess as a Matrix Market n x 1 file (default: zero), read exactly into each
    /// precision (as far as it holds it): a --write-x file restarts from the same vector.
    #[arg(long, value_name = "FILE")]
    x0: Option<PathBuf>,
    /// Write the solution of the last precision run as a Matrix Market array, in its
    /// precision: each value with the digits that read back exactly.
    #[arg(long, value_name = "FILE")]
    write_x: Option<PathBuf>,
    /// Spread each CUDA solve over this many GPUs of this host (`all`: every one), their rows
    /// in blocks, NCCL between them; the same bits as one GPU.
    #[arg(long, value_name = "N|all")]
    devices: Option<Devices>,
    /// Write per-iteration residuals of every run as CSV (BiCGStab's half steps marked in the
    /// `step` column).
    #[arg(long, value_name = "FILE.csv")]
    history: Option<PathBuf>,
    /// Report format: table (for people) or json (for programs).
    #[arg(long, value_enum)]
    format: Option<OutputFormat>,
    /// No progress line on stderr.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args)]
struct InfoArgs {
    /// Matrix Market file or generated matrix.
    matrix: String,
    /// Report format: table (for people) or json (for programs).
    #[arg(long, value_enum)]
    format: Option<OutputFormat>,
}

fn main() -> ExitCode {
    // SAFETY: the first thing the process does: no other thread, no CUDA call yet.
    #[cfg(feature = "cuda")]
    unsafe {
        precsolve::backend::cuda::claim_stream_queues()
    };
    // The help shows each option's default as it is in effect: built in, or from the
    // configuration file (a file that does not load shows the built-in ones; `run` reports it).
    let help_config = load_config(config_arg().as_deref()).unwrap_or_default();
    let matches = cli_args::with_defaults_in_help(Cli::command(), &help_config).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let progress = MultiProgress::new();
    init_logging(cli.verbose, &progress);
    match run(cli, &progress) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            // Messages quote files and paths: escaped, so they cannot drive the terminal.
            let message = error_chain(&err);
            eprintln!(
                "error: {}",
                precsolve::escape::escape_keeping_lines(&message)
            );
            ExitCode::from(exit_code(&err))
        }
    }
}

fn exit_code(err: &anyhow::Error) -> u8 {
    match err.downcast_ref::<Error>() {
        Some(Error::Unavailable(_)) => EXIT_USAGE,
        Some(e) if e.is_bad_input() => EXIT_BAD_INPUT,
        _ => EXIT_INTERNAL,
    }
}

/// `--config FILE` (or `--config=FILE`) from the raw arguments, before clap parses them.
fn config_arg() -> Option<PathBuf> {
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--config" {
            return args.next().map(PathBuf::from);
        }
        if let Some(path) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(PathBuf::from(path));
        }
    }
    None
}

/// The error and its causes, each once: library errors already quote their source.
fn error_chain(err: &anyhow::Error) -> String {
    let mut message = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !message.contains(&cause) {
            message = format!("{message}: {cause}");
        }
    }
    message
}

fn init_logging(verbose: bool, progress: &MultiProgress) {
    let level = if verbose { "info" } else { "warn" };
    let logger = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format_timestamp(None)
        .build();
    let max_level = logger.filter();
    // The bridge keeps log lines from tearing the progress line.
    if indicatif_log_bridge::LogWrapper::new(progress.clone(), logger)
        .try_init()
        .is_ok()
    {
        log::set_max_level(max_level);
    }
}

fn load_config(path: Option<&Path>) -> anyhow::Result<RawConfig> {
    let default_path = Path::new("solver.toml");
    Ok(match path {
        Some(p) => RawConfig::load(p)?,
        None if default_path.is_file() => RawConfig::load(default_path)?,
        None => RawConfig::default(),
    })
}

fn run(cli: Cli, progress: &MultiProgress) -> anyhow::Result<u8> {
    let raw = load_config(cli.config.as_deref())?;
    let limits = ReadLimits {
        allow_special_files: cli.allow_special_files,
        ..ReadLimits::default()
    };
    if !matches!(cli.command, Command::Solve(_) | Command::Batch(_))
        && let Some(ranks) = mpirun_ranks().filter(|&r| r > 1)
    {
        anyhow::bail!(
            "started as {ranks} MPI ranks: only `solver solve` and `solver batch` spread solves \
             over ranks; run this command in one process"
        );
    }
    match cli.command {
        Command::Solve(args) => run_solve(raw, args, &limits, progress),
        Command::Info(args) => run_info(raw, args, &limits),
        Command::Bench(args) => run_bench(args, &limits),
        Command::Batch(args) => cli_batch::run_batch(raw, args, limits, progress),
        Command::Report(args) => cli_batch::run_report(args),
    }
}

#[cfg(feature = "cuda")]
fn run_bench(args: BenchArgs, limits: &ReadLimits) -> anyhow::Result<u8> {
    let json_out = args.json.as_deref().map(OutputFile::prepare).transpose()?;
    let gpu = precsolve::solver::dispatch::cuda_backend().map_err(|e| match e {
        Error::Backend { message, .. } => {
            Error::Unavailable(format!("solver bench needs a GPU: {message}"))
        }
        other => other,
    })?;
    if args.suite {
        precsolve::backend::cpu::use_threads(0).context("setting up the thread pool")?;
        let card = gpu.device_description();
        let rows = cli_suite::run(
            Path::new(&args.matrix),
            args.iterations,
            args.reps.unwrap_or(1),
            args.precond,
            &card,
            limits,
        )?;
        print!("{}", cli_suite::table(&rows));
        if let Some(out) = json_out {
            out.commit(serde_json::to_string_pretty(&rows)?.as_bytes())?;
        }
        return Ok(0);
    }
    let a = Arc::new(load_matrix_with(&args.matrix, limits)?);
    let report = match args.precond {
        PrecondKind::None => precsolve::bench::run(
            gpu,
            &args.matrix,
            &a,
            args.reps.unwrap_or(20),
            args.iterations,
            args.sweep_lanes,
        )?,
        // one process holds one block: block Jacobi is ILU(0)
        PrecondKind::Ilu0 | PrecondKind::BlockJacobi => precsolve::bench::run_ilu0(
            gpu,
            &args.matrix,
            &a,
            args.reps.unwrap_or(20),
            args.iterations,
        )?,
    };
    print!("{}", report.to_table());
    if let Some(out) = json_out {
        out.commit(report.to_json().as_bytes())?;
    }
    Ok(0)
}

#[cfg(not(feature = "cuda"))]
fn run_bench(_: BenchArgs, _: &ReadLimits) -> anyhow::Result<u8> {
    Err(Error::Unavailable(
        "solver bench needs the CUDA backend, and this build has none (built without the `cuda` \
         feature)"
            .into(),
    )
    .into())
}

fn run_info(mut raw: RawConfig, args: InfoArgs, limits: &ReadLimits) -> anyhow::Result<u8> {
    if let Some(f) = args.format {
        raw.output.format = f;
    }
    let config = raw.validate()?;
    let a = load_matrix_with(&args.matrix, limits)?;
    let summary = MatrixSummary::new(&args.matrix, &a);
    match config.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&summary)?),
        OutputFormat::Table => {
            println!(
                "matrix            {}",
                precsolve::escape::escape(&summary.name)
            );
            println!("size              {} x {}", summary.rows, summary.cols);
            println!("nonzeros          {}", summary.nnz);
            println!(
                "nonzeros per row  mean {:.2}, max {}",
                summary.nnz_per_row_mean, summary.nnz_per_row_max
            );
            println!("symmetry (header) {}", summary.symmetry);
            match summary.missing_diagonal {
                0 => println!("diagonal          every diagonal entry stored"),
                k => println!("diagonal          {k} rows without a stored diagonal entry"),
            }
            let method = Method::Auto.resolve(&a);
            println!("solve --method auto would use {}", method.name());
        }
    }
    Ok(0)
}

fn apply_overrides(raw: &mut RawConfig, args: &SolveArgs) {
    let s = &mut raw.solve;
    if let Some(v) = args.method {
        s.method = v;
    }
    if let Some(v) = args.precision.clone() {
        s.precision = v;
    }
    if let Some(v) = args.tol {
        s.tol = v;
    }
    if let Some(v) = args.max_iter {
        s.max_iter = v;
    }
    if let Some(v) = args.criterion {
        s.criterion = v;
    }
    if let Some(v) = args.true_residual_every {
        s.true_residual_every = v;
    }
    if let Some(v) = args.backend {
        s.backend = v;
    }
    if let Some(v) = args.threads {
        s.threads = v;
    }
    if let Some(v) = args.precond {
        s.precond = v;
    }
    if let Some(v) = args.ilu_shift {
        s.ilu_shift = v;
    }
    if let Some(v) = args.shadow {
        s.shadow = v;
    }
    if let Some(v) = args.max_restarts {
        s.max_restarts = v;
    }
    args.method_options.apply(raw);
    args.escalation.apply(raw);
    if let Some(v) = args.format {
        raw.output.format = v;
    }
    if args.quiet {
        raw.output.quiet = true;
    }
}

/// `--rhs` or `--x0`: a vector file of the matrix's length, each value's text as written, or
/// an error naming the file.
fn read_vector_text(path: &Path, limits: &ReadLimits, rows: usize) -> anyhow::Result<VectorText> {
    read_vector_text_with(path, limits, Some(rows))
        .map_err(|source| vector_error(path, source).into())
}

fn vector_error(path: &Path, source: MmError) -> Error {
    Error::MatrixMarket {
        path: path.to_path_buf(),
        source,
    }
}

/// A vector file's entries as exact decimals (an integer file's `-0` is `+0`).
fn decimal_entries(path: &Path, text: &VectorText) -> anyhow::Result<Vec<exact_decimal::Entry>> {
    text.entries()
        .map(|(row, line, token)| match Decimal::parse(token) {
            // The reader let through only what std parses as a finite number, which this
            // parser takes too; the error is a safety net.
            None => Err(vector_error(
                path,
                MmError::new(
                    MmErrorKind::BadNumber,
                    line,
                    format!(
                        "value {} is not a decimal number",
                        precsolve::escape::escape(token)
                    ),
                ),
            )
            .into()),
            Some(d) if text.is_integer() => Ok((row, line, d.without_negative_zero())),
            Some(d) => Ok((row, line, d)),
        })
        .collect()
}

/// `--rhs`: the right-hand side stays in double (every kernel takes `b` as `f64`, as in the
/// thesis), so each value is rounded to the nearest double, with one warning counting the
/// entries that carried more than a double (more than 17 significant digits, and not a
/// double's own decimal: `Decimal::is_written_double`).
fn read_rhs(path: &Path, limits: &ReadLimits, rows: usize) -> anyhow::Result<Vec<f64>> {
    let text = read_vector_text(path, limits, rows)?;
    let (b, rounded) = exact_decimal::nearest_doubles(rows, decimal_entries(path, &text)?)
        .map_err(|(line, message)| {
            vector_error(path, MmError::new(MmErrorKind::NonFinite, line, message))
        })?;
    if rounded > 0 {
        log::warn!(
            "{}: {rounded} of the {rows} right-hand side entries carry more digits than a \
             double holds and were rounded to the nearest double (the right-hand side is kept \
             in double)",
            precsolve::escape::escape(&path.display().to_string())
        );
    }
    Ok(b)
}

/// `--x0`: each value read exactly into every working precision of the run (as far as each
/// holds it; `precision::exact_values`), the decimal text kept for `mp:<bits>` solves.
fn read_x0(
    path: &Path,
    limits: &ReadLimits,
    rows: usize,
    keep_decimals: bool,
) -> anyhow::Result<ExactValues> {
    let text = read_vector_text(path, limits, rows)?;
    exact_decimal::initial_guess(rows, decimal_entries(path, &text)?, keep_decimals).map_err(
        |(line, message)| {
            vector_error(path, MmError::new(MmErrorKind::NonFinite, line, message)).into()
        },
    )
}

/// The rank count `mpirun` (Open MPI) or `mpiexec` (MPICH's Hydra) started this process among.
fn mpirun_ranks() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// The MPI ranks this solve is spread over, where `mpirun` started several (cargo feature
/// `mpi`); without the feature, several ranks are an error rather than N identical solves.
fn mpi_world() -> anyhow::Result<Option<Arc<dyn precsolve::distributed::Communicator>>> {
    #[cfg(feature = "mpi")]
    {
        let world =
            precsolve::distributed::mpi::MpiWorld::initialize().context("initialising MPI")?;
        use precsolve::distributed::Communicator as _;
        if world.size() > 1 {
            return Ok(Some(Arc::new(world)));
        }
        Ok(None)
    }
    #[cfg(not(feature = "mpi"))]
    match mpirun_ranks().filter(|&r| r > 1) {
        Some(ranks) => anyhow::bail!(
            "started as {ranks} MPI ranks, but this solver was built without MPI: build it with \
             `cargo build --release --features mpi` (needs an MPI such as Open MPI)"
        ),
        None => Ok(None),
    }
}

/// The MPI ranks `mpirun` started this command among, entered for this thread's solves.
pub(crate) struct Ranks {
    _scope: Option<precsolve::distributed::CommScope>,
    world: Option<Arc<dyn precsolve::distributed::Communicator>>,
    /// Rank 0 (or the only process): the one that reports.
    pub root: bool,
}

impl Ranks {
    /// `result` of this rank's work. Over several ranks an error is printed here, naming the
    /// rank, and stops them all: the others may be waiting for this one in a collective (a
    /// matrix only this rank could not read, memory only it ran out of), and would wait forever.
    pub(crate) fn check<T>(&self, result: anyhow::Result<T>) -> anyhow::Result<T> {
        if let (Err(err), Some(world)) = (&result, &self.world)
            && world.size() > 1
        {
            // One write, so that the ranks' lines do not interleave on a shared stderr (the
            // pieces of an `eprintln!` are separate writes).
            let line = format!(
                "error on rank {} of {}: {}\n",
                world.rank(),
                world.size(),
                precsolve::escape::escape_keeping_lines(&error_chain(err))
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
            world.abort_all(i32::from(exit_code(err)));
        }
        result
    }
}

/// Over MPI ranks every rank solves its rows, with its share of the host's cores, and only
/// rank 0 reports: on the CPU backend, or with `--backend cuda` on a GPU a rank (the ranks of
/// a host take its GPUs in turn). `auto` is the CPU there: the cost model knows one process.
pub(crate) fn enter_ranks(config: &mut Config, devices: Option<Devices>) -> anyhow::Result<Ranks> {
    let world = mpi_world()?;
    let root = world.as_ref().is_none_or(|w| w.rank() == 0);
    if let Some(world) = &world {
        match config.backend {
            BackendChoice::Cuda => rank_gpu(world.as_ref())?,
            _ => config.backend = BackendChoice::Cpu,
        }
        if config.threads == 0 {
            // All cores, shared among the ranks (one host's; give --threads on several).
            let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
            config.threads = (cores / world.size()).max(1);
        }
        config.quiet |= !root;
        if devices.is_some() {
            anyhow::bail!(
                "--devices spreads a solve over the GPUs of one process, not of MPI ranks"
            );
        }
    }
    Ok(Ranks {
        _scope: world.clone().map(precsolve::distributed::CommScope::enter),
        world,
        root,
    })
}

/// This rank's GPU: the host's GPUs taken in turn by its ranks.
#[cfg(feature = "cuda")]
fn rank_gpu(world: &dyn precsolve::distributed::Communicator) -> anyhow::Result<()> {
    let (on_host, host_ranks) = precsolve::distributed::host_ranks(world);
    let count = precsolve::backend::cuda::CudaBackend::device_count();
    if count == 0 {
        // the solve's own error says why no GPU can be used
        return Ok(());
    }
    let ordinal = on_host % count;
    anyhow::ensure!(
        precsolve::solver::dispatch::use_gpu(ordinal),
        "rank {}: a GPU was opened before the ranks were entered",
        world.rank()
    );
    log::info!(
        "rank {} of {}: GPU {ordinal} of this host's {count}{}",
        world.rank(),
        world.size(),
        match (0..host_ranks).filter(|r| r % count == ordinal).count() {
            1 => String::new(),
            sharing => format!(" (shared by {sharing} ranks)"),
        }
    );
    Ok(())
}

#[cfg(not(feature = "cuda"))]
fn rank_gpu(_: &dyn precsolve::distributed::Communicator) -> anyhow::Result<()> {
    Ok(())
}

/// The GPUs of `--devices`, entered for this thread's solves (`auto` with several GPUs asked
/// for becomes CUDA: they are the point).
#[cfg(feature = "cuda")]
pub(crate) fn enter_devices(
    config: &mut Config,
    devices: Option<Devices>,
) -> anyhow::Result<Option<precsolve::distributed::devices::DeviceScope>> {
    let scope = device_group(devices, config.backend)?;
    if scope.is_some() {
        config.backend = BackendChoice::Cuda;
    }
    Ok(scope)
}

#[cfg(not(feature = "cuda"))]
pub(crate) fn enter_devices(
    config: &mut Config,
    devices: Option<Devices>,
) -> anyhow::Result<Option<()>> {
    device_group(devices, config.backend)
}

/// `--devices`: a count of GPUs, or all of them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Devices {
    Count(usize),
    All,
}

impl std::str::FromStr for Devices {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "all" => Ok(Devices::All),
            _ => match s.parse::<usize>() {
                Ok(n) if n > 0 => Ok(Devices::Count(n)),
                _ => Err(format!("`{s}` is not a GPU count (1, 2, ...) or `all`")),
            },
        }
    }
}

/// The GPUs `--devices` asks for, opened together; `None` for one.
#[cfg(feature = "cuda")]
fn device_group(
    devices: Option<Devices>,
    backend: BackendChoice,
) -> anyhow::Result<Option<precsolve::distributed::devices::DeviceScope>> {
    use precsolve::distributed::devices::{DeviceGroup, DeviceScope};
    let count = match devices {
        None | Some(Devices::Count(1)) => return Ok(None),
        Some(Devices::Count(n)) => Some(n),
        Some(Devices::All) => None,
    };
    if backend == BackendChoice::Cpu {
        anyhow::bail!("--devices spreads CUDA solves over GPUs: it does not go with --backend cpu");
    }
    let group = DeviceGroup::open(count).context("opening the GPUs of --devices")?;
    log::info!("solving over {}", group.describe());
    Ok((group.len() > 1).then(|| DeviceScope::enter(Arc::new(group))))
}

#[cfg(not(feature = "cuda"))]
fn device_group(devices: Option<Devices>, _: BackendChoice) -> anyhow::Result<Option<()>> {
    match devices {
        None | Some(Devices::Count(1)) => Ok(None),
        Some(_) => anyhow::bail!("--devices needs the CUDA backend, and this build has none"),
    }
}

fn run_solve(
    mut raw: RawConfig,
    args: SolveArgs,
    limits: &ReadLimits,
    progress: &MultiProgress,
) -> anyhow::Result<u8> {
    apply_overrides(&mut raw, &args);
    let mut config: Config = raw.validate()?;
    let ranks = enter_ranks(&mut config, args.devices)?;
    let root = ranks.root;
    ranks.check(solve_listed(config, args, limits, progress, root))
}

/// `solver solve`'s work once the ranks are entered: every precision of the list on one
/// problem, then the report (rank 0's).
fn solve_listed(
    mut config: Config,
    args: SolveArgs,
    limits: &ReadLimits,
    progress: &MultiProgress,
    root: bool,
) -> anyhow::Result<u8> {
    let _devices = enter_devices(&mut config, args.devices)?;
    config.params.record_history = args.history.is_some();
    // Output paths are checked before any work: a bad one fails now, not after the solves.
    let history_out = args
        .history
        .as_deref()
        .map(OutputFile::prepare)
        .transpose()?;
    let x_out = args
        .write_x
        .as_deref()
        .map(OutputFile::prepare)
        .transpose()?;
    precsolve::backend::cpu::use_threads(config.threads).context("setting up the thread pool")?;
    let load_start = Instant::now();
    let a = Arc::new(load_matrix_with(&args.matrix, limits)?);
    log::info!(
        "read {} in {:.3} s",
        precsolve::escape::escape(&args.matrix),
        load_start.elapsed().as_secs_f64()
    );
    let rows = a.nrows();
    let b = args
        .rhs
        .as_deref()
        .map(|p| read_rhs(p, limits, rows))
        .transpose()?;
    let keep_decimals = config
        .precision
        .precisions()
        .iter()
        .any(|p| matches!(p, WorkingPrecision::Mp(_) | WorkingPrecision::Mpfr(_)));
    let x0 = args
        .x0
        .as_deref()
        .map(|p| read_x0(p, limits, rows, keep_decimals))
        .transpose()?;
    let problem = Problem::with_exact_x0(a, b, x0).with_context(|| args.matrix.clone())?;
    // Resolve once, for every precision of the list: a missing GPU, or a precision the GPU lacks
    // (qd), is reported before any solve, and auto says its choice for this matrix (after the
    // factorization, whose levels it weighs: ILU(0) is factored once, shared by every solve).
    config.backend.resolve_for(&config.precision.precisions())?;
    let precond =
        Preconditioning::prepare(config.precond, &problem.a, config.ilu_shift, config.method)
            .with_context(|| args.matrix.clone())?;
    let precisions = config.precision.precisions();
    let (resolved, why) =
        config
            .backend
            .resolve_for_problem(&problem.a, config.method, &precond, &precisions)?;
    if let Some(why) = why
        && !config.quiet
    {
        eprintln!("{why}");
    }
    config.backend = match resolved {
        precsolve::solver::dispatch::ResolvedBackend::Cpu => BackendChoice::Cpu,
        #[cfg(feature = "cuda")]
        precsolve::solver::dispatch::ResolvedBackend::Cuda => BackendChoice::Cuda,
    };
    let mut infos = Vec::new();
    let mut last_x = None;
    for precision in config.precision.precisions() {
        let mut monitor = ProgressMonitor::new(progress, config.quiet, &format!("{precision:?}"));
        let recipe = Recipe {
            method: config.method,
            precision,
            precond: &precond,
        };
        let solution = solve(
            &problem,
            config.backend,
            recipe,
            &config.params,
            &mut monitor,
        )?;
        monitor.finish();
        infos.push(solution.info);
        last_x = Some(solution.x);
    }

    let report = SolveReport::new(
        MatrixSummary::new(&args.matrix, &problem.a),
        config.params.tol,
        config.params.criterion,
        &infos,
    );
    if !root {
        return Ok(exit_status(&report));
    }
    match config.format {
        OutputFormat::Table => print!("{}", report.to_table()),
        OutputFormat::Json => println!("{}", report.to_json()),
    }
    if let Some(out) = history_out {
        out.commit(&history_csv(&infos)?)?;
    }
    if let (Some(out), Some(x), Some(info)) = (x_out, &last_x, infos.last()) {
        out.commit(solution_text(x, info.precision).as_bytes())?;
    }
    Ok(exit_status(&report))
}

fn exit_status(report: &SolveReport) -> u8 {
    if report.all_converged() {
        0
    } else {
        EXIT_NOT_CONVERGED
    }
}

/// A progress line on stderr for solves that run longer than a second.
struct ProgressMonitor<'a> {
    progress: &'a MultiProgress,
    quiet: bool,
    label: String,
    start: Instant,
    last_draw: Instant,
    bar: Option<ProgressBar>,
}

impl<'a> ProgressMonitor<'a> {
    const SHOW_AFTER: Duration = Duration::from_secs(1);
    const REDRAW_EVERY: Duration = Duration::from_millis(100);

    fn new(progress: &'a MultiProgress, quiet: bool, label: &str) -> Self {
        let now = Instant::now();
        ProgressMonitor {
            progress,
            quiet,
            label: label.to_lowercase(),
            start: now,
            last_draw: now,
            bar: None,
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Monitor for ProgressMonitor<'_> {
    fn iteration(&mut self, at: &Iteration) -> bool {
        if self.quiet
            || self.last_draw.elapsed() < Self::REDRAW_EVERY
            || self.start.elapsed() < Self::SHOW_AFTER
        {
            return true;
        }
        self.last_draw = Instant::now();
        let bar = self.bar.get_or_insert_with(|| {
            let bar = self.progress.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                    .expect("valid template"),
            );
            bar
        });
        bar.set_message(format!(
            "{}: iteration {}, residual {:.3e}",
            self.label, at.iteration, at.recurrence_residual
        ));
        bar.tick();
        true
    }
}
