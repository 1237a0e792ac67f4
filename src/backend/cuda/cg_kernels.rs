//! CG's fused operations for the portable steps (td and qd, and the tests): `alpha` stays on
//! the device between the step and the direction update (`kernels/blas1.cu`'s `cg_` kernels).

use super::*;
use crate::solver::cg::CgKernels;

impl CgKernels for CudaBackend {
    fn axpy_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &CudaVector<P>,
        y: &mut CudaVector<P>,
    ) -> Result<P> {
        let (partial, blocks) = self.axpy_norm_partials(alpha, x, y)?;
        self.finish_reduction(FinalStage::Dot, &partial, blocks)
    }
    fn cg_step<P: Precision>(
        &self,
        a: &CudaMatrix,
        rho: &P,
        p: &CudaVector<P>,
        q: &mut CudaVector<P>,
        r: &mut CudaVector<P>,
    ) -> Result<(P, P)> {
        let n = p.len;
        assert!(q.len == n && r.len == n, "cg_step: lengths");
        let n64 = n as i64;
        // <p, q> in the tiled order, fused with the SpMV where a kernel exists
        let dots = TiledDots::With(p);
        let pq = self.spmv_dots_partial(a, Operand::Own(p), dots, q, true)?;
        let (rr_partial, blocks) = self.partials::<P>(n)?;
        // [<p, q>, alpha, accepted, <r, r>], each one T: the step's only transfer to the host.
        let mut scalars = self.alloc_vector::<P>(4)?;
        self.launch_alpha("cg_alpha", &pq, rho, &mut scalars)?;
        let (f, name) = self.kernel::<P>("cg_update")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n64).vec(&scalars).vec(q).vec(r).vec(&rr_partial);
        // SAFETY: cg_update_{p}(long long n, const T* scalars, const T* q, T* r, T* partial),
        // reduction layout.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        self.final_stage_into::<P>(&rr_partial, blocks, &mut scalars, 3)?;
        let values = self.decode::<P>(&scalars)?;
        Ok((values[0].clone(), values[3].clone()))
    }
    fn cg_direction<P: Precision>(
        &self,
        alpha: &P,
        z: &CudaVector<P>,
        beta: &P,
        p: &mut CudaVector<P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        self.launch_cg_direction("cg_direction", alpha, z, beta, p, x)
    }
    fn cg_direction_wide<P: Precision>(
        &self,
        alpha: &P,
        z: &CudaVector<f64>,
        beta: &P,
        p: &mut CudaVector<P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        let op = Self::wide_op::<P>("cg_direction", "cg_direction_wide")?;
        self.launch_cg_direction(op, alpha, z, beta, p, x)
    }
}

impl CudaBackend {
    /// `y <- alpha x + y` with the chunk partials of `<y, y>` (one pass): `axpy_norm` before
    /// its final stage.
    pub(super) fn axpy_norm_partials<P: Precision>(
        &self,
        alpha: &P,
        x: &CudaVector<P>,
        y: &mut CudaVector<P>,
    ) -> Result<(CudaVector<P>, usize)> {
        assert_eq!(x.len, y.len, "axpy_norm: lengths");
        let (partial, blocks) = self.partials::<P>(x.len)?;
        let (f, name) = self.kernel::<P>("axpyz_norm")?;
        let alpha = Self::scalar(alpha);
        let n = x.len as i64;
        // y is both input and output: pass its address twice (the kernel reads each element
        // before the same thread writes it).
        let y_elem = match y.soa {
            Some(Soa::Td(t)) => Elem::Td(t),
            Some(Soa::Mp(m)) => Elem::Mp(m),
            None => Elem::Ptr(y.words.device_ptr_mut(&self.stream).0),
        };
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n);
        push_scalar(&mut args, &alpha);
        args.vec(x);
        push_elem(&mut args, &y_elem);
        push_elem(&mut args, &y_elem);
        args.vec(&partial);
        // SAFETY: axpyz_norm_{p}(long long n, S alpha, const T* x, const T* y, T* z, T* partial)
        // with y == z allowed, in the dot products' launch layout.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        Ok((partial, blocks))
    }
}
