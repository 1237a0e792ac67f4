//! The same solve gives the same bits whatever the number of threads.

mod common;

use common::outcomes::solve_on_cpu;
use precsolve::Dd;
use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::precond::Preconditioning;
use precsolve::solver::Params;
use precsolve::solver::dispatch::{Method, Problem, WorkingPrecision};
use precsolve::sparse::poisson3d;
use std::sync::Arc;

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn dot_products_do_not_depend_on_thread_count() {
    let backend = CpuBackend::new();
    // Awkward length: several dot chunks plus a ragged tail.
    let n = 3 * precsolve::backend::cpu::DOT_CHUNK + 1234;
    let (x, y) = common::dot_operands(n);
    let dots = |t| {
        in_pool(t, || {
            let (xd, yd) = (
                backend.vector_from_f64::<Dd>(&x).unwrap(),
                backend.vector_from_f64::<Dd>(&y).unwrap(),
            );
            let (xf, yf) = (backend.upload(&x).unwrap(), backend.upload(&y).unwrap());
            (
                backend.dot(&xf, &yf).unwrap().to_bits(),
                backend.dot(&xd, &yd).unwrap(),
            )
        })
    };
    let (one, two, three) = (dots(1), dots(2), dots(3));
    assert_eq!(one, two);
    assert_eq!(one, three);
}

#[test]
fn whole_solves_do_not_depend_on_thread_count() {
    let a = Arc::new(poisson3d(18));
    let problem = Problem::new(a, None, None).unwrap();
    let params = Params {
        tol: 1e-10,
        ..Params::default()
    };
    for method in [Method::Cg, Method::Bicgstab] {
        for p in [WorkingPrecision::F64, WorkingPrecision::Dd] {
            let go = |t| {
                in_pool(t, || {
                    solve_on_cpu(&problem, method, p, &Preconditioning::None, &params)
                })
            };
            let (s1, s2) = (go(1), go(2));
            assert_eq!(s1.info.iterations, s2.info.iterations, "{method:?} {p:?}");
            assert_eq!(
                s1.info.recurrence_residual.to_bits(),
                s2.info.recurrence_residual.to_bits()
            );
            assert_eq!(
                s1.info.true_residual.to_bits(),
                s2.info.true_residual.to_bits()
            );
            assert!(
                s1.x.to_dd()
                    .iter()
                    .zip(&s2.x.to_dd())
                    .all(|(a, b)| a.hi.to_bits() == b.hi.to_bits()
                        && a.lo.to_bits() == b.lo.to_bits())
            );
        }
    }
}
