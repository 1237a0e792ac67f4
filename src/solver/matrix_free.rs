//! Solves whose matrix is the caller's [`LinearOperator`]: the same loops, ladders and
//! preconditioners as a CSR solve, on the operator's backend ([`OperatorBackend`]).

use super::dispatch::{BackendChoice, Recipe, Solution, by_precision};
use super::escalation::climb;
use super::problem::checked_inputs;
use super::{Monitor, Params, SolveInfo};
use crate::LinearOperator;
use crate::backend::operator::OperatorBackend;
use crate::error::{Error, Result};
use crate::precision::exact_values::ExactValues;
use crate::precision::Precision;
use crate::precond::Preconditioning;

/// `A x = b` with `A` the caller's operator, validated for shape.
pub struct OperatorProblem<'a, Op> {
    pub op: &'a Op,
    pub b: Vec<f64>,
    pub x0: Option<ExactValues>,
}

impl<'a, Op: LinearOperator> OperatorProblem<'a, Op> {
    /// `b` defaults to all ones and `x0` to zero, as for a [`Problem`](super::Problem).
    pub fn new(op: &'a Op, b: Option<Vec<f64>>, x0: Option<ExactValues>) -> Result<Self> {
        if op.nrows() == 0 {
            return Err(Error::InvalidInput(
                "the operator has no rows: there is nothing to solve".into(),
            ));
        }
        if op.nrows() > i32::MAX as usize {
            return Err(Error::InvalidInput(format!(
                "the operator has {} rows, more than the solvers index",
                op.nrows()
            )));
        }
        let (b, x0) = checked_inputs(op.nrows(), b, x0)?;
        Ok(OperatorProblem { op, b, x0 })
    }
}

/// What a matrix-free solve cannot do, as errors: the GPU (the operator is host code) and
/// ILU(0) (it needs the entries).
fn check_supported(backend: BackendChoice, precond: &Preconditioning) -> Result<()> {
    if backend == BackendChoice::Cuda {
        return Err(Error::Config(
            "a matrix-free operator is applied by host code, so it solves on the CPU backend; \
             for the GPU, pass the matrix as a CsrMatrix"
                .into(),
        ));
    }
    if let Preconditioning::Ilu0(_) | Preconditioning::BlockJacobi(_) = precond {
        return Err(no_ilu0());
    }
    Ok(())
}

/// The error of ILU(0) asked for with an operator.
pub(crate) fn no_ilu0() -> Error {
    Error::Config(
        "ILU(0) factors the matrix's entries, which a matrix-free operator does not give: \
         precondition with a Preconditioner of your own"
            .into(),
    )
}

/// Solve `problem` in the recipe's precision (a ladder included: each rung is a
/// [`solve_operator_typed`], which checks and resolves the recipe) on the CPU.
pub fn solve_operator<Op: LinearOperator>(
    problem: &OperatorProblem<'_, Op>,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<Solution> {
    by_precision!(recipe.precision, BackendChoice::Cpu,
        P => solve_operator_typed::<Op, P>(problem, backend, recipe, params, monitor),
        ladder => climb(ladder, &problem.b, recipe, params, monitor, |step, x0, p, m| {
            let current = OperatorProblem {
                op: problem.op,
                b: problem.b.clone(),
                x0: x0.or_else(|| problem.x0.clone()),
            };
            solve_operator(&current, backend, step, p, m)
        }))
}

/// [`solve_operator`] in the precision `P` (which must be `recipe.precision`'s type), handing
/// back `x` in `P`.
pub(crate) fn solve_operator_typed<Op: LinearOperator, P: Precision>(
    problem: &OperatorProblem<'_, Op>,
    backend: BackendChoice,
    recipe: Recipe<'_>,
    params: &Params,
    monitor: &mut dyn Monitor,
) -> Result<(SolveInfo, Vec<P>)> {
    check_supported(backend, recipe.precond)?;
    let recipe = Recipe {
        method: recipe.method.resolve_declared(problem.op.symmetric()),
        ..recipe
    };
    let on = OperatorBackend::new(problem.op);
    let order = |on: &OperatorBackend<'_, Op>| Ok(on.order());
    let b = &problem.b;
    super::dispatch::run::<_, P>(&on, None, order, b, problem.x0.as_ref(), recipe, params, monitor)
}
