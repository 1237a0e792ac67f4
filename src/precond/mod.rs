//! Preconditioners: `z <- M^{-1} r`. The identity is the only one for now; ILU(0) plugs in here.

use crate::backend::Backend;
use crate::error::Result;
use crate::precision::Precision;

pub trait Preconditioner<B: Backend>: Send + Sync {
    fn name(&self) -> &'static str;
    /// `z <- M^{-1} r`.
    fn apply<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<P>,
    ) -> Result<()>;
    /// When true the solvers use `r` itself where `z` would be, saving a copy per application.
    fn is_identity(&self) -> bool {
        false
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
