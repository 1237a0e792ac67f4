//! The CUDA backend's vectors: element layouts, allocation, upload, and elements and scalars as
//! kernel arguments.

use super::*;

impl CudaBackend {
    pub(super) fn suffix<P: Precision>() -> Result<&'static str> {
        match P::KERNEL_SUFFIX {
            s @ ("f64" | "dd" | "td" | "qd") => Ok(s),
            "mp" => Self::mp_suffix(),
            other => Err(Error::Backend {
                backend: "cuda",
                message: format!("precision {other} has no CUDA kernels"),
            }),
        }
    }

    /// `mp{bits}`: the kernels of the solve's precision (its scope's), compiled for it.
    fn mp_suffix() -> Result<&'static str> {
        Ok(device::mp_suffix(Self::mp_bits()?))
    }

    /// The precision of the mp solve in whose scope the caller runs.
    pub(super) fn mp_bits() -> Result<u32> {
        crate::precision::mp::current_bits().ok_or_else(|| Error::Backend {
            backend: "cuda",
            message: "an mp vector outside an mp solve's precision scope".into(),
        })
    }

    pub(super) fn layout<P: Precision>() -> Layout {
        match P::KERNEL_SUFFIX {
            "td" => Layout::TdSoa,
            // MpFloat<L> is L limbs and 8 bytes of header
            "mp" => Layout::MpSoa(P::BYTES / 8 - 1),
            _ => Layout::Words(P::BYTES / 8),
        }
    }

    pub(super) fn scalar<P: Precision>(value: &P) -> Scalar {
        if let Some(q) = cast::<P, Qd>(value) {
            return Scalar::Qd(q);
        }
        if let Layout::MpSoa(_) = Self::layout::<P>() {
            let w = mp_packed(value);
            return match w.len() {
                3 => Scalar::Mp2(MpScalar(std::array::from_fn(|i| w[i]))),
                5 => Scalar::Mp4(MpScalar(std::array::from_fn(|i| w[i]))),
                9 => Scalar::Mp8(MpScalar(std::array::from_fn(|i| w[i]))),
                17 => Scalar::Mp16(MpScalar(std::array::from_fn(|i| w[i]))),
                33 => Scalar::Mp32(MpScalar(std::array::from_fn(|i| w[i]))),
                n => unreachable!("mp scalars of {n} words have no kernels (suffix refuses them)"),
            };
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
        let soa = match layout {
            Layout::TdSoa => {
                let (base, _sync) = words.device_ptr(&self.stream);
                Some(Soa::Td(TdPtr {
                    hi: base,
                    lo: base + 8 * n as u64,
                }))
            }
            Layout::MpSoa(_) => {
                let (base, _sync) = words.device_ptr(&self.stream);
                Some(Soa::Mp(MpPtr {
                    base,
                    stride: n as i64,
                }))
            }
            Layout::Words(_) => None,
        };
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
            (Some(Soa::Td(t)), _) => Elem::Td(TdPtr {
                hi: t.hi + 8 * index as u64,
                lo: t.lo + 4 * index as u64,
            }),
            (Some(Soa::Mp(m)), _) => Elem::Mp(MpPtr {
                base: m.base + 8 * index as u64,
                stride: m.stride,
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
            Layout::MpSoa(limbs) => {
                // limb-major: limb l of every element, then every header
                host.resize((limbs + 1) * len, 0.0);
                for (i, v) in values.iter().enumerate() {
                    for (l, w) in mp_packed(v).into_iter().enumerate() {
                        host[l * len + i] = f64::from_bits(w);
                    }
                }
            }
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

/// An mp value's packed words (`MpFloat::to_packed`: limbs, then the header).
pub(super) fn mp_packed<P: Precision>(value: &P) -> Vec<u64> {
    use crate::precision::MpFloat;
    macro_rules! of {
        ($($l:literal),*) => {$(
            if let Some(x) = cast::<P, MpFloat<$l>>(value) {
                let (sig, header) = x.to_packed();
                return sig.into_iter().chain([header]).collect();
            }
        )*};
    }
    of!(2, 4, 8, 16, 32);
    unreachable!("{} is not an mp precision", P::NAME)
}

/// The mp value of packed `words` (`L + 1` of them) as `P`, which is `MpFloat<L>`.
pub(super) fn mp_unpacked<P: Precision>(words: &[u64]) -> P {
    use crate::precision::MpFloat;
    macro_rules! of {
        ($($l:literal),*) => {$(
            if words.len() == $l + 1 {
                let x = MpFloat::<$l>::from_packed(std::array::from_fn(|i| words[i]), words[$l]);
                return cast::<MpFloat<$l>, P>(&x).expect("an mp layout: P is MpFloat<L>");
            }
        )*};
    }
    of!(2, 4, 8, 16, 32);
    unreachable!("no mp precision has {} words", words.len())
}
