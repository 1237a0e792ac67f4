// ILU(0) triangular solves, the twin of src/backend/cpu/trisolve.rs: the per-row arithmetic of
// src/precond/ilu0.rs, so the bits do not depend on the schedule.
//   forward  (L, unit diagonal): y_i = fl64(r_i); y_i = y_i - l_ij * y_j, increasing j
//   backward (U):                x_i = y_i;      x_i = x_i - u_ij * x_j, decreasing j; x_i / u_ii
// One __dmul_rn and one __dsub_rn per entry (never fused), one __ddiv_rn per row.
//
// Layout (src/backend/cuda/ilu.rs builds it): each triangle's rows are renumbered in the order
// of its levels ("positions"); row[p] is the matrix row at position p, ptr/dep/val its
// off-diagonal entries in the order of the arithmetic, with dep = the position of the column's
// row in the same triangle. A dependency therefore always has a smaller position than the row
// that reads it. y (forward) and x (backward) are indexed by position; src[p] is the forward
// position of the backward row p (where its y_i is).
//
// The schedules over the level order (the default, partitioned schedule is
// kernels/ilu0_parts.cu, on another order of the same rows), one kernel each way:
//   sync = 0: level-scheduled; the host launches once per level over [begin, end), and every
//             dependency is final before the launch starts.
//   sync = 1: synchronization-free; one launch over all rows. A grid of resident blocks takes
//             chunks of blockDim.x rows in order from an atomic ticket counter, so a chunk only
//             waits on rows of chunks taken earlier, by blocks that are running (or done).
//             Each result is published together with its readiness: y and x hold pairs
//             {value, generation} written and read as one 16-byte access (st/ld.volatile.v2,
//             one transaction, as CUB's decoupled look-back relies on), so a reader that sees
//             this solve's generation sees the value, with no fence and no separate flag.
//             Readers issue the loads of up to ILU_CHUNK entries at once and consume the ready
//             prefix in order. No lane spins alone: every lane of a warp consumes what is ready,
//             then the warp votes (__all_sync) and goes round again, so a lane waiting on a
//             lane of its own warp never starves it (Capellini-style); with sleep_ns > 0 a
//             warp that made no progress backs off. Generations (the forward solve writes gen,
//             the backward gen + 1) replace a memset per solve.
//   sync = 3: as 1, with ld/st.relaxed.gpu instead of ld/st.volatile (relaxed.sys).
//   sync = 2: (measured slower; kept for comparison) as 1, but a row of another group of 32 positions (another warp) is waited for on
//             that group's flag, wflag[d / 32] = gen, which the group's warp raises (lane 0,
//             after __syncwarp and __threadfence) once all its rows are published. The lanes of
//             a warp mostly wait on the same few groups, so their polls coalesce into a few
//             transactions instead of one per dependency; rows of the lane's own group are
//             polled on their pairs as in 1. The pair's generation is still checked.
//
// Kernels: ilu0_lower_{f64,dd,td,qd}(int begin, int end, const int* row, const int* ptr,
//              const int* dep, const double* val, const T* r, double* y,
//              unsigned long long* wflag, unsigned long long gen, unsigned long long* ticket,
//              unsigned long long ticket_base, int sync, int sleep_ns)
//          ilu0_upper_{f64,dd,td,qd}(int begin, int end, const int* row, const int* ptr,
//              const int* dep, const double* val, const double* diag, const int* src,
//              const double* y, double* x, T* z, unsigned long long* wflag,
//              unsigned long long gen, unsigned long long* ticket, unsigned long long ticket_base, int sync,
//              int sleep_ns)
//          y and x are 2 n doubles (pairs), wflag ceil(n / 32) words. With sync, a launch of G blocks takes
//          ceil((end - begin) / blockDim.x) + G tickets.

// The next chunk of rows for this block: its first position, or -1 when none is left.
__device__ __forceinline__ long long ilu_next_chunk(int begin, int end,
                                                    unsigned long long* ticket,
                                                    unsigned long long ticket_base) {
    __shared__ unsigned long long chunk;
    __syncthreads();  // every thread has read the last chunk
    if (threadIdx.x == 0) chunk = atomicAdd(ticket, 1ULL) - ticket_base;
    __syncthreads();
    const long long first = (long long)begin + (long long)chunk * blockDim.x;
    return first < end ? first : -1;
}

// Solve one row per thread of the chunk at `first`: acc = acc - val * w[dep], unfused, entries
// in order, each consumed once its pair carries `gen` (sync) or at once (levels); then
// acc = acc / diag[p] when diag is given, and {acc, gen} is published to out[p] AT ONCE, inside
// the warp's loop: a lane of the same warp may be waiting for it. `p` is the thread's position,
// valid when p < end; the result stays in `acc`.
__device__ __forceinline__ void ilu_row(long long p, int end, const int* __restrict__ ptr,
                                        const int* __restrict__ dep,
                                        const double* __restrict__ val,
                                        const double* __restrict__ diag, const double* w,
                                        double* out, unsigned long long* wflag,
                                        unsigned long long gen, int sync, int sleep_ns,
                                        double& acc) {
    bool done = p >= end;
    int k = 0, k_end = 0;
    if (!done) {
        k = ptr[p];
        k_end = ptr[p + 1];
    }
    for (;;) {
        bool progressed = false;
        if (!done) {
            double v[ILU_CHUNK];
            unsigned long long g[ILU_CHUNK];
            const int count = min(k_end - k, ILU_CHUNK);
            int d[ILU_CHUNK];
            bool flagged[ILU_CHUNK];
#pragma unroll
            for (int c = 0; c < ILU_CHUNK; ++c) {
                flagged[c] = true;
                g[c] = 0;
                if (c < count) {
                    d[c] = dep[k + c];
                    // sync == 2: a row of another warp group is read once its group's flag is up
                    if (sync == 2 && (d[c] >> 5) != (p >> 5)) {
                        flagged[c] = *(volatile const unsigned long long*)(wflag + (d[c] >> 5)) == gen;
                    }
                }
            }
#pragma unroll
            for (int c = 0; c < ILU_CHUNK; ++c) {
                if (c >= count || !flagged[c]) break;
                ilu_load_pair(w, d[c], v[c], g[c], sync);
            }
#pragma unroll
            for (int c = 0; c < ILU_CHUNK; ++c) {
                if (c >= count || (sync && g[c] != gen)) break;
                acc = __dsub_rn(acc, __dmul_rn(val[k], v[c]));
                ++k;
                progressed = true;
            }
            if (k == k_end) {
                if (diag != nullptr) acc = __ddiv_rn(acc, diag[p]);
                ilu_store_pair(out, p, acc, gen, sync);
                done = true;
            }
        }
        if (__all_sync(0xffffffffu, done)) break;
        if (sleep_ns > 0 && !__any_sync(0xffffffffu, progressed)) __nanosleep(sleep_ns);
    }
    if (sync == 2) {
        __syncwarp();  // orders every lane's pair store before lane 0's fence
        if ((threadIdx.x & 31) == 0 && p < end) {
            __threadfence();
            *(volatile unsigned long long*)(wflag + (p >> 5)) = gen;
        }
    }
}

template <typename T>
__device__ __forceinline__ void ilu_lower_body(int begin, int end, const int* __restrict__ row,
                                               const int* __restrict__ ptr,
                                               const int* __restrict__ dep,
                                               const double* __restrict__ val,
                                               T r, double* y,
                                               unsigned long long* wflag, unsigned long long gen,
                                               unsigned long long* ticket,
                                               unsigned long long ticket_base, int sync,
                                               int sleep_ns) {
    long long first = sync ? ilu_next_chunk(begin, end, ticket, ticket_base)
                           : (long long)begin + (long long)blockIdx.x * blockDim.x;
    while (first >= 0) {
        const long long p = first + threadIdx.x;
        double acc = p < end ? ilu_in(r, row[p]) : 0.0;
        ilu_row(p, end, ptr, dep, val, nullptr, y, y, wflag, gen, sync, sleep_ns, acc);
        first = sync ? ilu_next_chunk(begin, end, ticket, ticket_base) : -1;
    }
}

template <typename T>
__device__ __forceinline__ void ilu_upper_body(int begin, int end, const int* __restrict__ row,
                                               const int* __restrict__ ptr,
                                               const int* __restrict__ dep,
                                               const double* __restrict__ val,
                                               const double* __restrict__ diag,
                                               const int* __restrict__ src, const double* y,
                                               double* x, T z, unsigned long long* wflag,
                                               unsigned long long gen,
                                               unsigned long long* ticket,
                                               unsigned long long ticket_base, int sync,
                                               int sleep_ns) {
    long long first = sync ? ilu_next_chunk(begin, end, ticket, ticket_base)
                           : (long long)begin + (long long)blockIdx.x * blockDim.x;
    while (first >= 0) {
        const long long p = first + threadIdx.x;
        double acc = p < end ? __ldcg(y + 2 * (long long)src[p]) : 0.0;
        ilu_row(p, end, ptr, dep, val, diag, x, x, wflag, gen, sync, sleep_ns, acc);
        if (p < end) ilu_out(z, row[p], acc);
        first = sync ? ilu_next_chunk(begin, end, ticket, ticket_base) : -1;
    }
}

#define ILU0_KERNELS(P, RT, ZT)                                                                   \
    extern "C" __global__ void ilu0_lower_##P(                                                    \
        int begin, int end, const int* row, const int* ptr, const int* dep, const double* val,    \
        RT r, double* y, unsigned long long* wflag, unsigned long long gen,                       \
        unsigned long long* ticket, unsigned long long ticket_base, int sync, int sleep_ns) {     \
        ilu_lower_body<RT>(begin, end, row, ptr, dep, val, r, y, wflag, gen, ticket, ticket_base,  \
                          sync, sleep_ns);                                                        \
    }                                                                                             \
    extern "C" __global__ void ilu0_upper_##P(                                                    \
        int begin, int end, const int* row, const int* ptr, const int* dep, const double* val,    \
        const double* diag, const int* src, const double* y, double* x, ZT z,                     \
        unsigned long long* wflag, unsigned long long gen, unsigned long long* ticket,            \
        unsigned long long ticket_base, int sync, int sleep_ns) {                                 \
        ilu_upper_body<ZT>(begin, end, row, ptr, dep, val, diag, src, y, x, z, wflag, gen, ticket, \
                          ticket_base, sync, sleep_ns);                                           \
    }

ILU0_KERNELS(f64, const double*, double*)
ILU0_KERNELS(dd, const double2*, double2*)
ILU0_KERNELS(td, td_ptr, td_ptr)
ILU0_KERNELS(qd, const qd_elem*, qd_elem*)
