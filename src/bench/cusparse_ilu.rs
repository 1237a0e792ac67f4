//! cuSPARSE's ILU(0) pipeline, the peer of our triangular solves in `solver bench --precond
//! ilu0`: `csrilu02` factors a copy of `A` on the GPU, then `cusparseSpSV` solves with `L`
//! (lower, unit diagonal) and `U` (upper) in that one CSR array. Only the bench uses it.

use super::cusparse::check;
use crate::backend::cuda::device::driver_error;
use crate::backend::cuda::{CudaBackend, CudaVector};
use crate::error::{Error, Result};
use crate::precond::ilu0::Ilu0Factors;
use crate::sparse::CsrMatrix;
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use std::ffi::c_void;

/// Whether the loaded cuSPARSE exports `name` (cudarc panics on a missing symbol).
fn has_symbol(name: &str) -> bool {
    // SAFETY: looking a symbol up loads nothing and calls nothing.
    unsafe {
        sys::culib()
            .get::<unsafe extern "C" fn()>(name.as_bytes())
            .is_ok()
    }
}

/// How cuSPARSE's factors compare with ours (same pattern, entry by entry).
#[derive(Clone, Copy, Debug)]
pub struct FactorAgreement {
    /// Largest `|theirs - ours| / |ours|` over the entries (0 where both are 0).
    pub max_relative: f64,
    /// Entries with identical bits.
    pub identical: usize,
    pub entries: usize,
}

/// `y <- U^{-1} L^{-1} x` by two `cusparseSpSV_solve` calls with analysis done once.
pub struct CusparseIlu {
    handle: sys::cusparseHandle_t,
    mat_l: sys::cusparseSpMatDescr_t,
    mat_u: sys::cusparseSpMatDescr_t,
    vec_x: sys::cusparseDnVecDescr_t,
    vec_t: sys::cusparseDnVecDescr_t,
    vec_y: sys::cusparseDnVecDescr_t,
    spsv_l: sys::cusparseSpSVDescr_t,
    spsv_u: sys::cusparseSpSVDescr_t,
    // Device memory the descriptors point at: kept alive as long as they are.
    _row_ptr: CudaSlice<i32>,
    _col_idx: CudaSlice<i32>,
    _values: CudaSlice<f64>,
    _temp: CudaSlice<f64>,
    _buffers: [CudaSlice<u8>; 2],
    /// Seconds cuSPARSE's factorization took (analysis and factorization, wall clock).
    pub factor_seconds: f64,
    pub agreement: FactorAgreement,
}

impl CusparseIlu {
    /// Factor `a` with `csrilu02` and prepare the two solves from `x` to `y` (doubles). `ours`
    /// gives the pattern (it must be `a`'s: no `--ilu-shift`) and the factors to compare with.
    pub fn new(
        gpu: &CudaBackend,
        a: &CsrMatrix,
        ours: &Ilu0Factors,
        x: &CudaVector<f64>,
        y: &mut CudaVector<f64>,
    ) -> Result<Self> {
        let unavailable = |what: &str| Error::Backend {
            backend: "cuda",
            message: format!("cuSPARSE peer: {what}"),
        };
        if ours.sigma() != 0.0 || ours.nnz() != a.nnz() {
            return Err(unavailable(
                "csrilu02 needs A's own pattern (no --ilu-shift)",
            ));
        }
        for name in [
            "cusparseDcsrilu02",
            "cusparseSpSV_solve",
            "cusparseSpSV_analysis",
        ] {
            if !has_symbol(name) {
                return Err(unavailable(&format!("this cuSPARSE has no {name}")));
            }
        }
        let (n, nnz) = (a.nrows(), a.nnz());
        let stream = gpu.stream();
        let row_ptr_h: Vec<i32> = a.row_ptr().iter().map(|&p| p as i32).collect();
        let upload = driver_error("copying the cuSPARSE peer's matrix");
        let row_ptr = stream.clone_htod(&row_ptr_h).map_err(upload)?;
        let col_idx = stream
            .clone_htod(a.col_idx())
            .map_err(driver_error("copying the cuSPARSE peer's matrix"))?;
        let mut values = stream
            .clone_htod(a.values())
            .map_err(driver_error("copying the cuSPARSE peer's matrix"))?;
        let mut temp = stream
            .alloc_zeros::<f64>(n.max(1))
            .map_err(driver_error("allocating the cuSPARSE peer's vector"))?;
        let (m, nnz_i) = (n as i32, nnz as i32);
        let mut handle = std::ptr::null_mut();
        // SAFETY: cuSPARSE setup calls with out-pointers to locals. Every device pointer handed
        // over is a live allocation of the size declared: n + 1 i32 row pointers, nnz i32
        // columns and f64 values, n f64 entries for x, the temporary and y, and buffers of the
        // sizes cuSPARSE asked for. The descriptors are destroyed (Drop) before the allocations
        // they point at, which this struct owns (x and y are the caller's: the bench keeps them
        // alive while the peer runs).
        unsafe {
            check("create", sys::cusparseCreate(&mut handle))?;
            check(
                "set stream",
                sys::cusparseSetStream(handle, stream.cu_stream() as _),
            )?;
            let (rp, _g1) = row_ptr.device_ptr(stream);
            let (ci, _g2) = col_idx.device_ptr(stream);
            let (va, _g3) = values.device_ptr_mut(stream);
            let (rp, ci, va) = (rp as *const i32, ci as *const i32, va as *mut f64);

            // csrilu02 on the copy of A: analysis, factorization, zero-pivot checks.
            let start = std::time::Instant::now();
            let mut descr = std::ptr::null_mut();
            check("create descr", sys::cusparseCreateMatDescr(&mut descr))?;
            sys::cusparseSetMatIndexBase(descr, sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO);
            sys::cusparseSetMatType(
                descr,
                sys::cusparseMatrixType_t::CUSPARSE_MATRIX_TYPE_GENERAL,
            );
            let mut info = std::ptr::null_mut();
            check(
                "create ilu info",
                sys::cusparseCreateCsrilu02Info(&mut info),
            )?;
            let mut size = 0i32;
            check(
                "csrilu02 buffer size",
                sys::cusparseDcsrilu02_bufferSize(
                    handle, m, nnz_i, descr, va, rp, ci, info, &mut size,
                ),
            )?;
            let ilu_buffer = stream
                .alloc_zeros::<u8>((size as usize).max(1))
                .map_err(driver_error("csrilu02 buffer"))?;
            let (ib, _g4) = ilu_buffer.device_ptr(stream);
            let policy = sys::cusparseSolvePolicy_t::CUSPARSE_SOLVE_POLICY_USE_LEVEL;
            check(
                "csrilu02 analysis",
                sys::cusparseDcsrilu02_analysis(
                    handle,
                    m,
                    nnz_i,
                    descr,
                    va,
                    rp,
                    ci,
                    info,
                    policy,
                    ib as *mut c_void,
                ),
            )?;
            let mut pivot = -1i32;
            let status = sys::cusparseXcsrilu02_zeroPivot(handle, info, &mut pivot);
            if status == sys::cusparseStatus_t::CUSPARSE_STATUS_ZERO_PIVOT {
                return Err(unavailable(&format!(
                    "csrilu02 analysis: structural zero pivot in row {}",
                    pivot + 1
                )));
            }
            check(
                "csrilu02",
                sys::cusparseDcsrilu02(
                    handle,
                    m,
                    nnz_i,
                    descr,
                    va,
                    rp,
                    ci,
                    info,
                    policy,
                    ib as *mut c_void,
                ),
            )?;
            let status = sys::cusparseXcsrilu02_zeroPivot(handle, info, &mut pivot);
            stream
                .synchronize()
                .map_err(driver_error("waiting for csrilu02"))?;
            let factor_seconds = start.elapsed().as_secs_f64();
            sys::cusparseDestroyCsrilu02Info(info);
            sys::cusparseDestroyMatDescr(descr);
            drop(_g4);
            drop(ilu_buffer);
            if status == sys::cusparseStatus_t::CUSPARSE_STATUS_ZERO_PIVOT {
                return Err(unavailable(&format!(
                    "csrilu02: zero pivot in row {}",
                    pivot + 1
                )));
            }

            // The two triangles as views of the factored array.
            let mut mats = [std::ptr::null_mut(); 2];
            for (mat, (fill, diag)) in mats.iter_mut().zip([
                (
                    sys::cusparseFillMode_t::CUSPARSE_FILL_MODE_LOWER,
                    sys::cusparseDiagType_t::CUSPARSE_DIAG_TYPE_UNIT,
                ),
                (
                    sys::cusparseFillMode_t::CUSPARSE_FILL_MODE_UPPER,
                    sys::cusparseDiagType_t::CUSPARSE_DIAG_TYPE_NON_UNIT,
                ),
            ]) {
                check(
                    "create CSR",
                    sys::cusparseCreateCsr(
                        mat,
                        n as i64,
                        n as i64,
                        nnz as i64,
                        rp as *mut c_void,
                        ci as *mut c_void,
                        va as *mut c_void,
                        sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                        sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                        sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                        sys::cudaDataType::CUDA_R_64F,
                    ),
                )?;
                let mut fill = fill;
                let mut diag = diag;
                check(
                    "fill mode",
                    sys::cusparseSpMatSetAttribute(
                        *mat,
                        sys::cusparseSpMatAttribute_t::CUSPARSE_SPMAT_FILL_MODE,
                        &mut fill as *mut _ as *mut c_void,
                        std::mem::size_of_val(&fill),
                    ),
                )?;
                check(
                    "diagonal type",
                    sys::cusparseSpMatSetAttribute(
                        *mat,
                        sys::cusparseSpMatAttribute_t::CUSPARSE_SPMAT_DIAG_TYPE,
                        &mut diag as *mut _ as *mut c_void,
                        std::mem::size_of_val(&diag),
                    ),
                )?;
            }
            let (xp, _g5) = x.words.device_ptr(stream);
            let (tp, _g6) = temp.device_ptr_mut(stream);
            let (yp, _g7) = y.words.device_ptr_mut(stream);
            let mut vecs = [std::ptr::null_mut(); 3];
            for (v, p) in vecs.iter_mut().zip([xp, tp, yp]) {
                check(
                    "create vector",
                    sys::cusparseCreateDnVec(
                        v,
                        n as i64,
                        p as *mut c_void,
                        sys::cudaDataType::CUDA_R_64F,
                    ),
                )?;
            }
            let [vec_x, vec_t, vec_y] = vecs;
            let alpha = 1.0f64;
            let mut spsv = [std::ptr::null_mut(); 2];
            let mut buffers = Vec::with_capacity(2);
            for (k, (mat, (vin, vout))) in mats
                .iter()
                .zip([(vec_x, vec_t), (vec_t, vec_y)])
                .enumerate()
            {
                check("SpSV descr", sys::cusparseSpSV_createDescr(&mut spsv[k]))?;
                let mut size = 0usize;
                check(
                    "SpSV buffer size",
                    sys::cusparseSpSV_bufferSize(
                        handle,
                        sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                        &alpha as *const f64 as *const c_void,
                        *mat,
                        vin,
                        vout,
                        sys::cudaDataType::CUDA_R_64F,
                        sys::cusparseSpSVAlg_t::CUSPARSE_SPSV_ALG_DEFAULT,
                        spsv[k],
                        &mut size,
                    ),
                )?;
                let buffer = stream
                    .alloc_zeros::<u8>(size.max(1))
                    .map_err(driver_error("SpSV buffer"))?;
                {
                    let (bp, _g) = buffer.device_ptr(stream);
                    check(
                        "SpSV analysis",
                        sys::cusparseSpSV_analysis(
                            handle,
                            sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                            &alpha as *const f64 as *const c_void,
                            *mat,
                            vin,
                            vout,
                            sys::cudaDataType::CUDA_R_64F,
                            sys::cusparseSpSVAlg_t::CUSPARSE_SPSV_ALG_DEFAULT,
                            spsv[k],
                            bp as *mut c_void,
                        ),
                    )?;
                }
                buffers.push(buffer);
            }
            drop((_g1, _g2, _g3, _g5, _g6, _g7));
            let theirs = stream
                .clone_dtoh(&values)
                .map_err(driver_error("copying csrilu02's factors"))?;
            let agreement = agree(&theirs, ours.values());
            let buffers: [CudaSlice<u8>; 2] = buffers.try_into().expect("two buffers");
            Ok(CusparseIlu {
                handle,
                mat_l: mats[0],
                mat_u: mats[1],
                vec_x,
                vec_t,
                vec_y,
                spsv_l: spsv[0],
                spsv_u: spsv[1],
                _row_ptr: row_ptr,
                _col_idx: col_idx,
                _values: values,
                _temp: temp,
                _buffers: buffers,
                factor_seconds,
                agreement,
            })
        }
    }

    /// `y <- U^{-1} L^{-1} x` (the vectors given to `new`).
    pub fn run(&mut self) -> Result<()> {
        let alpha = 1.0f64;
        // SAFETY: descriptors and buffers were made and analysed by `new` and are alive.
        unsafe {
            for (mat, vin, vout, spsv) in [
                (self.mat_l, self.vec_x, self.vec_t, self.spsv_l),
                (self.mat_u, self.vec_t, self.vec_y, self.spsv_u),
            ] {
                check(
                    "SpSV solve",
                    sys::cusparseSpSV_solve(
                        self.handle,
                        sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                        &alpha as *const f64 as *const c_void,
                        mat,
                        vin,
                        vout,
                        sys::cudaDataType::CUDA_R_64F,
                        sys::cusparseSpSVAlg_t::CUSPARSE_SPSV_ALG_DEFAULT,
                        spsv,
                    ),
                )?;
            }
        }
        Ok(())
    }
}

fn agree(theirs: &[f64], ours: &[f64]) -> FactorAgreement {
    let mut max_relative = 0.0f64;
    let mut identical = 0;
    for (&t, &o) in theirs.iter().zip(ours) {
        if t.to_bits() == o.to_bits() {
            identical += 1;
            continue;
        }
        let rel = if o == 0.0 {
            f64::INFINITY
        } else {
            ((t - o) / o).abs()
        };
        max_relative = max_relative.max(if rel.is_nan() { f64::INFINITY } else { rel });
    }
    FactorAgreement {
        max_relative,
        identical,
        entries: ours.len(),
    }
}

impl Drop for CusparseIlu {
    fn drop(&mut self) {
        // SAFETY: each handle was created by `new` and is destroyed once, before the memory.
        unsafe {
            sys::cusparseSpSV_destroyDescr(self.spsv_l);
            sys::cusparseSpSV_destroyDescr(self.spsv_u);
            sys::cusparseDestroyDnVec(self.vec_x);
            sys::cusparseDestroyDnVec(self.vec_t);
            sys::cusparseDestroyDnVec(self.vec_y);
            sys::cusparseDestroySpMat(self.mat_l);
            sys::cusparseDestroySpMat(self.mat_u);
            sys::cusparseDestroy(self.handle);
        }
    }
}
