//! BiCGStab's fused operations for the portable steps (td and qd, and the tests): the scalars
//! of an iteration stay in a device block between its two halves (`kernels/bicgstab.cu`'s
//! `bicg_` kernels).

use super::*;
use crate::solver::bicgstab::BicgstabKernels;

impl BicgstabKernels for CudaBackend {
    fn bicgstab_half<P: Precision>(
        &self,
        a: &CudaMatrix,
        p_hat: OperandOf<'_, Self, P>,
        rho: &P,
        r_tilde: &CudaVector<P>,
        v: &mut CudaVector<P>,
        r: &CudaVector<P>,
        s: &mut CudaVector<P>,
        block: &mut CudaVector<P>,
    ) -> Result<()> {
        let n = r.len;
        let n64 = n as i64;
        // v <- A p^ with <r~, v>: in the tiled order, fused where a kernel exists, for p^ of P;
        // in dot's order for p^ of doubles (crate::backend::bicgstab_spmv_dots says why)
        let (ss_partial, blocks) = self.partials::<P>(n)?;
        match p_hat {
            Operand::Own(_) => {
                let rv = self.spmv_dots_partial(a, p_hat, TiledDots::With(r_tilde), v, true)?;
                self.launch_alpha("bicg_alpha_tiles", &rv, rho, block)?;
            }
            Operand::Wide(p_hat) => {
                self.spmv_wide(a, p_hat, v)?;
                let (mut rv_partial, _) = self.partials::<P>(n)?;
                self.launch_dot_partial(r_tilde, v, &mut rv_partial, blocks)?;
                let (f, name) = self.kernel::<P>("bicg_alpha")?;
                let (rho, m) = (Self::scalar(rho), blocks as i32);
                let mut args = self.stream.launch_builder(&f);
                args.arg(&m).vec(&rv_partial);
                push_scalar(&mut args, &rho);
                args.vec(block);
                // SAFETY: bicg_alpha_{p}(int m, const A* partial, S rho, T* block), one block.
                unsafe { args.launch(Self::reduction(1)) }.map_err(driver_error(&name))?;
            }
        }
        let (f, name) = self.kernel::<P>("bicg_s")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n64)
            .vec(block)
            .vec(v)
            .vec(r)
            .vec(s)
            .vec(&ss_partial);
        // SAFETY: bicg_s_{p}(long long n, const T* block, const T* v, const T* r, T* s,
        // T* partial), reduction layout.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        self.final_stage_into::<P>(&ss_partial, blocks, block, 3)
    }
    fn bicgstab_finish<P: Precision>(
        &self,
        denominator: f64,
        tol: f64,
        a: &CudaMatrix,
        p_hat: OperandOf<'_, Self, P>,
        s_hat: OperandOf<'_, Self, P>,
        t: &mut CudaVector<P>,
        s: &CudaVector<P>,
        r_tilde: &CudaVector<P>,
        x: &mut CudaVector<P>,
        r: &mut CudaVector<P>,
        block: &mut CudaVector<P>,
    ) -> Result<crate::backend::BicgstabScalars<P>> {
        let n = r.len;
        let n64 = n as i64;
        // t <- A s^ with <t, t> and <t, s>, in the order of bicgstab_half's <r~, v>
        let (tt, ts, stage, parts) = match s_hat {
            Operand::Own(_) => {
                let dots = TiledDots::SelfAnd(s);
                let p = self.spmv_dots_partial(a, s_hat, dots, t, true)?;
                let ts = p.second.expect("<t, s> partials");
                (p.first, ts, FinalStage::Tiles, p.tiles)
            }
            Operand::Wide(s_hat) => {
                self.spmv_wide(a, s_hat, t)?;
                let (tt, blocks) = self.partials::<P>(n)?;
                let (ts, _) = self.partials::<P>(n)?;
                let (f, name) = self.kernel::<P>("bicg_tt_ts")?;
                let mut args = self.stream.launch_builder(&f);
                args.arg(&n64).vec(t).vec(s).vec(&tt).vec(&ts);
                // SAFETY: bicg_tt_ts_{p}(long long n, const T* t, const T* s, A* partial_tt,
                // A* partial_ts), reduction layout.
                unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
                (tt, ts, FinalStage::Dot, blocks)
            }
        };
        self.launch_final(stage, &tt, parts, block, 5)?;
        self.launch_final(stage, &ts, parts, block, 6)?;
        let (f, name) = self.kernel::<P>("bicg_decide")?;
        let mut args = self.stream.launch_builder(&f);
        args.vec(block).arg(&denominator).arg(&tol);
        let one_thread = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: bicg_decide_{p}(T* block, double denominator, double tol), one thread.
        unsafe { args.launch(one_thread) }.map_err(driver_error(&name))?;
        match (p_hat, s_hat) {
            (Operand::Own(p_hat), Operand::Own(s_hat)) => {
                self.launch_bicg_x(block, p_hat, s_hat, x)?
            }
            (Operand::Wide(p_hat), Operand::Wide(s_hat)) => {
                self.launch_bicg_x(block, p_hat, s_hat, x)?
            }
            // one of each (no solver mixes them): the double one widened first
            (p_hat, s_hat) => {
                let (p_wide, s_wide);
                let p_hat = match p_hat {
                    Operand::Own(v) => v,
                    Operand::Wide(v) => {
                        p_wide = self.widen::<P>(v)?;
                        &p_wide
                    }
                };
                let s_hat = match s_hat {
                    Operand::Own(v) => v,
                    Operand::Wide(v) => {
                        s_wide = self.widen::<P>(v)?;
                        &s_wide
                    }
                };
                self.launch_bicg_x(block, p_hat, s_hat, x)?
            }
        }
        let (rr_partial, blocks) = self.partials::<P>(n)?;
        let (rho_partial, _) = self.partials::<P>(n)?;
        let (f, name) = self.kernel::<P>("bicg_r")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n64)
            .vec(block)
            .vec(t)
            .vec(s)
            .vec(r_tilde)
            .vec(r)
            .vec(&rr_partial)
            .vec(&rho_partial);
        // SAFETY: bicg_r_{p}(long long n, const T* block, const T* t, const T* s,
        // const T* r_tilde, T* r, T* partial_rr, T* partial_rho), reduction layout.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        self.final_stage_into::<P>(&rr_partial, blocks, block, 9)?;
        self.final_stage_into::<P>(&rho_partial, blocks, block, 10)?;
        // The iteration's one transfer to the host.
        let values = self.to_host(block)?;
        Ok(crate::backend::BicgstabScalars::from_block(&values))
    }
    fn axpyz_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &CudaVector<P>,
        y: &CudaVector<P>,
        z: &mut CudaVector<P>,
    ) -> Result<P> {
        assert!(x.len == y.len && y.len == z.len, "axpyz_norm: lengths");
        let (partial, blocks) = self.partials::<P>(x.len)?;
        let (f, name) = self.kernel::<P>("axpyz_norm")?;
        let alpha = Self::scalar(alpha);
        let n = x.len as i64;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n);
        push_scalar(&mut args, &alpha);
        args.vec(x).vec(y).vec(z).vec(&partial);
        // SAFETY: axpyz_norm_{p}(long long n, S alpha, const T* x, const T* y, T* z, T* partial)
        // in the dot products' launch layout.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        self.finish_reduction(FinalStage::Dot, &partial, blocks)
    }
    fn x_update<P: Precision>(
        &self,
        alpha: &P,
        p: &CudaVector<P>,
        omega: &P,
        s: &CudaVector<P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        assert!(p.len == s.len && s.len == x.len, "x_update: lengths");
        let (alpha, omega) = (Self::scalar(alpha), Self::scalar(omega));
        let n = x.len as i64;
        let (f, name) = self.kernel::<P>("x_update")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n);
        push_scalar(&mut args, &alpha);
        args.vec(p);
        push_scalar(&mut args, &omega);
        args.vec(s).vec(x);
        self.launch_elementwise(args, x.len, &name)
    }
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &CudaVector<P>,
        beta: &P,
        omega: &P,
        v: &CudaVector<P>,
        p: &mut CudaVector<P>,
    ) -> Result<()> {
        assert!(
            r.len == v.len && v.len == p.len,
            "bicgstab_direction: lengths"
        );
        let beta = Self::scalar(beta);
        let minus_omega = Self::scalar(&omega.neg());
        let n = r.len as i64;
        let (f, name) = self.kernel::<P>("bicgstab_direction")?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n).vec(r);
        push_scalar(&mut args, &beta);
        push_scalar(&mut args, &minus_omega);
        args.vec(v).vec(p);
        self.launch_elementwise(args, r.len, &name)
    }
}
