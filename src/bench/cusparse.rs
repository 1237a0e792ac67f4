//! cuSPARSE's CSR SpMV (double), called through cudarc's raw bindings: the peer our SpMV is
//! timed against in `solver bench`. Only the bench uses it.

use crate::backend::cuda::{CudaBackend, CudaMatrix, CudaVector};
use crate::error::{Error, Result};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use std::ffi::c_void;

pub(super) fn check(what: &str, status: sys::cusparseStatus_t) -> Result<()> {
    if status == sys::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        // cuSPARSE's status type does not implement std::error::Error: name it ourselves.
        Err(Error::Backend {
            backend: "cuda",
            message: format!("cuSPARSE {what} failed: {status:?}"),
        })
    }
}

/// `y <- A x` by `cusparseSpMV` with the default algorithm, buffers prepared once.
pub struct CusparseSpmv {
    handle: sys::cusparseHandle_t,
    mat: sys::cusparseSpMatDescr_t,
    vec_x: sys::cusparseDnVecDescr_t,
    vec_y: sys::cusparseDnVecDescr_t,
    buffer: CudaSlice<u8>,
}

impl CusparseSpmv {
    /// Describe `a`, `x` and `y` (doubles) to cuSPARSE. The descriptors point at their memory:
    /// they must not outlive it, which the borrow of the bench's run keeps true.
    pub fn new(
        gpu: &CudaBackend,
        a: &CudaMatrix,
        x: &CudaVector<f64>,
        y: &mut CudaVector<f64>,
    ) -> Result<Self> {
        assert!(
            a.slice_ptr.is_none(),
            "cuSPARSE's SpMV reads CSR: upload the matrix with SpmvLayout::Csr"
        );
        let stream = gpu.stream();
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain cuSPARSE setup calls with out-pointers to locals; every pointer handed to
        // cuSPARSE is a live device allocation of the size declared (nrows+1 i32 row pointers,
        // nnz i32 columns and f64 values, ncols and nrows f64 vector entries).
        unsafe {
            check("create", sys::cusparseCreate(&mut handle))?;
            check(
                "set stream",
                sys::cusparseSetStream(handle, stream.cu_stream() as _),
            )?;
            let (rp, _g1) = a.row_ptr.device_ptr(stream);
            let (ci, _g2) = a.col_idx.device_ptr(stream);
            let (va, _g3) = a.values.device_ptr(stream);
            let (xp, _g4) = x.words.device_ptr(stream);
            let (yp, _g5) = y.words.device_ptr_mut(stream);
            let mut mat = std::ptr::null_mut();
            check(
                "create CSR",
                sys::cusparseCreateCsr(
                    &mut mat,
                    a.nrows as i64,
                    a.ncols as i64,
                    a.nnz as i64,
                    rp as *mut c_void,
                    ci as *mut c_void,
                    va as *mut c_void,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    sys::cudaDataType::CUDA_R_64F,
                ),
            )?;
            let mut vec_x = std::ptr::null_mut();
            let mut vec_y = std::ptr::null_mut();
            check(
                "create x",
                sys::cusparseCreateDnVec(
                    &mut vec_x,
                    a.ncols as i64,
                    xp as *mut c_void,
                    sys::cudaDataType::CUDA_R_64F,
                ),
            )?;
            check(
                "create y",
                sys::cusparseCreateDnVec(
                    &mut vec_y,
                    a.nrows as i64,
                    yp as *mut c_void,
                    sys::cudaDataType::CUDA_R_64F,
                ),
            )?;
            let (alpha, beta) = (1.0f64, 0.0f64);
            let mut size = 0usize;
            check(
                "buffer size",
                sys::cusparseSpMV_bufferSize(
                    handle,
                    sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &alpha as *const f64 as *const c_void,
                    mat as _,
                    vec_x as _,
                    &beta as *const f64 as *const c_void,
                    vec_y,
                    sys::cudaDataType::CUDA_R_64F,
                    sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT,
                    &mut size,
                ),
            )?;
            let buffer = stream.alloc_zeros::<u8>(size.max(1)).map_err(
                crate::backend::cuda::device::driver_error("cuSPARSE buffer"),
            )?;
            Ok(CusparseSpmv {
                handle,
                mat,
                vec_x,
                vec_y,
                buffer,
            })
        }
    }

    pub fn run(&mut self, gpu: &CudaBackend) -> Result<()> {
        let (alpha, beta) = (1.0f64, 0.0f64);
        let (buf, _g) = self.buffer.device_ptr_mut(gpu.stream());
        // SAFETY: the descriptors and buffer were made by `new` for these sizes and are alive.
        unsafe {
            check(
                "SpMV",
                sys::cusparseSpMV(
                    self.handle,
                    sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                    &alpha as *const f64 as *const c_void,
                    self.mat as _,
                    self.vec_x as _,
                    &beta as *const f64 as *const c_void,
                    self.vec_y,
                    sys::cudaDataType::CUDA_R_64F,
                    sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_ALG_DEFAULT,
                    buf as *mut c_void,
                ),
            )
        }
    }
}

impl Drop for CusparseSpmv {
    fn drop(&mut self) {
        // SAFETY: each handle was created by `new` and is destroyed once.
        unsafe {
            sys::cusparseDestroyDnVec(self.vec_x);
            sys::cusparseDestroyDnVec(self.vec_y);
            sys::cusparseDestroySpMat(self.mat);
            sys::cusparseDestroy(self.handle);
        }
    }
}
