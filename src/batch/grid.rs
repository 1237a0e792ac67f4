//! The grid of a study (precision x tolerance x preconditioner x method), the per-run limits,
//! and the key that identifies one run across restarts.

use crate::error::{Error, Result};
use crate::precond::ilu0::IluShift;
use crate::solver::bicgstab::Shadow;
use crate::solver::dispatch::{Method, WorkingPrecision};
use crate::solver::{Escalation, Orthogonalization, ResidualNorm};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Preconditioner axis of the grid.
pub use crate::precond::PrecondKind as PrecondChoice;

/// The axes of a study; every matrix is run at every combination.
#[derive(Clone, Debug)]
pub struct Grid {
    pub precisions: Vec<WorkingPrecision>,
    pub tols: Vec<f64>,
    pub preconds: Vec<PrecondChoice>,
    pub methods: Vec<Method>,
}

impl Grid {
    /// Each axis non-empty, without repeats, with valid values.
    pub fn validate(&self) -> Result<()> {
        fn axis<T: PartialEq>(name: &str, values: &[T]) -> Result<()> {
            if values.is_empty() {
                return Err(Error::Config(format!("the {name} list is empty")));
            }
            for (i, v) in values.iter().enumerate() {
                if values[..i].contains(v) {
                    return Err(Error::Config(format!("the {name} list repeats a value")));
                }
            }
            Ok(())
        }
        axis("precision", &self.precisions)?;
        axis("tolerance", &self.tols)?;
        axis("preconditioner", &self.preconds)?;
        axis("method", &self.methods)?;
        for &tol in &self.tols {
            if !(tol > 0.0 && tol < 1.0) {
                return Err(Error::Config(format!(
                    "tol = {tol} must lie strictly between 0 and 1"
                )));
            }
        }
        Ok(())
    }

    /// Runs per matrix.
    pub fn len(&self) -> usize {
        self.precisions.len() * self.tols.len() * self.preconds.len() * self.methods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What bounds each run and what it measures, the same for every run of a study.
#[derive(Clone, Debug)]
pub struct RunLimits {
    pub max_iter: usize,
    /// Wall time of one solve (loading the matrix excluded); the run ends as `time-limit`.
    pub time_limit: Option<Duration>,
    pub criterion: ResidualNorm,
    /// True residual into the history every this many iterations; 0 picks
    /// [`auto_true_residual_every`] per matrix.
    pub true_residual_every: usize,
    /// How ILU(0) meets a zero pivot (`--ilu-shift`), for the runs with `ilu0`.
    pub ilu_shift: IluShift,
    /// BiCGStab's shadow residual and restarts after breakdowns (`--shadow`, `--max-restarts`).
    pub bicgstab: BicgstabChoice,
    /// GMRES's restart length and orthogonalisation and BiCGStab(l)'s `l`, for their runs.
    pub method_options: MethodOptions,
    /// When a precision ladder's rung gives way (`--escalate-*`), for the ladder runs.
    pub escalation: Escalation,
}

/// GMRES's `--gmres-restart` and `--gmres-orthogonalization`, and BiCGStab(l)'s `--bicgstab-l`,
/// of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodOptions {
    pub restart: usize,
    pub orthogonalization: Orthogonalization,
    #[serde(default = "default_l")]
    pub l: usize,
}

fn default_l() -> usize {
    crate::solver::Params::default().bicgstab_l
}

impl Default for MethodOptions {
    fn default() -> Self {
        let params = crate::solver::Params::default();
        MethodOptions {
            restart: params.gmres_restart,
            orthogonalization: params.gmres_orthogonalization,
            l: params.bicgstab_l,
        }
    }
}

/// BiCGStab's `--shadow` and `--max-restarts` of a run. In keys only where they are not the
/// defaults, so keys written before they existed still name the same runs (their breakdowns,
/// which restarts would now continue, are run again: `RunRecord::is_stale`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BicgstabChoice {
    pub shadow: Shadow,
    pub max_restarts: usize,
}

impl Default for BicgstabChoice {
    fn default() -> Self {
        let params = crate::solver::Params::default();
        BicgstabChoice {
            shadow: params.shadow,
            max_restarts: params.max_restarts,
        }
    }
}

impl BicgstabChoice {
    pub fn is_default(&self) -> bool {
        *self == BicgstabChoice::default()
    }

    /// `|shadow-random|restarts-0`: the parts that are not the defaults.
    fn suffix(&self, separator: &str) -> String {
        let d = BicgstabChoice::default();
        let mut s = String::new();
        if self.shadow != d.shadow {
            s.push_str(&format!("{separator}shadow-{}", self.shadow.name()));
        }
        if self.max_restarts != d.max_restarts {
            s.push_str(&format!("{separator}restarts-{}", self.max_restarts));
        }
        s
    }
}

/// `--true-residual-every 0`: every `n / 100` iterations, clamped to 1..=10, for the first
/// [`AUTO_TRUE_RESIDUAL_POINTS`] checks. Each check costs about one double-double SpMV and is
/// excluded from the reported times, so the bound of 10 keeps the extra wall time near 10% on
/// large matrices, while small matrices (cheap checks) get a point at every iteration or nearly.
pub fn auto_true_residual_every(rows: usize) -> usize {
    (rows / 100).clamp(1, 10)
}

/// `--true-residual-every 0`'s checks before their spacing doubles with the iterations
/// (`Params::true_residual_points`): the stored history keeps 250 points a run (see `store`),
/// so a 30,000-iteration run at every iteration computed 30,000 true residuals for them, and
/// on a GPU each ended a batch with a wait on the host. Thinned, it computes about 1,100.
pub const AUTO_TRUE_RESIDUAL_POINTS: usize = 256;

/// Identity of one run: a study skips a run whose key is already recorded. Floats are compared
/// through [`RunKey::id`], whose `{:e}` form round-trips every `f64` exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunKey {
    /// Canonical absolute path of a file, or a normalised generator spec (`poisson2d:32`).
    pub matrix: String,
    pub precision: WorkingPrecision,
    pub tol: f64,
    pub precond: PrecondChoice,
    /// As requested (`auto` stays `auto`; the result records what it resolved to).
    pub method: Method,
    pub max_iter: usize,
    pub time_limit_s: Option<f64>,
    pub criterion: ResidualNorm,
    /// `--ilu-shift` of an `ilu0` run: absent for `auto` (and for runs without ILU(0)), a
    /// number for a fixed shift, `"none"` for no remedy. Older files wrote a fixed shift as
    /// here and nothing otherwise: their runs without one read as `auto`, whose factors are
    /// theirs wherever `A` itself factored (see `RunRecord::is_stale`).
    #[serde(default, skip_serializing_if = "IluShift::is_auto")]
    pub ilu_shift: IluShift,
    #[serde(default, flatten, skip_serializing_if = "BicgstabChoice::is_default")]
    pub bicgstab: BicgstabChoice,
    /// A GMRES or BiCGStab(l) run's options, where they are not the defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method_options: Option<MethodOptions>,
    /// A ladder run's escalation rules, where they are not the defaults (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<Escalation>,
}

impl RunKey {
    pub fn id(&self) -> String {
        let mut id = format!("{}|{}", self.condition().id(), self.matrix_precision());
        if let Some(g) = &self.method_options {
            id.push_str(&format!(
                "|gmres-{}-{}-bicgstab-l{}",
                g.restart,
                g.orthogonalization.name(),
                g.l
            ));
        }
        if let Some(e) = &self.escalation {
            id.push_str(&format!(
                "|escalation-{}-{:e}-{:e}-{}",
                e.window, e.progress, e.gap, e.rung_max_iter
            ));
        }
        id
    }

    /// The GMRES and BiCGStab(l) settings of a `method` run under `limits`: `Some` only for
    /// those methods with settings other than the defaults.
    pub fn method_options_of(method: Method, limits: &RunLimits) -> Option<MethodOptions> {
        (matches!(method, Method::Gmres | Method::BicgstabL)
            && limits.method_options != MethodOptions::default())
        .then_some(limits.method_options)
    }

    /// The escalation rules for `precision` under `limits`: `Some` only for a ladder with rules
    /// other than the defaults, so other keys stay as they were.
    pub fn escalation_of(precision: WorkingPrecision, limits: &RunLimits) -> Option<Escalation> {
        (precision.ladder().is_some() && limits.escalation != Escalation::default())
            .then_some(limits.escalation)
    }

    fn matrix_precision(&self) -> String {
        format!("{}|{}", self.matrix, self.precision.name())
    }

    /// Everything but the matrix and the precision: the runs compared in one summary table.
    pub fn condition(&self) -> Condition {
        Condition {
            tol: self.tol,
            precond: self.precond,
            method: self.method,
            max_iter: self.max_iter,
            time_limit_s: self.time_limit_s,
            criterion: self.criterion,
            ilu_shift: self.ilu_shift,
            bicgstab: self.bicgstab,
        }
    }
}

/// The settings one summary table holds fixed while f64 and dd are compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    pub tol: f64,
    pub precond: PrecondChoice,
    pub method: Method,
    pub max_iter: usize,
    pub time_limit_s: Option<f64>,
    pub criterion: ResidualNorm,
    #[serde(default, skip_serializing_if = "IluShift::is_auto")]
    pub ilu_shift: IluShift,
    #[serde(default, flatten, skip_serializing_if = "BicgstabChoice::is_default")]
    pub bicgstab: BicgstabChoice,
}

impl Condition {
    pub fn id(&self) -> String {
        let mut id = format!(
            "{:e}|{}|{}|{}|{}|{}",
            self.tol,
            self.precond.name(),
            method_name(self.method),
            self.max_iter,
            self.time_limit_s
                .map_or("none".into(), |t| format!("{t:e}")),
            criterion_name(self.criterion),
        );
        if !self.ilu_shift.is_auto() {
            id.push_str(&format!("|shift{}", self.ilu_shift));
        }
        id.push_str(&self.bicgstab.suffix("|"));
        id
    }

    /// Human heading: `tol 1e-8, precond none, method auto, max 30000 iterations`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "tol {:e}, precond {}, method {}, max {} iterations",
            self.tol,
            self.precond.name(),
            method_name(self.method),
            self.max_iter
        );
        if let Some(t) = self.time_limit_s {
            s.push_str(&format!(", time limit {t} s"));
        }
        if self.criterion != ResidualNorm::Initial {
            s.push_str(", stop on ||r||/||b||");
        }
        if !self.ilu_shift.is_auto() {
            s.push_str(&format!(", ilu-shift {}", self.ilu_shift));
        }
        s.push_str(&self.bicgstab.suffix(", ").replace("-", " "));
        s
    }

    /// File-name fragment, unique per condition: `tol1e-8_none_auto_30000it` (then `_60s` for a
    /// time limit, `_rhs` for the other criterion).
    pub fn slug(&self) -> String {
        let mut s = format!(
            "tol{:e}_{}_{}_{}it",
            self.tol,
            self.precond.name(),
            method_name(self.method),
            self.max_iter
        );
        if let Some(t) = self.time_limit_s {
            s.push_str(&format!("_{t}s"));
        }
        if self.criterion != ResidualNorm::Initial {
            s.push_str("_rhs");
        }
        if !self.ilu_shift.is_auto() {
            s.push_str(&format!("_shift{}", self.ilu_shift));
        }
        s.push_str(&self.bicgstab.suffix("_"));
        s
    }
}

pub fn method_name(m: Method) -> &'static str {
    m.name()
}

fn criterion_name(c: ResidualNorm) -> &'static str {
    match c {
        ResidualNorm::Initial => "initial",
        ResidualNorm::Rhs => "rhs",
    }
}

/// `--time-limit`: `90`, `90s`, `1.5m`, `2h`, `500ms` (plain numbers are seconds).
pub fn parse_duration(text: &str) -> Result<Duration> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(Error::Config(format!(
                "time '{text}': unknown unit '{other}' (use s, m, h or ms)"
            )));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| Error::Config(format!("time '{text}' is not a number with a unit")))?;
    match Duration::try_from_secs_f64(value * scale) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(Error::Config(format!(
            "time '{text}' must be positive and below 10^19 seconds"
        ))),
    }
}
