//! `mp:<bits>` (the own `MpFloat`) and `mp-mpfr:<bits>` (MPFR through rug): the names and their
//! parsing; `mp:<bits>` solves against `f64` and `dd` in every build; with the `mpfr` feature,
//! MPFR's arithmetic against exact rationals, and whole solves of both identical bit for bit.

use precsolve::batch::{PrecondChoice, RunKey};
use precsolve::solver::ResidualNorm;
use precsolve::solver::dispatch::{Method, PrecisionChoice, WorkingPrecision};

/// `mp:256` is a precision in every build (so that study records naming it can be read back);
/// whether it can run is a separate question (`unavailable`).
#[test]
fn mp_names_parse_and_round_trip_through_serde() {
    let p: WorkingPrecision = "mp:256".parse().unwrap();
    assert_eq!(p, WorkingPrecision::Mp(256));
    assert_eq!(p.name(), "mp:256");
    assert!(p.runs_on_gpu());
    assert!(WorkingPrecision::Mp(2048).runs_on_gpu());
    assert!(!WorkingPrecision::Mpfr(256).runs_on_gpu());
    assert_eq!("MP:128".parse(), Ok(WorkingPrecision::Mp(128)));
    assert_eq!("mp-mpfr:300".parse(), Ok(WorkingPrecision::Mpfr(300)));
    for bad in ["mp", "mp:", "mp:x", "mp:0", "mp:52", "mp:2049", "mp:1e3"] {
        let e = bad.parse::<WorkingPrecision>().unwrap_err();
        assert!(e.contains("mp:<bits>"), "{bad}: {e}");
    }
    // The other names are unchanged, on the command line and in serde.
    for (text, p) in [
        ("f64", WorkingPrecision::F64),
        ("dd", WorkingPrecision::Dd),
        ("qd", WorkingPrecision::Qd),
        ("mp:256", WorkingPrecision::Mp(256)),
        ("mp:2048", WorkingPrecision::Mp(2048)),
        ("mp-mpfr:65536", WorkingPrecision::Mpfr(65536)),
    ] {
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<WorkingPrecision>(&json).unwrap(), p);
    }
    // A study's run key: the precision goes into the key's id and comes back from JSON.
    let key = RunKey {
        matrix: "poisson2d:8".into(),
        precision: WorkingPrecision::Mp(256),
        tol: 1e-8,
        precond: PrecondChoice::None,
        method: Method::Auto,
        max_iter: 100,
        time_limit_s: None,
        criterion: ResidualNorm::Initial,
        ilu_shift: Default::default(),
        bicgstab: Default::default(),
        method_options: None,
        escalation: None,
    };
    let json = serde_json::to_value(&key).unwrap();
    assert_eq!(json["precision"], "mp:256");
    let back: RunKey = serde_json::from_value(json).unwrap();
    assert_eq!(back, key);
    assert!(back.id().ends_with("|poisson2d:8|mp:256"), "{}", back.id());
}

#[test]
fn mp_runs_in_every_build_and_mpfr_needs_the_feature() {
    let choice = "f64,dd,mp:256".parse::<PrecisionChoice>().unwrap();
    assert_eq!(choice.to_string(), "f64,dd,mp:256");
    assert_eq!(
        choice.precisions(),
        [
            WorkingPrecision::F64,
            WorkingPrecision::Dd,
            WorkingPrecision::Mp(256)
        ]
    );
    assert!(WorkingPrecision::Mp(256).unavailable().is_none());
    let e = "mp:256,mp:256".parse::<PrecisionChoice>().unwrap_err();
    assert!(e.contains("twice"), "{e}");
    // Different precisions are different columns, and so are the two engines.
    assert!("mp:106,mp:256".parse::<PrecisionChoice>().is_ok());
    let parsed = "mp:256,mp-mpfr:256".parse::<PrecisionChoice>();
    if cfg!(feature = "mpfr") {
        assert!(parsed.is_ok());
        assert!(WorkingPrecision::Mpfr(256).unavailable().is_none());
    } else {
        let e = parsed.unwrap_err();
        assert!(
            e.contains("without the `mpfr` feature") && e.contains("--features mpfr"),
            "{e}"
        );
    }
}

#[cfg(feature = "mpfr")]
#[path = "common/exact.rs"]
mod exact;

/// The arithmetic, one operation at a time, against exact dyadic rationals.
#[cfg(feature = "mpfr")]
mod arithmetic {
    use super::exact::Dyadic;
    use precsolve::precision::mp::MpScope;
    use precsolve::{Dd, Mpfr as Mp, Precision};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use rug::Float;
    use rug::float::Round;
    use std::cmp::Ordering;

    const PRECISIONS: [u32; 7] = [53, 64, 106, 107, 113, 256, 1000];
    const CASES: usize = 300;

    /// The exact value of an `Mp`: peel off nearest doubles (each remainder is exact in the
    /// value's own precision; MPFR says so through the ternary value).
    fn exact(x: &Mp) -> Dyadic {
        let mut rem = x.as_float().clone();
        let mut acc = Dyadic::zero();
        while !rem.is_zero() {
            let d = rem.to_f64();
            assert!(d.is_finite() && d != 0.0, "{rem} outside the double range");
            acc = acc.add(&Dyadic::from_f64(d));
            let (next, dir) = Float::with_val_round(rem.prec(), &rem - d, Round::Nearest);
            assert_eq!(dir, Ordering::Equal, "remainder not exact");
            rem = next;
        }
        acc
    }

    /// `2^(floor(log2|r|) - bits + 1) / 2`: half an ulp of `r` at `bits` bits.
    fn half_ulp(r: &Dyadic, bits: u32) -> Dyadic {
        Dyadic::pow2(r.ilog2().expect("nonzero") - bits as i64)
    }

    /// `got` is `exact` rounded to `bits` bits (within half an ulp of the result).
    fn assert_rounded(got: &Mp, exact: &Dyadic, bits: u32, what: &dyn Fn() -> String) {
        assert_eq!(got.prec(), bits, "{}", what());
        let g = super::arithmetic::exact(got);
        let err = g.sub(exact).abs();
        if g.is_zero() {
            assert!(exact.is_zero(), "{}: zero for a nonzero result", what());
            return;
        }
        assert!(
            err.cmp_abs(&half_ulp(&g, bits)) != Ordering::Greater,
            "{}: error {:e} ulp",
            what(),
            2.0 * err.ratio_f64(&half_ulp(&g, bits)) / 2.0
        );
    }

    /// A random value with a full `bits`-bit significand, |x| within about 2^-30..2^30.
    fn rand_mp(rng: &mut ChaCha8Rng, bits: u32) -> Mp {
        let e: i32 = rng.random_range(-30..30);
        let mut x = Float::with_val(bits, rng.random_range(1.0..2.0) * 2f64.powi(e));
        let mut k = e;
        while k > e - bits as i32 - 60 {
            k -= 50;
            x += rng.random_range(-1.0..1.0) * 2f64.powi(k);
        }
        if rng.random_bool(0.5) {
            x = -x;
        }
        Mp(x)
    }

    fn rng(test: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(0x6d70_0000 + test)
    }

    /// Scopes belong to their threads: threads at different precisions run at the same time,
    /// and values made on rayon's workers get the precision carried to them.
    #[test]
    fn scopes_are_per_thread_and_carried_to_workers() {
        use precsolve::precision::mp::{carried, current_bits};
        use rayon::prelude::*;
        std::thread::scope(|threads| {
            for bits in [60, 200, 1000, 53] {
                threads.spawn(move || {
                    for _ in 0..20 {
                        let scope = MpScope::enter(bits);
                        let here = current_bits();
                        let v: Vec<Mp> = (0..64)
                            .into_par_iter()
                            .map(|i| carried(here, || Mp::from_f64(i as f64)))
                            .collect();
                        assert!(v.iter().all(|x| x.prec() == bits));
                        assert_eq!(current_bits(), Some(scope.bits()));
                    }
                });
            }
        });
        assert_eq!(precsolve::precision::mp::current_bits(), None);
    }

    #[test]
    fn add_sub_mul_div_sqrt_are_correctly_rounded() {
        let mut rng = rng(1);
        for bits in PRECISIONS {
            let _scope = MpScope::enter(bits);
            for i in 0..CASES {
                let a = rand_mp(&mut rng, bits);
                let mut b = rand_mp(&mut rng, bits);
                if i % 4 == 0 {
                    // cancellation: b close to -a
                    let k = rng.random_range(1..bits as i32 + 20).min(1000);
                    let t = Float::with_val(bits, a.as_float() * 2f64.powi(-k));
                    b = Mp(Float::with_val(bits, &t - a.as_float()));
                }
                let (ea, eb) = (exact(&a), exact(&b));
                let what =
                    |op: &str| format!("{op} at {bits} bits, case {i}: a = {a:?}, b = {b:?}");
                assert_rounded(&a.add(&b), &ea.add(&eb), bits, &|| what("add"));
                assert_rounded(&a.sub(&b), &ea.sub(&eb), bits, &|| what("sub"));
                assert_rounded(&a.mul(&b), &ea.mul(&eb), bits, &|| what("mul"));
                // a / b = q: |q b - a| <= |b| ulp(q)/2
                let q = a.div(&b);
                assert_eq!(q.prec(), bits);
                let eq = exact(&q);
                let resid = eq.mul(&eb).sub(&ea).abs();
                assert!(
                    resid.cmp_abs(&half_ulp(&eq, bits).mul(&eb)) != Ordering::Greater,
                    "{}",
                    what("div")
                );
                // sqrt|a| = s: (s - h)^2 <= |a| <= (s + h)^2, h = ulp(s)/2
                let s = a.abs().sqrt();
                let es = exact(&s);
                let h = half_ulp(&es, bits);
                let (lo, hi) = (es.sub(&h), es.add(&h));
                assert!(
                    lo.mul(&lo).cmp_abs(&ea) != Ordering::Greater
                        && ea.cmp_abs(&hi.mul(&hi)) != Ordering::Greater,
                    "{}",
                    what("sqrt")
                );
                // exact ones
                assert_eq!(exact(&a.neg()), ea.neg(), "{}", what("neg"));
                assert_eq!(exact(&a.abs()), ea.abs(), "{}", what("abs"));
            }
        }
    }

    #[test]
    fn double_operands_and_conversions() {
        let mut rng = rng(2);
        for bits in PRECISIONS {
            let _scope = MpScope::enter(bits);
            for i in 0..CASES {
                let a = rand_mp(&mut rng, bits);
                let b = rand_mp(&mut rng, bits);
                let d = rng.random_range(-1e3..1e3) * 2f64.powi(rng.random_range(-20..20));
                let what =
                    |op: &str| format!("{op} at {bits} bits, case {i}: a = {a:?}, d = {d:e}");
                let ea = exact(&a);
                assert_rounded(&a.mul_f64(d), &ea.mul(&Dyadic::from_f64(d)), bits, &|| {
                    what("mul_f64")
                });
                // self + fl(d b): the product rounded, then the sum, as the default method
                let fused = a.add_mul_f64(d, &b);
                assert_eq!(fused, a.add(&b.mul_f64(d)), "{}", what("add_mul_f64"));
                assert_eq!(fused.prec(), bits);

                // from_f64 exact, to_f64 nearest
                assert_eq!(
                    exact(&Mp::from_f64(d)),
                    Dyadic::from_f64(d),
                    "{}",
                    what("from_f64")
                );
                assert_eq!(Mp::from_f64(d).prec(), bits);
                let x = a.to_f64();
                let err = ea.sub(&Dyadic::from_f64(x)).abs();
                assert!(
                    err.cmp_abs(&half_ulp(&Dyadic::from_f64(x), 53)) != Ordering::Greater,
                    "{}",
                    what("to_f64")
                );
                // to_dd: hi nearest to a, lo nearest to a - hi
                let dd = a.to_dd();
                assert_eq!(dd.hi, x, "{}", what("to_dd hi"));
                let rem = ea.sub(&Dyadic::from_f64(dd.hi));
                if dd.lo == 0.0 {
                    assert!(rem.is_zero(), "{}", what("to_dd lo"));
                } else {
                    let err = rem.sub(&Dyadic::from_f64(dd.lo)).abs();
                    assert!(
                        err.cmp_abs(&half_ulp(&Dyadic::from_f64(dd.lo), 53)) != Ordering::Greater,
                        "{}",
                        what("to_dd lo")
                    );
                }
                // from_dd: rounded once, exact where the sum fits (from 107 bits on for a
                // DD with its parts adjacent, as `to_dd` makes them); also a DD with a gap of
                // zeros between its parts, as DD arithmetic can make
                let gap = Dd::from_f64(d).add(Dd::from_f64(x * 2f64.powi(-60)));
                for dd in [dd, gap] {
                    let back = Mp::from_dd(dd);
                    let edd = Dyadic::from_dd(dd);
                    if span_bits(dd) <= bits as i64 {
                        assert_eq!(exact(&back), edd, "{} {dd:?}", what("from_dd exact"));
                    } else {
                        assert_rounded(&back, &edd, bits, &|| what("from_dd"));
                    }
                }
            }
            assert_eq!(exact(&Mp::zero()), Dyadic::zero());
            assert_eq!(exact(&Mp::one()), Dyadic::from_f64(1.0));
            assert_eq!(Mp::epsilon(), Some(2f64.powi(-(bits as i32))));
        }
    }

    /// Exponent of the last set bit of a nonzero double.
    fn lsb_exponent(x: f64) -> i64 {
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let mant = if biased == 0 {
            bits & ((1 << 52) - 1)
        } else {
            (bits & ((1 << 52) - 1)) | (1 << 52)
        };
        let e = if biased == 0 { -1074 } else { biased - 1075 };
        e + mant.trailing_zeros() as i64
    }

    /// Bits from the leading bit of `hi + lo` down to its last set bit.
    fn span_bits(dd: Dd) -> i64 {
        let v = Dyadic::from_dd(dd);
        let last = if dd.lo != 0.0 {
            lsb_exponent(dd.lo).min(lsb_exponent(dd.hi))
        } else {
            lsb_exponent(dd.hi)
        };
        v.ilog2().unwrap() - last + 1
    }
}

/// Whole solves: `mp:53` is `f64` bit for bit; `mp:106` agrees with `dd` within the rounding
/// differences derived below.
mod solves {
    use precsolve::precond::Preconditioning;
    use precsolve::solver::dispatch::{
        BackendChoice, Method, Problem, Recipe, Solution, WorkingPrecision, solve,
    };
    use precsolve::solver::{NoMonitor, Params, StopReason};
    use precsolve::{CsrMatrix, Dd, Precision};
    use std::sync::Arc;

    const GRADED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices/graded_spd_400.mtx");

    fn problem(spec: &str) -> Problem {
        let a = Arc::new(precsolve::load_matrix(spec).unwrap());
        Problem::new(a, None, None).unwrap()
    }

    fn run(problem: &Problem, method: Method, precision: WorkingPrecision, tol: f64) -> Solution {
        let params = Params {
            tol,
            ..Params::default()
        };
        let recipe = Recipe {
            method,
            precision,
            precond: &Preconditioning::None,
        };
        solve(problem, BackendChoice::Cpu, recipe, &params, &mut NoMonitor).unwrap()
    }

    /// `||x - y||_2` (differences in DD, then double).
    fn dist(x: &[Dd], y: &[Dd]) -> f64 {
        x.iter()
            .zip(y)
            .map(|(a, b)| a.sub(b).to_f64().powi(2))
            .sum::<f64>()
            .sqrt()
    }

    fn norm(x: &[Dd]) -> f64 {
        x.iter().map(|a| a.to_f64().powi(2)).sum::<f64>().sqrt()
    }

    fn inf_norm(a: &CsrMatrix) -> f64 {
        (0..a.nrows())
            .map(|i| {
                let r = a.row_ptr()[i]..a.row_ptr()[i + 1];
                a.values()[r].iter().map(|v| v.abs()).sum::<f64>()
            })
            .fold(0.0, f64::max)
    }

    /// Same iterations, the same residuals and the same solution, bit for bit: MPFR at 53 bits
    /// rounds every operation as IEEE double does (to nearest, ties to even), the kernels run
    /// the same operations in the same order for every precision, and the true residual widens
    /// both solutions to DD exactly. (The exponent range differs, which these solves never
    /// reach.) This pins the whole `mp` path: the generic loops, the kernels, the conversions.
    #[test]
    fn mp_53_is_f64_bit_for_bit() {
        for (spec, method, tol) in [
            ("poisson2d:16", Method::Cg, 1e-10),
            ("poisson2d:16", Method::Bicgstab, 1e-10),
            (GRADED, Method::Cg, 1e-8),
        ] {
            let p = problem(spec);
            let f = run(&p, method, WorkingPrecision::F64, tol);
            let m = run(&p, method, WorkingPrecision::Mp(53), tol);
            assert_same_run(&f, &m, &format!("{spec} {method:?}"));
        }
    }

    fn assert_same_run(f: &Solution, m: &Solution, what: &str) {
        assert_eq!(f.info.iterations, m.info.iterations, "{what}");
        assert_eq!(f.info.stop_reason, m.info.stop_reason, "{what}");
        assert_eq!(
            f.info.recurrence_residual.to_bits(),
            m.info.recurrence_residual.to_bits(),
            "{what}"
        );
        assert_eq!(
            f.info.true_residual.to_bits(),
            m.info.true_residual.to_bits(),
            "{what}"
        );
        assert!(f.x.to_dd() == m.x.to_dd(), "{what}: solutions differ");
        assert!(
            m.x.to_dd().iter().all(|x| x.lo == 0.0),
            "{what}: more than 53 bits"
        );
    }

    /// poisson2d:16 (n = 256, condition ~100): every precision from 53 bits up takes the same
    /// iterations, so the solutions differ only by rounding, to first order linearly in the
    /// unit roundoff: `||x_u - x*|| ~ G u ||x*||` with `x*` the exact-arithmetic iterate (here
    /// `mp:300`, whose own error is 2^-194 times smaller than what is measured) and `G` the
    /// problem's amplification of rounding errors. `G` is measured on correctly rounded runs at
    /// 53, 60, 70 and 80 bits (2.0-3.1 seen) and its maximum taken. Then:
    /// - `mp:106` is correctly rounded with u = 2^-106: `||x_mp - x*|| <= s G 2^-106 ||x*||`;
    /// - `dd`'s operations err by at most 5 u² = 5 * 2^-106 (the largest bound in
    ///   `precision::dd` among the operations of the recurrences, `mul` and `div`):
    ///   `||x_dd - x*|| <= 5 s G 2^-106 ||x*||`;
    ///
    /// with s = 2 for the spread between realisations of the rounding errors (the measured `G`s
    /// vary by 1.5x). Both solutions reach us rounded to the nearest DD (2^-107 each, relative),
    /// so `||x_dd - x_mp|| <= (6 s G + 1) 2^-106 ||x*||` (measured: dd 1.4-1.8, mp:106 2.7-2.9 in
    /// units of 2^-106 against `x*`). The true residuals, each `||b - A x||` formed in DD, differ
    /// by at most `||A||_2 ||x_dd - x_mp||_2` plus the two evaluation errors, each at most
    /// `3 (m + 1) 2^-106 || |A| |x| ||_2` for rows of m entries (m + 1 DD operations, 3 u² each),
    /// all over `||b||_2`; `||A||_2 <= ||A||_inf` for a symmetric A. Iteration counts: equal,
    /// since a stopping test 1e-30 from the tolerance is the only way they could differ.
    #[test]
    fn mp_106_agrees_with_dd_within_rounding_on_poisson() {
        let p = problem("poisson2d:16");
        for method in [Method::Cg, Method::Bicgstab] {
            let tol = 1e-10;
            let reference = run(&p, method, WorkingPrecision::Mp(300), tol);
            let xr = &reference.x.to_dd();
            let g = [53u32, 60, 70, 80]
                .into_iter()
                .map(|bits| {
                    let s = run(&p, method, WorkingPrecision::Mp(bits), tol);
                    assert_eq!(s.info.iterations, reference.info.iterations, "{bits}");
                    dist(&s.x.to_dd(), xr) / norm(xr) / 2f64.powi(-(bits as i32))
                })
                .fold(0.0, f64::max);
            assert!(
                g > 0.5 && g < 100.0,
                "{method:?}: G = {g}: not a small problem?"
            );
            let dd = run(&p, method, WorkingPrecision::Dd, tol);
            let mp = run(&p, method, WorkingPrecision::Mp(106), tol);
            let what = format!("{method:?}, G = {g:.2}");
            let u = 2f64.powi(-106);
            let s = 2.0;
            for sol in [&dd, &mp] {
                assert!(
                    sol.info.stop_reason == StopReason::ConvergedRtol,
                    "{what}: {:?}",
                    sol.info
                );
                assert_eq!(sol.info.iterations, reference.info.iterations, "{what}");
            }
            let (e_dd, e_mp) = (
                dist(&dd.x.to_dd(), xr) / norm(xr),
                dist(&mp.x.to_dd(), xr) / norm(xr),
            );
            println!(
                "{what}: dd {:.2}, mp:106 {:.2} units of 2^-106 from mp:300",
                e_dd / u,
                e_mp / u
            );
            assert!(e_dd <= (5.0 * s * g + 1.0) * u, "{what}: dd {e_dd:e}");
            assert!(e_mp <= (s * g + 1.0) * u, "{what}: mp:106 {e_mp:e}");
            let dx = dist(&dd.x.to_dd(), &mp.x.to_dd());
            assert!(dx <= (6.0 * s * g + 1.0) * u * norm(xr), "{what}: {dx:e}");

            let a = &p.a;
            let b_norm = (a.nrows() as f64).sqrt(); // b = 1
            let max_row = (0..a.nrows())
                .map(|i| a.row_ptr()[i + 1] - a.row_ptr()[i])
                .max()
                .unwrap() as f64;
            // || |A| |x| ||_2 <= ||A||_inf ||x||_2 for symmetric A (|A| has the same norms)
            let eval = 3.0 * (max_row + 1.0) * u * inf_norm(a) * norm(xr);
            let bound = (inf_norm(a) * dx + 2.0 * eval) / b_norm;
            let dtr = (dd.info.true_residual - mp.info.true_residual).abs();
            assert!(
                dtr <= bound,
                "{what}: true residuals differ by {dtr:e} > {bound:e}"
            );
        }
    }

    /// graded_spd_400 (condition ~2e8): CG's loss of orthogonality makes the iteration count
    /// depend on the precision itself, not only on its order: at tol 1e-8, 106, 107, 108 and
    /// 112 bits took 2067, 1994, 1987, 1998 iterations, dd 2074, 300 bits 1046. So `dd` and
    /// `mp:106` cannot be expected to match to 1-2 iterations here; the test measures the spread
    /// among correctly rounded runs at 106-108 bits (80 iterations above) and asks `dd` to lie
    /// within twice of it from `mp:106`. The solutions are compared by what their residuals
    /// allow: `||x_dd - x_mp||_2 <= ||A^-1||_2 (||r_dd||_2 + ||r_mp||_2)`, with
    /// `||A^-1||_2 = 1 / lambda_min` and, for A = D L D (the file's header: L the 5-point
    /// Laplacian on a 20 x 20 grid, D >= 1 diagonal), `lambda_min >= lambda_min(L) =
    /// 8 sin^2(pi / 42)`; plus the DD rounding of the `mp` solution.
    #[test]
    fn mp_106_agrees_with_dd_within_rounding_on_graded_spd() {
        let p = problem(GRADED);
        let tol = 1e-8;
        let runs: Vec<Solution> = [106, 107, 108]
            .map(|bits| run(&p, Method::Cg, WorkingPrecision::Mp(bits), tol))
            .into();
        let counts: Vec<usize> = runs.iter().map(|s| s.info.iterations).collect();
        let spread = counts.iter().max().unwrap() - counts.iter().min().unwrap();
        let dd = run(&p, Method::Cg, WorkingPrecision::Dd, tol);
        let mp = &runs[0];
        println!("mp:106..108 {counts:?}, dd {}", dd.info.iterations);
        assert!(
            dd.info.iterations.abs_diff(mp.info.iterations) <= (2 * spread).max(2),
            "dd {} vs mp:106..108 {counts:?}",
            dd.info.iterations
        );
        for sol in [&dd, mp] {
            assert!(
                sol.info.stop_reason == StopReason::ConvergedRtol,
                "{:?}",
                sol.info
            );
            // converged on the recurrence residual (||r0|| = ||b||): the true one agrees
            assert!(sol.info.true_residual <= tol * 1.01, "{:?}", sol.info);
        }
        let b_norm = 20.0; // b = 1, n = 400
        let lambda_min = 8.0 * (std::f64::consts::PI / 42.0).sin().powi(2);
        let bound = (dd.info.true_residual + mp.info.true_residual) * b_norm / lambda_min
            + 2f64.powi(-106) * norm(&mp.x.to_dd());
        let dx = dist(&dd.x.to_dd(), &mp.x.to_dd());
        println!("||x_dd - x_mp|| = {dx:e} <= {bound:e}");
        assert!(dx <= bound, "{dx:e} > {bound:e}");
    }

    /// Two mp solves at once from two threads, at different precisions: the scope makes them
    /// take turns, so each gives exactly what it gives alone (`mp:53` still `f64` bit for bit).
    #[test]
    fn concurrent_mp_solves_do_not_see_each_others_precision() {
        let p = problem("poisson2d:16");
        let alone = run(&p, Method::Cg, WorkingPrecision::Mp(300), 1e-10);
        let f = run(&p, Method::Cg, WorkingPrecision::F64, 1e-10);
        std::thread::scope(|threads| {
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let p = &p;
                    threads.spawn(move || {
                        let bits = if i % 2 == 0 { 53 } else { 300 };
                        (bits, run(p, Method::Cg, WorkingPrecision::Mp(bits), 1e-10))
                    })
                })
                .collect();
            for h in handles {
                let (bits, s) = h.join().unwrap();
                let expected = if bits == 53 { &f } else { &alone };
                assert_same_run_any(expected, &s, &format!("mp:{bits}"));
            }
        });
    }

    fn assert_same_run_any(f: &Solution, m: &Solution, what: &str) {
        assert_eq!(f.info.iterations, m.info.iterations, "{what}");
        assert_eq!(
            f.info.true_residual.to_bits(),
            m.info.true_residual.to_bits(),
            "{what}"
        );
        // Against f64 (mp:53) the values must agree; against mp the vectors themselves.
        let same = match &f.x {
            precsolve::SolutionVector::F64(_) => f.x.to_dd() == m.x.to_dd(),
            _ => f.x == m.x,
        };
        assert!(same, "{what}: solutions differ");
    }
}

#[cfg(feature = "mpfr")]
#[path = "common/matrices.rs"]
#[allow(dead_code)] // this file uses only the shared folder's helpers
mod matrices;

/// The own `MpFloat` (`mp:<bits>`) and MPFR (`mp-mpfr:<bits>`) round every operation the same
/// way, so whole solves that run the same operations in the same order are identical:
/// iterations, stop reason, both residuals and every bit of the solution (compared as the
/// decimal text that reads back to each value).
#[cfg(feature = "mpfr")]
mod same_bits_as_mpfr {
    use precsolve::precision::exact_decimal::{write_mpfloat, write_mpfr};
    use precsolve::precision::mpfloat::MpVector;
    use precsolve::precond::{PrecondKind, Preconditioning};
    use precsolve::solver::dispatch::{BackendChoice, Method, Problem, Recipe, solve};
    use precsolve::solver::{NoMonitor, Params};
    use precsolve::{SolutionVector, WorkingPrecision};
    use std::sync::Arc;

    fn texts(x: &SolutionVector) -> Vec<String> {
        match x {
            SolutionVector::Mp(v) => match v {
                MpVector::L2(v) => v.iter().map(write_mpfloat).collect(),
                MpVector::L4(v) => v.iter().map(write_mpfloat).collect(),
                MpVector::L8(v) => v.iter().map(write_mpfloat).collect(),
                MpVector::L16(v) => v.iter().map(write_mpfloat).collect(),
                MpVector::L32(v) => v.iter().map(write_mpfloat).collect(),
            },
            SolutionVector::Mpfr(v) => v.iter().map(write_mpfr).collect(),
            other => panic!("not an mp solution: {other:?}"),
        }
    }

    fn check(spec: &str, method: Method, bits: u32, max_iter: usize, ilu0: bool) {
        let a = Arc::new(precsolve::load_matrix(spec).unwrap());
        let precond = match ilu0 {
            true => {
                Preconditioning::prepare(PrecondKind::Ilu0, &a, Default::default(), method).unwrap()
            }
            false => Preconditioning::None,
        };
        let problem = Problem::new(a, None, None).unwrap();
        let params = Params {
            tol: 1e-300,
            max_iter,
            ..Params::default()
        };
        let run = |precision| {
            let recipe = Recipe {
                method,
                precision,
                precond: &precond,
            };
            solve(
                &problem,
                BackendChoice::Cpu,
                recipe,
                &params,
                &mut NoMonitor,
            )
            .unwrap()
        };
        let own = run(WorkingPrecision::Mp(bits));
        let mpfr = run(WorkingPrecision::Mpfr(bits));
        let what = format!("{spec} {method:?} mp:{bits} ilu0 {ilu0}");
        assert_eq!(own.info.iterations, mpfr.info.iterations, "{what}");
        assert!(
            own.info.iterations > 10,
            "{what}: a solve too short to show anything"
        );
        assert_eq!(own.info.stop_reason, mpfr.info.stop_reason, "{what}");
        for (o, m) in [
            (own.info.recurrence_residual, mpfr.info.recurrence_residual),
            (own.info.true_residual, mpfr.info.true_residual),
        ] {
            assert_eq!(o.to_bits(), m.to_bits(), "{what}: {o:e} against {m:e}");
        }
        assert_eq!(texts(&own.x), texts(&mpfr.x), "{what}: solutions differ");
    }

    #[test]
    fn generated_matrices_at_128_256_and_1024_bits() {
        for bits in [128, 256, 1024] {
            check("poisson2d:12", Method::Cg, bits, 60, false);
            check("poisson2d:12", Method::Bicgstab, bits, 40, false);
            check("poisson2d:12", Method::Cg, bits, 20, true);
        }
    }

    #[test]
    #[cfg_attr(
        not(shared_matrices),
        ignore = "needs ../shared/matrices (the team's checkouts, CI)"
    )]
    fn shared_matrices_at_128_256_and_1024_bits() {
        let dir = super::matrices::shared_matrices();
        let m = |name| super::matrices::shared_matrix(&dir, name);
        for bits in [128, 256, 1024] {
            check(&m("bcsstk01"), Method::Cg, bits, 200, false);
            check(&m("gr_30_30"), Method::Cg, bits, 60, false);
            check(&m("cage8"), Method::Bicgstab, bits, 40, false);
            check(&m("gre_115"), Method::Bicgstab, bits, 100, false);
            check(&m("sherman1"), Method::Bicgstab, bits, 30, true);
        }
    }
}

/// `mp-mpfr` over ranks (issue #31): MPFR values travel in a fixed number of words, so a
/// distributed solve keeps the single process's bits (ranks as threads).
#[cfg(feature = "mpfr")]
#[test]
fn mpfr_solves_over_ranks_give_the_single_process_bits() {
    use precsolve::distributed::{CommScope, ThreadGroup};
    use precsolve::{BackendChoice, Solver};
    let a = precsolve::poisson2d(60); // 3,600 rows: blocks of 256-row multiples
    let b = vec![1.0; a.nrows()];
    let precision: WorkingPrecision = "mp-mpfr:160".parse().unwrap();
    let solve = || {
        let s = Solver::cg()
            .backend(BackendChoice::Cpu)
            .tol(1e-40)
            .max_iter(40)
            .solve_in(precision, &a, &b)
            .unwrap();
        format!("{} {:?} {:?}", s.info.iterations, s.info.true_residual, s.x)
    };
    let alone = solve();
    for got in ThreadGroup::run(3, |comm| {
        let _scope = CommScope::enter(comm);
        solve()
    }) {
        assert!(
            got == alone,
            "mp-mpfr:160 over 3 ranks differs from one process"
        );
    }
}
