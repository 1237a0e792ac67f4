//! What the GPU checks share: reproducible inputs, bit-for-bit comparison, the matrices' folder.

use precsolve::backend::Backend;
use precsolve::backend::cuda::CudaBackend;
use precsolve::sparse::{CsrMatrix, Symmetry};
use precsolve::{Precision, Qd};

/// xorshift64*: reproducible inputs without a dependency.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Values of mixed sign and magnitude (about 1e-3 to 1e3), so DD rounding is exercised.
    pub fn value(&mut self) -> f64 {
        let mantissa = (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
        mantissa * 10f64.powi(self.below(7) as i32 - 3)
    }
    /// A quad-double with all four components in use.
    pub fn qd(&mut self) -> Qd {
        let hi = self.value();
        Qd::from_f64(hi)
            .add_f64(hi * 1e-17 * self.value())
            .add_f64(hi * 1e-34 * self.value())
            .add_f64(hi * 1e-51 * self.value())
    }
    /// A value of `P` using all of its format (four components for qd).
    pub fn of<P: Precision>(&mut self) -> P {
        let q = self.qd();
        match (&q as &dyn std::any::Any).downcast_ref::<P>() {
            Some(p) => p.clone(),
            None => P::from_dd(q.to_dd()),
        }
    }
}

/// A random square matrix with about `mean` entries per row, some empty rows, and one
/// dense row (the worst case for a row-per-thread-group kernel).
pub fn random_matrix(rng: &mut Rng, n: usize, mean: f64) -> CsrMatrix {
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        let count = match i % 97 {
            13 => 0,
            _ if i == n / 2 => n.min(3000),
            _ => rng.below((2.0 * mean) as u64 + 1) as usize,
        };
        for _ in 0..count {
            rows.push(i as u32);
            cols.push(rng.below(n as u64) as u32);
            vals.push(rng.value());
        }
    }
    CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
}

pub fn same_bits<P: Precision>(what: &str, gpu: &[P], cpu: &[P]) -> Result<(), String> {
    if gpu.len() != cpu.len() {
        return Err(format!("{what}: lengths {} vs {}", gpu.len(), cpu.len()));
    }
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        // Debug prints every stored part exactly (qd's four components, td's int).
        let (gs, cs) = (format!("{g:?}"), format!("{c:?}"));
        let (g, c) = (g.to_dd(), c.to_dd());
        if gs != cs || g.hi.to_bits() != c.hi.to_bits() || g.lo.to_bits() != c.lo.to_bits() {
            return Err(format!(
                "{what} ({}): element {i} differs: GPU {g:?}, CPU {c:?}",
                P::NAME
            ));
        }
    }
    Ok(())
}

pub fn err(e: precsolve::Error) -> String {
    e.to_string()
}

pub fn random_vec<P: Precision>(rng: &mut Rng, n: usize) -> Vec<P> {
    (0..n).map(|_| rng.of::<P>()).collect()
}

pub fn upload<P: Precision>(
    gpu: &CudaBackend,
    host: &[P],
) -> Result<<CudaBackend as Backend>::Vector<P>, String> {
    let v = gpu.upload::<P>(host).map_err(err)?;
    let back = gpu.to_host(&v).map_err(err)?;
    same_bits("upload", &back, host)?;
    Ok(v)
}

/// The shared matrices also solved in qd (the CPU's qd reference solves of the larger ones
/// take minutes).
pub const QD_SHARED: &[&str] = &["1138_bus", "nos1", "fs_183_4", "olm500", "e05r0100"];

pub fn matrix_dir() -> String {
    std::env::var("PRECSOLVE_MATRICES")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/matrices").into())
}
