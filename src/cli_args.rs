//! Number flags and help text of the `solver` binary (not part of the library).
//!
//! Numbers parse with their sign, so `--tol -1` reaches the range check, which answers with the
//! range (clap on its own offers a `-- -1` tip that then fails). The help of every option that
//! has a default states it as it is in effect: built in, or set by the configuration file.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Command, ValueEnum};
use precsolve::config::{self, RawConfig};
use precsolve::precond::PrecondKind;
use precsolve::precond::ilu0::IluShift;
use precsolve::solver::bicgstab::Shadow;
use precsolve::solver::dispatch::{BackendChoice, Method};
use precsolve::solver::{Orthogonalization, ResidualNorm};

/// A library enum the command line offers by name (the library's types derive no clap traits).
pub trait Choice: Copy + Send + Sync + 'static {
    /// Every value, in the order the help lists them.
    const ALL: &'static [Self];
    /// The value's name on the command line.
    fn name(self) -> &'static str;
}

macro_rules! choices {
    ($($t:ty),*) => {$(
        impl Choice for $t {
            const ALL: &'static [Self] = <$t>::ALL;
            fn name(self) -> &'static str {
                <$t>::name(self)
            }
        }
    )*};
}
choices!(
    Method,
    BackendChoice,
    ResidualNorm,
    PrecondKind,
    Shadow,
    Orthogonalization
);

/// The parser of an option whose values are `T`'s names (listed by `--help`).
pub fn choice<T: Choice>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(T::ALL.iter().map(|v| v.name())).map(|name| {
        *T::ALL
            .iter()
            .find(|v| v.name() == name)
            .expect("clap passes only the names it was given")
    })
}

/// A whole number; negative ones are refused with the range rather than a parse error.
fn integer(text: &str) -> Result<usize, String> {
    let value: i128 = text.trim().parse().map_err(|_| {
        format!(
            "'{}' is not a whole number",
            precsolve::escape::escape(text)
        )
    })?;
    if value < 0 {
        return Err(format!("{value} is negative"));
    }
    usize::try_from(value).map_err(|_| format!("{value} is too large"))
}

fn real(text: &str) -> Result<f64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("'{}' is not a number", precsolve::escape::escape(text)))
}

/// 0 or more.
pub fn count_arg(text: &str) -> Result<usize, String> {
    integer(text)
}

/// 1 or more.
pub fn positive_count_arg(text: &str) -> Result<usize, String> {
    match integer(text)? {
        0 => Err("must be at least 1".into()),
        n => Ok(n),
    }
}

pub fn max_iter_arg(text: &str) -> Result<usize, String> {
    config::check_max_iter(integer(text)?)
}

pub fn threads_arg(text: &str) -> Result<usize, String> {
    config::check_threads(integer(text)?)
}

pub fn tol_arg(text: &str) -> Result<f64, String> {
    config::check_tol(real(text)?)
}

pub fn ilu_shift_arg(text: &str) -> Result<IluShift, String> {
    IluShift::parse(text)
}

/// A number strictly between 0 and 1 (`--escalate-progress`).
pub fn fraction_arg(text: &str) -> Result<f64, String> {
    match real(text)? {
        v if v > 0.0 && v < 1.0 => Ok(v),
        v => Err(format!("{v} must lie strictly between 0 and 1")),
    }
}

/// A finite number above 1 (`--escalate-gap`).
pub fn factor_arg(text: &str) -> Result<f64, String> {
    match real(text)? {
        v if v > 1.0 && v.is_finite() => Ok(v),
        v => Err(format!("{v} must be a finite number above 1")),
    }
}

/// When a precision ladder (`--precision auto`, `ladder:f64,dd,qd`) moves to its next rung;
/// each flag overrides `[escalation]` in solver.toml.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct EscalationArgs {
    /// Ladder: check for stagnation every N iterations (each check computes the true
    /// residual).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = positive_count_arg)]
    pub escalate_window: Option<usize>,
    /// Ladder: a window makes progress when its best residual is at most F times the best
    /// before it (0 < F < 1).
    #[arg(long, value_name = "F", allow_negative_numbers = true, value_parser = fraction_arg)]
    pub escalate_progress: Option<f64>,
    /// Ladder: the true residual stops following the recurrence residual when it is more than
    /// G times larger (G > 1).
    #[arg(long, value_name = "G", allow_negative_numbers = true, value_parser = factor_arg)]
    pub escalate_gap: Option<f64>,
    /// Ladder: a rung other than the last gives way after N iterations (0: no limit).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = count_arg)]
    pub escalate_max_iter: Option<usize>,
}

impl EscalationArgs {
    /// The flags given, over `raw`'s `[escalation]`.
    pub fn apply(&self, raw: &mut RawConfig) {
        let e = &mut raw.escalation;
        if let Some(v) = self.escalate_window {
            e.window = v;
        }
        if let Some(v) = self.escalate_progress {
            e.progress = v;
        }
        if let Some(v) = self.escalate_gap {
            e.gap = v;
        }
        if let Some(v) = self.escalate_max_iter {
            e.rung_max_iter = v;
        }
    }
}

/// GMRES's restart length and orthogonalisation, BiCGStab(l)'s `l`; each flag overrides
/// solver.toml.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct MethodArgs {
    /// BiCGStab(l): BiCG steps per minimal-residual step (at least 1).
    #[arg(long, value_name = "L", allow_negative_numbers = true, value_parser = positive_count_arg)]
    pub bicgstab_l: Option<usize>,
    /// GMRES: iterations between restarts (the basis size m, at least 1).
    #[arg(long, value_name = "M", allow_negative_numbers = true, value_parser = positive_count_arg)]
    pub gmres_restart: Option<usize>,
    /// GMRES: orthogonalisation of each new basis vector: mgs (modified Gram-Schmidt) or cgs2
    /// (classical Gram-Schmidt, twice).
    #[arg(long, value_parser = choice::<Orthogonalization>())]
    pub gmres_orthogonalization: Option<Orthogonalization>,
}

impl MethodArgs {
    /// The flags given, over `raw`'s `[solve]`.
    pub fn apply(&self, raw: &mut RawConfig) {
        if let Some(v) = self.gmres_restart {
            raw.solve.gmres_restart = v;
        }
        if let Some(v) = self.bicgstab_l {
            raw.solve.bicgstab_l = v;
        }
        if let Some(v) = self.gmres_orthogonalization {
            raw.solve.gmres_orthogonalization = v;
        }
    }
}

/// The name a value enum is written with on the command line.
fn value_name<T: ValueEnum>(value: T) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// `cmd` with `[default: ...]` appended to the help of each option whose default comes from
/// the configuration (`solver.toml`, or the built-in defaults where there is none).
pub fn with_defaults_in_help(cmd: Command, raw: &RawConfig) -> Command {
    let s = &raw.solve;
    let shared = [
        ("method", s.method.name().to_string()),
        ("tol", format!("{:e}", s.tol)),
        ("max_iter", s.max_iter.to_string()),
        ("criterion", s.criterion.name().to_string()),
        ("backend", s.backend.name().to_string()),
        ("threads", s.threads.to_string()),
        ("precond", s.precond.name().to_string()),
        ("ilu_shift", s.ilu_shift.to_string()),
        ("shadow", s.shadow.name().to_string()),
        ("max_restarts", s.max_restarts.to_string()),
        ("bicgstab_l", s.bicgstab_l.to_string()),
        ("gmres_restart", s.gmres_restart.to_string()),
        (
            "gmres_orthogonalization",
            s.gmres_orthogonalization.name().to_string(),
        ),
        ("escalate_window", raw.escalation.window.to_string()),
        ("escalate_progress", raw.escalation.progress.to_string()),
        ("escalate_gap", raw.escalation.gap.to_string()),
        (
            "escalate_max_iter",
            raw.escalation.rung_max_iter.to_string(),
        ),
    ];
    let format = ("format", value_name(raw.output.format));
    let precision = ("precision", s.precision.to_string());
    let solve: Vec<(&str, String)> = shared
        .iter()
        .cloned()
        .chain([
            precision.clone(),
            format.clone(),
            ("true_residual_every", s.true_residual_every.to_string()),
        ])
        .collect();
    let batch: Vec<(&str, String)> = shared.iter().cloned().chain([precision]).collect();
    let note = "Defaults shown are those in effect: built in, or set by ./solver.toml (or the \
                file given by --config).";
    cmd.mut_subcommand("solve", |c| annotate(c, &solve).after_help(note))
        .mut_subcommand("batch", |c| annotate(c, &batch).after_help(note))
        .mut_subcommand("info", |c| annotate(c, &[format]).after_help(note))
}

fn annotate(mut cmd: Command, defaults: &[(&str, String)]) -> Command {
    for (id, value) in defaults {
        cmd = cmd.mut_arg(*id, |arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            arg.help(format!("{help} [default: {value}]"))
        });
    }
    cmd
}
