//! Untrusted input and output paths through the `solver` binary: each defect found by trying
//! the tool as an attacker would (issue #26) has its regression test here, with its input under
//! `matrices/bad/` or written by the test.

mod common;

use common::cli::{EXIT_BAD_INPUT, EXIT_OK, EXIT_USAGE, solver};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn bad(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices/bad")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("matrices/graded_spd_400.mtx")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_tiny_file_declaring_billions_of_rows_is_refused_without_allocating() {
    let dir = tempfile::tempdir().unwrap();
    for (file, rows) in [
        ("too_large_rows.mtx", "2147483647 x 2147483647"),
        ("too_large_rows_few_entries.mtx", "200000000 x 200000000"),
    ] {
        for command in ["info", "solve"] {
            let start = Instant::now();
            let out = solver(&[command, &bad(file)], dir.path());
            let (stdout, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{file}: {stderr}");
            assert!(stdout.is_empty(), "{stdout}");
            assert!(
                stderr.contains(file) && stderr.contains(rows) && stderr.contains(" GB"),
                "names the file, the declared size and the bytes: {stderr}"
            );
            // Refused from the header: no 16 GiB zero-fill first.
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{file}: slow refusal"
            );
        }
    }
}

#[test]
fn devices_and_fifos_are_refused_by_default_and_read_bounded_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    if Path::new("/dev/zero").exists() {
        let out = solver(&["info", "/dev/zero"], dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
        assert!(stderr.contains("character device"), "{stderr}");
        // Allowed, it is read only as far as its first bytes, which are no banner.
        let out = solver(&["info", "/dev/zero", "--allow-special-files"], dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
        assert!(stderr.contains("bad banner"), "{stderr}");
    }
    let fifo = dir.path().join("x.mtx");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        // No writer: opening it would block for ever. It is refused before it is opened.
        let out = solver(&["solve", fifo.to_str().unwrap()], dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
        assert!(stderr.contains("FIFO"), "{stderr}");
    }
}

#[test]
fn a_bad_output_path_fails_before_the_solve_not_after() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("results")).unwrap();
    let mut cases = vec![
        ["--history", "results"],
        ["--write-x", "results"],
        ["--history", "no/such/dir/h.csv"],
    ];
    if Path::new("/proc/self").exists() {
        cases.push(["--write-x", "/proc/x"]);
    }
    for [flag, path] in cases {
        let args = ["solve", &sample(), "--tol", "1e-12", flag, path, "-q"];
        let out = solver(&args, dir.path());
        let (stdout, stderr) = text(&out);
        assert_eq!(
            out.status.code(),
            Some(EXIT_BAD_INPUT),
            "{flag} {path}: {stderr}"
        );
        assert!(stdout.is_empty(), "refused before solving: {stdout}");
        assert!(stderr.contains(path), "names the path: {stderr}");
    }
    // A good path gets the whole file, and no temporary is left beside it.
    let out = solver(
        &["solve", "poisson2d:6", "--write-x", "x.mtx", "-q"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["results", "x.mtx"]);
}

#[test]
fn a_second_batch_on_one_study_fails_at_once_and_a_stale_lock_never_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("study");
    let held = precsolve::batch::StudyLock::acquire(&study).unwrap();
    let args = ["batch", "poisson2d:4", "--out", "study", "-q"];
    let out = solver(&args, dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("in use") && stderr.contains(&std::process::id().to_string()),
        "names the holder's pid: {stderr}"
    );
    assert!(!study.join("runs.jsonl").exists(), "nothing was run");
    // A killed holder leaves its pid in the file, but the kernel has dropped its lock.
    drop(held);
    std::fs::write(study.join(precsolve::batch::LOCK_FILE), "999999").unwrap();
    let out = solver(&args, dir.path());
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    assert!(study.join("runs.jsonl").exists());
}

#[test]
fn batch_out_naming_a_file_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let out = solver(
        &["batch", "poisson2d:4", "--out", "notes.txt", "-q"],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("notes.txt") && stderr.contains("not a directory"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn terminal_escapes_and_nul_bytes_from_a_file_are_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    for (file, shown) in [
        ("bad_number_escape_sequence.mtx", "'\\x1b[2J\\x1b]0;X\\x07'"),
        ("bad_number_nul.mtx", "'2\\0\\0'"),
        ("bad_number_long_token.mtx", "(41 more bytes)"),
    ] {
        let out = solver(&["info", &bad(file)], dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
        assert!(stderr.contains(shown), "{file}: {stderr}");
        let raw_control = stderr.bytes().any(|b| b < 0x20 && b != b'\n');
        assert!(
            !raw_control,
            "{file}: a raw control byte reached the terminal"
        );
    }
    // A file name with an escape in it is escaped too.
    let name = "e\x1b[2J.mtx";
    std::fs::write(
        dir.path().join(name),
        "%%MatrixMarket matrix coordinate real general\n",
    )
    .unwrap();
    let out = solver(&["info", name], dir.path());
    let (_, stderr) = text(&out);
    assert!(stderr.contains("e\\x1b[2J.mtx"), "{stderr}");
}

#[test]
fn thread_counts_are_bounded_by_the_cores() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(&["solve", "poisson2d:4", "--threads", "10000"], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_USAGE), "{stderr}");
    assert!(stderr.contains("0 uses every core"), "{stderr}");
    std::fs::write(
        dir.path().join("solver.toml"),
        "[solve]\nthreads = 100000\n",
    )
    .unwrap();
    let out = solver(&["solve", "poisson2d:4"], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("threads") && stderr.contains("cores"),
        "{stderr}"
    );
}

#[test]
fn negative_numbers_reach_the_range_check() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["solve", "poisson2d:4", "--tol", "-1"][..],
        &["solve", "poisson2d:4", "--max-iter", "-5"][..],
        &["batch", "poisson2d:4", "--tol", "1e-8,-1", "--out", "s"][..],
    ] {
        let out = solver(args, dir.path());
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{args:?}: {stderr}");
        assert!(
            stderr.contains("strictly between 0 and 1") || stderr.contains("negative"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("-- -"), "no `--` tip: {stderr}");
    }
}

#[test]
fn shape_mistakes_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    std::fs::write(
        path("wide.mtx"),
        "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1\n2 3 1\n",
    )
    .unwrap();
    let out = solver(&["solve", "wide.mtx"], dir.path());
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("wide.mtx") && stderr.contains("2 x 3"),
        "{stderr}"
    );

    let out = solver(
        &[
            "solve",
            "poisson2d:3",
            "--rhs",
            &bad("vector_wrong_length.mtx"),
        ],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_BAD_INPUT), "{stderr}");
    assert!(
        stderr.contains("vector_wrong_length.mtx")
            && stderr.contains("4 entries")
            && stderr.contains("9 rows"),
        "{stderr}"
    );

    std::fs::write(
        path("empty.mtx"),
        "%%MatrixMarket matrix coordinate real general\n0 0 0\n",
    )
    .unwrap();
    let out = solver(&["solve", "empty.mtx"], dir.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(EXIT_BAD_INPUT),
        "a 0 x 0 matrix is not converged: {stdout}"
    );
    assert!(
        stderr.contains("empty.mtx") && stderr.contains("nothing to solve"),
        "{stderr}"
    );
}

#[test]
fn info_names_methods_as_the_command_line_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(&["info", "poisson2d:3"], dir.path());
    let (stdout, _) = text(&out);
    assert!(stdout.contains("would use cg\n"), "{stdout}");
    let out = solver(&["info", &bad("../tiny/crlf.mtx")], dir.path());
    let (stdout, _) = text(&out);
    assert!(stdout.contains("would use bicgstab\n"), "{stdout}");
}

#[test]
fn ratios_of_runs_without_iterations_are_undefined_not_nan() {
    let dir = tempfile::tempdir().unwrap();
    // b = 0: both precisions stop at iteration 0 with x = 0.
    std::fs::write(
        dir.path().join("zero.mtx"),
        "%%MatrixMarket matrix coordinate real general\n9 1 0\n",
    )
    .unwrap();
    let args = ["solve", "poisson2d:3", "--rhs", "zero.mtx"];
    let out = solver(&args, dir.path());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stderr}");
    assert!(!stdout.contains("NaN"), "{stdout}");
    let iterations = stdout
        .lines()
        .find(|l| l.starts_with("iterations"))
        .unwrap();
    assert!(iterations.trim_end().ends_with('-'), "{iterations}");
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let out = solver(&json_args, dir.path());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["ratios"][0]["iterations"].is_null(), "{json}");
    assert_eq!(precsolve::report::ratio_cell(135.0 / 30000.0), "4.50e-3");
    assert_eq!(precsolve::report::ratio_cell(1.5), "1.50");
}

#[test]
fn bicgstab_history_marks_its_half_steps() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "solve",
        "poisson2d:6",
        "--method",
        "bicgstab",
        "--history",
        "h.csv",
        "-q",
    ];
    let out = solver(&args, dir.path());
    assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    let csv = std::fs::read_to_string(dir.path().join("h.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let at = |it: &str, prec: &str| -> Vec<&str> {
        rows.iter()
            .filter(|r| r[0] == prec && r[2] == it)
            .map(|r| r[3])
            .collect()
    };
    assert_eq!(at("0", "f64"), ["full"]);
    assert_eq!(at("1", "f64"), ["half", "full"], "{csv}");
}

#[test]
fn help_states_each_default_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(&["solve", "--help"], dir.path());
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK));
    for needle in [
        "[default: 1e-8]",
        "[default: 30000]",
        "[default: initial]",
        "[default: auto]",
        "[default: f64,dd]",
    ] {
        assert!(stdout.contains(needle), "{needle}:\n{stdout}");
    }
    std::fs::write(dir.path().join("solver.toml"), "[solve]\ntol = 1e-10\n").unwrap();
    let out = solver(&["solve", "--help"], dir.path());
    assert!(
        text(&out).0.contains("[default: 1e-10]"),
        "{}",
        text(&out).0
    );
    let out = solver(&["batch", "--help"], dir.path());
    assert!(
        text(&out).0.contains("[default: 1e-10]"),
        "{}",
        text(&out).0
    );
}

#[test]
fn the_missing_gpu_is_reported_once_per_process_and_bench_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = solver(
        &[
            "batch",
            "poisson2d:4",
            "poisson2d:5",
            "--precision",
            "f64,dd",
            "--out",
            "s",
            "-q",
        ],
        dir.path(),
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(EXIT_OK), "{stderr}");
    assert!(stderr.matches("no usable GPU").count() <= 1, "{stderr}");
    let out = solver(
        &["bench", "poisson2d:4", "--reps", "1", "--iterations", "1"],
        dir.path(),
    );
    if out.status.code() != Some(EXIT_OK) {
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(EXIT_USAGE), "{stderr}");
        assert!(
            stderr.contains("needs a GPU") || stderr.contains("CUDA"),
            "{stderr}"
        );
    }
}

#[test]
fn a_batch_records_an_oversized_matrix_as_a_load_error_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "batch",
        &bad("too_large_rows.mtx"),
        "poisson2d:4",
        "--precision",
        "f64",
        "--out",
        "s",
        "-q",
    ];
    for _resume in 0..2 {
        let out = solver(&args, dir.path());
        assert_eq!(out.status.code(), Some(EXIT_OK), "{:?}", text(&out));
    }
    let runs = std::fs::read_to_string(dir.path().join("s/runs.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = runs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let status = |name: &str| -> Vec<String> {
        records
            .iter()
            .filter(|r| r["name"].as_str().unwrap().contains(name))
            .map(|r| r["status"].as_str().unwrap().to_string())
            .collect()
    };
    // Recorded once (a repeated failure on resume is not written twice), the other run done.
    assert_eq!(status("too_large_rows"), ["load-error"], "{runs}");
    assert_eq!(status("poisson2d"), ["converged"], "{runs}");
    let error = records
        .iter()
        .find(|r| r["status"] == "load-error")
        .and_then(|r| r["error"].as_str())
        .unwrap()
        .to_string();
    assert!(error.contains("2147483647 x 2147483647"), "{error}");
}
