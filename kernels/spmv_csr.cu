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
// (the order the CPU's kernels follow). spmv_{p}_body and spmv_dot_{p}_nt1 sum their rows
// through these.
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
// the sums take the entries in the same order, so the bits do not change. A batch of 4 gained
// less than 8; the same batching made the f64 SpMV slower, as it did td's and qd's (xprec.cu),
// so those keep their one-entry loop (benches/results/h200.md).
#define SPMV_DD_BATCH 8

// spmv_f64_lane in double-double, x stored or widened, BATCH entries loaded at a time.
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
// scattered ones, most of whose L2 sectors are excess. Each row is summed entry by entry from
// zero, as spmv_{p}_nt1 sums it: the same bits. The DD sum takes one entry at a time: loaded in
// batches (as spmv_dd_lane) it needs more registers, which costs this kernel the occupancy it
// gets at 32 and made it slower (benches/results/h200.md).
//
// Kernels: spmv_{f64,dd}_sell(int nrows, const int* row_ptr, const int* slice_ptr,
//          const int* col_idx, const double* val, const T* x, T* y, const double* b, int has_b)
//          spmv_wide_dd_sell(...): x of doubles read widened, as spmv_wide_dd_nt{NT}
#define SELL_C 32

// Row `row`'s sum in the sliced layout, entry by entry from zero.
__device__ __forceinline__ double sell_row_f64(int row, const int* __restrict__ row_ptr,
                                               const int* __restrict__ slice_ptr,
                                               const int* __restrict__ col_idx,
                                               const double* __restrict__ val,
                                               const double* __restrict__ x) {
    const int first = slice_ptr[row / SELL_C] + row % SELL_C;
    const int len = row_ptr[row + 1] - row_ptr[row];
    double s = 0.0;
    for (int k = 0; k < len; k++) {
        const int at = first + k * SELL_C;
        s = __dadd_rn(s, __dmul_rn(val[at], x[col_idx[at]]));
    }
    return s;
}

template <typename XT>
__device__ __forceinline__ dd_t sell_row_dd(int row, const int* __restrict__ row_ptr,
                                            const int* __restrict__ slice_ptr,
                                            const int* __restrict__ col_idx,
                                            const double* __restrict__ val,
                                            const XT* __restrict__ x) {
    const int first = slice_ptr[row / SELL_C] + row % SELL_C;
    const int len = row_ptr[row + 1] - row_ptr[row];
    dd_t s = dd_from_f64(0.0);
    for (int k = 0; k < len; k++) {
        const int at = first + k * SELL_C;
        // s <- s + a_k x_j, as Precision::add_mul_f64: add(s, mul_f64(x_j, a_k))
        s = dd_add(s, dd_mul_f64(spmv_dd_x(x, col_idx[at]), val[at]));
    }
    return s;
}

extern "C" __global__ void spmv_f64_sell(int nrows, const int* __restrict__ row_ptr,
                                         const int* __restrict__ slice_ptr,
                                         const int* __restrict__ col_idx,
                                         const double* __restrict__ val,
                                         const double* __restrict__ x, double* __restrict__ y,
                                         const double* __restrict__ b, int has_b) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) return;
    const double s = sell_row_f64(row, row_ptr, slice_ptr, col_idx, val, x);
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
    const dd_t s = sell_row_dd(row, row_ptr, slice_ptr, col_idx, val, x);
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

// An SpMV fused with dot products of its result in the tiled order (common/reduce.cuh,
// TILE_ROWS), for the matrices given one thread per row (sliced, or CSR with NT = 1): one block
// of TILE_ROWS threads per tile, each thread computing its row as spmv_{p}_sell / spmv_{p}_nt1
// does (q is bitwise spmv's) and putting its products into the block's tree. The dots' own pass
// over q (and their launch) goes away. CG: q = A p with <p, q> (w = p: p[row] is mostly in
// cache, since the row's diagonal entry gathered it); BiCGStab: v = A p^ with <r~, v>, and
// t = A s^ with <t, t> and <t, s> without a preconditioner. Finish the partials with
// cg_alpha_{p}, bicg_alpha_tiles_{p} or dot_tile_{p}_final. No kernel reads x of doubles widened
// (BiCGStab's preconditioned p^ and s^): those dots stay in dot's order
// (crate::backend::bicgstab_spmv_dots), and fused they gained least (h200.md). w[row] is loaded after the row's sum: loaded before it, its registers
// cost the DD kernels 13-23% (benches/results/h200.md).
//
// spmv_dot_{f64,dd}_{sell,nt1}(int nrows, const int* row_ptr, [const int* slice_ptr,]
//     const int* col_idx, const double* val, const T* x, const T* w, T* q, T* partial)
//   q = A x; tile partials of <w, q> (products w q)
// spmv_dot2_{f64,dd}_{sell,nt1}(... const T* x, const T* w, T* q, T* partial_qq, T* partial_qw)
//   q = A x; tile partials of <q, q> and <q, w> (products q q, q w)
// slice_ptr for _sell only; launched with TILE_ROWS threads a block, ceil(nrows / TILE_ROWS)
// blocks.

// Row `row`'s sum, sliced or CSR with one thread per row.
template <bool SELL>
__device__ __forceinline__ double tile_row_f64(int row, const int* __restrict__ row_ptr,
                                               const int* __restrict__ slice_ptr,
                                               const int* __restrict__ col_idx,
                                               const double* __restrict__ val,
                                               const double* __restrict__ x) {
    return SELL ? sell_row_f64(row, row_ptr, slice_ptr, col_idx, val, x)
                : spmv_f64_lane<1>(row_ptr, col_idx, val, x, row, 0);
}

template <bool SELL>
__device__ __forceinline__ dd_t tile_row_dd(int row, const int* __restrict__ row_ptr,
                                            const int* __restrict__ slice_ptr,
                                            const int* __restrict__ col_idx,
                                            const double* __restrict__ val,
                                            const double2* __restrict__ x) {
    return SELL ? sell_row_dd(row, row_ptr, slice_ptr, col_idx, val, x)
                : spmv_dd_lane<1>(row_ptr, col_idx, val, x, row, 0);
}

// One tile: q[row] = A x, then the tile partials of <w, q> (DOTS = 1) or <q, q> and <q, w>
// (DOTS = 2) through the block's tree.
template <bool SELL, int DOTS>
__device__ __forceinline__ void spmv_dots_f64(int nrows, const int* __restrict__ row_ptr,
                                              const int* __restrict__ slice_ptr,
                                              const int* __restrict__ col_idx,
                                              const double* __restrict__ val,
                                              const double* __restrict__ x,
                                              const double* __restrict__ w,
                                              double* __restrict__ q, double* partial,
                                              double* partial2) {
    __shared__ double shared[DOT_THREADS];
    const int row = blockIdx.x * TILE_ROWS + threadIdx.x;
    double first = 0.0, second = 0.0;
    if (row < nrows) {
        const double s = tile_row_f64<SELL>(row, row_ptr, slice_ptr, col_idx, val, x);
        q[row] = s;
        const double wr = w[row];
        first = DOTS == 1 ? __dmul_rn(wr, s) : __dmul_rn(s, s);
        if (DOTS == 2) second = __dmul_rn(s, wr);
    }
    first = tree_reduce_f64(first, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = first;
    if (DOTS == 2) {
        __syncthreads();
        second = tree_reduce_f64(second, shared);
        if (threadIdx.x == 0) partial2[blockIdx.x] = second;
    }
}

template <bool SELL, int DOTS>
__device__ __forceinline__ void spmv_dots_dd(int nrows, const int* __restrict__ row_ptr,
                                             const int* __restrict__ slice_ptr,
                                             const int* __restrict__ col_idx,
                                             const double* __restrict__ val,
                                             const double2* __restrict__ x,
                                             const double2* __restrict__ w,
                                             double2* __restrict__ q, double2* partial,
                                             double2* partial2) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const int row = blockIdx.x * TILE_ROWS + threadIdx.x;
    dd_t first = dd_from_f64(0.0), second = dd_from_f64(0.0);
    if (row < nrows) {
        const dd_t s = tile_row_dd<SELL>(row, row_ptr, slice_ptr, col_idx, val, x);
        dd_store(q, row, s);
        const dd_t wr = dd_load(w, row);
        first = DOTS == 1 ? dd_mul(wr, s) : dd_mul(s, s);
        if (DOTS == 2) second = dd_mul(s, wr);
    }
    first = tree_reduce_dd(first, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial, blockIdx.x, first);
    if (DOTS == 2) {
        __syncthreads();
        second = tree_reduce_dd(second, shared_hi, shared_lo);
        if (threadIdx.x == 0) dd_store(partial2, blockIdx.x, second);
    }
}

#define SELL_PARAM , const int* __restrict__ slice_ptr
#define NO_PARAM
// The fused kernels of one layout: L = sell or nt1, SLICE = slice_ptr or nullptr.
#define SPMV_DOT_KERNELS(L, SELL, SLICE_DECL, SLICE)                                           \
    extern "C" __global__ void __launch_bounds__(TILE_ROWS) spmv_dot_f64_##L(                  \
        int nrows, const int* __restrict__ row_ptr SLICE_DECL, const int* __restrict__ col_idx, \
        const double* __restrict__ val, const double* __restrict__ x,                          \
        const double* __restrict__ w, double* __restrict__ q, double* partial) {               \
        spmv_dots_f64<SELL, 1>(nrows, row_ptr, SLICE, col_idx, val, x, w, q, partial, nullptr); \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_ROWS) spmv_dot2_f64_##L(                 \
        int nrows, const int* __restrict__ row_ptr SLICE_DECL, const int* __restrict__ col_idx, \
        const double* __restrict__ val, const double* __restrict__ x,                          \
        const double* __restrict__ w, double* __restrict__ q, double* partial_qq,              \
        double* partial_qw) {                                                                  \
        spmv_dots_f64<SELL, 2>(nrows, row_ptr, SLICE, col_idx, val, x, w, q, partial_qq,       \
                               partial_qw);                                                    \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_ROWS) spmv_dot_dd_##L(                   \
        int nrows, const int* __restrict__ row_ptr SLICE_DECL, const int* __restrict__ col_idx, \
        const double* __restrict__ val, const double2* __restrict__ x,                         \
        const double2* __restrict__ w, double2* __restrict__ q, double2* partial) {            \
        spmv_dots_dd<SELL, 1>(nrows, row_ptr, SLICE, col_idx, val, x, w, q, partial, nullptr);  \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_ROWS) spmv_dot2_dd_##L(                  \
        int nrows, const int* __restrict__ row_ptr SLICE_DECL, const int* __restrict__ col_idx, \
        const double* __restrict__ val, const double2* __restrict__ x,                         \
        const double2* __restrict__ w, double2* __restrict__ q, double2* partial_qq,           \
        double2* partial_qw) {                                                                 \
        spmv_dots_dd<SELL, 2>(nrows, row_ptr, SLICE, col_idx, val, x, w, q, partial_qq,        \
                              partial_qw);                                                     \
    }

SPMV_DOT_KERNELS(sell, true, SELL_PARAM, slice_ptr)
SPMV_DOT_KERNELS(nt1, false, NO_PARAM, nullptr)
