// CSR-vector SpMV (thesis ch. 3): NT threads per row (NT = 1..32 from the mean nonzeros per row),
// lane l sums entries l, l + NT, ... of its row from zero, then the lanes combine by shuffle-down
// (s = s + shfl_down(s, off) for off = NT/2 ... 1). One thread group per row, no outer loop; x is
// read through the read-only path (const __restrict__). The CPU backend sums in the same order.
// With has_b != 0 the kernel writes the residual y = b - A x instead of A x.
//
// Kernels: spmv_{f64,dd}_nt{1,2,4,8,16,32}(int nrows, const int* row_ptr, const int* col_idx,
//          const double* val, const T* x, T* y, const double* b, int has_b)

template <int NT>
__device__ __forceinline__ void spmv_f64_body(int nrows, const int* __restrict__ row_ptr,
                                              const int* __restrict__ col_idx,
                                              const double* __restrict__ val,
                                              const double* __restrict__ x, double* __restrict__ y,
                                              const double* __restrict__ b, int has_b) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long row = tid / NT;
    const int lane = threadIdx.x % NT;
    double s = 0.0;
    if (row < nrows) {
        const int end = row_ptr[row + 1];
        for (int k = row_ptr[row] + lane; k < end; k += NT) {
            s = __dadd_rn(s, __dmul_rn(val[k], x[col_idx[k]]));
        }
    }
    for (int off = NT / 2; off > 0; off >>= 1) {
        s = __dadd_rn(s, __shfl_down_sync(0xffffffffu, s, off, NT));
    }
    if (row < nrows && lane == 0) {
        y[row] = has_b ? __dsub_rn(b[row], s) : s;
    }
}

template <int NT>
__device__ __forceinline__ void spmv_dd_body(int nrows, const int* __restrict__ row_ptr,
                                             const int* __restrict__ col_idx,
                                             const double* __restrict__ val,
                                             const double2* __restrict__ x, double2* __restrict__ y,
                                             const double* __restrict__ b, int has_b) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long row = tid / NT;
    const int lane = threadIdx.x % NT;
    dd_t s = dd_from_f64(0.0);
    if (row < nrows) {
        const int end = row_ptr[row + 1];
        for (int k = row_ptr[row] + lane; k < end; k += NT) {
            // s <- s + a_k x_j, as Precision::add_mul_f64: add(s, mul_f64(x_j, a_k))
            s = dd_add(s, dd_mul_f64(dd_load(x, col_idx[k]), val[k]));
        }
    }
    for (int off = NT / 2; off > 0; off >>= 1) {
        dd_t o = {__shfl_down_sync(0xffffffffu, s.hi, off, NT),
                  __shfl_down_sync(0xffffffffu, s.lo, off, NT)};
        s = dd_add(s, o);
    }
    if (row < nrows && lane == 0) {
        dd_store(y, row, has_b ? dd_sub(dd_from_f64(b[row]), s) : s);
    }
}

#define SPMV_KERNELS(NT)                                                                        \
    extern "C" __global__ void spmv_f64_nt##NT(int nrows, const int* row_ptr, const int* col_idx, \
                                               const double* val, const double* x, double* y,    \
                                               const double* b, int has_b) {                     \
        spmv_f64_body<NT>(nrows, row_ptr, col_idx, val, x, y, b, has_b);                         \
    }                                                                                            \
    extern "C" __global__ void spmv_dd_nt##NT(int nrows, const int* row_ptr, const int* col_idx,  \
                                              const double* val, const double2* x, double2* y,   \
                                              const double* b, int has_b) {                      \
        spmv_dd_body<NT>(nrows, row_ptr, col_idx, val, x, y, b, has_b);                          \
    }

SPMV_KERNELS(1)
SPMV_KERNELS(2)
SPMV_KERNELS(4)
SPMV_KERNELS(8)
SPMV_KERNELS(16)
SPMV_KERNELS(32)
