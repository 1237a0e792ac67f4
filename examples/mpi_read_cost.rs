//! How MPI ranks should get the matrix (issue #31's measured choice): every rank parsing the
//! whole Matrix Market file at once (what `solver` does) against rank 0 parsing it and sending
//! the CSR arrays to the others (one collective), each round's wall time from a barrier to a
//! barrier, alternated, median of 5 rounds.
//!
//! Run: `cargo build --release --features mpi --example mpi_read_cost`, then
//! `mpirun -np 2 target/release/examples/mpi_read_cost A.mtx` (`benches/cpu/mpi.sh`).

use mpi::traits::CommunicatorCollectives as _;
use precsolve::distributed::Communicator;
use precsolve::distributed::mpi::MpiWorld;
use precsolve::sparse::{CsrMatrix, Symmetry};
use std::time::Instant;

/// The CSR arrays as words: dimensions and symmetry, then row pointers, columns, values.
fn to_words(a: &CsrMatrix) -> Vec<u64> {
    let symmetry = match a.symmetry() {
        Symmetry::General => 0,
        Symmetry::Symmetric => 1,
        Symmetry::SkewSymmetric => 2,
    };
    let mut words = vec![a.nrows() as u64, a.ncols() as u64, a.nnz() as u64, symmetry];
    words.extend(a.row_ptr().iter().map(|&p| p as u64));
    words.extend(a.col_idx().iter().map(|&c| c as u32 as u64));
    words.extend(a.values().iter().map(|v| v.to_bits()));
    words
}

fn from_words(words: &[u64]) -> CsrMatrix {
    let (n, m, nnz) = (words[0] as usize, words[1] as usize, words[2] as usize);
    let symmetry = [
        Symmetry::General,
        Symmetry::Symmetric,
        Symmetry::SkewSymmetric,
    ][words[3] as usize];
    let rest = &words[4..];
    let row_ptr = rest[..=n].iter().map(|&p| p as usize).collect();
    let col_idx = rest[n + 1..n + 1 + nnz]
        .iter()
        .map(|&c| c as u32 as i32)
        .collect();
    let values = rest[n + 1 + nnz..]
        .iter()
        .map(|&v| f64::from_bits(v))
        .collect();
    CsrMatrix::try_from_parts(n, m, row_ptr, col_idx, values, symmetry).expect("valid arrays")
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: mpi_read_cost A.mtx");
    let world = MpiWorld::initialize().expect("MPI initialises once");
    let (rank, raw) = (world.rank(), world.raw());
    let timed = |f: &mut dyn FnMut() -> CsrMatrix| {
        raw.barrier();
        let start = Instant::now();
        let a = f();
        raw.barrier();
        (start.elapsed().as_secs_f64(), a.nnz())
    };
    let (mut every, mut root, mut send) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        let (t, nnz) = timed(&mut || precsolve::load_matrix(&path).expect("the matrix"));
        every.push(t);
        let mut sent = 0.0;
        let (t, nnz_root) = timed(&mut || {
            let words = match rank {
                0 => to_words(&precsolve::load_matrix(&path).expect("the matrix")),
                _ => Vec::new(),
            };
            let start = Instant::now();
            let all = world.all_gather(&words);
            let a = from_words(&all[0]);
            sent = start.elapsed().as_secs_f64();
            a
        });
        assert_eq!(nnz, nnz_root);
        root.push(t);
        send.push(sent);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    if rank == 0 {
        println!(
            "{path}, {} ranks: every rank reads {:.3} s; rank 0 reads and sends {:.3} s (of which \
             the sending and rebuilding {:.3} s)",
            world.size(),
            median(&mut every),
            median(&mut root),
            median(&mut send)
        );
    }
}
