//! ILU(0): factors against an independent dense elimination restricted to the pattern, the
//! defining property `(L U)_ij = a_ij` on the pattern, applications against dense triangular
//! solves, and the same bits from every schedule and thread count.

use precsolve::backend::Backend;
use precsolve::backend::cpu::CpuBackend;
use precsolve::backend::cpu::trisolve::{CpuIlu, Schedule};
use precsolve::precision::Td;
use precsolve::precond::ilu0::Ilu0Factors;
use precsolve::sparse::{CsrMatrix, Symmetry, poisson2d, poisson3d};
use precsolve::{Dd, Precision};
use std::sync::Arc;

/// xorshift64*: reproducible inputs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn value(&mut self) -> f64 {
        self.unit() * 2.0 - 1.0
    }
}

/// A nonsymmetric random matrix with about `per_row` off-diagonal entries per row, a full
/// diagonal dominant enough for the factorization to exist, and a few explicit zeros.
fn random_matrix(rng: &mut Rng, n: usize, per_row: usize) -> CsrMatrix {
    let (mut r, mut c, mut v) = (vec![], vec![], vec![]);
    for i in 0..n {
        let mut sum = 0.0;
        for _ in 0..per_row {
            let j = (rng.next() % n as u64) as usize;
            if j != i {
                let x = if rng.next().is_multiple_of(10) {
                    0.0
                } else {
                    rng.value()
                };
                sum += x.abs();
                r.push(i as u32);
                c.push(j as u32);
                v.push(x);
            }
        }
        r.push(i as u32);
        c.push(i as u32);
        v.push(sum * (0.6 + rng.unit()) + 0.1);
    }
    CsrMatrix::from_coo(n, n, &r, &c, &v, Symmetry::General).unwrap()
}

fn dense(a: &CsrMatrix) -> (Vec<Vec<f64>>, Vec<Vec<bool>>) {
    let n = a.nrows();
    let mut m = vec![vec![0.0; n]; n];
    let mut pattern = vec![vec![false; n]; n];
    for i in 0..n {
        let (cols, vals) = a.row(i);
        for (&j, &x) in cols.iter().zip(vals) {
            m[i][j as usize] = x;
            pattern[i][j as usize] = true;
        }
    }
    (m, pattern)
}

/// Gaussian elimination in KIJ order on a dense copy, dropping every update outside the pattern:
/// the textbook definition of ILU(0) (Saad, Iterative Methods, Alg. 10.4), written separately
/// from the library's row-wise IKJ sparse code.
fn dense_ilu0(a: &CsrMatrix) -> Vec<Vec<f64>> {
    let (mut m, pattern) = dense(a);
    let n = m.len();
    for k in 0..n {
        for i in k + 1..n {
            if !pattern[i][k] {
                continue;
            }
            m[i][k] /= m[k][k];
            for j in k + 1..n {
                if pattern[i][j] && pattern[k][j] {
                    m[i][j] -= m[i][k] * m[k][j];
                }
            }
        }
    }
    m
}

fn factor_at(f: &Ilu0Factors, i: usize, j: usize) -> Option<f64> {
    let range = f.row_ptr()[i]..f.row_ptr()[i + 1];
    let k = f.col_idx()[range.clone()].binary_search(&(j as i32)).ok()?;
    Some(f.values()[range.start + k])
}

fn relative(a: f64, b: f64, scale: f64) -> f64 {
    (a - b).abs() / scale.max(f64::MIN_POSITIVE)
}

#[test]
fn factors_match_a_dense_elimination_restricted_to_the_pattern() {
    let mut rng = Rng(0x1105_2026);
    for (n, per_row) in [(1, 1), (2, 2), (7, 3), (40, 4), (120, 9)] {
        let a = random_matrix(&mut rng, n, per_row);
        let f = Ilu0Factors::new(&a, None).unwrap();
        let want = dense_ilu0(&a);
        let (_, pattern) = dense(&a);
        let scale = a.values().iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..n {
            for j in 0..n {
                match factor_at(&f, i, j) {
                    Some(got) => {
                        assert!(pattern[i][j]);
                        let err = relative(got, want[i][j], scale.max(want[i][j].abs()));
                        assert!(err <= 1e-13, "n={n} ({i},{j}): {got} vs {}", want[i][j]);
                    }
                    None => assert!(!pattern[i][j], "n={n}: ({i},{j}) lost from the pattern"),
                }
            }
        }
        assert_eq!(
            f.nnz(),
            a.nnz(),
            "ILU(0) keeps A's pattern, explicit zeros included"
        );
    }
}

#[test]
fn l_times_u_reproduces_a_on_its_pattern() {
    let mut rng = Rng(77);
    let a = random_matrix(&mut rng, 200, 6);
    let f = Ilu0Factors::new(&a, None).unwrap();
    let n = a.nrows();
    let l = |i: usize, k: usize| match k.cmp(&i) {
        std::cmp::Ordering::Less => factor_at(&f, i, k).unwrap_or(0.0),
        std::cmp::Ordering::Equal => 1.0,
        std::cmp::Ordering::Greater => 0.0,
    };
    let u = |k: usize, j: usize| {
        if k <= j {
            factor_at(&f, k, j).unwrap_or(0.0)
        } else {
            0.0
        }
    };
    for i in 0..n {
        let (cols, vals) = a.row(i);
        for (&j, &aij) in cols.iter().zip(vals) {
            let j = j as usize;
            let (mut lu, mut size) = (0.0, 0.0f64);
            for k in 0..=i.min(j) {
                let term = l(i, k) * u(k, j);
                lu += term;
                size = size.max(term.abs());
            }
            assert!(
                (lu - aij).abs() <= 1e-13 * size.max(aij.abs()).max(1.0),
                "({i},{j}): (LU) = {lu}, a = {aij}"
            );
        }
    }
}

/// `U^{-1} L^{-1} r` by dense substitution, in plain f64 loops.
fn dense_apply(f: &Ilu0Factors, r: &[f64]) -> Vec<f64> {
    let n = r.len();
    let mut y = r.to_vec();
    for i in 0..n {
        for j in 0..i {
            if let Some(l) = factor_at(f, i, j) {
                y[i] -= l * y[j];
            }
        }
    }
    for i in (0..n).rev() {
        for j in i + 1..n {
            if let Some(u) = factor_at(f, i, j) {
                y[i] -= u * y[j];
            }
        }
        y[i] /= factor_at(f, i, i).unwrap();
    }
    y
}

#[test]
fn application_matches_dense_substitution() {
    let mut rng = Rng(5);
    let a = random_matrix(&mut rng, 150, 5);
    let f = Arc::new(Ilu0Factors::new(&a, None).unwrap());
    let r: Vec<f64> = (0..150).map(|_| rng.value()).collect();
    let want = dense_apply(&f, &r);
    let mut z = vec![0.0; 150];
    CpuIlu::new(f).apply::<f64, f64>(&r, &mut z);
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (g, w)) in z.iter().zip(&want).enumerate() {
        assert!(relative(*g, *w, scale) <= 1e-12, "row {i}: {g} vs {w}");
    }
}

/// Every schedule and thread count gives the same bits, in f64 and DD; the DD application is
/// the f64 one on the rounded input, widened exactly.
#[test]
fn schedules_thread_counts_and_precisions_give_the_same_bits() {
    let cases = [
        poisson3d(24),
        poisson2d(90),
        random_matrix(&mut Rng(9), 5000, 7),
        random_matrix(&mut Rng(10), 30000, 3),
    ];
    let mut widest_level = 0;
    for a in cases {
        let n = a.nrows();
        let f = Arc::new(Ilu0Factors::new(&a, None).unwrap());
        let levels = f.lower_levels();
        widest_level = (0..levels.count())
            .map(|l| levels.level(l).len())
            .fold(widest_level, usize::max);
        let mut rng = Rng(n as u64);
        let r: Vec<f64> = (0..n).map(|_| rng.value()).collect();
        let mut want = vec![0.0; n];
        CpuIlu::with_schedule(f.clone(), Schedule::Sequential).apply::<f64, f64>(&r, &mut want);
        for threads in [1, 2, 5] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut z = vec![0.0; n];
                CpuIlu::with_schedule(f.clone(), Schedule::Levels).apply::<f64, f64>(&r, &mut z);
                assert!(bits_equal(&z, &want), "n={n}, {threads} threads, levels");
                let mut z = vec![0.0; n];
                CpuIlu::new(f.clone()).apply::<f64, f64>(&r, &mut z);
                assert!(bits_equal(&z, &want), "n={n}, {threads} threads, auto");
                // the GPU's partitioned order, walked level by level
                for (parts, hop) in [(1, 8), (7, 1), (132, 8)] {
                    let mut z = vec![0.0; n];
                    CpuIlu::with_schedule(f.clone(), Schedule::Partitioned { parts, hop })
                        .apply::<f64, f64>(&r, &mut z);
                    assert!(
                        bits_equal(&z, &want),
                        "n={n}, {threads} threads, {parts} parts"
                    );
                }
            });
        }
        let r_dd: Vec<Dd> = r
            .iter()
            .map(|&x| Dd::new(x, x * 1e-17 * rng.value()))
            .collect();
        let rounded: Vec<f64> = r_dd.iter().map(Precision::to_f64).collect();
        let mut want_dd = vec![0.0; n];
        CpuIlu::new(f.clone()).apply::<f64, f64>(&rounded, &mut want_dd);
        let backend = CpuBackend::new();
        let mut ilu = backend.ilu(&f).unwrap();
        let mut z = backend.zeros::<Dd>(n).unwrap();
        backend
            .ilu_apply(&mut ilu, &backend.upload(&r_dd).unwrap(), &mut z)
            .unwrap();
        for (i, (zi, wi)) in z.to_values().iter().zip(&want_dd).enumerate() {
            assert_eq!((zi.hi.to_bits(), zi.lo), (wi.to_bits(), 0.0), "row {i}");
        }
        // The result kept in double (what CG reads widened): the same values.
        let mut z64 = backend.zeros::<f64>(n).unwrap();
        backend
            .ilu_apply(&mut ilu, &backend.upload(&r_dd).unwrap(), &mut z64)
            .unwrap();
        for (i, (zi, wi)) in z64.to_values().iter().zip(&want_dd).enumerate() {
            assert_eq!(zi.to_bits(), wi.to_bits(), "row {i}, f64 result");
        }
        // td (two arrays on the CPU): the same solve on the input rounded to f64.
        let r_td: Vec<Td> = r_dd.iter().map(|&x| Td::from_dd(x)).collect();
        let rounded: Vec<f64> = r_td.iter().map(Precision::to_f64).collect();
        let mut want_td = vec![0.0; n];
        CpuIlu::new(f.clone()).apply::<f64, f64>(&rounded, &mut want_td);
        let mut z = backend.zeros::<Td>(n).unwrap();
        backend
            .ilu_apply(&mut ilu, &backend.upload(&r_td).unwrap(), &mut z)
            .unwrap();
        for (i, (zi, wi)) in z.to_values().iter().zip(&want_td).enumerate() {
            assert_eq!(zi.parts(), (*wi, 0), "td row {i}");
        }
    }
    // Levels this wide are split over the kernel threads (narrower ones run inline).
    assert!(widest_level >= 4096, "no case exercised a parallel level");
}

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn level_counts_of_the_model_problems() {
    // 7-point Poisson on an m^3 grid in natural order: level = i + j + k, 3 (m - 1) + 1 levels.
    let f = Ilu0Factors::new(&poisson3d(10), None).unwrap();
    assert_eq!(f.lower_levels().count(), 28);
    assert_eq!(f.upper_levels().count(), 28);
    let f = Ilu0Factors::new(&poisson2d(10), None).unwrap();
    assert_eq!(f.lower_levels().count(), 19);
}
