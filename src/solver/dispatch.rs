//! The one place where runtime choices (backend x precision x method) become generic calls.

use super::cost::{CostModel, Workload};
use super::{BicgstabSteps, CgSteps, Monitor, Params, SolveInfo, bicgstab, cg};
use crate::backend::cpu::CpuBackend;
use crate::error::{Error, Result};
use crate::precision::{Dd, Precision, Qd, Td};
use crate::precond::{Identity, Ilu0, Preconditioner, Preconditioning};
use crate::sparse::{CsrMatrix, Symmetry};
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Method {
    /// CG for a matrix stored as symmetric, BiCGStab otherwise.
    Auto,
    Cg,
    Bicgstab,
}

super::params::named_choices!(Method, "method", {
    Auto => "auto",
    Cg => "cg",
    Bicgstab => "bicgstab",
});

impl Method {
    /// Resolve `Auto` from the symmetry the matrix source declared.
    pub fn resolve(self, a: &CsrMatrix) -> Method {
        match self {
            Method::Auto if a.symmetry() == Symmetry::Symmetric => Method::Cg,
            Method::Auto => Method::Bicgstab,
            other => other,
        }
    }
}

/// One working precision of a solve. Written (command line, reports, study records) as its
/// [`name`](WorkingPrecision::name): `f64`, `dd`, `qd`, `mp:256`; serde uses the same strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "String", into = "String"))]
pub enum WorkingPrecision {
    F64,
    Dd,
    /// Quad-double (CPU and CUDA backends, bitwise the same).
    Qd,
    /// Triple precision: D+I storage (12 bytes), double-double arithmetic rounded to D+I
    /// (see `precision::Td`).
    Td,
    /// MPFR with this many bits (`mp:<bits>`, `crate::precision::mp`): CPU only, and only in a
    /// build with the `mpfr` feature ([`WorkingPrecision::unavailable`] says why not).
    Mp(u32),
}

impl WorkingPrecision {
    pub const ALL: [WorkingPrecision; 4] = [
        WorkingPrecision::F64,
        WorkingPrecision::Dd,
        WorkingPrecision::Qd,
        WorkingPrecision::Td,
    ];

    /// The name on the command line and in reports (`Precision::NAME` of its type).
    pub fn name(self) -> &'static str {
        match self {
            WorkingPrecision::F64 => f64::NAME,
            WorkingPrecision::Dd => Dd::NAME,
            WorkingPrecision::Qd => Qd::NAME,
            WorkingPrecision::Td => Td::NAME,
            WorkingPrecision::Mp(bits) => mp_name(bits),
        }
    }

    /// Whether the CUDA backend has kernels for this precision: f64, dd, td and qd do; `mp`
    /// never will (MPFR runs on the CPU).
    pub fn runs_on_gpu(self) -> bool {
        !matches!(self, WorkingPrecision::Mp(_))
    }

    /// Why this build cannot run the precision at all (`mp` without the `mpfr` feature), or
    /// `None`. Checked when a precision list is parsed and again before any solve.
    pub fn unavailable(self) -> Option<String> {
        match self {
            WorkingPrecision::Mp(_) if !cfg!(feature = "mpfr") => Some(format!(
                "{} needs MPFR, and this binary was built without the `mpfr` feature: rebuild \
                 with `cargo build --release --features mpfr` (building GMP/MPFR needs m4 and a \
                 C compiler)",
                self.name()
            )),
            _ => None,
        }
    }
}

/// `mp:<bits>` as a `&'static str`, like the other names: each distinct precision's name is
/// allocated once and kept for the life of the process (a few bytes per distinct `bits`).
fn mp_name(bits: u32) -> &'static str {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, PoisonError};
    static NAMES: Mutex<BTreeMap<u32, &'static str>> = Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    names
        .entry(bits)
        .or_insert_with(|| Box::leak(crate::precision::mp::name(bits).into_boxed_str()))
}

/// The error for a CPU-only precision on the CUDA backend.
pub fn cpu_only_error(p: WorkingPrecision) -> Error {
    let why = match p {
        WorkingPrecision::Mp(_) => "runs on the CPU only (MPFR)",
        _ => "has no CUDA kernels",
    };
    Error::Unavailable(format!("{} {why}: use --backend cpu", p.name()))
}

/// The error for a precision this build cannot run ([`WorkingPrecision::unavailable`]).
fn check_available(precisions: &[WorkingPrecision]) -> Result<()> {
    match precisions.iter().find_map(|p| p.unavailable()) {
        Some(message) => Err(Error::Config(message)),
        None => Ok(()),
    }
}

impl std::str::FromStr for WorkingPrecision {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let s = s.trim();
        if let Some(bits) = crate::precision::mp::parse_bits(s)? {
            return Ok(WorkingPrecision::Mp(bits));
        }
        WorkingPrecision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let known: Vec<_> = WorkingPrecision::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown precision `{s}` (known: {}, mp:<bits>, both)",
                    known.join(", ")
                )
            })
    }
}

impl TryFrom<String> for WorkingPrecision {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        s.parse()
    }
}

impl From<WorkingPrecision> for String {
    fn from(p: WorkingPrecision) -> String {
        p.name().to_string()
    }
}

/// The `--precision` choice: the precisions to run, side by side in this order, ratios against
/// the first. Written `f64,dd` or `f64,td,dd,qd,mp:256` (any list of f64, td, dd, qd,
/// mp:<bits> without repeats), or `both` for `f64,dd`. A precision this build cannot run (`mp`
/// without the `mpfr` feature) is refused here, before anything is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "String", into = "String"))]
pub struct PrecisionChoice(Vec<WorkingPrecision>);

impl PrecisionChoice {
    /// `f64,dd`: the default comparison.
    pub fn both() -> Self {
        PrecisionChoice(vec![WorkingPrecision::F64, WorkingPrecision::Dd])
    }

    pub fn precisions(&self) -> Vec<WorkingPrecision> {
        self.0.clone()
    }
}

impl std::str::FromStr for PrecisionChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("both") {
            return Ok(PrecisionChoice::both());
        }
        let mut list: Vec<WorkingPrecision> = Vec::new();
        for part in s.split(',') {
            let p: WorkingPrecision = part.parse()?;
            if list.contains(&p) {
                return Err(format!("precision `{}` is listed twice in `{s}`", p.name()));
            }
            if let Some(why) = p.unavailable() {
                return Err(why);
            }
            list.push(p);
        }
        Ok(PrecisionChoice(list))
    }
}

impl std::fmt::Display for PrecisionChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.0.iter().map(|p| p.name()).collect();
        f.write_str(&names.join(","))
    }
}

impl TryFrom<String> for PrecisionChoice {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<Self, String> {
        s.parse()
    }
}

impl From<PrecisionChoice> for String {
    fn from(p: PrecisionChoice) -> String {
        p.to_string()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum BackendChoice {
    /// The GPU when one is usable, else the CPU (saying so in one log line).
    Auto,
    Cpu,
    /// The GPU, or an error saying why none can be used.
    Cuda,
}

super::params::named_choices!(BackendChoice, "backend", {
    Auto => "auto",
    Cpu => "cpu",
    Cuda => "cuda",
});

/// The backend a run actually uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResolvedBackend {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda,
}

/// The process-wide CUDA backend: one context, kernels compiled once.
#[cfg(feature = "cuda")]
pub fn cuda_backend() -> Result<&'static crate::backend::cuda::CudaBackend> {
    use crate::backend::cuda::CudaBackend;
    use std::sync::OnceLock;
    static CUDA: OnceLock<std::result::Result<CudaBackend, String>> = OnceLock::new();
    CUDA.get_or_init(|| {
        CudaBackend::new().map_err(|e| match e {
            Error::Backend { message, .. } => message,
            other => other.to_string(),
        })
    })
    .as_ref()
    .map_err(|message| Error::Backend {
        backend: "cuda",
        message: message.clone(),
    })
}

impl BackendChoice {
    /// Pick the backend for runs in all of `precisions`, so that a comparison runs on one
    /// backend and a precision the GPU lacks is refused before any work:
    /// - `Cuda` with a CPU-only precision in the list is an error (checked before the GPU is
    ///   touched);
    /// - `Auto` with a CPU-only precision in the list picks the CPU for every precision of the
    ///   list (one log line says so), so that the columns of one report share a backend;
    /// - otherwise as [`BackendChoice::resolve`].
    ///
    /// A precision this build cannot run (`mp` without the `mpfr` feature) is an error first.
    pub fn resolve_for(self, precisions: &[WorkingPrecision]) -> Result<ResolvedBackend> {
        check_available(precisions)?;
        match (self, precisions.iter().find(|p| !p.runs_on_gpu())) {
            (BackendChoice::Cuda, Some(&p)) => Err(cpu_only_error(p)),
            (BackendChoice::Auto, Some(&p)) => {
                log::info!("{} has no CUDA kernels: solving on the CPU", p.name());
                Ok(ResolvedBackend::Cpu)
            }
            _ => self.resolve(),
        }
    }

    /// [`resolve_for`](BackendChoice::resolve_for) for solves of `a`; `Auto` with a usable GPU
    /// then takes the backend the cost model ([`CostModel`]) estimates faster for all of
    /// `precisions` together, and returns the line that says which and why.
    pub fn resolve_for_problem(
        self,
        a: &CsrMatrix,
        method: Method,
        precond: &Preconditioning,
        precisions: &[WorkingPrecision],
    ) -> Result<(ResolvedBackend, Option<String>)> {
        let resolved = self.resolve_for(precisions)?;
        if self != BackendChoice::Auto || resolved == ResolvedBackend::Cpu {
            return Ok((resolved, None));
        }
        let method = method.resolve(a);
        let workloads: Vec<Workload> = precisions
            .iter()
            .map(|&precision| Workload {
                rows: a.nrows(),
                nnz: a.nnz(),
                precision,
                method,
                max_row: a.nnz_per_row_max(),
                ilu_levels: precond.ilu_levels(),
            })
            .collect();
        let model = CostModel::measured(rayon::current_num_threads());
        let (gpu, why) = model.prefers_gpu(&workloads);
        Ok((if gpu { resolved } else { ResolvedBackend::Cpu }, Some(why)))
    }

    /// Pick the backend: `Auto` falls back to the CPU with one log line saying why.
    pub fn resolve(self) -> Result<ResolvedBackend> {
        match self {
            BackendChoice::Cpu => Ok(ResolvedBackend::Cpu),
            #[cfg(feature = "cuda")]
            BackendChoice::Cuda => match cuda_backend() {
                Ok(_) => Ok(ResolvedBackend::Cuda),
                Err(Error::Backend { message, .. }) => Err(Error::Unavailable(format!(
                    "--backend cuda: no usable GPU ({message})"
                ))),
                Err(e) => Err(e),
            },
            #[cfg(not(feature = "cuda"))]
            BackendChoice::Cuda => Err(Error::Unavailable(
                "--backend cuda: this build has no CUDA backend (built without the `cuda` feature)"
                    .into(),
            )),
            #[cfg(feature = "cuda")]
            BackendChoice::Auto => match cuda_backend() {
                Ok(gpu) => {
                    log::info!("using the GPU: {}", gpu.device_description());
                    Ok(ResolvedBackend::Cuda)
                }
                Err(e) => {
                    let why = match e {
                        Error::Backend { message, .. } => message,
                        e => e.to_string(),
                    };
                    // Once per process: a batch resolves the backend for every run.
                    static WARNED: std::sync::Once = std::sync::Once::new();
                    WARNED.call_once(|| log::warn!("no usable GPU ({why}); solving on the CPU"));
                    Ok(ResolvedBackend::Cpu)
                }
            },
            #[cfg(not(feature = "cuda"))]
            BackendChoice::Auto => Ok(ResolvedBackend::Cpu),
        }
    }
}

/// A linear system `A x = b` with an optional initial guess, validated for shape.
#[derive(Clone, Debug)]
pub struct Problem {
    pub a: Arc<CsrMatrix>,
    pub b: Vec<f64>,
    pub x0: Option<Vec<f64>>,
}

impl Problem {
    /// `b` defaults to all ones and `x0` to zero, as in the thesis's evaluation.
    pub fn new(a: Arc<CsrMatrix>, b: Option<Vec<f64>>, x0: Option<Vec<f64>>) -> Result<Self> {
        if a.nrows() == 0 && a.ncols() == 0 {
            return Err(Error::InvalidInput(
                "the matrix is empty (0 x 0): there is nothing to solve".into(),
            ));
        }
        if !a.is_square() {
            return Err(Error::InvalidInput(format!(
                "the matrix is {} x {}: Krylov solvers need a square matrix",
                a.nrows(),
                a.ncols()
            )));
        }
        let n = a.nrows();
        for (name, v) in [("right-hand side", &b), ("initial guess", &x0)] {
            if let Some(v) = v {
                if v.len() != n {
                    return Err(Error::InvalidInput(format!(
                        "{name} has {} entries but the matrix has {n} rows",
                        v.len()
                    )));
                }
                if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                    return Err(Error::InvalidInput(format!(
                        "{name} entry {} is not finite",
                        i + 1
                    )));
                }
            }
        }
        Ok(Problem {
            b: b.unwrap_or_else(|| vec![1.0; n]),
            a,
            x0,
        })
    }
}

/// A finished solve of a precision chosen at run time: its report and the solution in the
/// working precision.
#[derive(Clone, Debug)]
pub struct Solution {
    /// What happened: iterations, stop reason, residuals, times.
    pub info: SolveInfo,
    /// The solution, in the precision it was computed in.
    pub x: SolutionVector,
}

/// A solution vector in its working precision: nothing the solve computed is rounded away.
#[derive(Clone, Debug, PartialEq)]
pub enum SolutionVector {
    /// Computed in `f64`.
    F64(Vec<f64>),
    /// Computed in triple precision.
    Td(Vec<Td>),
    /// Computed in double-double.
    Dd(Vec<Dd>),
    /// Computed in quad-double.
    Qd(Vec<Qd>),
    /// Computed in MPFR at the solve's precision.
    #[cfg(feature = "mpfr")]
    Mp(Vec<crate::precision::Mp>),
}

/// Runs `$body` with `$x` bound to the vector inside any [`SolutionVector`].
macro_rules! with_solution_vector {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            SolutionVector::F64($x) => $body,
            SolutionVector::Td($x) => $body,
            SolutionVector::Dd($x) => $body,
            SolutionVector::Qd($x) => $body,
            #[cfg(feature = "mpfr")]
            SolutionVector::Mp($x) => $body,
        }
    };
}

impl SolutionVector {
    /// Entries.
    pub fn len(&self) -> usize {
        with_solution_vector!(self, x => x.len())
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each entry rounded to the nearest `f64`.
    pub fn to_f64(&self) -> Vec<f64> {
        with_solution_vector!(self, x => x.iter().map(Precision::to_f64).collect())
    }

    /// Each entry as a double-double: exact for `f64`, td and dd, rounded for qd and mp.
    pub fn to_dd(&self) -> Vec<Dd> {
        with_solution_vector!(self, x => x.iter().map(Precision::to_dd).collect())
    }
}

/// A precision type's vector as a [`SolutionVector`] (by [`Precision::NAME`]).
fn solution_vector<P: Precision>(mut x: Vec<P>) -> SolutionVector {
    use std::any::Any;
    let any: &mut dyn Any = &mut x;
    macro_rules! take {
        ($t:ty, $variant:ident) => {
            if let Some(v) = any.downcast_mut::<Vec<$t>>() {
                return SolutionVector::$variant(std::mem::take(v));
            }
        };
    }
    take!(f64, F64);
    take!(Td, Td);
    take!(Dd, Dd);
    take!(Qd, Qd);
    #[cfg(feature = "mpfr")]
    take!(crate::precision::Mp, Mp);
    unreachable!("every Precision type has a SolutionVector variant, not {}", P::NAME)
}

/// What one solve runs: the method (resolved from `Auto` by the matrix), the working precision
/// and the preconditioner, prepared once per matrix and shared by every solve of it.
#[derive(Clone, Copy, Debug)]
pub struct Recipe<'a> {
    pub method: Method,
    pub precision: WorkingPrecision,
    pub precond: &'a Preconditioning,
}

/// Solve `problem` with `method` (resolved if `Auto`) in one working precision. The backend is
/// resolved for that precision ([`BackendChoice::resolve_for`]): a precision without CUDA
/// kernels with `Cuda` is an error, with `Auto` it runs on the CPU.
pub fn solve(
    problem: &Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    solve_on(&Lane::default(), problem, backend, recipe, params, monitor)
}

/// Where a solve's GPU work goes: the process's stream ([`Lane::default`]) or a stream of its
/// own ([`Lane::own`]), so that solves in several threads run on the GPU at the same time.
#[derive(Default)]
pub struct Lane {
    #[cfg(feature = "cuda")]
    cuda: Option<crate::backend::cuda::CudaBackend>,
}

impl Lane {
    /// A lane with a GPU stream of its own where `backend` may use a GPU and one is usable;
    /// otherwise the default lane (the CPU backend has no streams to separate).
    pub fn own(backend: BackendChoice) -> Result<Lane> {
        #[cfg(feature = "cuda")]
        if backend != BackendChoice::Cpu
            && let Ok(gpu) = cuda_backend()
        {
            let own = gpu.sibling()?;
            // A cooperative launch (the persistent kernels) waits for the whole device, so
            // beside other streams it stalled them and itself: 10-100x slower iterations in a
            // study with four in flight, on the H200 (benches/results/gpu-study.md).
            own.set_persistent(crate::backend::cuda::Persistent::Off);
            return Ok(Lane { cuda: Some(own) });
        }
        let _ = backend;
        Ok(Lane::default())
    }

    /// Whether a solve of `a` fills the GPU by itself (rows at least the threads it keeps
    /// resident), so that a solve beside it would only slow both: such solves run alone.
    pub fn fills_device(&self, a: &CsrMatrix) -> bool {
        #[cfg(feature = "cuda")]
        if let Some(gpu) = &self.cuda {
            return gpu
                .resident_threads()
                .is_ok_and(|threads| a.nrows() >= threads);
        }
        let _ = a;
        false
    }

    #[cfg(feature = "cuda")]
    fn cuda(&self) -> Result<&crate::backend::cuda::CudaBackend> {
        match &self.cuda {
            Some(gpu) => Ok(gpu),
            None => cuda_backend(),
        }
    }
}

/// [`solve`] with its GPU work on `lane`.
pub fn solve_on(
    lane: &Lane,
    problem: &Problem,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    let recipe = Recipe {
        method: recipe.method.resolve(&problem.a),
        ..recipe
    };
    let (resolved, why) = backend.resolve_for_problem(
        &problem.a,
        recipe.method,
        recipe.precond,
        &[recipe.precision],
    )?;
    if let Some(why) = why {
        log::info!("{why}");
    }
    match resolved {
        ResolvedBackend::Cpu => {
            with_precision(&CpuBackend::new(), problem, recipe, params, monitor)
        }
        #[cfg(feature = "cuda")]
        ResolvedBackend::Cuda => with_precision(lane.cuda()?, problem, recipe, params, monitor),
    }
}

fn with_precision<B: CgSteps + BicgstabSteps>(
    backend: &B,
    problem: &Problem,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    match recipe.precision {
        WorkingPrecision::F64 => run::<B, f64>(backend, problem, recipe, params, monitor),
        WorkingPrecision::Dd => run::<B, Dd>(backend, problem, recipe, params, monitor),
        WorkingPrecision::Qd => run::<B, Qd>(backend, problem, recipe, params, monitor),
        WorkingPrecision::Td => run::<B, Td>(backend, problem, recipe, params, monitor),
        WorkingPrecision::Mp(_) if backend.name() != "cpu" => Err(cpu_only_error(recipe.precision)),
        #[cfg(feature = "mpfr")]
        WorkingPrecision::Mp(bits) => {
            // Every `Mp` of this solve is created at `bits` bits, and no other mp solve in the
            // process runs until this one is done (`precision::mp`, "The precision setting").
            let _scope = crate::precision::mp::MpScope::enter(bits);
            run::<B, crate::precision::Mp>(backend, problem, recipe, params, monitor)
        }
        #[cfg(not(feature = "mpfr"))]
        WorkingPrecision::Mp(_) => Err(Error::Config(
            recipe.precision.unavailable().unwrap_or_default(),
        )),
    }
}

fn run<B: CgSteps + BicgstabSteps, P: Precision>(
    backend: &B,
    problem: &Problem,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    // Kernel compilation happens once per process: charged to whichever precision ran first,
    // it made that precision's iterations look slower (f64 2.35 instead of 2.06 ms per
    // ILU(0)-CG iteration over 200 iterations on the H200, benches/results/h200.md).
    backend.prepare::<P>()?;
    let start = Instant::now();
    let a = backend.matrix(&problem.a)?;
    let b = backend.vector_from_f64::<f64>(&problem.b)?;
    let mut x = match &problem.x0 {
        Some(x0) => backend.vector_from_f64::<P>(x0)?,
        None => backend.zeros::<P>(problem.b.len())?,
    };
    backend.synchronize()?;
    let upload = start.elapsed().as_secs_f64();
    let mut info = match recipe.precond {
        Preconditioning::None => iterate(
            backend,
            &a,
            &b,
            &mut x,
            recipe.method,
            &Identity,
            params,
            monitor,
        )?,
        Preconditioning::Ilu0(factors) => {
            let t0 = Instant::now();
            let ilu = Ilu0::new(backend, factors)?;
            backend.synchronize()?;
            let ilu_upload = t0.elapsed().as_secs_f64();
            let mut info = iterate(
                backend,
                &a,
                &b,
                &mut x,
                recipe.method,
                &ilu,
                params,
                monitor,
            )?;
            info.precond = "ilu0";
            info.times.precond = ilu.seconds();
            info.times.precond_setup = factors.setup_seconds() + ilu_upload;
            info.times.setup += info.times.precond_setup;
            info.times.total += info.times.precond_setup;
            if let Some(t) = info.time_to_target.as_mut() {
                *t += info.times.precond_setup;
            }
            info
        }
    };
    info.times.setup += upload;
    info.times.total += upload;
    if let Some(t) = info.time_to_target.as_mut() {
        *t += upload;
    }
    let x = solution_vector(backend.to_host(&x)?);
    // `P::NAME` is the type's (`mp`); the report names the precision (`mp:256`).
    info.precision = recipe.precision.name();
    Ok(Solution { info, x })
}

#[allow(clippy::too_many_arguments)]
fn iterate<B: CgSteps + BicgstabSteps, P: Precision, M: Preconditioner<B>>(
    backend: &B,
    a: &B::Matrix,
    b: &B::Vector<f64>,
    x: &mut B::Vector<P>,
    method: Method,
    precond: &M,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<SolveInfo> {
    match method {
        Method::Cg => cg(backend, a, b, x, precond, params, monitor),
        Method::Bicgstab | Method::Auto => bicgstab(backend, a, b, x, precond, params, monitor),
    }
}
