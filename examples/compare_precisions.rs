//! What extra precision buys on one matrix: the same CG solve in double, triple, double-double
//! and quad-double, side by side (the precision chosen at run time, as a program reading a
//! flag would).
//!
//! ```sh
//! cargo run --release --example compare_precisions [-- A.mtx [TOL]]
//! ```

use precsolve::{Solver, WorkingPrecision};

fn main() -> Result<(), precsolve::Error> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "matrices/graded_spd_400.mtx".into());
    let tol: f64 = match args.next() {
        Some(t) => t
            .parse()
            .map_err(|_| precsolve::Error::Config(format!("'{t}' is not a tolerance")))?,
        None => 1e-12,
    };
    let a = precsolve::read_matrix_market(&path)?;
    let b = vec![1.0; a.nrows()];
    println!("{path}, CG, tol {tol:e}");
    println!("precision  iterations  true residual  time per iteration  stop");
    let mut solver = Solver::cg().tol(tol).max_iter(20 * a.nrows());
    for name in ["f64", "td", "dd", "qd"] {
        let precision: WorkingPrecision = name.parse().map_err(precsolve::Error::Config)?;
        let out = solver.solve_in(precision, &a, &b)?;
        let info = &out.info;
        println!(
            "{:<9}  {:>10}  {:>13.2e}  {:>15.2} us  {}",
            info.precision,
            info.iterations,
            info.true_residual,
            info.time_per_iteration() * 1e6,
            info.stop_reason
        );
    }
    Ok(())
}
