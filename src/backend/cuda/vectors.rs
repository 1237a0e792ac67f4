//! The CUDA backend's vectors: element layouts, allocation, upload, and elements and scalars as
//! kernel arguments.

use super::*;

impl CudaBackend {
    pub(super) fn suffix<P: Precision>() -> Result<&'static str> {
        match P::KERNEL_SUFFIX {
            s @ ("f64" | "dd" | "td" | "qd") => Ok(s),
            other => Err(Error::Backend {
                backend: "cuda",
                message: format!("precision {other} has no CUDA kernels"),
            }),
        }
    }

    pub(super) fn layout<P: Precision>() -> Layout {
        if P::KERNEL_SUFFIX == "td" {
            Layout::TdSoa
        } else {
            Layout::Words(P::BYTES / 8)
        }
    }

    pub(super) fn scalar<P: Precision>(value: &P) -> Scalar {
        if let Some(q) = cast::<P, Qd>(value) {
            return Scalar::Qd(q);
        }
        let dd = value.to_dd();
        if Self::layout::<P>() == Layout::Words(1) {
            Scalar::F64(dd.hi)
        } else {
            // dd, and td (whose values are exact in DD)
            Scalar::Dd(dd)
        }
    }

    /// A zeroed vector of `n` elements of `P`.
    pub(super) fn alloc_vector<P: Precision>(&self, n: usize) -> Result<CudaVector<P>> {
        let layout = Self::layout::<P>();
        let words = alloc_words(&self.stream, words_for(layout, n))?;
        let soa = (layout == Layout::TdSoa).then(|| {
            let (base, _sync) = words.device_ptr(&self.stream);
            TdPtr {
                hi: base,
                lo: base + 8 * n as u64,
            }
        });
        Ok(CudaVector {
            words,
            len: n,
            soa,
            _precision: PhantomData,
        })
    }

    /// Element `index` of `v` as a kernel argument (a one-element slot of a scalar block).
    pub(super) fn elem<P: Precision>(&self, v: &CudaVector<P>, index: usize) -> Elem {
        assert!(index < v.len, "element {index} of {}", v.len);
        match (&v.soa, Self::layout::<P>()) {
            (Some(t), _) => Elem::Td(TdPtr {
                hi: t.hi + 8 * index as u64,
                lo: t.lo + 4 * index as u64,
            }),
            (None, layout) => {
                let (base, _sync) = v.words.device_ptr(&self.stream);
                Elem::Ptr(base + (8 * words_for(layout, index)) as u64)
            }
        }
    }

    pub(super) fn elementwise(n: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: ((n as u64).div_ceil(BLOCK as u64).max(1) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// A vector holding `values` exactly, in `P`'s device layout.
    pub(super) fn upload_values<P: Precision>(&self, values: &[P]) -> Result<CudaVector<P>> {
        let mut v = self.alloc_vector::<P>(values.len())?;
        self.write_values(values, &mut v)?;
        Ok(v)
    }

    /// Overwrite `v` with `values` (as many), in `P`'s device layout.
    pub(super) fn write_values<P: Precision>(
        &self,
        values: &[P],
        v: &mut CudaVector<P>,
    ) -> Result<()> {
        assert_eq!(values.len(), v.len, "write_values: lengths");
        let len = values.len();
        let layout = Self::layout::<P>();
        let mut host = Vec::with_capacity(words_for(layout, len));
        match layout {
            Layout::Words(1) => host.extend(values.iter().map(|v| v.to_dd().hi)),
            Layout::Words(2) => {
                for v in values {
                    let d = v.to_dd();
                    host.extend([d.hi, d.lo]);
                }
            }
            Layout::Words(4) => {
                for v in values {
                    let q: Qd = cast(v).expect("four words per element: P is Qd");
                    host.extend(q.x);
                }
            }
            Layout::Words(w) => unreachable!("no precision has {w} words per element"),
            Layout::TdSoa => {
                let parts: Vec<(f64, i32)> = values
                    .iter()
                    .map(|v| cast::<P, Td>(v).expect("td layout: P is Td").parts())
                    .collect();
                host.extend(parts.iter().map(|p| p.0));
                host.extend(parts.chunks(2).map(|pair| {
                    let lo0 = pair[0].1 as u32 as u64;
                    let lo1 = pair.get(1).map_or(0, |p| p.1 as u32 as u64);
                    f64::from_bits(lo0 | (lo1 << 32))
                }));
            }
        }
        if !host.is_empty() {
            self.stream
                .memcpy_htod(&host, &mut v.words)
                .map_err(driver_error("copying a vector to the GPU"))?;
        }
        Ok(())
    }
}
