//! The fused operations CG's portable steps ([`HostCg`](super::HostCg)) are built from. Each
//! default body is the sequence of [`Backend`] primitives whose bits it must give; a backend
//! overrides it where one pass can do the work of several (`backend/cpu/solvers.rs`,
//! `backend/cuda/cg_kernels.rs`).

use crate::backend::{Backend, Operand, TiledDots, cg_step_accepts};
use crate::error::Result;
use crate::precision::Precision;

pub trait CgKernels: Backend {
    /// `y <- alpha x + y`, returning `<y, y>`: CG's residual update with the norm that follows.
    /// Must give the bits of `axpy` then `dot`; backends fuse it to save a pass over `y`.
    fn axpy_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &mut Self::Vector<P>,
    ) -> Result<P> {
        self.axpy(alpha, x, y)?;
        self.dot(y, y)
    }
    /// CG's step from the direction `p`: `q <- A p`, `alpha = rho / <p, q>`,
    /// `r <- r - alpha q`, returning `(<p, q>, <r, r>)`; the solver defers `x <- x + alpha p`
    /// to the next [`cg_direction`](CgKernels::cg_direction), which reads `p` anyway. Where
    /// `<p, q>` is not finite and positive, `r` is left alone, `<r, r>` is returned as zero and
    /// the caller reports the breakdown. Must give the bits of `spmv`, `dot_tiled` and
    /// `axpy_norm`; backends fuse the passes (the CPU computes each chunk's `<p, q>` while its
    /// rows are in cache, the GPU inside the SpMV) and keep `alpha` on the device, so the step
    /// needs one transfer to the host. `alpha` is
    /// `rho.div(&pq)`, which the caller can compute to the same bits.
    fn cg_step<P: Precision>(
        &self,
        a: &Self::Matrix,
        rho: &P,
        p: &Self::Vector<P>,
        q: &mut Self::Vector<P>,
        r: &mut Self::Vector<P>,
    ) -> Result<(P, P)> {
        // `spmv` then `dot_tiled`, or the backend's fused pass with their bits
        let (pq, _) = self.spmv_dots_tiled(a, Operand::Own(p), TiledDots::With(p), q)?;
        if !cg_step_accepts(&pq) {
            return Ok((pq, P::zero()));
        }
        let alpha = rho.div(&pq);
        let rr = self.axpy_norm(&alpha.neg(), q, r)?;
        Ok((pq, rr))
    }
    /// CG's direction update with the previous step's deferred solution update:
    /// `x <- x + alpha p`, then `p <- z + beta p`, with the bits of `axpy` then `xpay`. Both
    /// read the old `p`, so one pass over it serves the two (a pass of `P` values saved per
    /// iteration against updating `x` in `cg_step`).
    fn cg_direction<P: Precision>(
        &self,
        alpha: &P,
        z: &Self::Vector<P>,
        beta: &P,
        p: &mut Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.axpy(alpha, p, x)?;
        self.xpay(z, beta, p)
    }
    /// [`cg_direction`](CgKernels::cg_direction) with the double vector `z` read widened (the
    /// preconditioned residual: see [`dot_wide`](crate::backend::Backend::dot_wide)).
    fn cg_direction_wide<P: Precision>(
        &self,
        alpha: &P,
        z: &Self::Vector<f64>,
        beta: &P,
        p: &mut Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.axpy(alpha, p, x)?;
        self.xpay_wide(z, beta, p)
    }
}
