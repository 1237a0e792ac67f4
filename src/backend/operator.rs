//! The backend of a matrix-free solve: the caller's [`LinearOperator`](crate::LinearOperator)
//! for `A x`, the CPU backend's vectors and kernels for everything else.
//!
//! Only the products with `A` differ from the CPU backend, so every other operation is the CPU
//! backend's own (its fused vector kernels included), and the solvers' portable steps
//! ([`HostSteps`]) run on it. The fused steps that read the CSR (CG's `cg_step`, BiCGStab's SpMV
//! with its dots) take their default bodies: the operator, then the dots, with the same bits.

use super::cpu::{CpuBackend, CpuIlu, CpuVector};
use super::Backend;
use crate::LinearOperator;
use crate::error::{Error, Result};
use crate::precision::{HostSlice, HostSliceMut, HostVector, Precision};
use crate::precond::ilu0::Ilu0Factors;
use crate::solver::{BicgstabKernels, CgKernels, HostSteps};
use crate::sparse::CsrMatrix;
use std::sync::Arc;

/// The caller's operator with the CPU backend's vectors.
pub struct OperatorBackend<'a, Op> {
    op: &'a Op,
    cpu: CpuBackend,
}

/// What the solvers hold as "the matrix" of a matrix-free solve: its order (the operator itself
/// is the backend's).
#[derive(Clone, Copy, Debug)]
pub struct OperatorOrder(pub usize);

impl<'a, Op: LinearOperator> OperatorBackend<'a, Op> {
    pub fn new(op: &'a Op) -> Self {
        OperatorBackend {
            op,
            cpu: CpuBackend::new(),
        }
    }

    /// The matrix handle for the solvers.
    pub fn order(&self) -> OperatorOrder {
        OperatorOrder(self.op.nrows())
    }

    /// `y <- A x` by the caller's `apply`, on the vectors' values in place where they are stored
    /// as `P` values (all but td, whose two arrays go through a copy each way).
    fn apply<P: Precision>(&self, x: &CpuVector<P>, y: &mut CpuVector<P>) {
        let n = self.op.nrows();
        assert_eq!(x.len(), n, "operator: x length");
        assert_eq!(y.len(), n, "operator: y length");
        if let Some(xs) = x.slice().as_slice()
            && let Ok(ys) = y.slice_mut().into_slice()
        {
            self.op.apply(xs, ys);
            return;
        }
        let xs = x.to_values();
        let mut ys = y.to_values();
        self.op.apply(&xs, &mut ys);
        *y = CpuVector(P::Vector::from_values(ys));
    }
}

impl<Op: LinearOperator> Backend for OperatorBackend<'_, Op> {
    type Vector<P: Precision> = CpuVector<P>;
    type Matrix = OperatorOrder;
    type Ilu = CpuIlu;

    fn name(&self) -> &'static str {
        "cpu"
    }

    /// A matrix-free solve has no CSR to take: the operator is the matrix.
    fn matrix(&self, _: &Arc<CsrMatrix>) -> Result<OperatorOrder> {
        Err(Error::InvalidInput(
            "a matrix-free solve applies its operator; it takes no CSR matrix".into(),
        ))
    }
    fn ilu(&self, factors: &Arc<Ilu0Factors>) -> Result<CpuIlu> {
        self.cpu.ilu(factors)
    }
    fn ilu_apply<P: Precision, Z: Precision>(
        &self,
        ilu: &mut CpuIlu,
        r: &CpuVector<P>,
        z: &mut CpuVector<Z>,
    ) -> Result<()> {
        self.cpu.ilu_apply(ilu, r, z)
    }
    fn zeros<P: Precision>(&self, n: usize) -> Result<CpuVector<P>> {
        self.cpu.zeros(n)
    }
    fn vector_from_f64<P: Precision>(&self, values: &[f64]) -> Result<CpuVector<P>> {
        self.cpu.vector_from_f64(values)
    }
    fn to_host<P: Precision>(&self, x: &CpuVector<P>) -> Result<Vec<P>> {
        self.cpu.to_host(x)
    }
    fn len<P: Precision>(&self, x: &CpuVector<P>) -> usize {
        x.len()
    }

    fn spmv<P: Precision>(
        &self,
        _: &OperatorOrder,
        x: &CpuVector<P>,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        self.apply(x, y);
        Ok(())
    }
    /// `r <- b - A x`: `A x` rounded to `P` by `apply`, then `b_i - (A x)_i` in `P` (the CSR
    /// path subtracts before rounding the row, which differs only for td).
    fn residual<P: Precision>(
        &self,
        a: &OperatorOrder,
        b: &CpuVector<f64>,
        x: &CpuVector<P>,
        r: &mut CpuVector<P>,
    ) -> Result<()> {
        self.spmv(a, x, r)?;
        let minus = |b: &f64, ax: &P| P::from_f64(*b).sub(ax);
        if let Ok(r) = r.slice_mut().into_slice() {
            r.iter_mut().zip(&b.0).for_each(|(r, b)| *r = minus(b, r));
            return Ok(());
        }
        let rows = b.0.iter().zip(r.to_values()).map(|(b, ax)| minus(b, &ax));
        *r = CpuVector(P::Vector::from_values(rows.collect()));
        Ok(())
    }
    fn dot<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<P>) -> Result<P> {
        self.cpu.dot(x, y)
    }
    fn dot_tiled<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<P>) -> Result<P> {
        self.cpu.dot_tiled(x, y)
    }
    fn dot_wide<P: Precision>(&self, x: &CpuVector<P>, y: &CpuVector<f64>) -> Result<P> {
        self.cpu.dot_wide(x, y)
    }
    fn axpy<P: Precision>(&self, alpha: &P, x: &CpuVector<P>, y: &mut CpuVector<P>) -> Result<()> {
        self.cpu.axpy(alpha, x, y)
    }
    fn axpy_wide<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<f64>,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.axpy_wide(alpha, x, y)
    }
    fn xpay<P: Precision>(&self, x: &CpuVector<P>, beta: &P, y: &mut CpuVector<P>) -> Result<()> {
        self.cpu.xpay(x, beta, y)
    }
    fn xpay_wide<P: Precision>(
        &self,
        x: &CpuVector<f64>,
        beta: &P,
        y: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.xpay_wide(x, beta, y)
    }
    fn axpyz<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
        z: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.axpyz(alpha, x, y, z)
    }
    fn copy<P: Precision>(&self, x: &CpuVector<P>, y: &mut CpuVector<P>) -> Result<()> {
        self.cpu.copy(x, y)
    }
    fn convert<P: Precision, Q: Precision>(
        &self,
        x: &CpuVector<P>,
        y: &mut CpuVector<Q>,
    ) -> Result<()> {
        self.cpu.convert(x, y)
    }
    fn upload<P: Precision>(&self, values: &[P]) -> Result<CpuVector<P>> {
        self.cpu.upload(values)
    }
}

/// The CPU's fused vector kernels; `cg_step` keeps its default body (the operator, then the
/// dots).
impl<Op: LinearOperator> CgKernels for OperatorBackend<'_, Op> {
    fn axpy_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &mut CpuVector<P>,
    ) -> Result<P> {
        self.cpu.axpy_norm(alpha, x, y)
    }
    fn cg_direction<P: Precision>(
        &self,
        alpha: &P,
        z: &CpuVector<P>,
        beta: &P,
        p: &mut CpuVector<P>,
        x: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.cg_direction(alpha, z, beta, p, x)
    }
    fn cg_direction_wide<P: Precision>(
        &self,
        alpha: &P,
        z: &CpuVector<f64>,
        beta: &P,
        p: &mut CpuVector<P>,
        x: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.cg_direction_wide(alpha, z, beta, p, x)
    }
}

/// The CPU's fused vector kernels; the half and finishing steps keep their default bodies.
impl<Op: LinearOperator> BicgstabKernels for OperatorBackend<'_, Op> {
    fn axpyz_norm<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
        z: &mut CpuVector<P>,
    ) -> Result<P> {
        self.cpu.axpyz_norm(alpha, x, y, z)
    }
    fn axpyz_norm_dot<P: Precision>(
        &self,
        alpha: &P,
        x: &CpuVector<P>,
        y: &CpuVector<P>,
        z: &mut CpuVector<P>,
        w: &CpuVector<P>,
    ) -> Result<(P, P)> {
        self.cpu.axpyz_norm_dot(alpha, x, y, z, w)
    }
    fn x_update<P: Precision>(
        &self,
        alpha: &P,
        p: &CpuVector<P>,
        omega: &P,
        s: &CpuVector<P>,
        x: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.x_update(alpha, p, omega, s, x)
    }
    fn bicgstab_direction<P: Precision>(
        &self,
        r: &CpuVector<P>,
        beta: &P,
        omega: &P,
        v: &CpuVector<P>,
        p: &mut CpuVector<P>,
    ) -> Result<()> {
        self.cpu.bicgstab_direction(r, beta, omega, v, p)
    }
}

impl<Op: LinearOperator> HostSteps for OperatorBackend<'_, Op> {}
