//! `mp:<bits>`'s device arithmetic (`kernels/common/mp.cuh`) run on operands from the host: the
//! check that each operation gives the CPU's `MpFloat` bits (`tests/gpu.rs`). The vector
//! kernels of the solvers are not wired to it yet (issue #30).

use super::*;
use crate::precision::MpFloat;

impl CudaBackend {
    /// For each `i`: `a + b`, `a - b`, `a * b`, `a / b`, `sqrt |a|`, `a * d`, `d` at `a`'s
    /// precision (seven results an element, in that order), and `a` rounded to a double, all
    /// computed on the device by `mp_ops_check_l{L}`.
    #[doc(hidden)]
    pub fn mp_ops_check<const L: usize>(
        &self,
        a: &[MpFloat<L>],
        b: &[MpFloat<L>],
        d: &[f64],
    ) -> Result<(Vec<MpFloat<L>>, Vec<f64>)> {
        let n = a.len();
        assert!(b.len() == n && d.len() == n, "mp_ops_check: lengths");
        let packed = |v: &[MpFloat<L>]| -> Vec<f64> {
            v.iter()
                .flat_map(|x| {
                    let (sig, header) = x.to_packed();
                    sig.into_iter().chain([header]).map(f64::from_bits)
                })
                .collect()
        };
        let upload = |host: &[f64]| -> Result<CudaSlice<f64>> {
            let mut dev = alloc_words(&self.stream, host.len())?;
            self.stream
                .memcpy_htod(host, &mut dev)
                .map_err(driver_error("copying mp operands to the GPU"))?;
            Ok(dev)
        };
        let (da, db, dd) = (upload(&packed(a))?, upload(&packed(b))?, upload(d)?);
        let out = alloc_words(&self.stream, 7 * (L + 1) * n)?;
        let out_f64 = alloc_words(&self.stream, n)?;
        let name = format!("mp_ops_check_l{L}");
        let f = self.kernels.function(&name)?;
        let n64 = n as i64;
        let mut args = self.stream.launch_builder(&f);
        args.arg(&n64)
            .arg(&da)
            .arg(&db)
            .arg(&dd)
            .arg(&out)
            .arg(&out_f64);
        // SAFETY: mp_ops_check_l{L}(long long n, const u64* a, const u64* b, const double* d,
        // u64* out, double* out_f64): a and b hold n packed values of L + 1 words, d n
        // doubles, out 7 n packed values, out_f64 n doubles; one thread an element.
        unsafe { args.launch(Self::elementwise(n)) }.map_err(driver_error(&name))?;
        let words = self
            .stream
            .clone_dtoh(&out)
            .map_err(driver_error("copying mp results from the GPU"))?;
        let doubles = self
            .stream
            .clone_dtoh(&out_f64)
            .map_err(driver_error("copying mp results from the GPU"))?;
        let results = words[..7 * (L + 1) * n]
            .chunks_exact(L + 1)
            .map(|w| {
                let sig = std::array::from_fn(|i| w[i].to_bits());
                MpFloat::from_packed(sig, w[L].to_bits())
            })
            .collect();
        Ok((results, doubles[..n].to_vec()))
    }
}
