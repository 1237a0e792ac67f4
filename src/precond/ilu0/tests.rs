use super::*;
use crate::sparse::Symmetry;

fn csr(n: usize, entries: &[(u32, u32, f64)]) -> CsrMatrix {
    let r: Vec<u32> = entries.iter().map(|e| e.0).collect();
    let c: Vec<u32> = entries.iter().map(|e| e.1).collect();
    let v: Vec<f64> = entries.iter().map(|e| e.2).collect();
    CsrMatrix::from_coo(n, n, &r, &c, &v, Symmetry::General).unwrap()
}

#[test]
fn tridiagonal_levels_are_a_chain() {
    let a = csr(
        4,
        &[
            (0, 0, 2.0),
            (0, 1, -1.0),
            (1, 0, -1.0),
            (1, 1, 2.0),
            (1, 2, -1.0),
            (2, 1, -1.0),
            (2, 2, 2.0),
            (2, 3, -1.0),
            (3, 2, -1.0),
            (3, 3, 2.0),
        ],
    );
    let f = Ilu0Factors::new(&a, None).unwrap();
    assert_eq!(f.lower_levels().count(), 4);
    assert_eq!(f.lower_levels().rows, vec![0, 1, 2, 3]);
    assert_eq!(f.upper_levels().rows, vec![3, 2, 1, 0]);
    // tridiagonal ILU(0) is the exact LU: u_11 = 2 - (-1/2)(-1) = 1.5
    assert_eq!(f.values()[f.diag()[1]], 1.5);
}

/// Every row once; a dependency is in an earlier level, and in the same part only if it is
/// in that part's earlier levels; parts are runs of consecutive rows in the solve's order.
fn check_partitioned(t: &OrderedTriangle, n: usize, parts: usize, upper: bool) {
    assert_eq!(t.part_ptr.len(), parts + 1);
    let mut seen = vec![false; n];
    let mut part_of = vec![0usize; n];
    let mut level_of = vec![0usize; n];
    for q in 0..parts {
        let (b, e) = (t.level_ptr[t.part_ptr[q]], t.level_ptr[t.part_ptr[q + 1]]);
        assert_eq!((b, e), (q * n / parts, (q + 1) * n / parts), "part {q}");
        for l in t.part_ptr[q]..t.part_ptr[q + 1] {
            for p in t.level_ptr[l]..t.level_ptr[l + 1] {
                let i = t.rows[p] as usize;
                let solve_index = if upper { n - 1 - i } else { i };
                assert!((b..e).contains(&solve_index), "row {i} outside part {q}");
                assert!(!seen[i]);
                seen[i] = true;
                (part_of[p], level_of[p]) = (q, l);
            }
        }
    }
    assert!(seen.iter().all(|&s| s));
    for p in 0..n {
        for &d in &t.deps[t.ptr[p]..t.ptr[p + 1]] {
            let d = d as usize;
            assert!(level_of[d] < level_of[p] && part_of[d] <= part_of[p]);
            assert_eq!(t.position[t.rows[d] as usize] as usize, d);
        }
    }
}

#[test]
fn partitioned_orders_keep_dependencies_behind() {
    let a = crate::sparse::poisson3d(7);
    let n = a.nrows();
    let f = Ilu0Factors::new(&a, None).unwrap();
    for parts in [1, 2, 5, 48, n, n + 3] {
        for hop in [1, 8] {
            let want = parts.min(n);
            check_partitioned(&f.lower_partitioned(parts, hop), n, want, false);
            check_partitioned(&f.upper_partitioned(parts, hop), n, want, true);
        }
    }
    // one part of a 7^3 grid: its levels are the grid's, 3 * 6 + 1 = 19
    assert_eq!(f.lower_partitioned(1, 8).level_ptr.len(), 20);
    // a part per plane: row (x, y, z) arrives at x + y + 8 z, so each part has the plane's
    // 13 diagonals as levels, and the last part's first starts 8 * 6 steps in
    let seven = f.lower_partitioned(7, 8);
    assert_eq!(seven.part_ptr[1] - seven.part_ptr[0], 13);
    assert_eq!(seven.part_ptr[7] - seven.part_ptr[6], 13);
}

#[test]
fn diagonal_matrix_is_one_level() {
    let a = csr(3, &[(0, 0, 1.0), (1, 1, 2.0), (2, 2, 4.0)]);
    let f = Ilu0Factors::new(&a, None).unwrap();
    assert_eq!(f.lower_levels().count(), 1);
    assert_eq!(f.upper_levels().count(), 1);
    assert_eq!(f.lower_levels().mean_width(), 3.0);
}

#[test]
fn missing_diagonal_names_the_row_and_shift_inserts_it() {
    let a = csr(3, &[(0, 0, 1.0), (1, 0, 1.0), (1, 2, 1.0), (2, 2, 4.0)]);
    let err = Ilu0Factors::new(&a, None).unwrap_err().to_string();
    assert!(err.contains("row 2 has no diagonal"), "{err}");
    let f = Ilu0Factors::new(&a, Some(0.25)).unwrap();
    assert_eq!(f.nnz(), 5);
    assert_eq!(f.sigma(), 1.0);
    // row 2 (0-based 1): l_10 = 1 / (1 + 1), u_11 = 0 + 1 - 0 = 1
    assert_eq!(f.values()[f.diag()[1]], 1.0);
}

/// The automatic shift's factors are those of a fixed shift of its final `s`, bit for bit.
fn assert_same_factors(auto: &Ilu0Factors, a: &CsrMatrix) {
    let s = auto.remedy().expect("the remedy ran").s;
    let fixed = Ilu0Factors::new(a, Some(s)).unwrap();
    assert_eq!(auto.row_ptr(), fixed.row_ptr());
    assert_eq!(auto.col_idx(), fixed.col_idx());
    assert_eq!(auto.diag(), fixed.diag());
    let bits = |f: &Ilu0Factors| f.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(auto), bits(&fixed));
    assert_eq!(auto.sigma().to_bits(), fixed.sigma().to_bits());
    assert!(fixed.remedy().is_none() && fixed.attempts() == 1);
}

#[test]
fn auto_shift_gets_past_a_zero_pivot_and_reports_it() {
    // u_11 = 1 - (1/1) * 1 = 0; max|a_ij| = 1, so sigma = s
    let a = csr(2, &[(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 1.0)]);
    let f = Ilu0Factors::with_shift(&a, IluShift::Shift).unwrap();
    let r = f.remedy().unwrap();
    assert_eq!(r.cause, "zero pivot in row 2");
    // the first shift already factors: the plain attempt and one shifted
    assert_eq!((r.s, r.attempts, f.attempts()), (AUTO_SHIFT_START, 2, 2));
    assert_eq!(f.sigma(), AUTO_SHIFT_START);
    assert_same_factors(&f, &a);
    // no remedy: the error as before
    let err = Ilu0Factors::with_shift(&a, IluShift::None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("zero pivot in row 2"), "{err}");
    // a matrix that factors as given is factored as given
    let b = csr(2, &[(0, 0, 2.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 2.0)]);
    let f = Ilu0Factors::with_shift(&b, IluShift::Auto).unwrap();
    assert!(f.remedy().is_none());
    assert_eq!((f.sigma(), f.attempts()), (0.0, 1));
    let plain = Ilu0Factors::new(&b, None).unwrap();
    assert_eq!(f.values(), plain.values());
}

/// The automatic remedy permutes before it shifts: `[0 b; b 0]` (b near f64::MAX), which
/// no shift gets past, factors once its rows are swapped; the factors are those of the
/// swapped matrix, and the method CG keeps the rows (and shifts, and fails).
#[test]
fn auto_matches_rows_before_it_shifts() {
    let big = 1.7e308;
    let a = csr(2, &[(0, 1, big), (1, 0, big)]);
    let f = Ilu0Factors::with_shift(&a, IluShift::Auto).unwrap();
    let r = f.remedy().unwrap();
    assert_eq!((r.permuted_rows, r.s, r.attempts), (2, 0.0, 2));
    let order = f.row_order().unwrap();
    assert_eq!(order.position, [1, 0]);
    let swapped = Ilu0Factors::new(&order.matrix, None).unwrap();
    assert_eq!(f.values(), swapped.values());
    assert!(Ilu0Factors::with_remedy(&a, IluShift::Auto, false).is_err());
}

#[test]
fn auto_shift_inserts_a_missing_diagonal() {
    // row 2 has no diagonal; max|a_ij| = 4
    let a = csr(3, &[(0, 0, 1.0), (1, 0, 1.0), (1, 2, 1.0), (2, 2, 4.0)]);
    let f = Ilu0Factors::with_shift(&a, IluShift::Auto).unwrap();
    let r = f.remedy().unwrap();
    assert!(
        r.cause.starts_with("row 2 has no diagonal entry (1 of 3"),
        "{r:?}"
    );
    assert_eq!(f.nnz(), 5);
    assert_eq!(f.sigma(), r.s * 4.0);
    assert_same_factors(&f, &a);
    // a fixed shift is exactly `new`
    let fixed = Ilu0Factors::with_shift(&a, IluShift::Fixed(0.25)).unwrap();
    assert!(fixed.remedy().is_none());
    assert_eq!(fixed.sigma(), 1.0);
}

#[test]
fn auto_shift_grows_past_an_overflowing_solve_and_stops_at_the_cap() {
    // A lower bidiagonal chain with no diagonal but the last: with sigma = s the solve of
    // L U x = 1 grows like (1/s)^k, past f64 for small s and long chains, so the shift
    // must grow; an entry of 1e300 against a diagonal of 1e-300 overflows every s <= 100.
    let n = 40;
    let mut e: Vec<(u32, u32, f64)> = (1..n).map(|i| (i, i - 1, 1.0)).collect();
    e.push((0, 0, 1.0));
    let a = csr(n as usize, &e);
    let f = Ilu0Factors::with_shift(&a, IluShift::Shift).unwrap();
    let r = f.remedy().unwrap();
    assert!(r.attempts > 2 && r.s > AUTO_SHIFT_START, "{r:?}");
    assert_same_factors(&f, &a);
    let mut tried = Vec::new();
    let mut s = AUTO_SHIFT_START;
    while s <= AUTO_SHIFT_MAX * (1.0 + 1e-12) {
        tried.push(s);
        s = next_shift(s);
    }
    // no diagonal, entries near f64::MAX: for s < 1 l_10 u_01 overflows, s = 1 leaves a
    // zero pivot, and for s > 1 sigma itself overflows
    let big = 1.7e308;
    let overflow = csr(2, &[(0, 1, big), (1, 0, big)]);
    let err = Ilu0Factors::with_shift(&overflow, IluShift::Shift)
        .unwrap_err()
        .to_string();
    let last = tried.last().unwrap();
    assert!(err.contains(&format!("up to s = {last:e}")), "{err}");
    assert!(
        err.contains(&format!("{} factorizations", tried.len() + 1)),
        "{err}"
    );
}

#[test]
fn shift_choices_parse() {
    assert_eq!(IluShift::parse("auto"), Ok(IluShift::Auto));
    assert_eq!(IluShift::parse("none"), Ok(IluShift::None));
    assert_eq!(IluShift::parse("0"), Ok(IluShift::None));
    assert_eq!(IluShift::parse("1e-8"), Ok(IluShift::Fixed(1e-8)));
    assert!(IluShift::parse("-1").is_err() && IluShift::parse("inf").is_err());
    assert!(IluShift::parse("sometimes").is_err());
    assert_eq!(IluShift::default(), IluShift::Auto);
    assert_eq!(IluShift::Fixed(0.1).to_string(), "1e-1");
}

#[test]
fn zero_pivot_names_the_row() {
    // u_11 = 1 - (1/1) * 1 = 0
    let a = csr(2, &[(0, 0, 1.0), (0, 1, 1.0), (1, 0, 1.0), (1, 1, 1.0)]);
    let err = Ilu0Factors::new(&a, None).unwrap_err().to_string();
    assert!(err.contains("zero pivot in row 2"), "{err}");
    assert!(Ilu0Factors::new(&a, Some(0.5)).is_ok());
    assert!(Ilu0Factors::new(&a, Some(-1.0)).is_err());
}
