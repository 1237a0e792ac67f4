//! A preconditioner of one's own (Jacobi, through the `Preconditioner` trait) and a callback
//! that watches the true residual and stops the solve as soon as it is good enough: the
//! recurrence residual of a long solve can be far from the truth, the true residual cannot.
//!
//! ```sh
//! cargo run --release --example jacobi_callback
//! ```

use precsolve::{Control, Dd, Preconditioner, Solver};

/// `z_i = r_i / a_ii`.
struct Jacobi {
    inverse_diagonal: Vec<f64>,
}

impl Jacobi {
    fn new(a: &precsolve::CsrMatrix) -> Result<Self, precsolve::Error> {
        let diagonal = a.diagonal();
        if let Some(i) = diagonal.iter().position(|&d| d == 0.0) {
            return Err(precsolve::Error::InvalidInput(format!(
                "Jacobi needs a nonzero diagonal; row {} has none",
                i + 1
            )));
        }
        Ok(Jacobi {
            inverse_diagonal: diagonal.iter().map(|d| 1.0 / d).collect(),
        })
    }
}

impl Preconditioner for Jacobi {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        for ((z, r), d) in z.iter_mut().zip(r).zip(&self.inverse_diagonal) {
            *z = r * d;
        }
    }
    fn name(&self) -> &'static str {
        "jacobi"
    }
}

fn main() -> Result<(), precsolve::Error> {
    let a = precsolve::read_matrix_market("matrices/graded_spd_400.mtx")?;
    let b = vec![1.0; a.nrows()];
    let good_enough = 1e-9;
    let mut last_true = None;
    let out = Solver::cg()
        .precision::<Dd>()
        .tol(1e-14)
        .preconditioner(Jacobi::new(&a)?)
        .true_residual_every(10)
        .on_iteration(|at| match at.true_residual {
            Some(t) if t <= good_enough => {
                last_true = Some((at.iteration, t));
                Control::Stop
            }
            _ => Control::Continue,
        })
        .solve(&a, &b)?;
    println!(
        "Jacobi-CG in dd: {} after {} iterations, true residual {:.2e}",
        out.stop_reason, out.iterations, out.true_residual
    );
    match last_true {
        Some((k, t)) => println!("stopped by the callback at iteration {k}: true residual {t:.2e}"),
        None => println!("the callback never saw a true residual below {good_enough:e}"),
    }
    Ok(())
}
