//! The CUDA backend's launch helpers: reductions, the shared shapes of the vector kernels'
//! launches, and the SpMV's, which the `Backend` methods in `mod.rs` call.

use super::device::driver_error;
use super::*;

/// Which final one-block stage finishes a reduction's partials.
#[derive(Clone, Copy, Debug)]
pub(super) enum FinalStage {
    /// `dot_{p}_final`: the partials of the dot products' chunks.
    Dot,
    /// `dot_tile_{p}_final`: the tile partials of the dots summed beside an SpMV
    /// (`spmv_dot.rs`).
    Tiles,
}

impl CudaBackend {
    pub(super) fn reduction(blocks: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Scratch for one partial result per DOT_CHUNK elements, in `P::Acc` (the kernels' `A*`):
    /// for td a double-double buffer (`double2*`, no structure of arrays), otherwise `P`'s own
    /// layout. Only the reduction kernels read and write it (never `decode` or `elem`).
    pub(super) fn partials<P: Precision>(&self, n: usize) -> Result<(CudaVector<P>, usize)> {
        self.partials_per::<P>(n, DOT_CHUNK)
    }

    /// [`Self::partials`] with one partial per `chunk` elements (`TILE_ROWS` for the tiled
    /// order of CG's `<p, q>`).
    pub(super) fn partials_per<P: Precision>(
        &self,
        n: usize,
        chunk: usize,
    ) -> Result<(CudaVector<P>, usize)> {
        let blocks = n.div_ceil(chunk).max(1);
        if Self::layout::<P>() == Layout::TdSoa {
            let words = alloc_words(&self.stream, 2 * blocks)?;
            let v = CudaVector {
                words,
                len: blocks,
                soa: None,
                _precision: PhantomData,
            };
            return Ok((v, blocks));
        }
        Ok((self.alloc_vector::<P>(blocks)?, blocks))
    }

    pub(super) fn launch_dot_partial<P: Precision>(
        &self,
        x: &CudaVector<P>,
        y: &CudaVector<P>,
        partial: &mut CudaVector<P>,
        blocks: usize,
    ) -> Result<()> {
        self.launch_dot_partial_op("dot", x, y, partial, blocks)
    }

    /// `{op}_{p}_partial`: `dot` (`y` of `P`), `dot_wide` (`y` of doubles, read widened) or
    /// `dot_tile` (the tiled order of CG's `<p, q>`, `blocks` tiles).
    pub(super) fn launch_dot_partial_op<P: Precision, Y>(
        &self,
        op: &str,
        x: &CudaVector<P>,
        y: &CudaVector<Y>,
        partial: &CudaVector<P>,
        blocks: usize,
    ) -> Result<()> {
        let (f, name) = self.staged_kernel::<P>(op, "partial")?;
        let n = x.len as i64;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n).vec(x).vec(y).vec(partial);
        // SAFETY: dot_{p}_partial(long long n, const T* x, const T* y, A* partial) or
        // dot_wide_{p}_partial(long long n, const T* x, const double* y, A* partial), launched
        // with one block of DOT_THREADS threads per DOT_CHUNK elements, or
        // dot_tile_{p}_partial (dot_{p}_partial's arguments) with one block of TILE_ROWS =
        // DOT_THREADS threads per tile; `blocks` of either, one A per block.
        unsafe { args.launch(Self::reduction(blocks)) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// The kernel `op` for `P` that reads a double vector widened: `wide`, except for f64,
    /// whose own kernel `plain` has nothing to widen.
    pub(super) fn wide_op<P: Precision>(
        plain: &'static str,
        wide: &'static str,
    ) -> Result<&'static str> {
        Ok(if Self::suffix::<P>()? == "f64" {
            plain
        } else {
            wide
        })
    }

    /// `{op}_{p}(n, x, beta, y)`: `xpay` (`x` of `P`) or `xpay_wide` (`x` of doubles).
    pub(super) fn launch_xpay<P: Precision, X>(
        &self,
        op: &str,
        x: &CudaVector<X>,
        beta: &P,
        y: &mut CudaVector<P>,
    ) -> Result<()> {
        assert_eq!(x.len, y.len, "xpay: lengths");
        let beta = Self::scalar(beta);
        let n = x.len as i64;
        let (f, name) = self.kernel::<P>(op)?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n).vec(x);
        push_scalar(&mut args, &beta);
        args.vec(y);
        self.launch_elementwise(args, x.len, &name)
    }

    /// `dot_{p}_final` over `blocks` partial results, into element `index` of `out` on the GPU.
    pub(super) fn final_stage_into<P: Precision>(
        &self,
        partial: &CudaVector<P>,
        blocks: usize,
        out: &mut CudaVector<P>,
        index: usize,
    ) -> Result<()> {
        self.launch_final(FinalStage::Dot, partial, blocks, out, index)
    }

    /// The final one-block stage `stage` over `blocks` partials, into element `index` of `out`.
    pub(super) fn launch_final<P: Precision>(
        &self,
        stage: FinalStage,
        partial: &CudaVector<P>,
        blocks: usize,
        out: &mut CudaVector<P>,
        index: usize,
    ) -> Result<()> {
        let (op, launch) = match stage {
            FinalStage::Dot => ("dot", Self::reduction(1)),
            FinalStage::Tiles => ("dot_tile", Self::tile_final()),
        };
        let (f, name) = self.staged_kernel::<P>(op, "final")?;
        let m = blocks as i32;
        let slot = self.elem(out, index);
        let mut args = self.stream.launch_builder(&f);
        args.arg(&m).vec(partial);
        push_elem(&mut args, &slot);
        // SAFETY: dot_{p}_final(int m, const A* partial, T* out), one block of DOT_THREADS, or
        // dot_tile_{p}_final (the same arguments), one block of TILE_FINAL_THREADS; out is one T.
        unsafe { args.launch(launch) }.map_err(driver_error(&name))?;
        Ok(())
    }

    /// The final one-block stage of a reduction (`dot`'s, or the tiled order's for `<p, q>`),
    /// and the one transfer of its result.
    pub(super) fn finish_reduction<P: Precision>(
        &self,
        stage: FinalStage,
        partial: &CudaVector<P>,
        blocks: usize,
    ) -> Result<P> {
        let mut out = self.alloc_vector::<P>(1)?;
        self.launch_final(stage, partial, blocks, &mut out, 0)?;
        Ok(self.decode::<P>(&out)?.remove(0))
    }

    /// The elements of `v` copied to the host, decoded from `P`'s device layout.
    pub(super) fn decode<P: Precision>(&self, v: &CudaVector<P>) -> Result<Vec<P>> {
        let words = self.read_words(&v.words, "copying from the GPU")?;
        let len = v.len;
        Ok(match Self::layout::<P>() {
            Layout::Words(1) => words[..len].iter().map(|&w| P::from_f64(w)).collect(),
            Layout::Words(2) => words[..2 * len]
                .chunks_exact(2)
                .map(|w| P::from_dd(Dd::from_parts(w[0], w[1])))
                .collect(),
            Layout::Words(4) => words[..4 * len]
                .chunks_exact(4)
                .map(|w| {
                    let q = Qd::from_parts(w[0], w[1], w[2], w[3]);
                    cast::<Qd, P>(&q).expect("four words per element: P is Qd")
                })
                .collect(),
            Layout::Words(w) => unreachable!("no precision has {w} words per element"),
            Layout::MpSoa(limbs) => (0..len)
                .map(|i| {
                    let w: Vec<u64> = (0..=limbs).map(|l| words[l * len + i].to_bits()).collect();
                    vectors::mp_unpacked::<P>(&w)
                })
                .collect(),
            Layout::TdSoa => (0..len)
                .map(|i| {
                    let pair = words[len + i / 2].to_bits();
                    let lo = (pair >> (32 * (i % 2))) as u32 as i32;
                    let t = Td::from_parts(words[i], lo);
                    cast::<Td, P>(&t).expect("td layout: P is Td")
                })
                .collect(),
        })
    }

    /// `cg_direction_{p}` or `cg_direction_wide_{p}` (`op`), with `z` of `P` or f64.
    pub(super) fn launch_cg_direction<P: Precision, Z>(
        &self,
        op: &str,
        alpha: &P,
        z: &CudaVector<Z>,
        beta: &P,
        p: &mut CudaVector<P>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        assert!(z.len == p.len && x.len == p.len, "cg_direction: lengths");
        let (alpha, beta) = (Self::scalar(alpha), Self::scalar(beta));
        let n = p.len as i64;
        let (f, name) = self.kernel::<P>(op)?;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n);
        push_scalar(&mut args, &alpha);
        args.vec(z);
        push_scalar(&mut args, &beta);
        args.vec(p).vec(x);
        // cg_direction{,_wide}_{p}(long long n, S alpha, const T* or const double* z, S beta,
        // T* p, T* x): an element-wise kernel (launch_elementwise's SAFETY).
        self.launch_elementwise(args, p.len, &name)
    }

    /// A reduction stage `{op}_{suffix}_{stage}` and its name.
    pub(super) fn staged_kernel<P: Precision>(
        &self,
        op: &str,
        stage: &str,
    ) -> Result<(cudarc::driver::CudaFunction, String)> {
        let name = format!("{op}_{}_{stage}", Self::suffix::<P>()?);
        Ok((self.kernels.function(&name)?, name))
    }

    /// The element-wise kernel `{op}_{suffix}` and its name.
    pub(super) fn kernel<P: Precision>(
        &self,
        op: &str,
    ) -> Result<(cudarc::driver::CudaFunction, String)> {
        let name = format!("{op}_{}", Self::suffix::<P>()?);
        Ok((self.kernels.function(&name)?, name))
    }

    /// Launch an element-wise kernel over `n` elements (arguments already pushed).
    pub(super) fn launch_elementwise(
        &self,
        mut args: LaunchArgs<'_>,
        n: usize,
        name: &str,
    ) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        // SAFETY: every `{op}_{f64,dd}` kernel in kernels/blas1.cu takes (long long n, ...) and
        // guards i < n; callers push the arguments of the signature documented there, in order.
        unsafe { args.launch(Self::elementwise(n)) }.map_err(driver_error(name))?;
        Ok(())
    }

    /// `{op}_{p}_nt{lanes}`: `spmv` (`x` of `P`) or `spmv_wide` (`x` of doubles).
    /// BiCGStab's `x` update as `block` decides it: `bicg_x_{p}` with `p^`, `s^` of `P`, or
    /// `bicg_x_wide_{p}` with doubles read widened.
    pub(super) fn launch_bicg_x<P: Precision, H: Precision>(
        &self,
        block: &CudaVector<P>,
        p_hat: &CudaVector<H>,
        s_hat: &CudaVector<H>,
        x: &mut CudaVector<P>,
    ) -> Result<()> {
        let n = x.len;
        assert!(
            p_hat.len == n && s_hat.len == n,
            "bicgstab x update: lengths"
        );
        assert!(
            H::KERNEL_SUFFIX == "f64" || H::KERNEL_SUFFIX == P::KERNEL_SUFFIX,
            "bicgstab x update: p^ and s^ of P or of doubles"
        );
        let op = if H::KERNEL_SUFFIX == P::KERNEL_SUFFIX {
            "bicg_x"
        } else {
            Self::wide_op::<P>("bicg_x", "bicg_x_wide")?
        };
        let (f, name) = self.kernel::<P>(op)?;
        let mut args = self.stream.launch_builder(&f);
        let n64 = n as i64;
        args.arg(&n64).vec(block).vec(p_hat).vec(s_hat).vec(x);
        // bicg_x_{p}(long long n, const T* block, const T* p_hat, const T* s_hat, T* x);
        // bicg_x_wide_{p} the same with p_hat and s_hat of doubles
        self.launch_elementwise(args, n, &name)
    }

    pub(super) fn spmv_like<P: Precision, X>(
        &self,
        op: &str,
        a: &CudaMatrix,
        x: &CudaVector<X>,
        y: &mut CudaVector<P>,
        b: Option<&CudaVector<f64>>,
    ) -> Result<()> {
        assert_eq!(x.len, a.ncols, "spmv: x length");
        assert_eq!(y.len, a.nrows, "spmv: y length");
        if a.nrows == 0 {
            return Ok(());
        }
        let suffix = Self::suffix::<P>()?;
        let (name, threads) = match a.slice_ptr {
            Some(_) => (format!("{op}_{suffix}_sell"), a.nrows as u64),
            None => (
                format!("{op}_{suffix}_nt{}", a.lanes),
                a.nrows as u64 * a.lanes as u64,
            ),
        };
        let f = self.kernels.function(&name)?;
        let nrows = a.nrows as i32;
        let has_b: i32 = b.is_some().into();
        let b_words = b.map(|b| &b.words).unwrap_or(&a.values);
        let cfg = LaunchConfig {
            grid_dim: (threads.div_ceil(BLOCK as u64) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut args = self.stream.launch_builder(&f);
        args.arg(&nrows).arg(&a.row_ptr);
        if let Some(slice_ptr) = &a.slice_ptr {
            args.arg(slice_ptr);
        }
        args.arg(&a.col_idx)
            .arg(&a.values)
            .vec(x)
            .vec(y)
            .arg(b_words)
            .arg(&has_b);
        // SAFETY: matches spmv_{p}_nt{NT}(int nrows, const int* row_ptr, const int* col_idx,
        // const double* val, const T* x, T* y, const double* b, int has_b) in kernels/spmv_csr.cu
        // and xprec.cu (spmv_wide_{p}: x of doubles), or spmv_{p}_sell with slice_ptr after
        // row_ptr and the entries in the sliced layout (one thread per row); b is only read
        // when has_b != 0, and is then a vector of nrows doubles.
        unsafe { args.launch(cfg) }.map_err(driver_error(&name))?;
        Ok(())
    }
}
