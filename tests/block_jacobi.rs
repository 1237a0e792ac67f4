//! `--precond bjacobi` (issue #31): over k ranks, block Jacobi with ILU(0) in each block is
//! ILU(0) of the block-diagonal matrix the ranks' diagonal blocks make (a block-diagonal
//! matrix's ILU(0) factors are its blocks', side by side). So a solve spread over ranks must
//! give the bits of one process preconditioned by that matrix's ILU(0), applied here as the
//! caller's own preconditioner: the oracle is the whole block-diagonal matrix factored and
//! solved in one piece, the solve under test factors and solves each rank's block alone. In
//! one process, block Jacobi is one block: ILU(0) itself.

mod common;

use precsolve::backend::Backend;
use precsolve::backend::cpu::{CpuBackend, DOT_CHUNK};
use precsolve::distributed::{CommScope, Partition, ThreadGroup};
use precsolve::precond::ilu0::Ilu0Factors;
use precsolve::{BackendChoice, CsrMatrix, Solution, Solver, Symmetry, WorkingPrecision};
use std::sync::{Arc, Mutex};

/// ILU(0) of a matrix applied on the CPU backend, as a caller's preconditioner.
struct HostIlu {
    cpu: CpuBackend,
    ilu: Mutex<<CpuBackend as Backend>::Ilu>,
}

impl HostIlu {
    fn of(a: &CsrMatrix) -> HostIlu {
        let cpu = CpuBackend::new();
        let factors = Arc::new(Ilu0Factors::new(a, None).unwrap());
        let ilu = Mutex::new(cpu.ilu(&factors).unwrap());
        HostIlu { cpu, ilu }
    }
}

impl precsolve::Preconditioner for HostIlu {
    fn apply(&self, r: &[f64], z: &mut [f64]) {
        let r = self.cpu.vector_from_f64::<f64>(r).unwrap();
        let mut out = self.cpu.zeros::<f64>(z.len()).unwrap();
        let mut ilu = self.ilu.lock().unwrap();
        self.cpu.ilu_apply(&mut ilu, &r, &mut out).unwrap();
        z.copy_from_slice(&self.cpu.to_host(&out).unwrap());
    }
}

/// `a` with the entries outside the diagonal blocks of `partition` dropped.
fn block_diagonal(a: &CsrMatrix, partition: &Partition) -> CsrMatrix {
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for rank in 0..partition.ranks() {
        let range = partition.rows(rank);
        let block = a.diagonal_block(range.clone());
        for i in 0..block.nrows() {
            let (c, v) = block.row(i);
            for (&j, &x) in c.iter().zip(v) {
                rows.push((range.start + i) as u32);
                cols.push(range.start as u32 + j as u32);
                vals.push(x);
            }
        }
    }
    let n = a.nrows();
    CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
}

fn solver(method: &str) -> Solver<'static> {
    match method {
        "cg" => Solver::cg(),
        _ => Solver::bicgstab(),
    }
    .backend(BackendChoice::Cpu)
    .tol(1e-30)
    .max_iter(40)
}

fn fingerprint(s: &Solution) -> String {
    let info = &s.info;
    format!(
        "{} iterations, {:?}, recurrence {:?}, true {:?}, x {:?}",
        info.iterations, info.stop_reason, info.recurrence_residual, info.true_residual, s.x
    )
}

fn bits_of_the_block_diagonal_ilu(a: &CsrMatrix, method: &str, precision: &str) {
    let precision: WorkingPrecision = precision.parse().unwrap();
    let b = vec![1.0; a.nrows()];
    // One process: one block, ILU(0) itself.
    let one = solver(method)
        .block_jacobi()
        .solve_in(precision, a, &b)
        .unwrap();
    let ilu0 = solver(method).ilu0().solve_in(precision, a, &b).unwrap();
    assert_eq!(one.info.precond, "bjacobi");
    assert_eq!(fingerprint(&one), fingerprint(&ilu0), "{method}: one block");
    // The CPU's DistributedBackend splits at tiles, BlockBackend (the GPUs' layout) at dot
    // chunks: each is checked against its own blocks.
    for (ranks, blocks) in [(2, false), (3, false), (2, true), (3, true)] {
        let partition = match blocks {
            true => Partition::balanced_at(a, ranks, DOT_CHUNK),
            false => Partition::balanced(a, ranks),
        };
        let oracle = HostIlu::of(&block_diagonal(a, &partition));
        let want = solver(method)
            .preconditioner(oracle)
            .solve_in(precision, a, &b)
            .unwrap();
        assert!(want.info.iterations > 0);
        let spread = ThreadGroup::run(ranks, |comm| {
            let _scope = match blocks {
                true => CommScope::enter_blocks(comm),
                false => CommScope::enter_rows(comm),
            };
            solver(method)
                .block_jacobi()
                .solve_in(precision, a, &b)
                .unwrap()
        });
        for (rank, got) in spread.iter().enumerate() {
            let what = format!("{method} blocks={blocks}: rank {rank} of {ranks}");
            assert_eq!(got.info.ranks, ranks, "{what}");
            assert_eq!(fingerprint(got), fingerprint(&want), "{what}");
        }
        // more blocks than one: not ILU(0) of the whole matrix
        assert_ne!(fingerprint(&want), fingerprint(&ilu0));
    }
}

#[test]
fn block_jacobi_over_ranks_is_ilu0_of_their_diagonal_blocks() {
    let a = precsolve::poisson2d(170); // 28,900 rows: 4 dot chunks
    for precision in ["f64", "dd"] {
        bits_of_the_block_diagonal_ilu(&a, "cg", precision);
    }
    let a = common::matrices::convection_diffusion(170);
    bits_of_the_block_diagonal_ilu(&a, "bicgstab", "dd");
}

/// A rank with no rows (fewer dot chunks than ranks, on the GPUs' layout) has an empty block:
/// the one block left is the whole matrix, so the solve is ILU(0)'s.
#[test]
fn an_empty_block_leaves_ilu0() {
    let a = precsolve::poisson2d(60); // 3,600 rows: one dot chunk
    let b = vec![1.0; a.nrows()];
    let want = solver("cg")
        .ilu0()
        .solve_in(WorkingPrecision::F64, &a, &b)
        .unwrap();
    let spread = ThreadGroup::run(2, |comm| {
        let _scope = CommScope::enter_blocks(comm);
        solver("cg")
            .block_jacobi()
            .solve_in(WorkingPrecision::F64, &a, &b)
            .unwrap()
    });
    for got in &spread {
        assert_eq!(fingerprint(got), fingerprint(&want));
    }
}
