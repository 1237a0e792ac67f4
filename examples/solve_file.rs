//! Solve `A x = ones` for a Matrix Market file and print the report.
//!
//! ```sh
//! cargo run --release --example solve_file                      # the bundled sample
//! cargo run --release --example solve_file -- path/to/A.mtx.gz
//! ```

use precsolve::{Dd, Solver};

fn main() -> Result<(), precsolve::Error> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "matrices/graded_spd_400.mtx".into());
    let a = precsolve::read_matrix_market(&path)?;
    println!(
        "{path}: {} x {}, {} entries, declared {}",
        a.nrows(),
        a.ncols(),
        a.nnz(),
        a.symmetry()
    );
    let b = vec![1.0; a.nrows()];
    // CG where the file declares the matrix symmetric, BiCGStab otherwise; double-double.
    let out = Solver::auto().precision::<Dd>().tol(1e-12).solve(&a, &b)?;
    println!("method          {}", out.method);
    println!("backend         {}", out.backend);
    println!("stop reason     {}", out.stop_reason);
    println!("iterations      {}", out.iterations);
    println!("recurrence res. {:.3e}", out.recurrence_residual);
    println!("true residual   {:.3e}", out.true_residual);
    println!("time            {:.3} ms", out.times.total * 1e3);
    println!(
        "x[0]            {} (in dd: {:?})",
        out.x[0].to_f64(),
        out.x[0]
    );
    if !out.converged() {
        std::process::exit(3);
    }
    Ok(())
}
