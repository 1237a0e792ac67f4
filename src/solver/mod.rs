//! Krylov solvers, each loop written once and generic over backend and precision.

pub mod bicgstab;
pub mod bicgstab_l;
pub mod cg;
mod choices;
pub mod cost;
pub mod dispatch;
pub mod escalation;
pub mod gmres;
mod ladder;
pub mod matrix_free;
mod monitor;
mod params;
mod problem;

pub use bicgstab::{BicgstabKernels, BicgstabSteps, bicgstab};
pub use bicgstab_l::bicgstab_l;
pub use cg::{CgKernels, CgSteps, cg};
pub use choices::{BackendChoice, Ladder, ResolvedBackend, WorkingPrecision};
pub use escalation::{Escalation, Phase};
pub use gmres::{Orthogonalization, gmres};
pub use monitor::{Iteration, Monitor, NoMonitor};
pub use problem::{Problem, Solution, SolutionVector};
pub(crate) use params::named_choices;

/// A backend whose CG and BiCGStab iterations are the portable steps ([`cg::HostCg`],
/// [`bicgstab::HostBicgstab`]), one iteration at a time with the scalars on the host, built
/// from its fused kernels: the CPU backend, and the backend of a caller's operator.
pub trait HostSteps: CgKernels + BicgstabKernels {}

/// Backends whose BiCGStab runs the portable steps (every [`HostSteps`] backend, and those
/// that keep only CG's scalars on their devices).
pub trait HostBicgstabSteps: BicgstabKernels {}

impl<B: HostSteps> HostBicgstabSteps for B {}

impl HostSteps for crate::backend::cpu::CpuBackend {}
pub use params::{HistoryPoint, Params, ResidualNorm, SolveInfo, SolveTimes, StopReason};
