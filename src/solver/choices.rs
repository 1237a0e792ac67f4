//! The runtime choices of a solve: method, working precision, backend, and how `Auto` resolves.

use super::cost::{CostModel, Workload};
use crate::error::{Error, Result};
use crate::precision::{Dd, Precision, Qd, Td};
use crate::precond::Preconditioning;
use crate::sparse::{CsrMatrix, Symmetry};
pub use super::ladder::Ladder;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
/// The Krylov method.
pub enum Method {
    /// CG for a matrix stored as symmetric, BiCGStab otherwise.
    Auto,
    /// Conjugate gradients (symmetric positive definite matrices).
    Cg,
    /// BiCGStab (general square matrices).
    Bicgstab,
    /// Restarted GMRES(m) (general square matrices; `m` by `gmres_restart`).
    Gmres,
    /// BiCGStab(l) (general square matrices, eigenvalues far off the real axis; `l` by
    /// `bicgstab_l`).
    BicgstabL,
}

super::params::named_choices!(Method, "method", {
    Auto => "auto",
    Cg => "cg",
    Bicgstab => "bicgstab",
    Gmres => "gmres",
    BicgstabL => "bicgstab-l",
});

impl Method {
    /// Resolve `Auto` from the symmetry the matrix source declared.
    pub fn resolve(self, a: &CsrMatrix) -> Method {
        self.resolve_declared(a.symmetry() == Symmetry::Symmetric)
    }

    /// Resolve `Auto` from whether the matrix (or operator) is declared symmetric: CG if so,
    /// BiCGStab otherwise.
    pub fn resolve_declared(self, symmetric: bool) -> Method {
        match self {
            Method::Auto if symmetric => Method::Cg,
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
    /// IEEE double.
    F64,
    /// Double-double (about 106 bits).
    Dd,
    /// Quad-double (CPU and CUDA backends, bitwise the same).
    Qd,
    /// Triple precision: D+I storage (12 bytes), double-double arithmetic rounded to D+I
    /// (see `precision::Td`).
    Td,
    /// This many bits in the own correctly rounded type (`mp:<bits>`, 53 to 2,048, on both
    /// backends; `crate::precision::MpFloat`).
    Mp(u32),
    /// This many bits in MPFR (`mp-mpfr:<bits>`, `crate::precision::Mpfr`): the same bits as
    /// `Mp`, CPU only, and only in a build with the `mpfr` feature
    /// ([`WorkingPrecision::unavailable`] says why not).
    Mpfr(u32),
    /// Precision escalation (`auto`, `ladder:f64,dd,qd`): the solve starts in the ladder's
    /// first precision and continues from its iterate in the next one when it stops making
    /// progress ([`Escalation`](super::Escalation)).
    Ladder(Ladder),
}

impl WorkingPrecision {
    /// The fixed-size precisions (every one but `mp`).
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
            WorkingPrecision::Mp(bits) => interned(crate::precision::mp::name(bits)),
            WorkingPrecision::Mpfr(bits) => interned(crate::precision::mp::mpfr_name(bits)),
            WorkingPrecision::Ladder(ladder) => interned(ladder.name()),
        }
    }

    /// The ladder, for `auto` and `ladder:...`.
    pub fn ladder(self) -> Option<Ladder> {
        match self {
            WorkingPrecision::Ladder(ladder) => Some(ladder),
            _ => None,
        }
    }

    /// The precisions a solve in this one may run: itself, or a ladder's rungs.
    pub fn rungs(self) -> Vec<WorkingPrecision> {
        match self {
            WorkingPrecision::Ladder(ladder) => ladder.rungs().collect(),
            p => vec![p],
        }
    }

    /// Whether the CUDA backend has kernels for this precision: every one but `mp-mpfr`, which
    /// runs on the CPU.
    pub fn runs_on_gpu(self) -> bool {
        match self {
            WorkingPrecision::Mpfr(_) => false,
            WorkingPrecision::Ladder(ladder) => ladder.rungs().all(Self::runs_on_gpu),
            _ => true,
        }
    }

    /// Why this build cannot run the precision at all (`mp-mpfr` without the `mpfr` feature), or
    /// `None`. Checked when a precision list is parsed and again before any solve.
    pub fn unavailable(self) -> Option<String> {
        match self {
            WorkingPrecision::Ladder(ladder) => ladder.rungs().find_map(Self::unavailable),
            WorkingPrecision::Mpfr(_) if !cfg!(feature = "mpfr") => Some(format!(
                "{} needs MPFR, and this binary was built without the `mpfr` feature: use \
                 mp:<bits> (the same bits, up to 2,048), or rebuild with `cargo build --release \
                 --features mpfr` (building GMP/MPFR needs m4 and a C compiler)",
                self.name()
            )),
            _ => None,
        }
    }
}

/// A name as a `&'static str`: each distinct name (`mp:<bits>`, a ladder's) is allocated once
/// and kept for the life of the process (a few bytes each).
fn interned(name: String) -> &'static str {
    use std::collections::BTreeSet;
    use std::sync::{Mutex, PoisonError};
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    match names.get(name.as_str()) {
        Some(&kept) => kept,
        None => {
            let kept: &'static str = Box::leak(name.into_boxed_str());
            names.insert(kept);
            kept
        }
    }
}

/// The error for a CPU-only precision on the CUDA backend.
pub fn cpu_only_error(p: WorkingPrecision) -> Error {
    let why = match p {
        WorkingPrecision::Mpfr(_) => "runs on the CPU only (MPFR)",
        WorkingPrecision::Ladder(_) => "has a rung without CUDA kernels (mp-mpfr:<bits> runs on the CPU only)",
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
        if let Some(bits) = crate::precision::mp::parse_mpfr_bits(s)? {
            return Ok(WorkingPrecision::Mpfr(bits));
        }
        if let Some(ladder) = Ladder::parse(s)? {
            return Ok(WorkingPrecision::Ladder(ladder));
        }
        WorkingPrecision::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let known: Vec<_> = WorkingPrecision::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown precision `{s}` (known: {}, mp:<bits>, auto, ladder:<p>,<p>..., both)",
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
/// `mp:<bits>`, `auto` without repeats), or `both` for `f64,dd`. A `ladder:` takes the rest of
/// the list as its rungs: `f64,dd,ladder:f64,dd,qd` is three columns. A precision this build
/// cannot run (`mp` without the `mpfr` feature) is refused here, before anything is loaded.
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
        let mut parts = s.split(',');
        while let Some(part) = parts.next() {
            let p: WorkingPrecision = match part.trim().get(..7) {
                // a ladder's rungs are the rest of the list
                Some(head) if head.eq_ignore_ascii_case("ladder:") => {
                    let rest: Vec<&str> = std::iter::once(part).chain(parts.by_ref()).collect();
                    rest.join(",").parse()?
                }
                _ => part.parse()?,
            };
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
/// Where a solve runs.
pub enum BackendChoice {
    /// The backend estimated faster for the matrix and precision where a GPU is usable (one
    /// log line says which and why), else the CPU.
    Auto,
    /// The CPU, on rayon's threads.
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

/// The GPU [`cuda_backend`] opens: 0 unless [`use_gpu`] chose another first.
#[cfg(feature = "cuda")]
static PROCESS_GPU: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Open GPU `ordinal` for this process's CUDA solves (MPI ranks of one host take one each);
/// only before the first of them, which opens the GPU for good: `false` if too late.
#[cfg(feature = "cuda")]
pub fn use_gpu(ordinal: usize) -> bool {
    if CUDA.get().is_some() {
        return false;
    }
    PROCESS_GPU.store(ordinal, std::sync::atomic::Ordering::SeqCst);
    true
}

/// The GPU opened for this process, or why it could not be.
#[cfg(feature = "cuda")]
static CUDA: std::sync::OnceLock<std::result::Result<crate::backend::cuda::CudaBackend, String>> =
    std::sync::OnceLock::new();

/// The process-wide CUDA backend: one context, kernels compiled once.
#[cfg(feature = "cuda")]
pub fn cuda_backend() -> Result<&'static crate::backend::cuda::CudaBackend> {
    use crate::backend::cuda::CudaBackend;
    CUDA.get_or_init(|| {
        let ordinal = PROCESS_GPU.load(std::sync::atomic::Ordering::SeqCst);
        CudaBackend::on_device(ordinal).map_err(|e| match e {
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
    #[doc(hidden)]
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
    #[doc(hidden)]
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
        if let Preconditioning::User(user) = precond {
            let why = format!(
                "preconditioner `{}` runs on the host: solving on the CPU (--backend cuda would \
                 copy r and z across at every application)",
                user.name()
            );
            return Ok((ResolvedBackend::Cpu, Some(why)));
        }
        let method = method.resolve(a);
        // a ladder costs what its rungs cost
        let workloads: Vec<Workload> = precisions
            .iter()
            .flat_map(|p| p.rungs())
            .map(|precision| Workload {
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
    #[doc(hidden)]
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
