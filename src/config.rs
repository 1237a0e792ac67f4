//! Configuration: `RawConfig` is the serde mirror of `solver.toml` (unknown keys rejected with
//! their line and column); `Config` is the validated form the command runs with.

use crate::error::{Error, Result};
use crate::precond::PrecondKind;
use crate::precond::ilu0::IluShift;
use crate::solver::bicgstab::Shadow;
use crate::solver::dispatch::{BackendChoice, Method, PrecisionChoice};
use crate::solver::{Escalation, Orthogonalization, Params, ResidualNorm};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum OutputFormat {
    Table,
    Json,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    pub solve: RawSolve,
    /// When a precision ladder (`precision = "auto"`) moves to its next rung.
    pub escalation: Escalation,
    pub output: RawOutput,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSolve {
    pub method: Method,
    pub precision: PrecisionChoice,
    pub tol: f64,
    pub max_iter: usize,
    pub criterion: ResidualNorm,
    pub true_residual_every: usize,
    pub backend: BackendChoice,
    pub threads: usize,
    pub precond: PrecondKind,
    pub ilu_shift: IluShift,
    pub shadow: Shadow,
    pub max_restarts: usize,
    pub bicgstab_l: usize,
    pub gmres_restart: usize,
    pub gmres_orthogonalization: Orthogonalization,
}

impl Default for RawSolve {
    fn default() -> Self {
        let params = Params::default();
        RawSolve {
            method: Method::Auto,
            precision: PrecisionChoice::both(),
            tol: params.tol,
            max_iter: params.max_iter,
            criterion: params.criterion,
            true_residual_every: params.true_residual_every,
            backend: BackendChoice::Auto,
            threads: 0,
            precond: PrecondKind::None,
            ilu_shift: IluShift::Auto,
            shadow: params.shadow,
            max_restarts: params.max_restarts,
            bicgstab_l: params.bicgstab_l,
            gmres_restart: params.gmres_restart,
            gmres_orthogonalization: params.gmres_orthogonalization,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawOutput {
    pub format: OutputFormat,
    pub quiet: bool,
}

impl Default for RawOutput {
    fn default() -> Self {
        RawOutput {
            format: OutputFormat::Table,
            quiet: false,
        }
    }
}

impl RawConfig {
    /// Parse TOML text; `source` names it in errors (a path, or "built-in defaults").
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| Error::Config(format!("{source}: {e}")))
    }

    /// Read a config file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Check every value and build the configuration the command runs with.
    pub fn validate(self) -> Result<Config> {
        let s = &self.solve;
        let check = |key: &str, checked: std::result::Result<(), String>| {
            checked.map_err(|why| Error::Config(format!("{key}: {why}")))
        };
        check("tol", check_tol(s.tol).map(drop))?;
        check("max_iter", check_max_iter(s.max_iter).map(drop))?;
        check("threads", check_threads(s.threads).map(drop))?;
        check("escalation", self.escalation.check())?;
        if s.gmres_restart == 0 {
            return Err(Error::Config("gmres_restart: must be at least 1".into()));
        }
        if s.bicgstab_l == 0 {
            return Err(Error::Config("bicgstab_l: must be at least 1".into()));
        }
        if s.ilu_shift.fixed().is_some() && s.precond != PrecondKind::Ilu0 {
            return Err(Error::Config(
                "ilu_shift is set but the preconditioner is not ilu0".into(),
            ));
        }
        Ok(Config {
            params: Params {
                tol: s.tol,
                max_iter: s.max_iter,
                criterion: s.criterion,
                true_residual_every: s.true_residual_every,
                record_history: false,
                time_limit: None,
                shadow: s.shadow,
                max_restarts: s.max_restarts,
                bicgstab_l: s.bicgstab_l,
                gmres_restart: s.gmres_restart,
                gmres_orthogonalization: s.gmres_orthogonalization,
                escalation: self.escalation,
                ..Params::default()
            },
            method: s.method,
            precision: s.precision.clone(),
            backend: s.backend,
            threads: s.threads,
            precond: s.precond,
            ilu_shift: s.ilu_shift,
            format: self.output.format,
            quiet: self.output.quiet,
        })
    }
}

/// The range of `tol` (flag or file): strictly between 0 and 1.
pub fn check_tol(tol: f64) -> std::result::Result<f64, String> {
    if tol > 0.0 && tol < 1.0 {
        Ok(tol)
    } else {
        Err(format!("{tol} must lie strictly between 0 and 1"))
    }
}

/// `max_iter` is at least 1.
pub fn check_max_iter(max_iter: usize) -> std::result::Result<usize, String> {
    if max_iter >= 1 {
        Ok(max_iter)
    } else {
        Err("must be at least 1".into())
    }
}

/// Threads per core allowed beyond one: oversubscribing a little can be useful for tests, but
/// thousands of threads on a few cores only thrash.
pub const THREADS_PER_CORE_MAX: usize = 4;

/// Cores of this machine as the OS reports them (1 where unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `threads` is 0 (every core) or at most [`THREADS_PER_CORE_MAX`] per core.
pub fn check_threads(threads: usize) -> std::result::Result<usize, String> {
    let cores = cores();
    let most = THREADS_PER_CORE_MAX * cores;
    if threads <= most {
        Ok(threads)
    } else {
        Err(format!(
            "{threads} threads is more than {most} ({THREADS_PER_CORE_MAX} x the {cores} cores \
             here); 0 uses every core"
        ))
    }
}

/// Validated configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub params: Params,
    pub method: Method,
    pub precision: PrecisionChoice,
    pub backend: BackendChoice,
    pub threads: usize,
    pub precond: PrecondKind,
    /// How ILU(0) meets a zero pivot: automatic shift, none, or a fixed one.
    pub ilu_shift: IluShift,
    pub format: OutputFormat,
    pub quiet: bool,
}
