//! A linear system to solve, and what a solve hands back.

use super::SolveInfo;
use crate::error::{Error, Result};
use crate::precision::exact_values::ExactValues;
use crate::precision::{Dd, Precision, Qd, Td};
use crate::sparse::CsrMatrix;
use std::sync::Arc;

/// A linear system `A x = b` with an optional initial guess, validated for shape.
#[derive(Clone, Debug)]
pub struct Problem {
    pub a: Arc<CsrMatrix>,
    pub b: Vec<f64>,
    /// The initial guess, as each working precision reads it: doubles, or values beyond a
    /// double (read from a file written in td, dd, qd or mp) that each precision takes as
    /// exactly as it can hold them.
    pub x0: Option<ExactValues>,
}

impl Problem {
    /// `b` defaults to all ones and `x0` to zero, as in the thesis's evaluation.
    pub fn new(a: Arc<CsrMatrix>, b: Option<Vec<f64>>, x0: Option<Vec<f64>>) -> Result<Self> {
        Problem::with_exact_x0(a, b, x0.map(ExactValues::from_f64))
    }

    /// [`Problem::new`] with an initial guess in any precision ([`ExactValues`]).
    pub fn with_exact_x0(
        a: Arc<CsrMatrix>,
        b: Option<Vec<f64>>,
        x0: Option<ExactValues>,
    ) -> Result<Self> {
        if a.nrows() == 0 && a.ncols() == 0 {
            return Err(Error::InvalidInput(
                "the matrix is empty (0 x 0): there is nothing to solve".into(),
            ));
        }
        if !a.is_square() {
            return Err(Error::InvalidInput(format!(
                "the matrix is {} x {}: Krylov solvers need a square matrix",
                a.nrows(),
                a.ncols()
            )));
        }
        let (b, x0) = checked_inputs(a.nrows(), b, x0)?;
        Ok(Problem { a, b, x0 })
    }
}

/// The right-hand side (all ones by default) and initial guess of a system of `n` rows, checked
/// for length and finiteness.
pub(crate) fn checked_inputs(
    n: usize,
    b: Option<Vec<f64>>,
    x0: Option<ExactValues>,
) -> Result<(Vec<f64>, Option<ExactValues>)> {
        let shapes = [
            (
                "right-hand side",
                b.as_ref()
                    .map(|v| (v.len(), v.iter().position(|x| !x.is_finite()))),
            ),
            (
                "initial guess",
                x0.as_ref().map(|v| (v.len(), v.first_non_finite())),
            ),
        ];
        for (name, shape) in shapes {
            if let Some((len, non_finite)) = shape {
                if len != n {
                    return Err(Error::InvalidInput(format!(
                        "{name} has {len} entries but the matrix has {n} rows"
                    )));
                }
                if let Some(i) = non_finite {
                    return Err(Error::InvalidInput(format!(
                        "{name} entry {} is not finite",
                        i + 1
                    )));
                }
            }
        }
    Ok((b.unwrap_or_else(|| vec![1.0; n]), x0))
}

/// A finished solve of a precision chosen at run time: its report and the solution in the
/// working precision.
#[derive(Clone, Debug)]
pub struct Solution {
    /// What happened: iterations, stop reason, residuals, times.
    pub info: SolveInfo,
    /// The solution, in the precision it was computed in.
    pub x: SolutionVector,
}

/// A solution vector in its working precision: nothing the solve computed is rounded away.
#[derive(Clone, Debug, PartialEq)]
pub enum SolutionVector {
    /// Computed in `f64`.
    F64(Vec<f64>),
    /// Computed in triple precision.
    Td(Vec<Td>),
    /// Computed in double-double.
    Dd(Vec<Dd>),
    /// Computed in quad-double.
    Qd(Vec<Qd>),
    /// Computed in `mp:<bits>` (`MpFloat`), at the solve's precision.
    Mp(crate::precision::mpfloat::MpVector),
    /// Computed in MPFR at the solve's precision.
    #[cfg(feature = "mpfr")]
    Mpfr(Vec<crate::precision::Mpfr>),
}

/// Runs `$body` with `$x` bound to the vector inside any [`SolutionVector`].
macro_rules! with_solution_vector {
    ($v:expr, $x:ident => $body:expr) => {
        match $v {
            SolutionVector::F64($x) => $body,
            SolutionVector::Td($x) => $body,
            SolutionVector::Dd($x) => $body,
            SolutionVector::Qd($x) => $body,
            SolutionVector::Mp(v) => $crate::precision::mpfloat::with_mp_vector!(v, $x => $body),
            #[cfg(feature = "mpfr")]
            SolutionVector::Mpfr($x) => $body,
        }
    };
}

impl SolutionVector {
    /// Entries.
    pub fn len(&self) -> usize {
        with_solution_vector!(self, x => x.len())
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each entry rounded to the nearest `f64`.
    pub fn to_f64(&self) -> Vec<f64> {
        with_solution_vector!(self, x => x.iter().map(Precision::to_f64).collect())
    }

    /// Each entry as a double-double: exact for `f64`, td and dd, rounded for qd and mp.
    pub fn to_dd(&self) -> Vec<Dd> {
        with_solution_vector!(self, x => x.iter().map(Precision::to_dd).collect())
    }
}

/// A solution as an initial guess: every value exactly, for a solve in the same or a more
/// precise fixed-size precision (a precision ladder's next rung); `None` for `mp:<bits>`,
/// whose values four doubles need not hold.
pub fn exact_initial_guess(x: &SolutionVector) -> Option<ExactValues> {
    let words = |v: &[Dd]| v.iter().map(|d| Qd::from_dd(*d).x).collect();
    Some(match x {
        SolutionVector::F64(v) => ExactValues::from_f64(v.clone()),
        SolutionVector::Td(_) => ExactValues::from_expansions(words(&x.to_dd())),
        SolutionVector::Dd(v) => ExactValues::from_expansions(words(v)),
        SolutionVector::Qd(v) => ExactValues::from_expansions(v.iter().map(|q| q.x).collect()),
        SolutionVector::Mp(_) => return None,
        #[cfg(feature = "mpfr")]
        SolutionVector::Mpfr(_) => return None,
    })
}

/// A precision type's vector as a [`SolutionVector`] (by [`Precision::NAME`]).
pub(crate) fn solution_vector<P: Precision>(mut x: Vec<P>) -> SolutionVector {
    use std::any::Any;
    let any: &mut dyn Any = &mut x;
    macro_rules! take {
        ($t:ty, $variant:ident) => {
            if let Some(v) = any.downcast_mut::<Vec<$t>>() {
                return SolutionVector::$variant(std::mem::take(v));
            }
        };
    }
    take!(f64, F64);
    take!(Td, Td);
    take!(Dd, Dd);
    take!(Qd, Qd);
    #[cfg(feature = "mpfr")]
    take!(crate::precision::Mpfr, Mpfr);
    if let Ok(v) = crate::precision::mpfloat::MpVector::of(std::mem::take(&mut x)) {
        return SolutionVector::Mp(v);
    }
    unreachable!("every Precision type has a SolutionVector variant, not {}", P::NAME)
}
