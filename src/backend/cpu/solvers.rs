//! What CG's and BiCGStab's portable steps fuse, on the CPU: one pass over the vectors where
//! the primitives would make several (the kernels are in `fused.rs`).

use super::*;
use crate::solver::bicgstab::BicgstabKernels;
use crate::solver::cg::CgKernels;

impl CgKernels for CpuBackend {
    fn axpy_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &mut CpuVector<P>,
    ) -> Result<P> {
        Ok(fused::axpyz_norm(alpha, x, None, y, None).0)
    }
    fn cg_step<P: Precision>(
        &self,
        a: &CpuMatrix,
        rho: &P,
        p: &CpuVector<P>,
        q: &mut CpuVector<P>,
        r: &mut CpuVector<P>,
    ) -> Result<(P, P)> {
        Ok(fused::cg_step(a, rho, p, q, r))
    }
    fn cg_direction<P: Precision>(
        &self,
        alpha: &P,
        z: &CpuVector<P>,
        beta: &P,
        p: &mut CpuVector<P>,
        x: &mut CpuVector<P>,
    ) -> Result<()> {
        fused::cg_direction(alpha, Operand::Own(z), beta, p, x);
        Ok(())
    }
    fn cg_direction_wide<P: Precision>(
        &self,
        alpha: &P,
        z: &CpuVector<f64>,
        beta: &P,
        p: &mut CpuVector<P>,
        x: &mut CpuVector<P>,
    ) -> Result<()> {
        fused::cg_direction(alpha, Operand::Wide(z), beta, p, x);
        Ok(())
    }
}

impl BicgstabKernels for CpuBackend {
    fn axpyz_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
        z: &mut CpuVector<P>,
    ) -> Result<P> {
        Ok(fused::axpyz_norm(alpha, x, Some(y), z, None).0)
    }
    fn axpyz_norm_dot<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
        z: &mut CpuVector<P>,
        w: &CpuVector<P>,
    ) -> Result<(P, P)> {
        Ok(fused::axpyz_norm(alpha, x, Some(y), z, Some(w)))
    }
    fn x_update<P: Precision>(
        &self,
        alpha: &P,
        p: &CpuVector<P>,
        omega: &P,
        s: &CpuVector<P>,
        x: &mut CpuVector<P>,
    ) -> Result<()> {
        fused::x_update(alpha, p, omega, s, x);
        Ok(())
    }
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &CpuVector<P>,
        beta: &P,
        omega: &P,
        v: &CpuVector<P>,
        p: &mut CpuVector<P>,
    ) -> Result<()> {
        same_lengths(&[r.len(), v.len(), p.len()], "bicgstab_direction");
        let work = work::<P>(p.len());
        let inputs = read::<P>(r).into_iter().zip(read::<P>(v));
        let pieces: Vec<_> = write::<P>(p).into_iter().zip(inputs).collect();
        tasks::for_each(pieces, work, |_, (p, (r, v))| {
            kernels::bicgstab_direction_chunk::<P>(r, beta, omega, v, p)
        });
        Ok(())
    }
}
