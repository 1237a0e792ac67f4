// CSR-vector SpMV (thesis ch. 3): NT threads per row (NT = 1..32 from the mean nonzeros per row),
// lane l sums entries l, l + NT, ... of its row from zero, then the lanes combine by shuffle-down
// (s = s + shfl_down(s, off) for off = NT/2 ... 1). One thread group per row, no outer loop; x is
// read through the read-only path (const __restrict__). The CPU backend sums in the same order.
// With has_b != 0 the kernel writes the residual y = b - A x instead of A x.
//
// Kernels: spmv_{f64,dd}_nt{1,2,4,8,16,32}(int nrows, const int* row_ptr, const int* col_idx,
//          const double* val, const T* x, T* y, const double* b, int has_b)
//          spmv_wide_dd_nt{NT}(...): the same with x of doubles read widened to (x, 0), the bits
//          of spmv_dd on x converted (BiCGStab's preconditioned directions, kept in double)

// Lane `lane` of row `row`'s sum with NT lanes: entries lane, lane + NT, ... summed from zero
// (the order the CPU's kernels follow). spmv_{p}_body and the staged kernels sum their rows
// through these; spmv_dot_{p}_r{R} advances R rows step by step in the same order.
template <int NT>
__device__ __forceinline__ double spmv_f64_lane(const int* __restrict__ row_ptr,
                                                const int* __restrict__ col_idx,
                                                const double* __restrict__ val,
                                                const double* __restrict__ x, long long row,
                                                int lane) {
    double s = 0.0;
    const int end = row_ptr[row + 1];
    for (int k = row_ptr[row] + lane; k < end; k += NT) {
        s = __dadd_rn(s, __dmul_rn(val[k], x[col_idx[k]]));
    }
    return s;
}

template <int NT>
__device__ __forceinline__ void spmv_f64_body(int nrows, const int* __restrict__ row_ptr,
                                              const int* __restrict__ col_idx,
                                              const double* __restrict__ val,
                                              const double* __restrict__ x, double* __restrict__ y,
                                              const double* __restrict__ b, int has_b) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long row = tid / NT;
    const int lane = threadIdx.x % NT;
    double s = row < nrows ? spmv_f64_lane<NT>(row_ptr, col_idx, val, x, row, lane) : 0.0;
    for (int off = NT / 2; off > 0; off >>= 1) {
        s = __dadd_rn(s, __shfl_down_sync(0xffffffffu, s, off, NT));
    }
    if (row < nrows && lane == 0) {
        y[row] = has_b ? __dsub_rn(b[row], s) : s;
    }
}

// x[j] as a double-double: stored, or a double widened exactly.
__device__ __forceinline__ dd_t spmv_dd_x(const double2* __restrict__ x, int j) {
    return dd_load(x, j);
}
__device__ __forceinline__ dd_t spmv_dd_x(const double* __restrict__ x, int j) {
    return dd_from_f64(x[j]);
}

// A DD lane loads SPMV_DD_BATCH of its entries (values and x) before it sums any: the loads of
// a batch are in flight together while the long QuadAdd chain of the previous batch runs, and
// the sums take the entries in the same order, so the bits do not change. Measured on
// poisson3d:200 (benches/results/h200.md): dd SpMV 0.285-0.288 -> 0.280-0.281 ms, preconditioned
// BiCGStab (two SpMVs with x read widened) 4.42 -> 4.33 ms; a batch of 4 gained half as much,
// and the same batching made the f64 SpMV slower (0.230 -> 0.241 ms), as it did td's and qd's
// (xprec.cu: 0.267 -> 0.280 and 1.23 -> 1.48 ms), so those keep their one-entry loop.
#define SPMV_DD_BATCH 8

// spmv_f64_lane in double-double, x stored or widened, BATCH entries loaded at a time (the
// staged experiment keeps its one-entry loop: batched, its 1024-thread blocks ran 0.82x of
// spmv then dot instead of 1.00x, benches/results/h200.md).
template <int NT, int BATCH = SPMV_DD_BATCH, typename XT>
__device__ __forceinline__ dd_t spmv_dd_lane(const int* __restrict__ row_ptr,
                                             const int* __restrict__ col_idx,
                                             const double* __restrict__ val,
                                             const XT* __restrict__ x, long long row, int lane) {
    dd_t s = dd_from_f64(0.0);
    const int end = row_ptr[row + 1];
    for (int k = row_ptr[row] + lane; k < end; k += BATCH * NT) {
        dd_t xk[BATCH];
        double ak[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; u++) {
            if (k + u * NT < end) {
                ak[u] = val[k + u * NT];
                xk[u] = spmv_dd_x(x, col_idx[k + u * NT]);
            }
        }
#pragma unroll
        for (int u = 0; u < BATCH; u++) {
            // s <- s + a_k x_j, as Precision::add_mul_f64: add(s, mul_f64(x_j, a_k))
            if (k + u * NT < end) s = dd_add(s, dd_mul_f64(xk[u], ak[u]));
        }
    }
    return s;
}

template <int NT, typename XT>
__device__ __forceinline__ void spmv_dd_body(int nrows, const int* __restrict__ row_ptr,
                                             const int* __restrict__ col_idx,
                                             const double* __restrict__ val,
                                             const XT* __restrict__ x, double2* __restrict__ y,
                                             const double* __restrict__ b, int has_b) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long row = tid / NT;
    const int lane = threadIdx.x % NT;
    dd_t s = row < nrows ? spmv_dd_lane<NT>(row_ptr, col_idx, val, x, row, lane)
                         : dd_from_f64(0.0);
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
    }                                                                                            \
    extern "C" __global__ void spmv_wide_dd_nt##NT(int nrows, const int* row_ptr,                \
                                                   const int* col_idx, const double* val,        \
                                                   const double* x, double2* y,                  \
                                                   const double* b, int has_b) {                 \
        spmv_dd_body<NT>(nrows, row_ptr, col_idx, val, x, y, b, has_b);                          \
    }

SPMV_KERNELS(1)
SPMV_KERNELS(2)
SPMV_KERNELS(4)
SPMV_KERNELS(8)
SPMV_KERNELS(16)
SPMV_KERNELS(32)

// Sliced ELLPACK (SELL_C rows per slice; the layout of src/sparse/sell.rs): one thread per row,
// for the matrices that CSR would give one thread per row (NT = 1). Entry k of row r sits at
// slice_ptr[r / SELL_C] + SELL_C k + r % SELL_C for k < row_ptr[r + 1] - row_ptr[r], so a warp's
// k-th loads of values and column indices are one contiguous segment, where CSR's are 32
// scattered ones (61% of the DD kernel's L2 sectors were excess, benches/results/h200.md). Each
// row is summed entry by entry from zero, as spmv_{p}_nt1 sums it: the same bits. The DD sum
// takes one entry at a time: loaded in batches (as spmv_dd_lane) it needs more registers and
// ran slower here (benches/gpu/sell_probe.cu: 0.244 ms one at a time, 0.267 batched by 4,
// 0.331 by 8, CSR 0.281 on poisson3d:200).
//
// Kernels: spmv_{f64,dd}_sell(int nrows, const int* row_ptr, const int* slice_ptr,
//          const int* col_idx, const double* val, const T* x, T* y, const double* b, int has_b)
//          spmv_wide_dd_sell(...): x of doubles read widened, as spmv_wide_dd_nt{NT}
#define SELL_C 32

extern "C" __global__ void spmv_f64_sell(int nrows, const int* __restrict__ row_ptr,
                                         const int* __restrict__ slice_ptr,
                                         const int* __restrict__ col_idx,
                                         const double* __restrict__ val,
                                         const double* __restrict__ x, double* __restrict__ y,
                                         const double* __restrict__ b, int has_b) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) return;
    const int first = slice_ptr[row / SELL_C] + row % SELL_C;
    const int len = row_ptr[row + 1] - row_ptr[row];
    double s = 0.0;
    for (int k = 0; k < len; k++) {
        const int at = first + k * SELL_C;
        s = __dadd_rn(s, __dmul_rn(val[at], x[col_idx[at]]));
    }
    y[row] = has_b ? __dsub_rn(b[row], s) : s;
}

template <typename XT>
__device__ __forceinline__ void spmv_dd_sell_body(int nrows, const int* __restrict__ row_ptr,
                                                  const int* __restrict__ slice_ptr,
                                                  const int* __restrict__ col_idx,
                                                  const double* __restrict__ val,
                                                  const XT* __restrict__ x,
                                                  double2* __restrict__ y,
                                                  const double* __restrict__ b, int has_b) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) return;
    const int first = slice_ptr[row / SELL_C] + row % SELL_C;
    const int len = row_ptr[row + 1] - row_ptr[row];
    dd_t s = dd_from_f64(0.0);
    for (int k = 0; k < len; k++) {
        const int at = first + k * SELL_C;
        // s <- s + a_k x_j, as Precision::add_mul_f64: add(s, mul_f64(x_j, a_k))
        s = dd_add(s, dd_mul_f64(spmv_dd_x(x, col_idx[at]), val[at]));
    }
    dd_store(y, row, has_b ? dd_sub(dd_from_f64(b[row]), s) : s);
}

extern "C" __global__ void spmv_dd_sell(int nrows, const int* row_ptr, const int* slice_ptr,
                                        const int* col_idx, const double* val, const double2* x,
                                        double2* y, const double* b, int has_b) {
    spmv_dd_sell_body(nrows, row_ptr, slice_ptr, col_idx, val, x, y, b, has_b);
}

extern "C" __global__ void spmv_wide_dd_sell(int nrows, const int* row_ptr,
                                             const int* slice_ptr, const int* col_idx,
                                             const double* val, const double* x, double2* y,
                                             const double* b, int has_b) {
    spmv_dd_sell_body(nrows, row_ptr, slice_ptr, col_idx, val, x, y, b, has_b);
}

// CG's q = A p fused with <p, q>, for one thread per row (NT = 1): one block of DOT_THREADS
// threads per DOT_CHUNK rows, as dot_{p}_partial; thread t computes rows t, t + DOT_THREADS, ...
// of its chunk (each row summed as spmv_{p}_nt1 sums it), stores them, and adds p[row] q[row] to
// its lane of the dot product in that order, so the partials are those of dot_{p}_partial(p, q)
// and q is bitwise spmv's. R of a thread's rows are summed side by side (independent chains
// whose loads overlap); the lane sum still takes them in row order. Saves the dot's pass over
// p and q. Finish the partials with dot_{p}_final (or cg_alpha_{p}).
//
// spmv_dot_{f64,dd}_r{1,2,4}(int nrows, const int* row_ptr, const int* col_idx,
//                            const double* val, const T* p, T* q, T* partial)

template <int R>
__device__ __forceinline__ double spmv_dot_f64_body(int nrows, const int* __restrict__ row_ptr,
                                                    const int* __restrict__ col_idx,
                                                    const double* __restrict__ val,
                                                    const double* __restrict__ p,
                                                    double* __restrict__ q) {
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    double acc = 0.0;
    for (int j0 = 0; j0 < DOT_PER_THREAD; j0 += R) {
        int k[R], len[R];
        double s[R];
        int longest = 0;
#pragma unroll
        for (int g = 0; g < R; g++) {
            const long long row = base + (long long)(j0 + g) * DOT_THREADS;
            k[g] = row < nrows ? row_ptr[row] : 0;
            len[g] = row < nrows ? row_ptr[row + 1] - k[g] : 0;
            s[g] = 0.0;
            longest = max(longest, len[g]);
        }
        for (int step = 0; step < longest; step++) {
#pragma unroll
            for (int g = 0; g < R; g++) {
                if (step < len[g]) {
                    const int at = k[g] + step;
                    s[g] = __dadd_rn(s[g], __dmul_rn(val[at], p[col_idx[at]]));
                }
            }
        }
#pragma unroll
        for (int g = 0; g < R; g++) {
            const long long row = base + (long long)(j0 + g) * DOT_THREADS;
            if (row < nrows) {
                q[row] = s[g];
                acc = __dadd_rn(acc, __dmul_rn(p[row], s[g]));
            }
        }
    }
    return acc;
}

template <int R>
__device__ __forceinline__ dd_t spmv_dot_dd_body(int nrows, const int* __restrict__ row_ptr,
                                                 const int* __restrict__ col_idx,
                                                 const double* __restrict__ val,
                                                 const double2* __restrict__ p,
                                                 double2* __restrict__ q) {
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    dd_t acc = dd_from_f64(0.0);
    for (int j0 = 0; j0 < DOT_PER_THREAD; j0 += R) {
        int k[R], len[R];
        dd_t s[R];
        int longest = 0;
#pragma unroll
        for (int g = 0; g < R; g++) {
            const long long row = base + (long long)(j0 + g) * DOT_THREADS;
            k[g] = row < nrows ? row_ptr[row] : 0;
            len[g] = row < nrows ? row_ptr[row + 1] - k[g] : 0;
            s[g] = dd_from_f64(0.0);
            longest = max(longest, len[g]);
        }
        for (int step = 0; step < longest; step++) {
#pragma unroll
            for (int g = 0; g < R; g++) {
                if (step < len[g]) {
                    const int at = k[g] + step;
                    s[g] = dd_add(s[g], dd_mul_f64(dd_load(p, col_idx[at]), val[at]));
                }
            }
        }
#pragma unroll
        for (int g = 0; g < R; g++) {
            const long long row = base + (long long)(j0 + g) * DOT_THREADS;
            if (row < nrows) {
                dd_store(q, row, s[g]);
                acc = dd_add(acc, dd_mul(dd_load(p, row), s[g]));
            }
        }
    }
    return acc;
}

#define SPMV_DOT_KERNELS(R)                                                                     \
    extern "C" __global__ void spmv_dot_f64_r##R(int nrows, const int* row_ptr,                 \
                                                 const int* col_idx, const double* val,         \
                                                 const double* p, double* q, double* partial) { \
        __shared__ double shared[DOT_THREADS];                                                  \
        double s = spmv_dot_f64_body<R>(nrows, row_ptr, col_idx, val, p, q);                    \
        s = tree_reduce_f64(s, shared);                                                         \
        if (threadIdx.x == 0) partial[blockIdx.x] = s;                                          \
    }                                                                                           \
    extern "C" __global__ void spmv_dot_dd_r##R(int nrows, const int* row_ptr,                  \
                                                const int* col_idx, const double* val,          \
                                                const double2* p, double2* q,                   \
                                                double2* partial) {                             \
        __shared__ double shared_hi[DOT_THREADS];                                               \
        __shared__ double shared_lo[DOT_THREADS];                                               \
        dd_t s = spmv_dot_dd_body<R>(nrows, row_ptr, col_idx, val, p, q);                       \
        s = tree_reduce_dd(s, shared_hi, shared_lo);                                            \
        if (threadIdx.x == 0) dd_store(partial, blockIdx.x, s);                                 \
    }

SPMV_DOT_KERNELS(1)
SPMV_DOT_KERNELS(2)
SPMV_DOT_KERNELS(4)

// The fused step staged through shared memory (an experiment of `solver bench --sweep-lanes`):
// one block of 1024 threads per DOT_CHUNK rows, in four quarters of 2048 rows. In a quarter each
// thread computes two rows (rows 1024 apart, as spmv_{p}_nt1 sums them: coalesced, as the SpMV)
// and stores p[row] q[row] in shared memory; then lane t of the dot (t < DOT_THREADS) adds the
// quarter's products t, t + DOT_THREADS, ... in order. So each lane sums its 32 products in the
// dot's order and the partials are dot_{p}_partial's bits, without the 32 rows in series per
// thread of spmv_dot_{p}_r{R}.
//
// spmv_dot_{f64,dd}_staged(int nrows, row_ptr, col_idx, val, const T* p, T* q, T* partial),
// launched with DOT_CHUNK / 8 = 1024 threads per block, one block per DOT_CHUNK rows.

#define STAGED_THREADS 1024
#define STAGED_ROWS (2 * STAGED_THREADS)

extern "C" __global__ void __launch_bounds__(STAGED_THREADS)
    spmv_dot_f64_staged(int nrows, const int* __restrict__ row_ptr,
                        const int* __restrict__ col_idx, const double* __restrict__ val,
                        const double* __restrict__ p, double* __restrict__ q, double* partial) {
    __shared__ double prod[STAGED_ROWS];
    const int u = threadIdx.x;
    double acc = 0.0;
    for (int quarter = 0; quarter < DOT_CHUNK / STAGED_ROWS; quarter++) {
        const long long first = (long long)blockIdx.x * DOT_CHUNK + (long long)quarter * STAGED_ROWS;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const long long row = first + u + h * STAGED_THREADS;
            if (row < nrows) {
                const double s = spmv_f64_lane<1>(row_ptr, col_idx, val, p, row, 0);
                q[row] = s;
                prod[u + h * STAGED_THREADS] = __dmul_rn(p[row], s);
            }
        }
        __syncthreads();
        if (u < DOT_THREADS) {
            for (int j = 0; j < STAGED_ROWS / DOT_THREADS; j++) {
                if (first + u + j * DOT_THREADS < nrows) acc = __dadd_rn(acc, prod[u + j * DOT_THREADS]);
            }
        }
        __syncthreads();
    }
    // the tree over the DOT_THREADS lanes (the other threads' slots are never read)
    acc = tree_reduce_f64(u < DOT_THREADS ? acc : 0.0, prod);
    if (u == 0) partial[blockIdx.x] = acc;
}

extern "C" __global__ void __launch_bounds__(STAGED_THREADS)
    spmv_dot_dd_staged(int nrows, const int* __restrict__ row_ptr,
                       const int* __restrict__ col_idx, const double* __restrict__ val,
                       const double2* __restrict__ p, double2* __restrict__ q, double2* partial) {
    __shared__ double prod_hi[STAGED_ROWS];
    __shared__ double prod_lo[STAGED_ROWS];
    const int u = threadIdx.x;
    dd_t acc = dd_from_f64(0.0);
    for (int quarter = 0; quarter < DOT_CHUNK / STAGED_ROWS; quarter++) {
        const long long first = (long long)blockIdx.x * DOT_CHUNK + (long long)quarter * STAGED_ROWS;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const long long row = first + u + h * STAGED_THREADS;
            if (row < nrows) {
                const dd_t s = spmv_dd_lane<1, 1>(row_ptr, col_idx, val, p, row, 0);
                dd_store(q, row, s);
                const dd_t pq = dd_mul(dd_load(p, row), s);
                prod_hi[u + h * STAGED_THREADS] = pq.hi;
                prod_lo[u + h * STAGED_THREADS] = pq.lo;
            }
        }
        __syncthreads();
        if (u < DOT_THREADS) {
            for (int j = 0; j < STAGED_ROWS / DOT_THREADS; j++) {
                if (first + u + j * DOT_THREADS < nrows) {
                    const dd_t pq = {prod_hi[u + j * DOT_THREADS], prod_lo[u + j * DOT_THREADS]};
                    acc = dd_add(acc, pq);
                }
            }
        }
        __syncthreads();
    }
    acc = tree_reduce_dd(u < DOT_THREADS ? acc : dd_from_f64(0.0), prod_hi, prod_lo);
    if (u == 0) dd_store(partial, blockIdx.x, acc);
}
