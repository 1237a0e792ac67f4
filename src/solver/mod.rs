//! Krylov solvers, each loop written once and generic over backend and precision.

pub mod bicgstab;
pub mod cg;
pub mod cost;
pub mod dispatch;
mod monitor;
mod params;

pub use bicgstab::{BicgstabSteps, bicgstab};
pub use cg::{CgSteps, cg};
pub use monitor::{Monitor, NoMonitor};
pub use params::{HistoryPoint, Params, ResidualNorm, SolveInfo, SolveTimes, StopReason};
