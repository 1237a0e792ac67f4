//! BiCGStab's shadow residual `r~`, and its restarts after a breakdown.

use crate::backend::Backend;
use crate::error::Result;
use crate::precision::Precision;

/// The shadow residual `r~` BiCGStab biorthogonalises against (`--shadow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Shadow {
    /// `r~ = r_0`, the textbook choice (the thesis's).
    R0,
    /// `r~ = b`.
    Rhs,
    /// Entries uniform in `[-1, 1)` from a fixed seed: the same vector on every backend and
    /// run. Avoids the breakdown of `r~ = r_0 = b = ones` on matrices whose columns sum to a
    /// constant (`<ones, A p>` is then `c <ones, p>`).
    Random,
}

crate::solver::named_choices!(Shadow, "shadow residual", {
    R0 => "r0",
    Rhs => "rhs",
    Random => "random",
});

/// The seed of [`Shadow::Random`]'s first vector; restart `k` uses `SEED + k`.
const SEED: u64 = 0x5eed_b1c6_57ab;

impl Shadow {
    /// `r~` for the start (`restart` 0) or the `restart`-th restart, given the current
    /// residual `r` and the right-hand side `b`. A restart needs a fresh vector: `r0` and
    /// `rhs` take the residual the restart recomputed, `random` the next seed's vector.
    pub(crate) fn fill<B: Backend, P: Precision>(
        self,
        backend: &B,
        restart: u64,
        r: &B::Vector<P>,
        b: &B::Vector<f64>,
        r_tilde: &mut B::Vector<P>,
    ) -> Result<()> {
        match (self, restart) {
            (Shadow::Rhs, 0) => backend.convert(b, r_tilde),
            (Shadow::R0 | Shadow::Rhs, _) => backend.copy(r, r_tilde),
            (Shadow::Random, k) => {
                let values = uniform(backend.len(r), SEED.wrapping_add(k));
                let fresh = backend.vector_from_f64::<P>(&values)?;
                backend.copy(&fresh, r_tilde)
            }
        }
    }
}

/// `n` values uniform in `[-1, 1)`, each a multiple of 2^-52 (exact in every precision), from
/// SplitMix64: a generator of a few lines whose output is fixed by its seed.
fn uniform(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 11) as f64 * 2f64.powi(-52) - 1.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::uniform;

    #[test]
    fn random_shadows_are_fixed_by_their_seed_and_spread() {
        let a = uniform(1000, 7);
        assert_eq!(a, uniform(1000, 7));
        assert_ne!(a, uniform(1000, 8));
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
        let mean = a.iter().sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.1, "{mean}");
        assert!(a.iter().any(|&v| v < -0.9) && a.iter().any(|&v| v > 0.9));
    }
}
