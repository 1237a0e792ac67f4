//! The `solver` binary end to end: exit codes, the report's fields, and the files it writes.

mod common;

use common::cli::{EXIT_BAD_INPUT, EXIT_NOT_CONVERGED, EXIT_OK, EXIT_USAGE, solver};
use std::process::Output;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Run `solver` expecting success, and parse its JSON report from stdout.
fn solve_json(args: &[&str], dir: &std::path::Path) -> serde_json::Value {
    let out = solver(args, dir);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// The precisions of a JSON report's runs, in column order.
fn precision_order(json: &serde_json::Value) -> Vec<String> {
    json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["precision"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn converged_solve_prints_both_precisions_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(&["solve", "poisson2d:20", "--tol", "1e-10"], dir.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stdout}\n{stderr}");
    for needle in [
        "f64",
        "dd",
        "dd/f64",
        "iterations",
        "true residual",
        "time / iteration",
        "total time",
        "converged",
    ] {
        assert!(stdout.contains(needle), "table lacks `{needle}`:\n{stdout}");
    }
}

#[test]
fn json_report_has_every_field_for_each_precision() {
    let dir = tempfile::tempdir().unwrap();
    let json = solve_json(
        &[
            "solve",
            "poisson3d:8",
            "--format",
            "json",
            "--method",
            "bicgstab",
            "-q",
        ],
        dir.path(),
    );
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["precision"], "f64");
    assert_eq!(runs[1]["precision"], "dd");
    for run in runs {
        assert_eq!(run["method"], "bicgstab");
        assert_eq!(run["converged"], true);
        assert_eq!(run["stop_reason"]["kind"], "converged-rtol");
        for field in [
            "iterations",
            "recurrence_residual",
            "true_residual",
            "setup_time",
            "time_per_iteration",
            "total_time",
            "time_to_target",
        ] {
            assert!(run[field].is_number(), "run lacks numeric `{field}`: {run}");
        }
    }
    let ratios = &json["ratios"][0];
    assert_eq!(
        (ratios["precision"].as_str(), ratios["against"].as_str()),
        (Some("dd"), Some("f64"))
    );
    for field in ["iterations", "time_per_iteration", "total_time"] {
        assert!(ratios[field].is_number(), "ratios lack `{field}`");
    }
    assert_eq!(json["matrix"]["rows"], 512);
}

#[test]
fn not_converged_has_its_own_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(
        &[
            "solve",
            "poisson2d:30",
            "--max-iter",
            "2",
            "--precision",
            "dd",
        ],
        dir.path(),
    );
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_NOT_CONVERGED), "{stdout}");
    assert!(stdout.contains("max iterations"), "{stdout}");
}

#[test]
fn bad_input_names_file_and_line_with_its_own_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.mtx");
    std::fs::write(
        &bad,
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n3 1 2.0\n",
    )
    .unwrap();
    let out = solver(&["solve", bad.to_str().unwrap()], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("bad.mtx") && stderr.contains("line 4"),
        "{stderr}"
    );

    let out = solver(
        &["solve", dir.path().join("missing.mtx").to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{:?}", text(&out));
    assert!(text(&out).1.contains("missing.mtx"));

    let out = solver(&["solve", "poisson2d:x"], dir.path());
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT));
}

#[test]
fn usage_errors_are_clap_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(
        &["solve", "poisson2d:4", "--precision", "fp128"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(EXIT_USAGE));
}

#[test]
fn config_file_is_read_and_its_mistakes_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("solver.toml"), "[solve]\nmax_iter = 2\n").unwrap();
    let out = solver(&["solve", "poisson2d:30", "-q"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(EXIT_NOT_CONVERGED),
        "./solver.toml sets max_iter = 2"
    );
    let out = solver(
        &["solve", "poisson2d:30", "-q", "--max-iter", "1000"],
        dir.path(),
    );
    assert_eq!(
        out.status.code(),
        Some(EXIT_OK),
        "the flag overrides the file"
    );

    std::fs::write(dir.path().join("typo.toml"), "[solve]\n\ntoll = 1e-9\n").unwrap();
    let out = solver(
        &["--config", "typo.toml", "solve", "poisson2d:4"],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("typo.toml")
            && stderr.contains("line 3, column 1")
            && stderr.contains("toll"),
        "{stderr}"
    );
}

#[test]
fn history_csv_and_solution_file_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(
        &[
            "solve",
            "poisson2d:10",
            "--history",
            "h.csv",
            "--write-x",
            "x.mtx",
            "--true-residual-every",
            "4",
            "-q",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    let csv = std::fs::read_to_string(dir.path().join("h.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("precision,method,iteration,step,recurrence_residual,true_residual,elapsed_s")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().any(|r| r[0] == "f64") && rows.iter().any(|r| r[0] == "dd"));
    assert!(rows.iter().all(|r| r[3] == "full"), "CG has no half steps");
    assert!(
        rows.iter().any(|r| r[2] == "4" && !r[5].is_empty()),
        "true residual at iteration 4"
    );
    let x = std::fs::read_to_string(dir.path().join("x.mtx")).unwrap();
    assert!(x.starts_with("%%MatrixMarket matrix array real general"));
    assert!(x.contains("\n100 1\n"));
    assert_eq!(x.lines().filter(|l| !l.starts_with('%')).count(), 101);
}

#[test]
fn info_describes_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(&["info", "poisson3d:5", "--format", "json"], dir.path());
    assert_eq!(out.status.code(), Some(EXIT_OK));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["rows"], 125);
    assert_eq!(json["nnz"], 125 * 7 - 6 * 25);
    assert_eq!(json["symmetry"], "symmetric");
    assert_eq!(json["missing_diagonal"], 0);
    let out = solver(&["info", "poisson2d:3"], dir.path());
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("9 x 9") && stdout.contains("every diagonal entry stored"),
        "{stdout}"
    );
}

#[test]
fn rhs_and_initial_guess_are_read_from_files() {
    let dir = tempfile::tempdir().unwrap();
    // A 9 x 9 Poisson system with b = A (1, ..., 1): the solution is all ones.
    let a = precsolve::sparse::poisson2d(3);
    let b: Vec<f64> = (0..9).map(|i| a.row(i).1.iter().sum()).collect();
    let mut rhs = String::from("%%MatrixMarket matrix array real general\n9 1\n");
    for v in &b {
        rhs.push_str(&format!("{v:e}\n"));
    }
    std::fs::write(dir.path().join("b.mtx"), rhs).unwrap();
    // x0 as a coordinate vector: missing entries are zero.
    std::fs::write(
        dir.path().join("x0.mtx"),
        "%%MatrixMarket matrix coordinate real general\n9 1 2\n1 1 0.5\n9 1 2.0\n",
    )
    .unwrap();
    let out = solver(
        &[
            "solve",
            "poisson2d:3",
            "--rhs",
            "b.mtx",
            "--x0",
            "x0.mtx",
            "--tol",
            "1e-14",
            "--precision",
            "dd",
            "--write-x",
            "x.mtx",
            "-q",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    let x = std::fs::read_to_string(dir.path().join("x.mtx")).unwrap();
    let values: Vec<f64> = x
        .lines()
        .filter(|l| !l.starts_with('%'))
        .skip(1)
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(values.len(), 9);
    for v in values {
        assert!((v - 1.0).abs() < 1e-13, "solution entry {v}");
    }
    // A right-hand side of the wrong length is bad input that names both sizes.
    std::fs::write(
        dir.path().join("short.mtx"),
        "%%MatrixMarket matrix array real general\n2 1\n1\n2\n",
    )
    .unwrap();
    let out = solver(&["solve", "poisson2d:3", "--rhs", "short.mtx"], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("2 entries") && stderr.contains("9 rows"),
        "{stderr}"
    );
}

fn sample(path: &str) -> String {
    format!("{}/matrices/{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn ilu0_solves_report_the_preconditioner_and_its_share() {
    let dir = tempfile::tempdir().unwrap();
    let graded = sample("graded_spd_400.mtx");
    let args = ["solve", &graded, "--tol", "1e-12", "--precond", "ilu0"];
    let json = solve_json(
        &[&args[..], &["--format", "json", "-q"]].concat(),
        dir.path(),
    );
    for run in json["runs"].as_array().unwrap() {
        assert_eq!(run["precond"], "ilu0");
        // Unpreconditioned CG needs thousands of iterations here (README), ILU(0) 34.
        assert!(run["iterations"].as_u64().unwrap() < 100, "{run}");
        let share = run["precond_share"].as_f64().unwrap();
        assert!(share > 0.0 && share < 1.0, "{run}");
        assert!(run["precond_setup_time"].as_f64().unwrap() > 0.0);
    }
    let out = solver(&args, dir.path());
    let (stdout, _) = text(&out);
    assert!(stdout.contains("precond ilu0"), "{stdout}");
    assert!(stdout.contains("precond [% of iter.]"), "{stdout}");
}

#[test]
fn ilu0_zero_pivot_and_missing_diagonal_are_remedied_by_default_and_name_file_and_row_without() {
    let dir = tempfile::tempdir().unwrap();
    // (matrix, cause, default remedy: the s and the factorizations after the matching)
    for (file, needle, s, attempts) in [
        ("ilu/zero_pivot.mtx", "zero pivot in row 2", 1e-10, 3),
        (
            "ilu/missing_diagonal.mtx",
            "row 2 has no diagonal entry",
            0.0,
            2,
        ),
    ] {
        let path = sample(file);
        // The default (`--ilu-shift auto`): the matching, then the shift where the permuted
        // matrix still meets a zero pivot; what ran is reported, and why.
        let out = solver(&["solve", &path, "--precond", "ilu0", "-q"], dir.path());
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_OK), "{stdout}{stderr}");
        assert!(
            stdout.contains(&format!("ILU(0)   remedy: {needle}"))
                && stdout.contains("rows permuted by a matching (2 moved), scaled")
                && stdout.contains(&format!("({attempts} factorizations)")),
            "{stdout}"
        );
        let json = [
            &["solve", &path, "--precond", "ilu0", "-q"][..],
            &["--format", "json"],
        ];
        let out = solver(&json.concat(), dir.path());
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for run in report["runs"].as_array().unwrap() {
            assert_eq!(run["stop_reason"]["kind"], "converged-rtol", "{run}");
            let remedy = &run["ilu_remedy"];
            assert!(remedy["cause"].as_str().unwrap().contains(needle), "{run}");
            assert_eq!(
                (
                    remedy["s"].as_f64(),
                    remedy["attempts"].as_u64(),
                    remedy["permuted_rows"].as_u64()
                ),
                (Some(s), Some(attempts), Some(2))
            );
        }
        // The shift alone (`--ilu-shift shift`): A + s max|a_ij| I at the first s.
        let shift = [
            "solve",
            &path,
            "--precond",
            "ilu0",
            "--ilu-shift",
            "shift",
            "-q",
        ];
        let out = solver(&shift, dir.path());
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_OK), "{stdout}{stderr}");
        assert!(
            stdout.contains(&format!("ILU(0)   remedy: {needle}"))
                && stdout.contains(": shift s = 1e-10 x max|a_ij| (2 factorizations); sigma = "),
            "{stdout}"
        );
        // No remedy: the error names the file and the row, and says how to go on.
        for none in ["none", "0"] {
            let args = [
                "solve",
                &path,
                "--precond",
                "ilu0",
                "--ilu-shift",
                none,
                "-q",
            ];
            let out = solver(&args, dir.path());
            let (_, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
            assert!(stderr.contains(file) && stderr.contains(needle), "{stderr}");
            assert!(
                stderr.contains("--ilu-shift"),
                "the error says how to go on: {stderr}"
            );
        }
        let shifted = [
            "solve",
            &path,
            "--precond",
            "ilu0",
            "--ilu-shift",
            "0.1",
            "-q",
        ];
        let out = solver(&shifted, dir.path());
        let (stdout, _) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_OK), "{file}: {:?}", text(&out));
        assert!(stdout.contains("(given: --ilu-shift)"), "{stdout}");
    }
    // A matrix ILU(0) factors as given: no shift line.
    let out = solver(
        &["solve", "poisson2d:8", "--precond", "ilu0", "-q"],
        dir.path(),
    );
    assert!(!text(&out).0.contains("ILU(0)   shift"), "{:?}", text(&out));
    // A shift without ILU(0) is a configuration mistake; a negative one a usage error that
    // the range check answers (written as `-5` or `=-1`).
    let out = solver(&["solve", "poisson2d:8", "--ilu-shift", "0.1"], dir.path());
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{:?}", text(&out));
    assert!(text(&out).1.contains("ilu_shift"), "{:?}", text(&out));
    for shift in [&["--ilu-shift=-1"][..], &["--ilu-shift", "-5"][..]] {
        let mut args = vec!["solve", "poisson2d:8", "--precond", "ilu0"];
        args.extend_from_slice(shift);
        let out = solver(&args, dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{shift:?}: {stderr}");
        assert!(
            stderr.contains("--ilu-shift")
                && stderr.contains("must be auto, 0 or none (no shift) or a positive"),
            "{stderr}"
        );
        assert!(
            !stderr.contains("-- -"),
            "no clap tip to use `--`: {stderr}"
        );
    }
}

#[test]
fn precision_lists_run_in_order_with_ratios_against_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "solve",
        "poisson2d:12",
        "--precision",
        "dd,f64",
        "--format",
        "json",
    ];
    let json = solve_json(&args, dir.path());
    let order = precision_order(&json);
    assert_eq!(order, ["dd", "f64"]);
    assert_eq!(json["ratios"][0]["against"], "dd");
    for bad in ["f64,f64", "f64,xx", ""] {
        let out = solver(&["solve", "poisson2d:4", "--precision", bad], dir.path());
        assert_eq!(
            out.status.code(),
            Some(EXIT_USAGE),
            "{bad}: {:?}",
            text(&out)
        );
    }
}

#[test]
fn qd_runs_on_the_cpu_as_a_third_column_with_ratios_against_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["solve", "poisson2d:12", "--precision", "f64,dd,qd"];
    let args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--backend", "cpu", "--tol", "1e-10", "--format", "json"])
        .collect();
    let json = solve_json(&args, dir.path());
    let runs = json["runs"].as_array().unwrap();
    let order = precision_order(&json);
    assert_eq!(order, ["f64", "dd", "qd"]);
    for run in runs {
        assert_eq!(run["converged"], true, "{run}");
        assert_eq!(run["backend"], "cpu", "{run}");
    }
    let ratios = json["ratios"].as_array().unwrap();
    let pairs: Vec<_> = ratios
        .iter()
        .map(|r| {
            (
                r["precision"].as_str().unwrap(),
                r["against"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(pairs, [("dd", "f64"), ("qd", "f64")]);
    for field in ["iterations", "time_per_iteration", "total_time"] {
        assert!(ratios[1][field].is_number(), "qd ratios lack `{field}`");
    }

    // The table: one column per precision, one ratio column per later precision.
    let table_args: Vec<&str> = base
        .iter()
        .copied()
        .chain(["--backend", "cpu", "-q"])
        .collect();
    let out = solver(&table_args, dir.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stdout}\n{stderr}");
    let header = stdout
        .lines()
        .find(|l| l.contains("qd/f64"))
        .unwrap_or_else(|| panic!("no qd/f64 column:\n{stdout}"));
    let cols: Vec<_> = header.split_whitespace().collect();
    assert_eq!(cols, ["f64", "dd", "qd", "dd/f64", "qd/f64"], "{stdout}");
}

#[test]
fn qd_on_the_cuda_backend_is_no_longer_refused_as_cpu_only() {
    // qd has CUDA kernels since issue #6: with a GPU these solves run there; without one they
    // fail for want of a GPU, like f64 and dd, never with the old "CPU only" refusal.
    let dir = tempfile::tempdir().unwrap();
    for list in ["f64,dd,qd", "qd"] {
        let out = solver(
            &[
                "solve",
                "poisson2d:12",
                "--precision",
                list,
                "--backend",
                "cuda",
            ],
            dir.path(),
        );
        let (stdout, stderr) = text(&out);
        assert!(!stderr.contains("CPU only"), "{list}: {stderr}");
        if out.status.code() != Some(EXIT_OK) {
            assert!(stdout.is_empty(), "{list}: no report expected:\n{stdout}");
        }
    }
    // auto runs the whole comparison on one backend (with or without a GPU)
    let json = solve_json(
        &[
            "solve",
            "poisson2d:8",
            "--precision",
            "f64,qd",
            "--backend",
            "auto",
            "--format",
            "json",
        ],
        dir.path(),
    );
    let runs = json["runs"].as_array().unwrap();
    assert!(
        runs.iter().all(|r| r["backend"] == runs[0]["backend"]),
        "{json}"
    );
}

#[test]
fn four_precisions_side_by_side_on_the_cpu() {
    // issue #6: `--precision f64,td,dd,qd` prints one column per precision and ratios against
    // the first; td sits between f64 and dd in iterations on this ill-conditioned SPD matrix.
    let dir = tempfile::tempdir().unwrap();
    let matrix = concat!(env!("CARGO_MANIFEST_DIR"), "/matrices/graded_spd_400.mtx");
    let out = solver(
        &[
            "solve",
            matrix,
            "--precision",
            "f64,td,dd,qd",
            "--backend",
            "cpu",
            "--tol",
            "1e-12",
            "-q",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stdout}\n{stderr}");
    let header = stdout
        .lines()
        .find(|l| l.contains("td/f64"))
        .unwrap_or_else(|| panic!("no td/f64 column:\n{stdout}"));
    let cols: Vec<_> = header.split_whitespace().collect();
    assert_eq!(
        cols,
        ["f64", "td", "dd", "qd", "td/f64", "dd/f64", "qd/f64"],
        "{stdout}"
    );
    let iterations: Vec<usize> = stdout
        .lines()
        .find(|l| l.starts_with("iterations"))
        .unwrap()
        .split_whitespace()
        .skip(1)
        .take(4)
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(iterations, [3642, 3029, 2629, 1644], "{stdout}");
}

/// `mp-mpfr:<bits>` needs the `mpfr` feature: without it, a clear usage error naming the
/// feature, how to build it and the own `mp:<bits>`, before anything is loaded (no report).
/// `mp:<bits>` runs in every build.
#[cfg(not(feature = "mpfr"))]
#[test]
fn mpfr_without_the_feature_is_a_clear_error_and_mp_runs() {
    let dir = tempfile::tempdir().unwrap();
    for list in ["mp-mpfr:256", "f64,dd,mp-mpfr:256"] {
        let out = solver(
            &[
                "solve",
                "poisson2d:8",
                "--precision",
                list,
                "--backend",
                "cpu",
            ],
            dir.path(),
        );
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{list}: {stderr}");
        assert!(stdout.is_empty(), "{list}: {stdout}");
        assert!(
            stderr.contains("built without the `mpfr` feature")
                && stderr.contains("cargo build --release --features mpfr")
                && stderr.contains("mp:<bits>"),
            "{list}: {stderr}"
        );
    }
    let out = solver(
        &[
            "solve",
            "poisson2d:8",
            "--precision",
            "f64,mp:256",
            "--backend",
            "cpu",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stderr}");
    assert!(stdout.contains("mp:256"), "{stdout}");
}

/// Malformed `mp` precisions are usage errors in every build.
#[test]
fn mp_needs_a_valid_number_of_bits() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["mp", "mp:x", "mp:0", "mp:52", "f64,mp:"] {
        let out = solver(&["solve", "poisson2d:4", "--precision", bad], dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{bad}: {stderr}");
        assert!(stderr.contains("mp:<bits>"), "{bad}: {stderr}");
    }
}

/// `mp:256` beside f64 and dd on the CPU: its own column named `mp:256`, ratios against f64;
/// MPFR's precision on `--backend cuda` refused before any work, and `auto` run on the CPU here
/// (no GPU in CI).
#[cfg(feature = "mpfr")]
#[test]
fn mp_runs_on_the_cpu_beside_f64_and_dd() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "solve",
        "poisson2d:12",
        "--precision",
        "f64,dd,mp:256",
        "--backend",
        "cpu",
        "--tol",
        "1e-10",
        "--format",
        "json",
    ];
    let json = solve_json(&args, dir.path());
    let runs = json["runs"].as_array().unwrap();
    let order = precision_order(&json);
    assert_eq!(order, ["f64", "dd", "mp:256"]);
    for run in runs {
        assert_eq!(run["converged"], true, "{run}");
        assert_eq!(run["backend"], "cpu", "{run}");
    }
    assert_eq!(runs[1]["iterations"], runs[2]["iterations"]);
    assert_eq!(json["ratios"][1]["precision"], "mp:256");
    assert_eq!(json["ratios"][1]["against"], "f64");

    let out = solver(
        &[
            "solve",
            "poisson2d:12",
            "--precision",
            "f64,mp-mpfr:256",
            "--backend",
            "cuda",
        ],
        dir.path(),
    );
    let (stdout, stderr) = text(&out);
    assert_ne!(out.status.code(), Some(EXIT_OK));
    assert!(stdout.is_empty(), "no report expected:\n{stdout}");
    assert!(
        stderr.contains("mp-mpfr:256 runs on the CPU only (MPFR)")
            && stderr.contains("--backend cpu"),
        "{stderr}"
    );
    let json = solve_json(
        &[
            "solve",
            "poisson2d:8",
            "--precision",
            "mp:128",
            "--backend",
            "auto",
            "--format",
            "json",
        ],
        dir.path(),
    );
    assert_eq!(json["runs"][0]["backend"], "cpu");
    assert_eq!(json["runs"][0]["precision"], "mp:128");
}

/// A study with `mp:128` records it under that name and resumes: the second run finds the
/// record (the key round-trips) and runs nothing.
#[cfg(feature = "mpfr")]
#[test]
fn batch_records_mp_runs_and_resumes_them() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study");
    let study = study.to_str().unwrap();
    let args = [
        "batch",
        "poisson2d:8",
        "--precision",
        "dd,mp:128",
        "--backend",
        "cpu",
        "--out",
        study,
        "-q",
    ];
    let out = solver(&args, dir.path());
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    let runs = std::fs::read_to_string(dir.path().join("study/runs.jsonl")).unwrap();
    let precisions: Vec<String> = runs
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            r["key"]["precision"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(precisions, ["dd", "mp:128"]);
    let out = solver(&args, dir.path());
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    let again = std::fs::read_to_string(dir.path().join("study/runs.jsonl")).unwrap();
    assert_eq!(again, runs, "the resumed study ran something again");
}
