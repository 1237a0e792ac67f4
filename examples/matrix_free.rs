//! A matrix the program applies itself (the `LinearOperator` trait): 2-D convection-diffusion
//! on a grid, never stored, solved by BiCGStab and GMRES in double and in double-double. The
//! operator is written once, generic over the precision, so each solve's products are computed
//! in that solve's precision.
//!
//! ```sh
//! cargo run --release --example matrix_free
//! ```

use precsolve::{LinearOperator, Precision, Solver, WorkingPrecision};

/// `-laplace(u) + c du/dx` on an `m x m` grid (central differences, mesh width 1, Dirichlet
/// boundary): 4 on the diagonal, `-1 -+ c/2` to the left and right neighbours, -1 above and
/// below. Nonsymmetric for `c != 0`.
struct ConvectionDiffusion {
    m: usize,
    c: f64,
}

impl LinearOperator for ConvectionDiffusion {
    fn nrows(&self) -> usize {
        self.m * self.m
    }

    fn apply<P: Precision>(&self, x: &[P], y: &mut [P]) {
        let m = self.m;
        let (west, east) = (-1.0 - self.c / 2.0, -1.0 + self.c / 2.0);
        for (k, y) in y.iter_mut().enumerate() {
            let (i, j) = (k % m, k / m);
            let mut sum = x[k].mul_f64(4.0);
            if j > 0 {
                sum = sum.add_mul_f64(-1.0, &x[k - m]);
            }
            if i > 0 {
                sum = sum.add_mul_f64(west, &x[k - 1]);
            }
            if i + 1 < m {
                sum = sum.add_mul_f64(east, &x[k + 1]);
            }
            if j + 1 < m {
                sum = sum.add_mul_f64(-1.0, &x[k + m]);
            }
            *y = sum;
        }
    }
}

fn main() -> Result<(), precsolve::Error> {
    let op = ConvectionDiffusion { m: 48, c: 0.5 };
    let b = vec![1.0; op.nrows()];
    println!(
        "convection-diffusion, {} unknowns, matrix-free, tol 1e-14",
        op.nrows()
    );
    println!(
        "{:<10} {:<4} {:>10} {:>15} {:>10}",
        "method", "prec", "iterations", "true residual", "time [ms]"
    );
    for (name, solver) in [
        ("bicgstab", Solver::bicgstab as fn() -> Solver<'static>),
        ("gmres(30)", Solver::gmres),
    ] {
        for precision in [WorkingPrecision::F64, WorkingPrecision::Dd] {
            let out = solver()
                .tol(1e-14)
                .max_iter(5_000)
                .solve_operator_in(precision, &op, &b)?;
            let info = &out.info;
            println!(
                "{:<10} {:<4} {:>10} {:>15.3e} {:>10.2}   {}",
                name,
                precision.name(),
                info.iterations,
                info.true_residual,
                info.times.total * 1e3,
                info.stop_reason
            );
        }
    }
    Ok(())
}
