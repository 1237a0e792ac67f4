//! [`Solver`]: the library's front door. A builder of one solve's choices; `solve` runs it.

use super::hooks::{Control, Preconditioner};
use super::operator::LinearOperator;
use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::precision::exact_values::ExactValues;
use crate::precond::ilu0::IluShift;
use crate::precond::{PrecondKind, Preconditioning};
use crate::solver::bicgstab::Shadow;
use crate::solver::dispatch::{
    BackendChoice, Lane, Method, Problem, Recipe, Solution, WorkingPrecision, solve_on, solve_typed,
};
use crate::solver::matrix_free::{OperatorProblem, no_ilu0, solve_operator, solve_operator_typed};
use crate::solver::{
    Escalation, Iteration, Monitor, NoMonitor, Orthogonalization, Params, ResidualNorm, SolveInfo,
};
use crate::sparse::CsrMatrix;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

/// One solve's choices: method, working precision `P`, tolerance, preconditioner, backend, and
/// hooks. Start from [`Solver::cg`], [`Solver::bicgstab`] or [`Solver::auto`], change what you
/// need, then [`solve`](Solver::solve). A `Solver` can run any number of solves.
///
/// ```
/// use precsolve::{Dd, Solver};
///
/// let a = precsolve::poisson2d(32);
/// let b = vec![1.0; a.nrows()];
/// let out = Solver::cg().precision::<Dd>().tol(1e-12).solve(&a, &b)?;
/// println!("{} iterations, true residual {:e}", out.iterations, out.true_residual);
/// assert!(out.converged() && out.true_residual <= 1e-12);
/// let x: &[Dd] = &out.x; // the solution in the working precision
/// # Ok::<(), precsolve::Error>(())
/// ```
///
/// Defaults: `f64`, the thesis's stopping test (`||r_k|| / ||r_0|| <= 1e-8`), 30,000 iterations
/// at most, no preconditioner, `x0 = 0`, the backend estimated faster for the matrix.
pub struct Solver<'a, P: Precision = f64> {
    method: Method,
    params: Params,
    backend: BackendChoice,
    precond: PrecondChoice,
    x0: Option<&'a [f64]>,
    callback: Option<Callback<'a>>,
    precision: PhantomData<P>,
}

/// The caller's per-iteration hook.
type Callback<'a> = Box<dyn FnMut(&Iteration) -> Control + 'a>;

enum PrecondChoice {
    None,
    Ilu0 { shift: IluShift },
    BlockJacobi,
    User(Arc<dyn Preconditioner>),
}

impl<'a> Solver<'a, f64> {
    /// Restarted GMRES(m) with right preconditioning (general square matrices; `m` by
    /// [`gmres_restart`](Solver::gmres_restart)).
    pub fn gmres() -> Self {
        Self::with_method(Method::Gmres)
    }

    /// Conjugate gradients (for symmetric positive definite matrices).
    pub fn cg() -> Self {
        Self::with_method(Method::Cg)
    }

    /// BiCGStab (for general square matrices).
    pub fn bicgstab() -> Self {
        Self::with_method(Method::Bicgstab)
    }

    /// CG for a matrix whose source declared it symmetric ([`CsrMatrix::symmetry`]),
    /// BiCGStab otherwise.
    pub fn auto() -> Self {
        Self::with_method(Method::Auto)
    }

    /// The given method.
    pub fn with_method(method: Method) -> Self {
        Solver {
            method,
            params: Params::default(),
            backend: BackendChoice::Auto,
            precond: PrecondChoice::None,
            x0: None,
            callback: None,
            precision: PhantomData,
        }
    }
}

impl<'a, P: Precision> Solver<'a, P> {
    /// Compute in `Q`: `f64`, [`Td`](crate::Td), [`Dd`](crate::Dd) or [`Qd`](crate::Qd).
    /// Multiple precision (`mp:<bits>`) is chosen at run time with
    /// [`solve_in`](Solver::solve_in). The matrix and `b` stay in double either way.
    pub fn precision<Q: Precision>(self) -> Solver<'a, Q> {
        Solver {
            method: self.method,
            params: self.params,
            backend: self.backend,
            precond: self.precond,
            x0: self.x0,
            callback: self.callback,
            precision: PhantomData,
        }
    }

    /// Stop when the relative recurrence residual is at or below `tol` (default `1e-8`).
    pub fn tol(mut self, tol: f64) -> Self {
        self.params.tol = tol;
        self
    }

    /// Give up after this many iterations (default 30,000).
    pub fn max_iter(mut self, max_iter: usize) -> Self {
        self.params.max_iter = max_iter;
        self
    }

    /// The stopping test's denominator: `||r_0||` (default) or `||b||`.
    pub fn criterion(mut self, criterion: ResidualNorm) -> Self {
        self.params.criterion = criterion;
        self
    }

    /// Stop with [`StopReason::TimeLimit`](crate::StopReason::TimeLimit) after this much time.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.params.time_limit = Some(limit);
        self
    }

    /// Compute the true residual every `every` iterations, into the history and the callback's
    /// [`Iteration::true_residual`] (0, the default: only at the end).
    pub fn true_residual_every(mut self, every: usize) -> Self {
        self.params.true_residual_every = every;
        self
    }

    /// Keep every iteration's residuals in [`SolveInfo::history`] (default: off).
    pub fn record_history(mut self, on: bool) -> Self {
        self.params.record_history = on;
        self
    }

    /// BiCGStab's shadow residual `r~`: `R0` (default), `Rhs` or a seeded `Random` vector.
    pub fn shadow(mut self, shadow: Shadow) -> Self {
        self.params.shadow = shadow;
        self
    }

    /// BiCGStab: how many times a breakdown (`rho = 0` or `<r~, v> = 0`) restarts the solve
    /// from the current iterate with a fresh shadow residual (default 5; 0 stops at the first).
    /// [`SolveInfo::restarts`] counts them.
    pub fn max_restarts(mut self, restarts: usize) -> Self {
        self.params.max_restarts = restarts;
        self
    }

    /// When a precision ladder's rung gives way to the next ([`Escalation`]'s rules), for
    /// [`solve_in`](Solver::solve_in) with [`WorkingPrecision::Ladder`] (`"auto"`:
    /// f64, then dd, then qd).
    ///
    /// ```
    /// use precsolve::{Escalation, Solver, WorkingPrecision};
    ///
    /// let a = precsolve::read_matrix_market("matrices/graded_spd_400.mtx")?;
    /// let b = vec![1.0; a.nrows()];
    /// let auto: WorkingPrecision = "auto".parse().map_err(precsolve::Error::Config)?;
    /// let out = Solver::cg()
    ///     .tol(1e-12)
    ///     .escalation(Escalation { window: 50, ..Escalation::default() })
    ///     .solve_in(auto, &a, &b)?;
    /// for phase in &out.info.phases {
    ///     println!("{}: {} iterations, {}", phase.precision, phase.iterations, phase.stop_reason);
    /// }
    /// // double's recurrence met 1e-12 while its true residual did not: dd finished the solve
    /// assert_eq!(out.info.phases.len(), 2);
    /// assert!(out.info.true_residual <= 1e-12);
    /// # Ok::<(), precsolve::Error>(())
    /// ```
    pub fn escalation(mut self, rules: Escalation) -> Self {
        self.params.escalation = rules;
        self
    }

    /// BiCGStab(l)'s `l`: BiCG steps per minimal-residual step (default 2).
    pub fn bicgstab_l(mut self, l: usize) -> Self {
        self.params.bicgstab_l = l;
        self
    }

    /// GMRES: iterations between restarts, the basis size `m` (default 30, PETSc's).
    pub fn gmres_restart(mut self, m: usize) -> Self {
        self.params.gmres_restart = m;
        self
    }

    /// GMRES: how each new basis vector is orthogonalised: [`Orthogonalization::Mgs`]
    /// (default) or [`Orthogonalization::Cgs2`].
    pub fn orthogonalization(mut self, how: Orthogonalization) -> Self {
        self.params.gmres_orthogonalization = how;
        self
    }

    /// Where to run: `Auto` (default: the backend estimated faster, the CPU without a GPU),
    /// `Cpu`, or `Cuda` (an error where no GPU is usable).
    pub fn backend(mut self, backend: BackendChoice) -> Self {
        self.backend = backend;
        self
    }

    /// ILU(0) of `A`, factored at each solve and applied in double. Where `A` has a zero pivot
    /// or a missing diagonal entry, the rows are permuted to put a maximum product matching on
    /// the diagonal (except for CG, whose matrix must stay symmetric; the solve then iterates
    /// on `P A x = P b`, with `A x = b`'s residual norm and solution), and where that is not
    /// enough a shift `s max|a_ij| I` is added, `s` growing from 1e-10 by 10 until the
    /// factorization succeeds (up to 100): [`SolveInfo::ilu_remedy`] and
    /// [`SolveInfo::ilu_shift`] report it.
    pub fn ilu0(mut self) -> Self {
        self.precond = PrecondChoice::Ilu0 {
            shift: IluShift::Auto,
        };
        self
    }

    /// ILU(0) of `A + shift max|a_ij| I` (missing diagonal entries inserted): past zero pivots.
    pub fn ilu0_shifted(mut self, shift: f64) -> Self {
        self.precond = PrecondChoice::Ilu0 {
            shift: IluShift::Fixed(shift),
        };
        self
    }

    /// Block Jacobi with ILU(0) in each block (PETSc's `-pc_type bjacobi -sub_pc_type ilu`):
    /// under MPI ranks or several GPUs each factors and applies its diagonal block alone; in
    /// one process, one block (ILU(0), its rows never permuted). Zero pivots are shifted as
    /// [`ilu0`](Solver::ilu0) shifts them, block by block. The iterations depend on the
    /// number of blocks.
    pub fn block_jacobi(mut self) -> Self {
        self.precond = PrecondChoice::BlockJacobi;
        self
    }

    /// The caller's own preconditioner, applied in double (see [`Preconditioner`]).
    pub fn preconditioner(mut self, precond: impl Preconditioner + 'static) -> Self {
        self.precond = PrecondChoice::User(Arc::new(precond));
        self
    }

    /// Start from `x0` instead of zero.
    pub fn x0(mut self, x0: &'a [f64]) -> Self {
        self.x0 = Some(x0);
        self
    }

    /// Call `f` after every iteration (and BiCGStab's half steps); [`Control::Stop`] ends the
    /// solve with [`StopReason::Cancelled`](crate::StopReason::Cancelled).
    ///
    /// ```
    /// use precsolve::{Control, Solver};
    ///
    /// let a = precsolve::poisson2d(32);
    /// let b = vec![1.0; a.nrows()];
    /// let mut seen = 0;
    /// let out = Solver::cg()
    ///     .on_iteration(|at| {
    ///         seen += 1;
    ///         if at.iteration < 5 { Control::Continue } else { Control::Stop }
    ///     })
    ///     .solve(&a, &b)?;
    /// assert_eq!(out.iterations, 5);
    /// assert_eq!(out.stop_reason, precsolve::StopReason::Cancelled);
    /// assert_eq!(seen, 5);
    /// # Ok::<(), precsolve::Error>(())
    /// ```
    pub fn on_iteration(mut self, f: impl FnMut(&Iteration) -> Control + 'a) -> Self {
        self.callback = Some(Box::new(f));
        self
    }

    /// Solve `A x = b` in `P`. Numerical failures (breakdown, iteration limit, an indefinite
    /// matrix for CG) are outcomes in [`SolveInfo::stop_reason`], not errors; errors are bad
    /// input (shapes, non-finite entries, a zero ILU(0) pivot) and backend failures.
    pub fn solve(&mut self, a: &CsrMatrix, b: &[f64]) -> Result<Solved<P>> {
        let precision = Self::fixed_precision()?;
        self.check()?;
        let problem = self.problem(a, b)?;
        let (info, x) = self.run(Some(&problem.a), precision, |backend, recipe, params, m| {
            solve_typed::<P>(&Lane::default(), &problem, backend, recipe, params, m)
        })?;
        Ok(Solved { info, x })
    }

    /// Solve in a precision chosen at run time (`"dd"`, `"mp:256"`... parsed with
    /// [`str::parse`]); `x` comes back in it. The solver's own type parameter is ignored.
    ///
    /// ```
    /// use precsolve::{Solver, WorkingPrecision};
    ///
    /// let a = precsolve::poisson2d(16);
    /// let b = vec![1.0; a.nrows()];
    /// for name in ["f64", "td", "dd", "qd"] {
    ///     let precision: WorkingPrecision = name.parse().map_err(precsolve::Error::Config)?;
    ///     let out = Solver::cg().tol(1e-12).solve_in(precision, &a, &b)?;
    ///     println!("{name}: {} iterations", out.info.iterations);
    /// }
    /// # Ok::<(), precsolve::Error>(())
    /// ```
    pub fn solve_in(
        &mut self,
        precision: WorkingPrecision,
        a: &CsrMatrix,
        b: &[f64],
    ) -> Result<Solution> {
        self.check()?;
        let problem = self.problem(a, b)?;
        self.run(Some(&problem.a), precision, |backend, recipe, params, m| {
            solve_on(&Lane::default(), &problem, backend, recipe, params, m).map(|s| (s.info, s.x))
        })
        .map(|(info, x)| Solution { info, x })
    }

    /// Solve `A x = b` in `P` with `A` applied by the caller ([`LinearOperator`]: matrix-free),
    /// on the CPU backend, by any method, with no preconditioner or one of the caller's own
    /// (ILU(0) needs the matrix's entries, and is an error here).
    pub fn solve_operator<Op: LinearOperator>(&mut self, op: &Op, b: &[f64]) -> Result<Solved<P>> {
        let precision = Self::fixed_precision()?;
        self.check()?;
        let problem = self.operator_problem(op, b)?;
        let (info, x) = self.run(None, precision, |backend, recipe, params, m| {
            solve_operator_typed::<Op, P>(&problem, backend, recipe, params, m)
        })?;
        Ok(Solved { info, x })
    }

    /// [`solve_operator`](Solver::solve_operator) in a precision chosen at run time, a ladder
    /// (`"auto"`) included.
    pub fn solve_operator_in<Op: LinearOperator>(
        &mut self,
        precision: WorkingPrecision,
        op: &Op,
        b: &[f64],
    ) -> Result<Solution> {
        self.check()?;
        let problem = self.operator_problem(op, b)?;
        self.run(None, precision, |backend, recipe, params, m| {
            solve_operator(&problem, backend, recipe, params, m).map(|s| (s.info, s.x))
        })
        .map(|(info, x)| Solution { info, x })
    }

    /// `P` as a working precision (mp needs its bits, so it comes through the `_in` solves).
    fn fixed_precision() -> Result<WorkingPrecision> {
        P::NAME.parse().map_err(|_| {
            Error::Config(format!(
                "{} needs its bits: use Solver::solve_in with \"mp:<bits>\"",
                P::NAME
            ))
        })
    }

    /// The settings, checked.
    fn check(&self) -> Result<()> {
        if !(self.params.tol > 0.0 && self.params.tol < 1.0) {
            return Err(Error::Config(format!(
                "tol must be in (0, 1), not {}",
                self.params.tol
            )));
        }
        if self.params.max_iter == 0 {
            return Err(Error::Config("max_iter must be at least 1".into()));
        }
        self.params.escalation.check().map_err(Error::Config)?;
        if self.params.gmres_restart == 0 || self.params.bicgstab_l == 0 {
            return Err(Error::Config(
                "gmres_restart and bicgstab_l must be at least 1".into(),
            ));
        }
        Ok(())
    }

    fn problem(&self, a: &CsrMatrix, b: &[f64]) -> Result<Problem> {
        // A clone of the matrix shares its arrays: no copy.
        let x0 = self.x0.map(<[f64]>::to_vec);
        Problem::new(Arc::new(a.clone()), Some(b.to_vec()), x0)
    }

    fn operator_problem<'o, Op: LinearOperator>(
        &self,
        op: &'o Op,
        b: &[f64],
    ) -> Result<OperatorProblem<'o, Op>> {
        let x0 = self.x0.map(|x0| ExactValues::from_f64(x0.to_vec()));
        OperatorProblem::new(op, Some(b.to_vec()), x0)
    }

    /// Run `go` with the preconditioner prepared (ILU(0) from `entries`, which a matrix-free
    /// solve does not have) and the callback as the monitor.
    fn run<X>(
        &mut self,
        entries: Option<&CsrMatrix>,
        precision: WorkingPrecision,
        go: impl FnOnce(BackendChoice, Recipe<'_>, &Params, &mut dyn Monitor) -> Result<(SolveInfo, X)>,
    ) -> Result<(SolveInfo, X)> {
        let precond = match (&self.precond, entries) {
            (PrecondChoice::None, _) => Preconditioning::None,
            (PrecondChoice::Ilu0 { shift }, Some(a)) => {
                Preconditioning::prepare(PrecondKind::Ilu0, a, *shift, self.method)?
            }
            (PrecondChoice::BlockJacobi, Some(a)) => {
                Preconditioning::prepare(PrecondKind::BlockJacobi, a, IluShift::Auto, self.method)?
            }
            (PrecondChoice::Ilu0 { .. } | PrecondChoice::BlockJacobi, None) => {
                return Err(no_ilu0());
            }
            (PrecondChoice::User(user), _) => Preconditioning::User(Arc::clone(user)),
        };
        let recipe = Recipe {
            method: self.method,
            precision,
            precond: &precond,
        };
        match &mut self.callback {
            Some(f) => {
                let mut monitor = |at: &Iteration| f(at) == Control::Continue;
                go(self.backend, recipe, &self.params, &mut monitor)
            }
            None => go(self.backend, recipe, &self.params, &mut NoMonitor),
        }
    }
}

/// A finished solve in the precision `P`: the report (`out.iterations`, `out.true_residual`...
/// read through to [`SolveInfo`]) and the solution.
#[derive(Clone, Debug)]
pub struct Solved<P> {
    /// What happened: method, backend, iterations, stop reason, residuals, times.
    pub info: SolveInfo,
    /// The solution in the working precision.
    pub x: Vec<P>,
}

impl<P: Precision> Solved<P> {
    /// Whether the stopping test was met (the true residual is in `info.true_residual`).
    pub fn converged(&self) -> bool {
        self.info.stop_reason.converged()
    }

    /// The solution rounded to double.
    pub fn x_f64(&self) -> Vec<f64> {
        self.x.iter().map(Precision::to_f64).collect()
    }
}

impl<P> std::ops::Deref for Solved<P> {
    type Target = SolveInfo;
    fn deref(&self) -> &SolveInfo {
        &self.info
    }
}
