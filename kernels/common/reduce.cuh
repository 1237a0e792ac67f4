// Deterministic reductions. The order is part of the result's definition, and the CPU backend
// (src/backend/cpu/kernels.rs) follows it exactly:
//   - a dot product covers blocks of DOT_CHUNK = DOT_THREADS * DOT_PER_THREAD elements; thread t
//     of a block sums elements t, t + DOT_THREADS, ... of its chunk sequentially from zero;
//   - the DOT_THREADS partial sums are combined by the halving tree s[t] = s[t] + s[t + off],
//     off = DOT_THREADS/2, ..., 1 (shared memory down to a warp, then shuffles);
//   - the per-block results are reduced by one block the same way (strided sums, then the tree).

#define DOT_THREADS 256
#define DOT_PER_THREAD 32
#define DOT_CHUNK (DOT_THREADS * DOT_PER_THREAD)

__device__ __forceinline__ double tree_reduce_f64(double s, double* shared) {
    const int t = threadIdx.x;
    shared[t] = s;
    __syncthreads();
    for (int off = DOT_THREADS / 2; off >= 32; off >>= 1) {
        if (t < off) shared[t] = __dadd_rn(shared[t], shared[t + off]);
        __syncthreads();
    }
    if (t < 32) {
        s = shared[t];
        for (int off = 16; off > 0; off >>= 1) {
            s = __dadd_rn(s, __shfl_down_sync(0xffffffffu, s, off));
        }
    }
    return s;  // valid in thread 0
}

__device__ __forceinline__ dd_t tree_reduce_dd(dd_t s, double* shared_hi, double* shared_lo) {
    const int t = threadIdx.x;
    shared_hi[t] = s.hi;
    shared_lo[t] = s.lo;
    __syncthreads();
    for (int off = DOT_THREADS / 2; off >= 32; off >>= 1) {
        if (t < off) {
            dd_t a = {shared_hi[t], shared_lo[t]};
            dd_t b = {shared_hi[t + off], shared_lo[t + off]};
            dd_t c = dd_add(a, b);
            shared_hi[t] = c.hi;
            shared_lo[t] = c.lo;
        }
        __syncthreads();
    }
    if (t < 32) {
        s.hi = shared_hi[t];
        s.lo = shared_lo[t];
        for (int off = 16; off > 0; off >>= 1) {
            dd_t o = {__shfl_down_sync(0xffffffffu, s.hi, off), __shfl_down_sync(0xffffffffu, s.lo, off)};
            s = dd_add(s, o);
        }
    }
    return s;  // valid in thread 0
}
