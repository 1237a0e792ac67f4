//! The library's front door as an embedding program uses it: only the crate root's names, so
//! this file also builds without default features (`cargo test --no-default-features --test api`).

use precsolve::{
    BackendChoice, Control, CsrError, CsrMatrix, Dd, Preconditioner, Qd, SolutionVector, Solver,
    StopReason, Symmetry, Td, WorkingPrecision,
};
use std::cell::Cell;

fn sample() -> CsrMatrix {
    precsolve::read_matrix_market("matrices/graded_spd_400.mtx").unwrap()
}

fn bits_dd(x: &[Dd]) -> Vec<(u64, u64)> {
    x.iter().map(|v| (v.hi.to_bits(), v.lo.to_bits())).collect()
}

#[test]
fn typed_and_runtime_precisions_give_the_same_solve() {
    let a = sample();
    let b = vec![1.0; a.nrows()];
    let typed = Solver::cg()
        .precision::<Dd>()
        .tol(1e-12)
        .backend(BackendChoice::Cpu)
        .solve(&a, &b)
        .unwrap();
    let runtime = Solver::cg()
        .tol(1e-12)
        .backend(BackendChoice::Cpu)
        .solve_in(WorkingPrecision::Dd, &a, &b)
        .unwrap();
    assert!(typed.converged());
    assert_eq!(typed.iterations, runtime.info.iterations);
    assert_eq!(
        typed.true_residual.to_bits(),
        runtime.info.true_residual.to_bits()
    );
    match &runtime.x {
        SolutionVector::Dd(x) => assert_eq!(bits_dd(x), bits_dd(&typed.x)),
        other => panic!("a dd solve handed back {other:?}"),
    }
    // The solution comes back in its precision: the low words carry information.
    assert!(typed.x.iter().any(|v| v.lo != 0.0));
    assert_eq!(typed.x_f64(), runtime.x.to_f64());
}

#[test]
fn every_fixed_precision_hands_back_its_own_type() {
    let a = precsolve::poisson2d(8);
    let b = vec![1.0; a.nrows()];
    let mut solver = Solver::cg().tol(1e-10).backend(BackendChoice::Cpu);
    for p in WorkingPrecision::ALL {
        let out = solver.solve_in(p, &a, &b).unwrap();
        let right = matches!(
            (p, &out.x),
            (WorkingPrecision::F64, SolutionVector::F64(_))
                | (WorkingPrecision::Td, SolutionVector::Td(_))
                | (WorkingPrecision::Dd, SolutionVector::Dd(_))
                | (WorkingPrecision::Qd, SolutionVector::Qd(_))
        );
        assert!(right, "{p:?} gave {:?}", out.x);
        assert_eq!(out.x.len(), a.nrows());
        assert_eq!(out.info.precision, p.name());
    }
    let td: Vec<Td> = Solver::cg().precision::<Td>().solve(&a, &b).unwrap().x;
    let qd: Vec<Qd> = Solver::cg().precision::<Qd>().solve(&a, &b).unwrap().x;
    assert_eq!((td.len(), qd.len()), (64, 64));
}

/// On the CPU the callback sees every iteration: stopping at iteration k leaves exactly the
/// state a solve limited to k iterations ends in.
#[test]
fn a_callback_stops_the_solve_at_its_iteration() {
    let a = sample();
    let b = vec![1.0; a.nrows()];
    for stop_at in [1, 7, 100] {
        let seen = Cell::new(0);
        let stopped = Solver::cg()
            .precision::<Dd>()
            .backend(BackendChoice::Cpu)
            .on_iteration(|at| {
                seen.set(seen.get() + 1);
                assert_eq!(at.iteration, seen.get());
                assert!(at.recurrence_residual > 0.0 && at.true_residual.is_none());
                if at.iteration == stop_at {
                    Control::Stop
                } else {
                    Control::Continue
                }
            })
            .solve(&a, &b)
            .unwrap();
        assert_eq!(stopped.stop_reason, StopReason::Cancelled);
        assert_eq!((stopped.iterations, seen.get()), (stop_at, stop_at));
        let limited = Solver::cg()
            .precision::<Dd>()
            .backend(BackendChoice::Cpu)
            .max_iter(stop_at)
            .solve(&a, &b)
            .unwrap();
        assert_eq!(limited.stop_reason, StopReason::MaxIterations);
        assert_eq!(bits_dd(&stopped.x), bits_dd(&limited.x));
    }
}

#[test]
fn the_callback_sees_true_residuals_where_asked() {
    let a = sample();
    let b = vec![1.0; a.nrows()];
    let mut with_true = Vec::new();
    let out = Solver::cg()
        .backend(BackendChoice::Cpu)
        .true_residual_every(25)
        .max_iter(100)
        .on_iteration(|at| {
            if let Some(t) = at.true_residual {
                with_true.push((at.iteration, t));
            }
            Control::Continue
        })
        .solve(&a, &b)
        .unwrap();
    assert_eq!(out.iterations, 100);
    let iterations: Vec<usize> = with_true.iter().map(|&(k, _)| k).collect();
    assert_eq!(iterations, [25, 50, 75, 100]);
    assert!(with_true.iter().all(|&(_, t)| t.is_finite() && t > 0.0));
}

/// `z_i = r_i / a_ii`, written as an embedding program would.
struct Jacobi(Vec<f64>);

impl Preconditioner for Jacobi {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        for ((z, r), d) in z.iter_mut().zip(r).zip(&self.0) {
            *z = r / d;
        }
    }
    fn name(&self) -> &'static str {
        "jacobi"
    }
}

/// A diagonal matrix is its own Jacobi preconditioner: one iteration, in every precision; on a
/// matrix with a graded diagonal Jacobi saves iterations over none.
#[test]
fn a_program_s_own_preconditioner_is_applied() {
    let n = 50;
    let d: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 * 1e3).collect();
    let diagonal = CsrMatrix::from_slices(
        n,
        n,
        &(0..=n).collect::<Vec<_>>(),
        &(0..n).collect::<Vec<_>>(),
        &d,
    )
    .unwrap()
    .with_symmetry(Symmetry::Symmetric);
    let b = vec![1.0; n];
    let mut solver = Solver::auto()
        .preconditioner(Jacobi(diagonal.diagonal()))
        .tol(1e-12)
        .backend(BackendChoice::Cpu);
    for p in WorkingPrecision::ALL {
        let out = solver.solve_in(p, &diagonal, &b).unwrap();
        assert_eq!(out.info.method, "cg");
        assert_eq!(out.info.precond, "jacobi");
        assert_eq!(out.info.iterations, 1, "{p:?}");
        assert!(
            out.info.true_residual <= 1e-15,
            "{p:?}: {}",
            out.info.true_residual
        );
    }

    let a = sample();
    let b = vec![1.0; a.nrows()];
    let plain = Solver::cg()
        .precision::<Dd>()
        .tol(1e-10)
        .solve(&a, &b)
        .unwrap();
    let jacobi = Solver::cg()
        .precision::<Dd>()
        .tol(1e-10)
        .preconditioner(Jacobi(a.diagonal()))
        .solve(&a, &b)
        .unwrap();
    assert!(plain.converged() && jacobi.converged());
    assert!(jacobi.true_residual <= 1e-9, "{}", jacobi.true_residual);
    assert!(
        jacobi.iterations < plain.iterations,
        "jacobi {} against none {}",
        jacobi.iterations,
        plain.iterations
    );
    assert!(jacobi.times.precond > 0.0);
}

struct Broken;

impl Preconditioner for Broken {
    fn apply(&self, _: &[f64], z: &mut [f64]) {
        z[3] = f64::NAN;
    }
}

#[test]
fn a_preconditioner_that_returns_nan_is_an_error_naming_it() {
    let a = precsolve::poisson2d(4);
    let b = vec![1.0; a.nrows()];
    let err = Solver::cg()
        .preconditioner(Broken)
        .solve(&a, &b)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`user`") && err.contains("z[3]"), "{err}");
}

#[test]
fn raw_slices_are_validated() {
    let ok = CsrMatrix::from_slices(2, 2, &[0, 1, 2], &[0u32, 1], &[2.0, 3.0]).unwrap();
    assert_eq!(
        (ok.nrows(), ok.nnz(), ok.diagonal()),
        (2, 2, vec![2.0, 3.0])
    );
    type Case = (Vec<usize>, Vec<i64>, Vec<f64>, CsrError);
    let cases: [Case; 5] = [
        (
            vec![0, 1],
            vec![0],
            vec![1.0],
            CsrError::RowPtrLength {
                got: 2,
                expected: 3,
            },
        ),
        (
            vec![0, 2, 2],
            vec![1, 0],
            vec![1.0, 1.0],
            CsrError::ColumnsNotSorted { row: 0 },
        ),
        (
            vec![0, 1, 2],
            vec![0, 2],
            vec![1.0, 1.0],
            CsrError::ColumnOutOfRange {
                row: 1,
                col: 2,
                ncols: 2,
            },
        ),
        (
            vec![0, 1, 2],
            vec![0, -1],
            vec![1.0, 1.0],
            CsrError::ColumnOutOfRange {
                row: 1,
                col: -1,
                ncols: 2,
            },
        ),
        (
            vec![0, 1, 2],
            vec![0, 1],
            vec![1.0, f64::INFINITY],
            CsrError::NonFinite { row: 1, col: 1 },
        ),
    ];
    for (row_ptr, cols, values, expected) in cases {
        let got = CsrMatrix::from_slices(2, 2, &row_ptr, &cols, &values).unwrap_err();
        assert_eq!(got, expected);
    }
    // A column that fits no i32 is named, not wrapped.
    let big = CsrMatrix::from_slices(1, 2, &[0, 1], &[u64::MAX], &[1.0]).unwrap_err();
    assert!(
        matches!(big, CsrError::ColumnOutOfRange { row: 0, .. }),
        "{big:?}"
    );
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let a = precsolve::poisson2d(4);
    let short = vec![1.0; 3];
    let err = Solver::cg().solve(&a, &short).unwrap_err().to_string();
    assert!(
        err.contains("3 entries") && err.contains("16 rows"),
        "{err}"
    );
    let b = vec![1.0; 16];
    assert!(Solver::cg().tol(0.0).solve(&a, &b).is_err());
    assert!(Solver::cg().max_iter(0).solve(&a, &b).is_err());
    let err = precsolve::read_matrix_market("no/such/file.mtx").unwrap_err();
    assert!(err.to_string().contains("no/such/file.mtx"), "{err}");
}

#[cfg(feature = "sprs")]
#[test]
fn sprs_matrices_convert() {
    let a = precsolve::poisson2d(6);
    let view = a.as_sprs();
    let owned: sprs::CsMatI<f64, i32, usize> = view.to_owned();
    let from_owned = CsrMatrix::try_from(owned).unwrap();
    let from_view = CsrMatrix::try_from(view).unwrap();
    assert_eq!(from_owned.values(), a.values());
    assert_eq!(from_view.col_idx(), a.col_idx());
    let csc = a.as_sprs().to_other_storage();
    assert_eq!(
        CsrMatrix::try_from(csc.view()).unwrap().row_ptr(),
        a.row_ptr()
    );
}

/// `a` as an nalgebra-sparse matrix (its own arrays, `usize` column indices).
#[cfg(feature = "nalgebra")]
fn nalgebra_copy(a: &CsrMatrix) -> nalgebra_sparse::CsrMatrix<f64> {
    let cols: Vec<usize> = a.col_idx().iter().map(|&c| c as usize).collect();
    let (ptr, values) = (a.row_ptr().to_vec(), a.values().to_vec());
    nalgebra_sparse::CsrMatrix::try_from_csr_data(a.nrows(), a.ncols(), ptr, cols, values).unwrap()
}

#[cfg(feature = "nalgebra")]
#[test]
fn nalgebra_matrices_convert() {
    let a = precsolve::poisson2d(6);
    let na = nalgebra_copy(&a);
    let borrowed = CsrMatrix::try_from(&na).unwrap();
    let owned = CsrMatrix::try_from(na).unwrap();
    for m in [borrowed, owned] {
        assert_eq!(m.row_ptr(), a.row_ptr());
        assert_eq!(m.col_idx(), a.col_idx());
        assert_eq!(m.values(), a.values());
    }
}

/// An sprs view, of a whole matrix or of its first rows, is borrowed (no copy) and solves with
/// the bits of the copied matrix; a CSC view is refused.
#[cfg(feature = "sprs")]
#[test]
fn sprs_views_solve_without_a_copy() {
    use precsolve::CsrView;
    let a = precsolve::poisson2d(8);
    let owned: sprs::CsMatI<f64, i32, usize> = a.as_sprs().to_owned();
    let view = CsrView::try_from(owned.view()).unwrap();
    assert!(
        std::ptr::eq(view.values(), owned.data()),
        "borrowed, not copied"
    );
    assert!(std::ptr::eq(view.col_idx(), owned.indices()));
    let b = vec![1.0; a.nrows()];
    let copied = Solver::bicgstab().precision::<Dd>().solve(&a, &b).unwrap();
    let borrowed = Solver::bicgstab()
        .precision::<Dd>()
        .solve_operator(&view, &b)
        .unwrap();
    assert_eq!(borrowed.x, copied.x);
    assert_eq!(borrowed.iterations, copied.iterations);
    // rows 8.. of the matrix: offsets that start past 0
    let rows = CsrView::try_from(owned.slice_outer(8..64)).unwrap();
    assert_eq!((rows.nrows(), rows.nnz()), (56, a.nnz() - a.row_ptr()[8]));
    let csc = owned.to_other_storage();
    assert_eq!(
        CsrView::try_from(csc.view()).unwrap_err(),
        precsolve::CsrError::ColumnMajor
    );
}

/// An nalgebra-sparse matrix is borrowed with its `usize` column indices and solves with the
/// bits of the copied matrix.
#[cfg(feature = "nalgebra")]
#[test]
fn nalgebra_matrices_solve_without_a_copy() {
    let a = precsolve::poisson2d(8);
    let na = nalgebra_copy(&a);
    let view = precsolve::CsrView::try_from(&na)
        .unwrap()
        .with_symmetry(precsolve::Symmetry::Symmetric);
    assert!(
        std::ptr::eq(view.col_idx(), na.col_indices()),
        "borrowed, not copied"
    );
    let b = vec![1.0; a.nrows()];
    let copied = Solver::auto().precision::<Dd>().solve(&a, &b).unwrap();
    let borrowed = Solver::auto()
        .precision::<Dd>()
        .solve_operator(&view, &b)
        .unwrap();
    assert_eq!(borrowed.info.method, "cg");
    assert_eq!(borrowed.x, copied.x);
}
