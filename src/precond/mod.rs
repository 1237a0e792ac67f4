//! Preconditioners: `z <- M^{-1} r`. The solvers take any [`Preconditioner`]; the identity gives
//! the unpreconditioned methods, [`Ilu0`] applies ILU(0) factors in double (thesis 4.3.2).

pub mod ilu0;
pub mod matching;
mod in_double;

pub use in_double::InDouble;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::solver::dispatch::Method;
use crate::sparse::CsrMatrix;
use ilu0::{Ilu0Factors, IluShift};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub trait Preconditioner<B: Backend>: Send + Sync {
    fn name(&self) -> &'static str;
    /// `z <- M^{-1} r`.
    fn apply<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<P>,
    ) -> Result<()>;
    /// `z <- M^{-1} r` kept in double, for a caller that reads `z` widened to `P` (CG: see
    /// `Backend::dot_wide`). The default applies in `P` and rounds; a preconditioner that works
    /// in double overrides it to skip the widening.
    fn apply_double<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<f64>,
    ) -> Result<()> {
        let mut wide = backend.zeros::<P>(backend.len(r))?;
        self.apply(backend, r, &mut wide)?;
        backend.convert(&wide, z)
    }
    /// When true the solvers use `r` itself where `z` would be, saving a copy per application.
    fn is_identity(&self) -> bool {
        false
    }
    /// Wall seconds spent in `apply` so far.
    fn seconds(&self) -> f64 {
        0.0
    }
    /// `f` on the backend's ILU(0) factors, for a solver step that applies them inside a
    /// kernel of its own (the CUDA backend's one-block BiCGStab); `None` where this is not
    /// ILU(0).
    fn with_backend_ilu<R>(&self, _f: impl FnOnce(&mut B::Ilu) -> R) -> Option<R> {
        None
    }
}

/// `M = I`: the unpreconditioned methods.
#[derive(Clone, Copy, Debug, Default)]
pub struct Identity;

impl<B: Backend> Preconditioner<B> for Identity {
    fn name(&self) -> &'static str {
        "none"
    }
    fn apply<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<P>,
    ) -> Result<()> {
        backend.copy(r, z)
    }
    fn is_identity(&self) -> bool {
        true
    }
}

/// ILU(0) applied in double on a backend, timing its applications: the thesis's "Precond [%]".
///
/// Where the backend times them itself (a GPU's events, [`Backend::ilu_times_itself`]) nothing
/// waits; elsewhere the time includes a wait for the backend after each application (a no-op on
/// the CPU), so that queued work is charged to the preconditioner. Read the total with
/// [`Ilu0::seconds_on`], which collects the backend's share.
pub struct Ilu0<B: Backend> {
    state: Mutex<(B::Ilu, f64)>,
}

impl<B: Backend> Ilu0<B> {
    pub fn new(backend: &B, factors: &Arc<Ilu0Factors>) -> Result<Self> {
        Ok(Self::uploaded(backend.ilu(factors)?))
    }

    /// Factors already on the backend (block Jacobi's, [`Backend::block_jacobi`]).
    pub fn uploaded(ilu: B::Ilu) -> Self {
        Ilu0 {
            state: Mutex::new((ilu, 0.0)),
        }
    }
}

impl<B: Backend> Ilu0<B> {
    /// The solves, with the result widened to `Z`, timed.
    fn timed_apply<P: Precision, Z: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<Z>,
    ) -> Result<()> {
        let start = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        backend.ilu_apply(&mut state.0, r, z)?;
        if backend.ilu_times_itself() {
            return Ok(());
        }
        backend.synchronize()?;
        state.1 += start.elapsed().as_secs_f64();
        Ok(())
    }

    /// Seconds spent in the applications so far, the backend's own timing collected (which
    /// waits for the queued applications).
    pub fn seconds_on(&self, backend: &B) -> Result<f64> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (ilu, seconds) = &mut *state;
        *seconds += backend.ilu_seconds(ilu)?;
        Ok(*seconds)
    }
}

impl<B: Backend> Preconditioner<B> for Ilu0<B> {
    fn name(&self) -> &'static str {
        "ilu0"
    }
    fn apply<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<P>,
    ) -> Result<()> {
        self.timed_apply(backend, r, z)
    }
    fn apply_double<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<f64>,
    ) -> Result<()> {
        self.timed_apply(backend, r, z)
    }
    /// What the caller timed so far; [`Ilu0::seconds_on`] adds the backend's own timing.
    fn seconds(&self) -> f64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }
    fn with_backend_ilu<R>(&self, f: impl FnOnce(&mut B::Ilu) -> R) -> Option<R> {
        Some(f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()).0))
    }
}

/// The `--precond` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum PrecondKind {
    /// No preconditioner.
    None,
    /// Incomplete LU with the sparsity pattern of A, applied in double.
    Ilu0,
    /// Block Jacobi with ILU(0) in each block (PETSc's `-pc_type bjacobi -sub_pc_type ilu`):
    /// over ranks or GPUs, each factors and applies its diagonal block alone, with no
    /// communication; in one process, one block: ILU(0) without row permutation. Its
    /// iterations depend on the number of blocks.
    #[cfg_attr(feature = "serde", serde(rename = "bjacobi"))]
    BlockJacobi,
}

crate::solver::named_choices!(PrecondKind, "preconditioner", {
    None => "none",
    Ilu0 => "ilu0",
    BlockJacobi => "bjacobi",
});

/// Block Jacobi's factors of one diagonal block (`Backend::block_jacobi`'s): ILU(0) with
/// `shift`'s remedy, the rows never permuted (a permutation of a block's rows is not one of
/// the whole matrix's).
pub fn block_factors(block: &CsrMatrix, shift: IluShift) -> Result<Arc<Ilu0Factors>> {
    Ok(Arc::new(Ilu0Factors::with_remedy(block, shift, false)?))
}

/// A preconditioner ready for any number of solves of one matrix (in any precision and on any
/// backend): ILU(0) is factored once here.
#[derive(Clone, Debug, Default)]
pub enum Preconditioning {
    #[default]
    None,
    Ilu0(Arc<Ilu0Factors>),
    /// Block Jacobi with ILU(0) in each block: the blocks are the backend's
    /// ([`Backend::block_jacobi`]), each factored as ILU(0) is with this shift rule.
    BlockJacobi(IluShift),
    /// The caller's own, applied in double on the host ([`InDouble`]).
    User(Arc<dyn crate::Preconditioner>),
}

impl std::fmt::Debug for dyn crate::Preconditioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Preconditioner({})", self.name())
    }
}

impl Preconditioning {
    /// With ILU(0): the levels of its two triangular solves together.
    pub fn ilu_levels(&self) -> Option<usize> {
        match self {
            Preconditioning::None | Preconditioning::User(_) | Preconditioning::BlockJacobi(_) => {
                None
            }
            Preconditioning::Ilu0(f) => Some(f.level_count()),
        }
    }

    /// Build `kind` for `a` and solves by `method`; `ilu_shift` says how ILU(0) meets a zero
    /// pivot (a fixed shift with the preconditioner `none` is an error): the automatic remedy
    /// permutes rows only where the method is not CG, whose matrix must stay symmetric. A
    /// remedy that ran is logged.
    pub fn prepare(
        kind: PrecondKind,
        a: &CsrMatrix,
        ilu_shift: IluShift,
        method: Method,
    ) -> Result<Self> {
        match kind {
            PrecondKind::None => {
                if ilu_shift.fixed().is_some() {
                    return Err(Error::Config(
                        "ilu-shift is given but the preconditioner is none".into(),
                    ));
                }
                Ok(Preconditioning::None)
            }
            PrecondKind::Ilu0 => {
                let may_permute = Self::may_permute(method, a);
                if ilu_shift == IluShift::Match && !may_permute {
                    return Err(Error::Config(
                        "--ilu-shift match permutes rows, and CG needs the symmetric matrix: \
                         use auto (the shift) or another method"
                            .into(),
                    ));
                }
                let f = Ilu0Factors::with_remedy(a, ilu_shift, may_permute)?;
                if let Some(r) = f.remedy() {
                    log::info!("ILU(0): {r}");
                }
                Ok(Preconditioning::Ilu0(Arc::new(f)))
            }
            PrecondKind::BlockJacobi => match ilu_shift {
                // a permutation of each block's rows would not be one of the whole matrix's
                IluShift::Match => Err(Error::Config(
                    "--ilu-shift match permutes rows, which block Jacobi does not: use auto or \
                     a fixed shift"
                        .into(),
                )),
                shift => Ok(Preconditioning::BlockJacobi(shift)),
            },
        }
    }

    /// Whether ILU(0)'s automatic remedy may permute `a`'s rows for solves by `method`: not for
    /// CG, whose matrix must stay symmetric.
    pub fn may_permute(method: Method, a: &CsrMatrix) -> bool {
        method.resolve(a) != Method::Cg
    }

    /// Seconds the setup took on the CPU (the factorization), before any backend upload.
    pub fn setup_seconds(&self) -> f64 {
        match self {
            Preconditioning::None | Preconditioning::User(_) | Preconditioning::BlockJacobi(_) => {
                0.0
            }
            Preconditioning::Ilu0(f) => f.setup_seconds(),
        }
    }
}
