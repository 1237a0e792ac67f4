//! Triple precision (`td`, D+I storage with double-double arithmetic rounded to D+I) in the CPU
//! solver: every value a solve stores is a D+I value, the GPU-shaped layout is 12 bytes per
//! element, and on an ill-conditioned SPD system CG's iteration count lies between double's and
//! double-double's (pinned by measurement: matrices/graded_spd_400.mtx at tol 1e-12 needs
//! f64 3608, td 3101, dd 2629, qd 1660 iterations; runs are bitwise reproducible).

use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::precision::{Td, td};
use precsolve::precond::{Identity, Preconditioning};
use precsolve::solver::dispatch::{
    BackendChoice, Method, Problem, Recipe, WorkingPrecision, solve,
};
use precsolve::solver::{NoMonitor, Params, StopReason, cg};
use precsolve::sparse::poisson3d;
use precsolve::{Dd, Precision};
use std::sync::Arc;

fn iterations(path: &str, tol: f64, precision: WorkingPrecision) -> (usize, StopReason) {
    let a = Arc::new(precsolve::load_matrix(path).unwrap());
    let problem = Problem::new(a, None, None).unwrap();
    let params = Params {
        tol,
        ..Params::default()
    };
    let info = solve(
        &problem,
        BackendChoice::Cpu,
        Recipe {
            method: Method::Cg,
            precision,
            precond: &Preconditioning::None,
        },
        &params,
        &mut NoMonitor,
    )
    .unwrap()
    .info;
    (info.iterations, info.stop_reason)
}

#[test]
fn td_iterations_lie_between_f64_and_dd_on_graded_spd_400() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices/graded_spd_400.mtx");
    let (f, fs) = iterations(path, 1e-12, WorkingPrecision::F64);
    let (t, ts) = iterations(path, 1e-12, WorkingPrecision::Td);
    let (d, ds) = iterations(path, 1e-12, WorkingPrecision::Dd);
    for s in [fs, ts, ds] {
        assert_eq!(s, StopReason::ConvergedRtol);
    }
    assert_eq!((f, t, d), (3608, 3101, 2629), "measured f64/td/dd counts");
    assert!(d < t && t < f);
}

fn is_d_plus_i(x: Dd) -> bool {
    x.lo.to_bits() & 0xffff_ffff == 0 && td::round(x) == x
}

#[test]
fn every_stored_element_of_a_td_solve_is_a_d_plus_i_value() {
    let cpu = CpuBackend::new();
    let a = Arc::new(poisson3d(12));
    let ga = cpu.matrix(&a).unwrap();
    let b = cpu.vector_from_f64::<f64>(&vec![1.0; a.nrows()]).unwrap();
    let mut x = cpu.zeros::<Td>(a.nrows()).unwrap();
    let params = Params {
        tol: 1e-14,
        ..Params::default()
    };
    let info = cg(&cpu, &ga, &b, &mut x, &Identity, &params, &mut NoMonitor).unwrap();
    assert_eq!(info.stop_reason, StopReason::ConvergedRtol);
    assert_eq!(info.precision, "td");
    let mut nonzero_lo = 0;
    for v in &x {
        let d = v.to_dd();
        assert!(is_d_plus_i(d), "{v:?}");
        nonzero_lo += usize::from(d.lo != 0.0);
    }
    // the low words carry information (this is not an f64 solve in disguise)
    assert!(nonzero_lo > x.len() / 2, "{nonzero_lo} of {}", x.len());
    // vector kernels and scalars: results are D+I values too
    let mut y = x.clone();
    let alpha = Td::one().div(&Td::from_f64(3.0));
    cpu.axpy(&alpha, &x, &mut y).unwrap();
    let dot = cpu.dot(&x, &y).unwrap();
    assert!(is_d_plus_i(dot.to_dd()) && is_d_plus_i(alpha.to_dd()));
    assert!(y.iter().all(|v| is_d_plus_i(v.to_dd())));
    // 12 bytes per element, as the GPU's structure of arrays
    assert_eq!(std::mem::size_of_val(&x[..]), 12 * x.len());
}

#[test]
fn td_parses_and_reports_its_name() {
    assert_eq!(
        "td".parse::<WorkingPrecision>().unwrap(),
        WorkingPrecision::Td
    );
    assert_eq!(WorkingPrecision::Td.name(), "td");
    let list: precsolve::solver::dispatch::PrecisionChoice = "f64,td,dd,qd".parse().unwrap();
    assert_eq!(list.to_string(), "f64,td,dd,qd");
}
