//! A caller's own preconditioner ([`crate::Preconditioner`]) on any backend: applied in double,
//! as ILU(0) is, through host copies of `r` and `z`.

use super::Preconditioner;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::precision::Precision;
use std::sync::Mutex;
use std::time::Instant;

/// The caller's `z = M^{-1} r` on `f64` slices, timed; `r` is rounded to double and `z` widened
/// exactly, so every backend and thread count gives the same bits.
pub struct InDouble<'a> {
    user: &'a dyn crate::Preconditioner,
    seconds: Mutex<f64>,
}

impl<'a> InDouble<'a> {
    /// Wrap `user` for one solve.
    pub fn new(user: &'a dyn crate::Preconditioner) -> Self {
        InDouble {
            user,
            seconds: Mutex::new(0.0),
        }
    }

    /// `z = M^{-1} r` in double, on the host.
    fn host_apply<B: Backend, P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
    ) -> Result<B::Vector<f64>> {
        let start = Instant::now();
        let n = backend.len(r);
        let mut r64 = backend.zeros::<f64>(n)?;
        backend.convert(r, &mut r64)?;
        let r_host = backend.to_host(&r64)?;
        let mut z_host = vec![0.0; n];
        self.user.apply(&r_host, &mut z_host);
        if let Some(i) = z_host.iter().position(|z| !z.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "preconditioner `{}` returned a non-finite z[{i}] = {}",
                self.user.name(),
                z_host[i]
            )));
        }
        let z = backend.upload(&z_host)?;
        backend.synchronize()?;
        *self.seconds.lock().unwrap_or_else(|e| e.into_inner()) += start.elapsed().as_secs_f64();
        Ok(z)
    }
}

impl<B: Backend> Preconditioner<B> for InDouble<'_> {
    fn name(&self) -> &'static str {
        self.user.name()
    }
    fn apply<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<P>,
    ) -> Result<()> {
        let z64 = self.host_apply(backend, r)?;
        backend.convert(&z64, z)
    }
    fn apply_double<P: Precision>(
        &self,
        backend: &B,
        r: &B::Vector<P>,
        z: &mut B::Vector<f64>,
    ) -> Result<()> {
        // Into `z`, not in its place: the GPU's steps may hold its address.
        let z64 = self.host_apply(backend, r)?;
        backend.copy(&z64, z)
    }
    fn seconds(&self) -> f64 {
        *self.seconds.lock().unwrap_or_else(|e| e.into_inner())
    }
}
