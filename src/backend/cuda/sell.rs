//! Which layout the GPU SpMV reads a matrix's entries in, and the upload of each.
//!
//! CSR (`spmv_{p}_nt{NT}`, thesis ch. 3) gives each row `NT` threads. Where the rows are short
//! enough for one thread a row (`NT = 1`), a warp's loads then touch 32 scattered CSR offsets;
//! the sliced layout ([`SellEntries`], slices of a warp's 32 rows, `spmv_{p}_sell`) makes them
//! one contiguous segment, with the same per-row order and so the same bits, and the SpMV
//! faster in both precisions (`benches/results/h200.md`).
//!
//! That holds once the rows fill the GPU. With fewer rows than it keeps threads resident (one
//! wave; 270,336 on the H200), the SpMV is bound by each thread's chain of loads, and CSR, whose
//! row's entries share a cache line, is as fast or faster; the sliced layout wins from about
//! twice that many rows (the sizes measured are in `benches/results/h200.md`).

use super::{CudaBackend, CudaMatrix};
use crate::backend::spmv_lanes;
use crate::error::{Error, Result};
use crate::sparse::{CsrMatrix, SellEntries};
use cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

/// Rows per slice: a warp. Must match SELL_C in kernels/spmv_csr.cu and kernels/xprec.cu.
pub const SELL_ROWS: usize = 32;

/// At most this much padding (a fraction of the stored entries) for the automatic choice to
/// take the sliced layout: a slice is as wide as its longest row, so one long row among short
/// ones costs 31 rows of empty slots. The padding is never read, only stored.
const SELL_MAX_PADDING: f64 = 0.25;

/// How the SpMV kernels read a matrix's entries on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmvLayout {
    /// CSR, `lanes` threads per row (`spmv_lanes`).
    Csr,
    /// Sliced ELLPACK, one thread per row.
    Sell,
}

impl SpmvLayout {
    /// The layout [`crate::backend::Backend::matrix`] uploads on a GPU that keeps
    /// `resident_threads` threads at once: sliced where CSR would give a row one thread, the rows
    /// fill the GPU at least once, and the slices pad the entries by at most 25%; else CSR.
    pub fn for_matrix(a: &CsrMatrix, resident_threads: usize) -> SpmvLayout {
        if spmv_lanes(a) != 1 || a.nnz() == 0 || a.nrows() < resident_threads {
            return SpmvLayout::Csr;
        }
        let slots = SellEntries::slots(a, SELL_ROWS);
        let padding = (slots - a.nnz()) as f64 / a.nnz() as f64;
        if padding <= SELL_MAX_PADDING && slots <= i32::MAX as usize {
            SpmvLayout::Sell
        } else {
            SpmvLayout::Csr
        }
    }
}

impl CudaMatrix {
    /// The layout this matrix's SpMV reads.
    pub fn layout(&self) -> SpmvLayout {
        if self.slice_ptr.is_some() {
            SpmvLayout::Sell
        } else {
            SpmvLayout::Csr
        }
    }
}

impl CudaBackend {
    /// Give matrices uploaded from now on `layout` wherever it applies (the sliced layout only
    /// to matrices with one CSR thread per row), or with `None` the automatic choice again.
    pub fn set_spmv_layout(&self, layout: Option<SpmvLayout>) {
        *self.spmv_layout.lock().unwrap_or_else(|e| e.into_inner()) = layout;
    }

    pub fn spmv_layout(&self) -> Option<SpmvLayout> {
        *self.spmv_layout.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Threads the GPU keeps resident at once (SMs times threads per SM).
    pub fn resident_threads(&self) -> Result<usize> {
        use cudarc::driver::sys::CUdevice_attribute as Attr;
        let sms = self.attribute(
            Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "reading the SM count",
        )?;
        let per_sm = self.attribute(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            "reading the threads per SM",
        )?;
        Ok(sms.max(1) * per_sm.max(1))
    }

    /// Upload `a` with its entries in `layout`, whatever [`SpmvLayout::for_matrix`] would
    /// choose (the tests check both layouts; `solver bench` needs CSR for cuSPARSE). The sliced
    /// layout sums each row in one thread, the CPU's order only where `spmv_lanes(a)` is 1: for
    /// other matrices it is an error.
    pub fn matrix_with_layout(&self, a: &Arc<CsrMatrix>, layout: SpmvLayout) -> Result<CudaMatrix> {
        self.matrix_in(a, layout, spmv_lanes(a))
    }

    /// [`matrix_with_layout`](Self::matrix_with_layout) with its rows summed in `lanes` lanes
    /// (a block of rows of a larger matrix sums them as the whole does).
    pub(super) fn matrix_in(
        &self,
        a: &Arc<CsrMatrix>,
        layout: SpmvLayout,
        lanes: usize,
    ) -> Result<CudaMatrix> {
        if layout == SpmvLayout::Sell && lanes != 1 {
            return Err(unsupported(format!(
                "the sliced layout sums a row in one thread, and this matrix's rows take {lanes} \
                 (as the CPU sums them)"
            )));
        }
        if a.nnz() > i32::MAX as usize {
            return Err(unsupported(format!(
                "{} nonzeros exceed the GPU kernels' 32-bit row pointers",
                a.nnz()
            )));
        }
        let row_ptr: Vec<i32> = a.row_ptr().iter().map(|&p| p as i32).collect();
        let sell = (layout == SpmvLayout::Sell).then(|| SellEntries::new(a, SELL_ROWS));
        let (cols, vals) = match &sell {
            Some(sell) => (sell.cols(), sell.vals()),
            None => (a.col_idx(), a.values()),
        };
        if cols.len() > i32::MAX as usize {
            return Err(unsupported(format!(
                "{} slots of the sliced layout exceed the GPU kernels' 32-bit offsets",
                cols.len()
            )));
        }
        let slice_ptr: Option<Vec<i32>> = sell
            .as_ref()
            .map(|s| s.slice_ptr().iter().map(|&p| p as i32).collect());
        let bytes = cols.len() * 12 + (row_ptr.len() + slice_ptr.as_ref().map_or(0, Vec::len)) * 4;
        let stream = &self.stream;
        let up = Upload { stream, bytes };
        Ok(CudaMatrix {
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            lanes,
            longest_row: a.row_ptr().windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0),
            row_ptr: up.copy(&row_ptr)?,
            slice_ptr: slice_ptr.as_deref().map(|s| up.copy(s)).transpose()?,
            col_idx: up.copy(cols)?,
            values: up.copy(vals)?,
        })
    }
}

/// An upload the GPU kernels cannot take.
fn unsupported(message: String) -> Error {
    Error::Backend {
        backend: "cuda",
        message,
    }
}

/// Copies of the matrix's arrays, failing with the whole matrix's size in the message.
struct Upload<'a> {
    stream: &'a Arc<CudaStream>,
    bytes: usize,
}

impl Upload<'_> {
    /// `host` on the device (one zero element when empty: kernels take a valid pointer).
    fn copy<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Default + Clone>(
        &self,
        host: &[T],
    ) -> Result<CudaSlice<T>> {
        let oom = |e| Error::Backend {
            backend: "cuda",
            message: format!(
                "could not allocate {:.1} MiB for the matrix on the GPU: {e:?}",
                self.bytes as f64 / 1048576.0
            ),
        };
        if host.is_empty() {
            self.stream.alloc_zeros::<T>(1).map_err(oom)
        } else {
            self.stream.clone_htod(host).map_err(oom)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse::{Symmetry, poisson3d};

    /// A matrix of `n` rows with `per_row` entries each, plus `long` entries in row 0.
    fn banded(n: usize, per_row: usize, long: usize) -> CsrMatrix {
        let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
        for i in 0..n {
            let count = if i == 0 { long.max(per_row) } else { per_row };
            for k in 0..count {
                rows.push(i as u32);
                cols.push(((i + k) % n) as u32);
                vals.push(1.0);
            }
        }
        CsrMatrix::from_coo(n, n, &rows, &cols, &vals, Symmetry::General).unwrap()
    }

    #[test]
    fn short_even_rows_are_sliced_and_the_rest_stay_csr() {
        // a GPU that keeps 1000 threads resident
        let layout = |a: &CsrMatrix| SpmvLayout::for_matrix(a, 1000);
        assert_eq!(layout(&poisson3d(12)), SpmvLayout::Sell);
        assert_eq!(layout(&banded(1000, 5, 0)), SpmvLayout::Sell);
        // fewer rows than resident threads
        assert_eq!(layout(&banded(999, 5, 0)), SpmvLayout::Csr);
        assert_eq!(layout(&poisson3d(9)), SpmvLayout::Csr);
        // one row of 400 entries pads its slice with 31 * 395 empty slots: 245% of 5000
        assert_eq!(layout(&banded(1000, 5, 400)), SpmvLayout::Csr);
        // CSR gives these rows several threads
        assert_eq!(layout(&banded(1000, 40, 0)), SpmvLayout::Csr);
        assert_eq!(layout(&banded(0, 0, 0)), SpmvLayout::Csr);
    }
}
