//! A mutation fuzzer for the two parsers that read untrusted text, the Matrix Market reader and
//! the configuration parser, runnable on stable Rust (cargo-fuzz needs nightly; `fuzz/` holds
//! the same two targets for it).
//!
//! The corpus is every file under `matrices/` (gzip ones decompressed) and `solver.toml`. Each
//! case takes a corpus file and applies a few mutations: bit flips, bytes that change how a line
//! splits or parses, numbers that sit on the edges (0, -1, 2^31 - 1, 2^31, 1e308, nan, 20
//! digits), banner and keyword swaps, deletions, duplications and splices of other files.
//! Each case must return (`Ok` or `Err`, never a panic); an `Ok` matrix must pass the CSR
//! invariants and an `Err` must name a line of the input.
//!
//! `cargo test` runs it for about two seconds from a fixed seed. A longer run, as CI does:
//!
//! ```sh
//! PRECSOLVE_FUZZ_SECONDS=60 cargo test --release --test fuzz -- --nocapture
//! ```
//!
//! `PRECSOLVE_FUZZ_SEED` picks the seed (printed by every run). A failing input is written to
//! `target/fuzz-failures/` and named in the failure.

use precsolve::config::RawConfig;
use precsolve::sparse::parse_matrix_market;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::io::Read as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOKENS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1",
    b"2147483647",
    b"2147483648",
    b"4294967296",
    b"18446744073709551616",
    b"99999999999999999999",
    b"1e308",
    b"-1e308",
    b"1e-320",
    b"nan",
    b"inf",
    b"-0",
    b"0x10",
    b"1.5",
    b"%%MatrixMarket",
    b"matrix",
    b"coordinate",
    b"array",
    b"real",
    b"integer",
    b"pattern",
    b"complex",
    b"general",
    b"symmetric",
    b"skew-symmetric",
    b"hermitian",
    b"%",
    b"\n",
    b"\r\n",
    b" ",
    b"\t",
    b"\0",
    b"\x1b[2J",
    b"\xef\xbb\xbf",
    b"[solve]",
    b"[output]",
    b"tol = ",
    b"threads = ",
    b"max_iter = ",
    b"precision = \"",
    b"mp:",
    b"\"",
    b"=",
];

fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("solver.toml")];
    let mut dirs = vec![root.join("matrices")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("matrices/") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
        .iter()
        .filter_map(|path| {
            let raw = std::fs::read(path).ok()?;
            if path.extension().is_some_and(|e| e == "gz") {
                let mut text = Vec::new();
                let mut gz = flate2::read::MultiGzDecoder::new(&raw[..]).take(1 << 20);
                let _ = gz.read_to_end(&mut text);
                Some(text)
            } else {
                Some(raw)
            }
        })
        .filter(|data| data.len() <= 1 << 16)
        .collect()
}

fn mutate(rng: &mut ChaCha8Rng, corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut data = corpus[rng.random_range(0..corpus.len())].clone();
    for _ in 0..rng.random_range(1..=4) {
        let len = data.len();
        let at = if len == 0 {
            0
        } else {
            rng.random_range(0..=len)
        };
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let k = rng.random_range(0..len);
                data[k] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let k = rng.random_range(0..len);
                data[k] = *b"09 \n\r-e%.\xff\0+:"
                    .get(rng.random_range(0..13))
                    .unwrap_or(&b'1');
            }
            2 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())];
                data.splice(at..at, token.iter().copied());
            }
            3 if at < len => {
                // Replace the token at `at` (up to the next separator) by an edge value.
                let end = data[at..]
                    .iter()
                    .position(|b| b.is_ascii_whitespace())
                    .map_or(len, |n| at + n);
                let token = TOKENS[rng.random_range(0..TOKENS.len())];
                data.splice(at..end, token.iter().copied());
            }
            4 if at < len => {
                let end = rng.random_range(at..=len.min(at + 64));
                data.drain(at..end);
            }
            5 if at < len => {
                let end = rng.random_range(at..=len.min(at + 64));
                let piece = data[at..end].to_vec();
                data.splice(at..at, piece);
            }
            _ => {
                let other = &corpus[rng.random_range(0..corpus.len())];
                if !other.is_empty() {
                    let from = rng.random_range(0..other.len());
                    let to = rng.random_range(from..=other.len().min(from + 256));
                    data.splice(at..at, other[from..to].iter().copied());
                }
            }
        }
    }
    data
}

fn line_count(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    (newlines + usize::from(data.last().is_some_and(|&b| b != b'\n'))).max(1)
}

/// `None` when the case is fine; otherwise what was wrong.
fn check_matrix_market(data: &[u8]) -> Option<String> {
    match catch_unwind(AssertUnwindSafe(|| parse_matrix_market(data))) {
        Err(_) => Some("the Matrix Market reader panicked".into()),
        Ok(Ok(m)) => m
            .check_invariants()
            .err()
            .map(|e| format!("accepted a matrix that breaks a CSR invariant: {e}")),
        Ok(Err(e)) if !(1..=line_count(data)).contains(&e.line) => Some(format!(
            "error names line {} of a {}-line input: {e}",
            e.line,
            line_count(data)
        )),
        Ok(Err(_)) => None,
    }
}

fn check_config(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        RawConfig::parse(&text, "fuzz.toml").and_then(RawConfig::validate)
    }));
    outcome
        .is_err()
        .then(|| "the configuration parser panicked".into())
}

fn save_failure(data: &[u8], seed: u64, case: u64) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("seed{seed}-case{case}.bin"));
    let _ = std::fs::write(&path, data);
    path
}

#[test]
fn mutated_inputs_never_panic_the_parsers() {
    let seconds: f64 = std::env::var("PRECSOLVE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let seed: u64 = std::env::var("PRECSOLVE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(26);
    let corpus = corpus();
    assert!(corpus.len() > 50, "corpus of {} files", corpus.len());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let mut cases = 0u64;
    let mut failure = None;
    while Instant::now() < deadline && failure.is_none() {
        for _ in 0..64 {
            let data = mutate(&mut rng, &corpus);
            let found = check_matrix_market(&data).or_else(|| check_config(&data));
            if let Some(why) = found {
                failure = Some((why, save_failure(&data, seed, cases)));
                break;
            }
            cases += 1;
        }
    }
    if let Some((why, path)) = failure {
        panic!(
            "seed {seed}, case {cases}: {why} (input saved as {})",
            path.display()
        );
    }
    println!(
        "{cases} mutated inputs through both parsers in {seconds} s (seed {seed}, corpus of {} files)",
        corpus.len()
    );
    assert!(cases > 0);
}
