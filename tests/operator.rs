//! Matrix-free solves ([`LinearOperator`]): a stencil the program applies itself gives the bits
//! of the solve of its CSR matrix, in every method and with a preconditioner and a ladder; a dd
//! solve of an operator reaches the exact rational solution; what an operator cannot do is an
//! error that says why.

#[path = "common/exact.rs"]
mod exact;

use exact::{csr_from_fn, exact_solution, worst_relative_error};
use precsolve::{
    BackendChoice, Control, CsrError, CsrMatrix, CsrView, Dd, Error, LinearOperator, Method,
    Precision, Preconditioner, Qd, SolutionVector, Solver, StopReason, Td, WorkingPrecision,
};

/// The 5-point Laplacian on an `m x m` grid, never stored: each row sums its neighbours in
/// increasing column order from zero, as the CSR kernel sums a row of `poisson2d(m)`.
struct Laplacian2d(usize);

impl LinearOperator for Laplacian2d {
    fn nrows(&self) -> usize {
        self.0 * self.0
    }
    fn apply<P: Precision>(&self, x: &[P], y: &mut [P]) {
        let m = self.0;
        for (idx, y) in y.iter_mut().enumerate() {
            let (i, j) = (idx % m, idx / m);
            let mut sum = P::zero();
            let mut take = |col: usize, v: f64| sum = sum.add_mul_f64(v, &x[col]);
            if j > 0 {
                take(idx - m, -1.0);
            }
            if i > 0 {
                take(idx - 1, -1.0);
            }
            take(idx, 4.0);
            if i + 1 < m {
                take(idx + 1, -1.0);
            }
            if j + 1 < m {
                take(idx + m, -1.0);
            }
            *y = sum;
        }
    }
    fn symmetric(&self) -> bool {
        true
    }
}

/// A CSR matrix applied by the program's own loop (entries in column order from zero): the
/// CSR kernel's sum where rows average fewer than 16 entries.
struct OwnLoop<'a>(&'a CsrMatrix);

impl LinearOperator for OwnLoop<'_> {
    fn nrows(&self) -> usize {
        self.0.nrows()
    }
    fn apply<P: Precision>(&self, x: &[P], y: &mut [P]) {
        let (ptr, cols, vals) = (self.0.row_ptr(), self.0.col_idx(), self.0.values());
        for (i, y) in y.iter_mut().enumerate() {
            let entries = ptr[i]..ptr[i + 1];
            *y = entries.fold(P::zero(), |s, k| {
                s.add_mul_f64(vals[k], &x[cols[k] as usize])
            });
        }
    }
}

/// Jacobi, `z_i = r_i / a_ii`.
struct Jacobi(Vec<f64>);

impl Preconditioner for Jacobi {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        for ((z, r), d) in z.iter_mut().zip(r).zip(&self.0) {
            *z = r / d;
        }
    }
}

fn precision(name: &str) -> WorkingPrecision {
    name.parse().unwrap()
}

/// The solve of `a` and of `op` (the same matrix) agree bit for bit: outcome, iterations,
/// residuals, solution.
fn assert_same_solves(
    solver: impl Fn() -> Solver<'static>,
    a: &CsrMatrix,
    op: &impl LinearOperator,
    p: &str,
) {
    let b: Vec<f64> = (0..a.nrows()).map(|i| 1.0 + (i % 7) as f64 / 8.0).collect();
    let csr = solver().solve_in(precision(p), a, &b).unwrap();
    let free = solver().solve_operator_in(precision(p), op, &b).unwrap();
    let what = format!("{} {p}", csr.info.method);
    assert_eq!(free.info.method, csr.info.method, "{what}");
    assert_eq!(free.info.stop_reason, csr.info.stop_reason, "{what}");
    assert_eq!(free.info.iterations, csr.info.iterations, "{what}");
    assert_eq!(
        free.info.recurrence_residual.to_bits(),
        csr.info.recurrence_residual.to_bits(),
        "{what}"
    );
    assert_eq!(
        free.info.true_residual.to_bits(),
        csr.info.true_residual.to_bits(),
        "{what}"
    );
    assert_eq!(free.x, csr.x, "{what}: solution");
    assert!(csr.info.iterations > 5, "{what}: a solve worth comparing");
}

#[test]
fn a_stencil_gives_the_bits_of_its_csr_matrix_in_every_method() {
    let a = precsolve::poisson2d(12);
    let op = Laplacian2d(12);
    for p in ["f64", "dd", "qd"] {
        assert_same_solves(|| Solver::auto().tol(1e-10), &a, &op, p);
        assert_same_solves(|| Solver::bicgstab().tol(1e-10), &a, &op, p);
        assert_same_solves(|| Solver::gmres().gmres_restart(10).tol(1e-10), &a, &op, p);
        assert_same_solves(
            || Solver::with_method(Method::BicgstabL).tol(1e-10),
            &a,
            &op,
            p,
        );
    }
}

#[test]
fn a_preconditioned_operator_gives_the_bits_of_its_csr_matrix() {
    let a = csr_from_fn(150, |i, j| match (i, j) {
        _ if i == j => Some(2.0 + (i % 5) as f64),
        _ if j == i + 1 => Some(-1.0),
        _ if i == j + 1 => Some(-0.75),
        _ if j == (i * 17) % 150 => Some(0.125),
        _ => None,
    });
    let op = OwnLoop(&a);
    let jacobi = || Jacobi(a.diagonal());
    for p in ["f64", "dd"] {
        assert_same_solves(
            || Solver::bicgstab().preconditioner(jacobi()).tol(1e-12),
            &a,
            &op,
            p,
        );
        assert_same_solves(
            || Solver::gmres().preconditioner(jacobi()).tol(1e-12),
            &a,
            &op,
            p,
        );
    }
}

/// The bundled graded SPD matrix climbs f64 -> dd (f64's true residual misses tol 1e-12): the
/// operator's ladder has the same rungs and the same bits.
#[test]
fn an_operator_climbs_the_same_ladder() {
    let a = precsolve::read_matrix_market("matrices/graded_spd_400.mtx").unwrap();
    let op = OwnLoop(&a);
    let b = vec![1.0; a.nrows()];
    let csr = Solver::cg()
        .tol(1e-12)
        .solve_in(precision("auto"), &a, &b)
        .unwrap();
    let free = Solver::cg()
        .tol(1e-12)
        .solve_operator_in(precision("auto"), &op, &b)
        .unwrap();
    let rungs = |s: &precsolve::Solution| -> Vec<(&str, usize)> {
        s.info
            .phases
            .iter()
            .map(|p| (p.precision, p.iterations))
            .collect()
    };
    assert_eq!(rungs(&free), [("f64", 3642), ("dd", 11)]);
    assert_eq!(rungs(&free), rungs(&csr));
    assert_eq!(
        free.info.true_residual.to_bits(),
        csr.info.true_residual.to_bits()
    );
    assert_eq!(free.x, csr.x);
}

/// An operator that no CSR kernel computes (a nonsymmetric stencil with a product in it),
/// solved in dd: against the exact rational solution of the same matrix.
#[test]
fn a_dd_operator_solve_reaches_the_exact_solution() {
    struct Convection(usize);
    impl LinearOperator for Convection {
        fn nrows(&self) -> usize {
            self.0
        }
        fn apply<P: Precision>(&self, x: &[P], y: &mut [P]) {
            let n = self.0;
            for i in 0..n {
                // 3 x_i - 1.25 x_{i-1} - 0.5 x_{i+1}, the last term as 0.5 * (-x_{i+1})
                let mut s = x[i].mul_f64(3.0);
                if i > 0 {
                    s = s.sub(&x[i - 1].mul_f64(1.25));
                }
                if i + 1 < n {
                    s = s.add(&x[i + 1].neg().mul_f64(0.5));
                }
                y[i] = s;
            }
        }
    }
    let n = 40;
    let a = csr_from_fn(n, |i, j| match (i, j) {
        _ if i == j => Some(3.0),
        _ if i == j + 1 => Some(-1.25),
        _ if j == i + 1 => Some(-0.5),
        _ => None,
    });
    let b: Vec<f64> = (0..n).map(|i| 1.0 + (i % 4) as f64).collect();
    let exact = exact_solution(&a, &b);
    let out = Solver::bicgstab()
        .precision::<Dd>()
        .tol(1e-29)
        .solve_operator(&Convection(n), &b)
        .unwrap();
    assert!(out.converged(), "{:?}", out.info.stop_reason);
    let error = worst_relative_error(&out.x, &exact);
    assert!(error < 1e-28, "relative error {error:e}");
    assert!(out.true_residual <= 1e-29, "{:e}", out.true_residual);
}

/// td's vectors are two arrays: the operator gets them copied, and the solve still converges
/// to td's level; mp-free qd solves a stencil the same way.
#[test]
fn td_and_qd_operators_converge() {
    let op = Laplacian2d(10);
    let b = vec![1.0; op.nrows()];
    let td = Solver::cg()
        .precision::<Td>()
        .tol(1e-20)
        .solve_operator(&op, &b)
        .unwrap();
    assert!(
        td.converged() && td.true_residual <= 1e-20,
        "{:e}",
        td.true_residual
    );
    let qd = Solver::cg()
        .precision::<Qd>()
        .tol(1e-40)
        .solve_operator(&op, &b)
        .unwrap();
    assert!(
        qd.converged() && qd.true_residual <= 1e-40,
        "{:e}",
        qd.true_residual
    );
}

#[test]
fn the_callback_stops_an_operator_solve() {
    let op = Laplacian2d(16);
    let b = vec![1.0; op.nrows()];
    let mut seen = 0;
    let out = Solver::cg()
        .tol(1e-14)
        .on_iteration(|_| {
            seen += 1;
            if seen == 4 {
                Control::Stop
            } else {
                Control::Continue
            }
        })
        .solve_operator(&op, &b)
        .unwrap();
    assert_eq!(
        (out.iterations, out.info.stop_reason.clone()),
        (4, StopReason::Cancelled)
    );
}

#[test]
fn what_an_operator_cannot_do_is_an_error_that_says_why() {
    let op = Laplacian2d(4);
    let b = vec![1.0; 16];
    let message = |e: Error| e.to_string();
    let gpu = Solver::cg()
        .backend(BackendChoice::Cuda)
        .solve_operator(&op, &b);
    assert!(message(gpu.unwrap_err()).contains("CPU backend"));
    let ilu = Solver::cg().ilu0().solve_operator(&op, &b);
    assert!(message(ilu.unwrap_err()).contains("ILU(0)"));
    let short = Solver::cg().solve_operator(&op, &b[..15]);
    assert!(message(short.unwrap_err()).contains("15 entries"));
    let mut nan = b.clone();
    nan[3] = f64::NAN;
    assert!(Solver::cg().solve_operator(&op, &nan).is_err());
    // and the solve that is possible still runs after them
    let out = Solver::cg()
        .solve_operator_in(WorkingPrecision::Dd, &op, &b)
        .unwrap();
    assert!(matches!(out.x, SolutionVector::Dd(_)) && out.info.stop_reason.converged());
}

/// A banded matrix of 40 entries a row: the CSR kernels sum its rows in 4 lanes.
fn dense_rows() -> CsrMatrix {
    csr_from_fn(300, |i, j| {
        let d = i.abs_diff(j);
        match d {
            0 => Some(60.0 + (i % 7) as f64),
            1..=20 => Some(-1.0 / (1 + (i + 2 * j) % 5) as f64),
            _ => None,
        }
    })
}

/// A view of the program's own arrays (any column index type) solves with the bits of the
/// copied matrix, whatever lanes the kernels sum its rows in.
#[test]
fn a_borrowed_view_gives_the_bits_of_the_copied_matrix() {
    let dense = dense_rows();
    assert!(dense.nnz() >= 32 * dense.nrows(), "rows summed in 4 lanes");
    for a in [dense, precsolve::poisson2d(14)] {
        let cols: Vec<u32> = a.col_idx().iter().map(|&c| c as u32).collect();
        let view = CsrView::new(a.nrows(), a.ncols(), a.row_ptr(), &cols, a.values()).unwrap();
        for p in ["f64", "dd", "qd"] {
            assert_same_solves(|| Solver::bicgstab().tol(1e-12), &a, &view, p);
            assert_same_solves(|| Solver::gmres().tol(1e-12), &a, &view, p);
        }
        let own = CsrView::from(&a);
        assert_same_solves(|| Solver::cg().tol(1e-12), &a, &own, "dd");
    }
}

/// Row offsets that start past 0 (a view of some rows of larger arrays, as sprs slices them):
/// the entries are those from the first offset on.
#[test]
fn a_view_may_start_past_the_first_entry() {
    let a = precsolve::poisson2d(9);
    let shifted: Vec<usize> = a.row_ptr().iter().map(|p| p + 1000).collect();
    let view = CsrView::new(a.nrows(), a.ncols(), &shifted, a.col_idx(), a.values()).unwrap();
    assert_same_solves(|| Solver::cg().tol(1e-12), &a, &view, "dd");
    assert_eq!(
        view.to_csr().unwrap(),
        a.clone().with_symmetry(precsolve::Symmetry::General)
    );
}

#[test]
fn a_view_is_checked_as_a_matrix_is() {
    let a = precsolve::poisson2d(3);
    let (ptr, vals) = (a.row_ptr(), a.values());
    let cols: Vec<i64> = a.col_idx().iter().map(|&c| c as i64).collect();
    let check = |cols: &[i64], vals: &[f64]| CsrView::new(9, 9, ptr, cols, vals).map(|_| ());
    assert_eq!(check(&cols, vals), Ok(()));
    let mut unsorted = cols.clone();
    unsorted.swap(0, 1);
    assert_eq!(
        check(&unsorted, vals),
        Err(CsrError::ColumnsNotSorted { row: 0 })
    );
    let mut outside = cols.clone();
    outside[2] = 9;
    assert!(matches!(
        check(&outside, vals),
        Err(CsrError::ColumnOutOfRange { row: 0, col: 9, .. })
    ));
    let mut nan = vals.to_vec();
    nan[4] = f64::NAN;
    assert!(matches!(
        check(&cols, &nan),
        Err(CsrError::NonFinite { .. })
    ));
    assert!(matches!(
        check(&cols[1..], &vals[1..]),
        Err(CsrError::RowPtrEnd { .. })
    ));
}
