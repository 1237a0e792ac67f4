//! A borrowed `CsrView` (solved as a `LinearOperator`) against the copied `CsrMatrix`, per CG
//! iteration on the CPU, f64 and dd, interleaved and best of `REPEATS`: what zero copy costs.
//! Feeds `benches/results/view.md`.
//!
//!     cargo bench --bench view_timing -- [MATRIX] [ITERATIONS] [REPEATS]

use precsolve::{BackendChoice, CsrView, Solver, WorkingPrecision};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let spec = args.first().map_or("poisson3d:40", String::as_str);
    let iterations: usize = args.get(1).map_or(200, |t| t.parse().expect("ITERATIONS"));
    let repeats: usize = args.get(2).map_or(5, |t| t.parse().expect("REPEATS"));
    let a = precsolve::load_matrix(spec).expect("a matrix or generator spec");
    let b = vec![1.0; a.nrows()];
    let view = CsrView::from(&a);
    println!("matrix,rows,nnz,precision,csr_us_per_iteration,view_us_per_iteration,view/csr");
    for precision in [WorkingPrecision::F64, WorkingPrecision::Dd] {
        let solver = || {
            Solver::cg()
                .backend(BackendChoice::Cpu)
                .tol(1e-300)
                .max_iter(iterations)
        };
        let per_iteration =
            |info: &precsolve::SolveInfo| info.times.iterations / info.iterations as f64 * 1e6;
        let (mut csr, mut free) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..repeats {
            let c = solver().solve_in(precision, &a, &b).expect("CSR solve");
            let v = solver()
                .solve_operator_in(precision, &view, &b)
                .expect("view solve");
            assert_eq!(c.x, v.x, "a view solves with the bits of the copied matrix");
            csr = csr.min(per_iteration(&c.info));
            free = free.min(per_iteration(&v.info));
        }
        println!(
            "{spec},{},{},{},{csr:.1},{free:.1},{:.2}",
            a.nrows(),
            a.nnz(),
            precision.name(),
            free / csr
        );
    }
}
