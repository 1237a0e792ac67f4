//! The fused operations BiCGStab's portable steps ([`HostBicgstab`](super::HostBicgstab)) are
//! built from. Each default body is the sequence of [`Backend`] primitives whose bits it must
//! give; a backend overrides it where one pass can do the work of several
//! (`backend/cpu/solvers.rs`, `backend/cuda/bicgstab_kernels.rs`).

use crate::backend::{
    Backend, BicgstabScalars, Operand, OperandOf, TiledDots, axpy_operand, bicgstab_spmv_dots,
    flag, half_step_converged,
};
use crate::error::Result;
use crate::precision::Precision;

pub trait BicgstabKernels: Backend {
    /// BiCGStab's first half-step: `v <- A p^` with `alpha = rho / <r~, v>` (`<r~, v>` in the
    /// order [`bicgstab_spmv_dots`] gives it) and
    /// `s <- r - alpha v` with `<s, s>`, kept in `block` (see [`BicgstabScalars`]) without a
    /// transfer to the host. Where `<r~, v>` is zero or not finite, `s` is left alone. `p^` is
    /// `p` itself without a preconditioner, a double vector read widened with one.
    #[allow(clippy::too_many_arguments)]
    fn bicgstab_half<P: Precision>(
        &self,
        a: &Self::Matrix,
        p_hat: OperandOf<'_, Self, P>,
        rho: &P,
        r_tilde: &Self::Vector<P>,
        v: &mut Self::Vector<P>,
        r: &Self::Vector<P>,
        s: &mut Self::Vector<P>,
        block: &mut Self::Vector<P>,
    ) -> Result<()> {
        let (rv, _) = bicgstab_spmv_dots(self, a, p_hat, TiledDots::With(r_tilde), v)?;
        let accepted = rv.is_finite() && rv != P::zero();
        let (alpha, ss) = if accepted {
            let alpha = rho.div(&rv);
            let ss = self.axpyz_norm(&alpha.neg(), v, r, s)?;
            (alpha, ss)
        } else {
            (P::zero(), P::zero())
        };
        let mut b = self.to_host(block)?;
        b[0] = rv;
        b[1] = alpha;
        b[2] = flag(accepted);
        b[3] = ss;
        *block = self.upload(&b)?;
        Ok(())
    }
    /// BiCGStab's second half-step, and the iteration's one transfer to the host: `t <- A s^`
    /// with `<t, t>` and `<t, s>` (in the order of [`bicgstab_spmv_dots`]),
    /// `omega = <t, s> / <t, t>`; if `||s||`
    /// already meets the stopping test (`||s|| / denominator <= tol`, as the tracker computes
    /// it) `x <- x + alpha p^`, else `x <- x + alpha p^ + omega s^`, `r <- s - omega t` with
    /// `<r, r>` and the next `rho = <r~, r>`. Nothing but `t` is updated after a rejected
    /// `alpha` or a non-finite `omega`. `p^` and `s^` are `p` and `s` themselves without a
    /// preconditioner, doubles read widened with one.
    #[allow(clippy::too_many_arguments)]
    fn bicgstab_finish<P: Precision>(
        &self,
        denominator: f64,
        tol: f64,
        a: &Self::Matrix,
        p_hat: OperandOf<'_, Self, P>,
        s_hat: OperandOf<'_, Self, P>,
        t: &mut Self::Vector<P>,
        s: &Self::Vector<P>,
        r_tilde: &Self::Vector<P>,
        x: &mut Self::Vector<P>,
        r: &mut Self::Vector<P>,
        block: &mut Self::Vector<P>,
    ) -> Result<BicgstabScalars<P>> {
        let (tt, ts) = bicgstab_spmv_dots(self, a, s_hat, TiledDots::SelfAnd(s), t)?;
        let mut b = self.to_host(block)?;
        if b[2] != P::zero() {
            let half = half_step_converged(&b[3], denominator, tol);
            b[4] = flag(half);
            b[5] = tt;
            b[6] = ts;
            b[7] = b[6].div(&b[5]);
            let omega_ok = b[7].is_finite();
            b[8] = flag(omega_ok);
            if half {
                axpy_operand(self, &b[1], p_hat, x)?;
            } else if omega_ok {
                match (p_hat, s_hat) {
                    (Operand::Own(p_hat), Operand::Own(s_hat)) => {
                        self.x_update(&b[1], p_hat, &b[7], s_hat, x)?
                    }
                    _ => {
                        axpy_operand(self, &b[1], p_hat, x)?;
                        axpy_operand(self, &b[7], s_hat, x)?;
                    }
                }
                (b[9], b[10]) = self.axpyz_norm_dot(&b[7].neg(), t, s, r, r_tilde)?;
            }
        }
        *block = self.upload(&b)?;
        Ok(BicgstabScalars::from_block(&b))
    }
    /// `z <- alpha x + y`, returning `<z, z>` (BiCGStab's `s` and `r` updates), with the bits of
    /// `axpyz` then `dot`.
    fn axpyz_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &Self::Vector<P>,
        z: &mut Self::Vector<P>,
    ) -> Result<P> {
        self.axpyz(alpha, x, y, z)?;
        self.dot(z, z)
    }
    /// `z <- alpha x + y`, returning `<z, z>` and `<w, z>` (BiCGStab's `r` update with `<r, r>`
    /// and the next `rho = <r~, r>`), with the bits of `axpyz`, then `dot(z, z)` and
    /// `dot(w, z)`.
    fn axpyz_norm_dot<P: Precision>(
        &self,
        alpha: &P,
        x: &Self::Vector<P>,
        y: &Self::Vector<P>,
        z: &mut Self::Vector<P>,
        w: &Self::Vector<P>,
    ) -> Result<(P, P)> {
        let zz = self.axpyz_norm(alpha, x, y, z)?;
        Ok((zz, self.dot(w, z)?))
    }
    /// `x <- x + alpha p + omega s` (BiCGStab's solution update), with the bits of two axpys.
    fn x_update<P: Precision>(
        &self,
        alpha: &P,
        p: &Self::Vector<P>,
        omega: &P,
        s: &Self::Vector<P>,
        x: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.axpy(alpha, p, x)?;
        self.axpy(omega, s, x)
    }
    /// BiCGStab's direction update `p <- r + beta (p - omega v)`. Backends fuse it.
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &Self::Vector<P>,
        beta: &P,
        omega: &P,
        v: &Self::Vector<P>,
        p: &mut Self::Vector<P>,
    ) -> Result<()> {
        self.axpy(&omega.neg(), v, p)?;
        self.xpay(r, beta, p)
    }
}
