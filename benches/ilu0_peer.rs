//! The CPU half of the ILU(0) peer comparison (`benches/cpu/cpu.sh peer`): factor a matrix, time
//! our triangular solves (L then U, median of 20), and write the factors as Matrix Market files
//! (`L.mtx` with its unit diagonal, `U.mtx`) and the right-hand side and our result, so that
//! `benches/cpu/scipy_trisolve.py` can time SciPy's `spsolve_triangular` on the same factors
//! and check its answer against ours.
//!
//! Usage: `cargo bench --bench ilu0_peer -- poisson3d:100 OUT_DIR`

use precsolve::backend::cpu::trisolve::{CpuIlu, Schedule};
use precsolve::precond::ilu0::Ilu0Factors;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

fn write_triangle(path: &Path, f: &Ilu0Factors, lower: bool) -> std::io::Result<()> {
    let n = f.n();
    let mut entries = String::with_capacity(f.nnz() * 40);
    let mut count = 0usize;
    for i in 0..n {
        let (start, diag, end) = (f.row_ptr()[i], f.diag()[i], f.row_ptr()[i + 1]);
        let range = if lower { start..diag } else { diag..end };
        for k in range {
            let _ = writeln!(
                entries,
                "{} {} {:e}",
                i + 1,
                f.col_idx()[k] + 1,
                f.values()[k]
            );
            count += 1;
        }
        if lower {
            let _ = writeln!(entries, "{} {} 1", i + 1, i + 1);
            count += 1;
        }
    }
    let header = format!("%%MatrixMarket matrix coordinate real general\n{n} {n} {count}\n");
    std::fs::write(path, header + &entries)
}

fn write_vector(path: &Path, v: &[f64]) -> std::io::Result<()> {
    let mut text = format!("%%MatrixMarket matrix array real general\n{} 1\n", v.len());
    for x in v {
        let _ = writeln!(text, "{x:e}");
    }
    std::fs::write(path, text)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` adds `--bench`.
    let args: Vec<String> = std::env::args().filter(|a| a != "--bench").collect();
    let (spec, out) = match args.as_slice() {
        [_, spec, out] => (spec.as_str(), Path::new(out)),
        _ => return Err("usage: ilu0_peer MATRIX OUT_DIR".into()),
    };
    std::fs::create_dir_all(out)?;
    let a = precsolve::load_matrix(spec)?;
    let f = Arc::new(Ilu0Factors::new(&a, None)?);
    let n = f.n();
    let r: Vec<f64> = (0..n).map(|i| ((i % 1000) as f64 + 1.0) / 7.0).collect();
    let mut z = vec![0.0; n];
    let median_ms = |ilu: &mut CpuIlu, z: &mut Vec<f64>| {
        let mut times: Vec<f64> = (0..21)
            .map(|_| {
                let t0 = Instant::now();
                ilu.apply::<f64, f64>(&r, z);
                t0.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        times[times.len() / 2]
    };
    for schedule in [Schedule::Sequential, Schedule::Levels] {
        let ms = median_ms(&mut CpuIlu::with_schedule(f.clone(), schedule), &mut z);
        println!("ours {schedule:?}: L+U {ms:.3} ms");
    }
    let mut ilu = CpuIlu::new(f.clone());
    let ms = median_ms(&mut ilu, &mut z);
    println!(
        "ours: {spec}, n = {n}, {} levels in L (mean {:.0} rows), {} threads, chosen schedule \
         {:?}: L+U {ms:.3} ms ({:.1} GB/s of minimum traffic)",
        f.lower_levels().count(),
        f.lower_levels().mean_width(),
        rayon::current_num_threads(),
        ilu.schedule(),
        f.apply_bytes(8, 8) / ms / 1e6
    );
    println!("ours_ms {ms:.6}");
    write_triangle(&out.join("L.mtx"), &f, true)?;
    write_triangle(&out.join("U.mtx"), &f, false)?;
    write_vector(&out.join("r.mtx"), &r)?;
    write_vector(&out.join("z.mtx"), &z)?;
    Ok(())
}
