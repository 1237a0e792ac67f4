//! `mpirun -np 2` and `-np 3` give the bits of one process (issue #31): iterations, residuals
//! and the solution file, for CG and BiCGStab, with and without ILU(0), in f64, dd and qd. Needs
//! the `mpi` feature and `mpirun` on the PATH (`.ci/run` installs Open MPI); runs oversubscribed
//! on a 2-core machine.
#![cfg(feature = "mpi")]

mod common;

use common::matrices::{shared_matrices, shared_matrix};
use std::path::Path;
use std::process::Command;

/// `solver` as one process, or as `ranks` ranks of `mpirun` (oversubscribed: CI has 2 cores).
fn on_ranks(ranks: usize) -> Command {
    let solver = env!("CARGO_BIN_EXE_solver");
    let mut command = match ranks {
        1 => Command::new(solver),
        n => {
            let mut c = Command::new("mpirun");
            c.args(["--oversubscribe", "-np", &n.to_string(), solver]);
            c
        }
    };
    // Open MPI refuses to run as root unless told it may (CI containers run as root).
    command
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    command
}

/// `[mpirun -np N] solver solve ARGS --format json --write-x X`: the report's numbers that must
/// match (serde_json writes the shortest text that reads back to each double) and `x`'s file.
fn run(ranks: usize, args: &[&str], dir: &Path) -> (Vec<String>, String) {
    let x_file = dir.join(format!("x{ranks}.txt"));
    let x_arg = x_file.to_str().unwrap();
    let mut tail: Vec<&str> = vec!["solve"];
    tail.extend(args);
    tail.extend([
        "--format",
        "json",
        "--quiet",
        "--write-x",
        x_arg,
        "--threads",
        "1",
    ]);
    let out = on_ranks(ranks)
        .args(&tail)
        .output()
        .expect("mpirun is on the PATH (.ci/run installs Open MPI)");
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{ranks} ranks, {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let numbers = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["ranks"].as_u64(), Some(ranks as u64));
            format!(
                "{} {} {} {}",
                r["iterations"], r["stop_reason"], r["recurrence_residual"], r["true_residual"]
            )
        })
        .collect();
    (numbers, std::fs::read_to_string(&x_file).unwrap())
}

fn same_bits_over_ranks(args: &[&str], dir: &Path) {
    let (want, want_x) = run(1, args, dir);
    assert!(!want_x.is_empty());
    for ranks in [2, 3] {
        let (got, got_x) = run(ranks, args, dir);
        assert_eq!(got, want, "{ranks} ranks: {args:?}");
        assert!(
            got_x == want_x,
            "{ranks} ranks: {args:?}: the solutions differ"
        );
    }
}

/// A nonsymmetric convection-diffusion operator on a `k x k` grid, as a Matrix Market file.
fn convection_diffusion(k: usize, path: &Path) {
    let mut text = String::from("%%MatrixMarket matrix coordinate real general\n");
    let mut entries = Vec::new();
    for i in 0..k {
        for j in 0..k {
            let row = i * k + j + 1;
            entries.push((row, row, 4.6));
            if i > 0 {
                entries.push((row, row - k, -1.4));
            }
            if i + 1 < k {
                entries.push((row, row + k, -0.6));
            }
            if j > 0 {
                entries.push((row, row - 1, -1.3));
            }
            if j + 1 < k {
                entries.push((row, row + 1, -0.7));
            }
        }
    }
    text.push_str(&format!("{} {} {}\n", k * k, k * k, entries.len()));
    for (r, c, v) in entries {
        text.push_str(&format!("{r} {c} {v}\n"));
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn cg_over_2_and_3_ranks_gives_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    // 28,900 rows: four dot chunks, so every rank holds rows.
    let common = ["poisson2d:170", "--method", "cg", "--tol", "1e-14"];
    for precision in ["f64", "dd"] {
        let mut args = common.to_vec();
        args.extend(["--precision", precision, "--max-iter", "400"]);
        same_bits_over_ranks(&args, dir.path());
        args.extend(["--precond", "ilu0"]);
        same_bits_over_ranks(&args, dir.path());
    }
    let mut args = common.to_vec();
    args.extend(["--precision", "qd", "--max-iter", "40"]);
    same_bits_over_ranks(&args, dir.path());
}

#[test]
fn bicgstab_over_2_and_3_ranks_gives_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("convection.mtx");
    convection_diffusion(170, &matrix);
    let common = [
        matrix.to_str().unwrap(),
        "--method",
        "bicgstab",
        "--tol",
        "1e-14",
    ];
    for precision in ["f64", "dd"] {
        let mut args = common.to_vec();
        args.extend(["--precision", precision, "--max-iter", "300"]);
        same_bits_over_ranks(&args, dir.path());
        args.extend(["--precond", "ilu0"]);
        same_bits_over_ranks(&args, dir.path());
    }
    let mut args = common.to_vec();
    args.extend(["--precision", "qd", "--max-iter", "30"]);
    same_bits_over_ranks(&args, dir.path());
}

#[test]
#[cfg_attr(
    not(shared_matrices),
    ignore = "needs ../shared/matrices (the team's checkouts and CI)"
)]
fn shared_matrices_over_2_and_3_ranks_give_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let shared = shared_matrices();
    let cage = shared_matrix(&shared, "cage8");
    let bus = shared_matrix(&shared, "1138_bus");
    for (matrix, method) in [(&cage, "bicgstab"), (&bus, "cg")] {
        for precond in ["none", "ilu0"] {
            let args = [
                matrix.as_str(),
                "--method",
                method,
                "--precision",
                "f64,dd",
                "--precond",
                precond,
                "--tol",
                "1e-14",
                "--max-iter",
                "200",
            ];
            same_bits_over_ranks(&args, dir.path());
        }
    }
}

/// `mpirun -np N --precond bjacobi` (block Jacobi: the iterations change with N) is the
/// in-process ranks' block Jacobi at N, which `tests/block_jacobi.rs` checks against ILU(0) of
/// the ranks' diagonal blocks: iterations and both residuals, bit for bit.
#[test]
fn block_jacobi_over_mpi_ranks_is_that_of_the_in_process_ranks() {
    use precsolve::distributed::{CommScope, ThreadGroup};
    use precsolve::{BackendChoice, Solver, WorkingPrecision};
    let dir = tempfile::tempdir().unwrap();
    let a = precsolve::poisson2d(170);
    let n = a.nrows();
    let rhs = dir.path().join("ones.mtx");
    let ones = "1\n".repeat(n);
    std::fs::write(
        &rhs,
        format!("%%MatrixMarket matrix array real general\n{n} 1\n{ones}"),
    )
    .unwrap();
    let args = [
        "poisson2d:170",
        "--rhs",
        rhs.to_str().unwrap(),
        "--method",
        "cg",
        "--precision",
        "f64,dd",
        "--precond",
        "bjacobi",
        "--tol",
        "1e-300",
        "--max-iter",
        "60",
    ];
    for ranks in [2, 3] {
        let (got, _) = run(ranks, &args, dir.path());
        for (k, precision) in ["f64", "dd"].into_iter().enumerate() {
            let precision: WorkingPrecision = precision.parse().unwrap();
            let solutions = ThreadGroup::run(ranks, |comm| {
                let _scope = CommScope::enter(comm);
                Solver::cg()
                    .backend(BackendChoice::Cpu)
                    .block_jacobi()
                    .tol(1e-300)
                    .max_iter(60)
                    .solve_in(precision, &a, &vec![1.0; n])
                    .unwrap()
            });
            let info = &solutions[0].info;
            let fields: Vec<&str> = got[k].split(' ').collect();
            let number = |s: &str| s.parse::<f64>().unwrap().to_bits();
            assert_eq!(fields[0], info.iterations.to_string(), "{ranks} ranks");
            assert_eq!(
                number(fields[fields.len() - 2]),
                info.recurrence_residual.to_bits(),
                "{ranks} ranks: recurrence residual"
            );
            assert_eq!(
                number(fields[fields.len() - 1]),
                info.true_residual.to_bits(),
                "{ranks} ranks: true residual"
            );
        }
    }
}

/// `[mpirun -np N] solver batch INPUTS --out DIR`, f64 and dd, with and without ILU(0).
fn study(ranks: usize, inputs: &[&str], out: &Path) -> Command {
    let mut command = on_ranks(ranks);
    command
        .arg("batch")
        .args(inputs)
        .args([
            "--precision",
            "f64,dd",
            "--precond",
            "none,ilu0",
            "--tol",
            "1e-10",
        ])
        .args(["--threads", "1", "--quiet", "--out", out.to_str().unwrap()]);
    command
}

/// [`study`]: the study's records by run, with what
/// must match one process's (iterations, stop reason, both residuals, as serde_json writes
/// them: the shortest text that reads back to each double).
fn batch(ranks: usize, inputs: &[&str], out: &Path) -> std::collections::BTreeMap<String, String> {
    let done = study(ranks, inputs, out)
        .output()
        .expect("mpirun is on the PATH");
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{ranks} ranks: {stdout}{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let runs = std::fs::read_to_string(out.join("runs.jsonl")).unwrap();
    runs.lines()
        .map(|line| {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            let k = &r["key"];
            let key = format!("{} {} {}", k["matrix"], k["precision"], k["precond"]);
            let x = &r["result"];
            assert_eq!(x["ranks"].as_u64().unwrap_or(1), ranks as u64, "{key}");
            let communication = x["communication_time"].as_f64().unwrap_or(0.0);
            assert_eq!(communication > 0.0, ranks > 1, "{key}: {communication}");
            let numbers = format!(
                "{} {} {} {} {}",
                r["status"],
                x["iterations"],
                x["stop_reason"],
                x["recurrence_residual"],
                x["true_residual"]
            );
            (key, numbers)
        })
        .collect()
}

/// `mpirun -np 2 solver batch` runs every solve of the study over the ranks: rank 0 records
/// the bits of a one-process study, with the rank count and the time spent communicating,
/// says so in the summary, and a second run of the same command finds nothing left to do.
#[test]
fn a_batch_study_over_2_ranks_records_the_bits_of_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = dir.path().join("convection.mtx");
    convection_diffusion(170, &matrix);
    let inputs = ["poisson2d:170", matrix.to_str().unwrap()];
    let want = batch(1, &inputs, &dir.path().join("one"));
    assert_eq!(want.len(), 8);
    let spread = dir.path().join("two");
    assert_eq!(batch(2, &inputs, &spread), want);
    let summary = std::fs::read_to_string(spread.join("summary.md")).unwrap();
    assert!(
        summary.contains("8 solves spread over 2 MPI ranks"),
        "{summary}"
    );
    let csv = std::fs::read_to_string(spread.join("runs.csv")).unwrap();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .contains("ranks,devices,communication_time_s")
    );
    // resumed: every run is recorded, none runs again
    let again = study(2, &inputs, &spread).output().unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(stdout.contains("0 runs this time"), "{stdout}");
}

/// A time limit ends a solve over ranks on every rank at the same iteration (the ranks agree on
/// it): the study returns, and rank 0 records the limit.
#[test]
fn a_time_limit_over_ranks_stops_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let out = on_ranks(2)
        .arg("batch")
        .args([
            "poisson2d:170",
            "--method",
            "cg",
            "--precision",
            "dd",
            "--tol",
            "1e-300",
        ])
        .args([
            "--max-iter",
            "1000000",
            "--time-limit",
            "50ms",
            "--quiet",
            "--threads",
            "1",
        ])
        .args(["--out", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs = std::fs::read_to_string(dir.path().join("runs.jsonl")).unwrap();
    let run: serde_json::Value = serde_json::from_str(runs.lines().next().unwrap()).unwrap();
    assert_eq!(run["status"], "time-limit", "{run}");
    assert_eq!(run["result"]["ranks"], 2, "{run}");
}

/// A matrix only one rank can read (a path that differs between ranks, as on nodes that do not
/// share a file system): that rank's error names itself and stops every rank, where the other
/// would wait for it in the solve's first collective forever.
#[test]
fn an_error_on_one_rank_stops_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("only-on-rank-0.mtx");
    // Rank 1 gets the second matrix argument (Open MPI and MPICH name the rank differently).
    let script = r#"r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}; if [ "$r" = 1 ]; then m=$2; else m=$1; fi
exec "$0" solve "$m" --tol 1e-300 --max-iter 1000000 --threads 1 --quiet"#;
    let mut child = Command::new("mpirun")
        .args(["--oversubscribe", "-np", "2", "sh", "-c", script])
        .args([env!("CARGO_BIN_EXE_solver"), "poisson2d:100"])
        .arg(&missing)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mpirun is on the PATH (.ci/run installs Open MPI)");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("rank 0 still waits for rank 1 after 2 minutes");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("error on rank 1 of 2") && stderr.contains("only-on-rank-0.mtx"),
        "{stderr}"
    );
}

/// `--backend cuda` under `mpirun`: each rank takes a GPU of its host (sharing one where there
/// are fewer) and the ranks give the bits of one process on the CPU. Without a usable GPU (CI)
/// the ranks say so (the first to fail stops the others, which may not get to print) and the
/// run fails, where a rank silently falling back to the CPU would hide a broken install.
#[test]
fn gpus_under_mpirun_give_the_bits_of_one_process_or_every_rank_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let common = [
        "poisson2d:170",
        "--method",
        "cg",
        "--tol",
        "1e-14",
        "--max-iter",
        "400",
    ];
    let probe = on_ranks(1)
        .args(["solve", "poisson2d:10", "--backend", "cuda", "--quiet"])
        .output()
        .unwrap();
    if probe.status.success() {
        for precision in ["f64", "dd"] {
            let mut cpu = common.to_vec();
            cpu.extend(["--precision", precision, "--backend", "cpu"]);
            let (want, want_x) = run(1, &cpu, dir.path());
            let mut gpu = common.to_vec();
            gpu.extend(["--precision", precision, "--backend", "cuda"]);
            for ranks in [1, 2] {
                let (got, got_x) = run(ranks, &gpu, dir.path());
                assert_eq!(got, want, "{ranks} ranks on the GPU, {precision}");
                assert!(
                    got_x == want_x,
                    "{ranks} ranks on the GPU, {precision}: the solutions differ"
                );
            }
        }
        return;
    }
    let alone = String::from_utf8_lossy(&probe.stderr).into_owned();
    assert!(alone.contains("no usable GPU"), "{alone}");
    let out = on_ranks(2)
        .args(["solve"])
        .args(common)
        .args(["--backend", "cuda", "--quiet"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.lines().any(|line| line.starts_with("error on rank ")
            && line.contains(" of 2: --backend cuda: no usable GPU")),
        "{stderr}"
    );
}
