// What the kernels that run whole batches of iterations share (kernels/cg_persistent.cu,
// kernels/bicgstab_persistent.cu): the grid barrier between an iteration's phases, the tiled
// order's final stage emulated by one block, and a tile of the SpMV with its dots' partials, each
// with the bits of the step kernels' twin.

// All blocks of the grid reach this point before any leaves it (every block resident). Arrivals
// count up in one 64-bit word that only grows: every barrier adds gridDim.x (all blocks pass
// every barrier), so the barrier a block arrives at ends when the count reaches the next
// multiple of gridDim.x. Thread 0's release makes its block's writes (ordered before it by
// __syncthreads) visible to the blocks whose acquire sees the count. A grid of one block needs
// only __syncthreads.
//
// Thread 0 keeps that multiple itself (grid_sync::target), so its arrival is a reduction that
// returns nothing and its wait starts at once, rather than after an atomic's round trip to L2.
// The count it starts from: earlier launches on the word (the same grid size) ended with it a
// multiple of gridDim.x, and at this launch's start at most gridDim.x - 1 blocks have arrived
// at its first barrier (none passes it before this block arrives), so it is the count read at
// the start rounded down to a multiple of gridDim.x.
struct grid_sync {
    unsigned long long* arrived;
    unsigned long long target;
};

__device__ __forceinline__ grid_sync grid_sync_start(unsigned long long* arrived) {
    grid_sync g = {arrived, 0};
    if (gridDim.x > 1 && threadIdx.x == 0) {
        unsigned long long now;
        asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(now) : "l"(arrived) : "memory");
        g.target = now - now % gridDim.x;
    }
    return g;
}

__device__ __forceinline__ void grid_barrier(grid_sync& g) {
    __syncthreads();
    if (gridDim.x == 1) return;
    if (threadIdx.x == 0) {
        unsigned long long now;
        asm volatile("red.release.gpu.global.add.u64 [%0], 1;" : : "l"(g.arrived) : "memory");
        g.target += gridDim.x;
        do {
            asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(now) : "l"(g.arrived) : "memory");
        } while (now < g.target);
    }
    __syncthreads();
}

// Where an iteration's time goes, for measuring (PRECSOLVE_KERNEL_DEFINES=PHASE_TIMES; compiled
// out otherwise): thread 0 of block 0 adds the SM cycles since the last mark to mark k's total,
// and at the kernel's end prints the totals of the launch (one line a batch).
#ifdef PHASE_TIMES
#define PHASE_SLOTS 16
#define PHASES_BEGIN                                                                   \
    long long phase_last = clock64(), phase_total[PHASE_SLOTS];                        \
    for (int phase_i = 0; phase_i < PHASE_SLOTS; phase_i++) phase_total[phase_i] = 0;  \
    int phase_iterations = 0;
#define PHASE(k)                                                                       \
    if (blockIdx.x == 0 && threadIdx.x == 0) {                                         \
        const long long phase_now = clock64();                                         \
        phase_total[k] += phase_now - phase_last;                                      \
        phase_last = phase_now;                                                        \
    }
#define PHASE_ITERATION phase_iterations++;
#define PHASES_END(name)                                                               \
    if (blockIdx.x == 0 && threadIdx.x == 0) {                                         \
        printf("PHASES %s n=%d grid=%d iterations=%d cycles", name, n, gridDim.x,      \
               phase_iterations);                                                      \
        for (int phase_i = 0; phase_i < PHASE_SLOTS; phase_i++)                        \
            printf(" %lld", phase_total[phase_i]);                                     \
        printf("\n");                                                                  \
    }
#else
#define PHASES_BEGIN
#define PHASE(k)
#define PHASE_ITERATION
#define PHASES_END(name)
#endif

// tile_final's order over m tile partials, by a block of DOT_THREADS: virtual lane L of
// TILE_FINAL_THREADS sums partials L, L + TILE_FINAL_THREADS, ... from zero; each virtual warp's
// 32 lanes go through the warp tree (warp w of this block takes virtual warps w, w + 8, ...);
// then the tree over the 32 warp sums. Valid in thread 0.
template <class O>
__device__ __forceinline__ typename O::V tiles_final_emulated(int m,
                                                              const typename O::T* partial) {
    __shared__ typename O::T warp_sums[TILE_FINAL_THREADS / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int w = warp; w < TILE_FINAL_THREADS / 32; w += DOT_THREADS / 32) {
        if (w * 32 >= m) {  // no partial in this virtual warp: its tree of zeros is zero
            if (lane == 0) O::store(warp_sums, w, O::of(0.0));
            continue;
        }
        typename O::V s = O::of(0.0);
        for (int i = w * 32 + lane; i < m; i += TILE_FINAL_THREADS) s = O::add(s, O::load_cg(partial, i));
        s = O::warp_tree(s);
        if (lane == 0) O::store(warp_sums, w, s);
    }
    __syncthreads();
    typename O::V s = O::of(0.0);
    if (warp == 0) s = O::warp_tree(O::load(warp_sums, lane));
    __syncthreads();
    return s;
}

// Entries of a lane loaded before any is summed (the same order; the gathers overlap): with 8
// rather than 4, BiCGStab's f64 iteration was 7-9% shorter and its dd one 2-3% on 1,138 to
// 2,500 rows, and 16 gained nothing more (gpu-resident.md, "Rows in registers"). A variant
// may set it (PRECSOLVE_KERNEL_DEFINES=PERSIST_BATCH=16) to measure another batch.
#ifndef PERSIST_BATCH
#define PERSIST_BATCH 8
#endif

// Element j of x as O::V, as written earlier in the kernel (ld_fresh): stored, or a double
// widened exactly (BiCGStab's preconditioned vectors, kept in double:
// kernels/bicgstab_ilu_block.cu).
template <class O>
__device__ __forceinline__ typename O::V persist_x(const double* x, long long j) {
    return O::widen(ld_fresh(x + j));
}
template <class O>
__device__ __forceinline__ typename O::V persist_x(const double2* x, long long j) {
    return O::load_cg(x, j);
}

// Lane `lane` of row `row`'s sum with nt lanes (spmv_{p}_lane's order), p stored or widened.
template <class O, typename XT>
__device__ __forceinline__ typename O::V persist_lane(int row, int nt, int lane,
                                                  const int* __restrict__ row_ptr,
                                                  const int* __restrict__ col_idx,
                                                  const double* __restrict__ val,
                                                  const XT* __restrict__ p) {
    typename O::V s = O::of(0.0);
    const int end = __ldg(row_ptr + row + 1);
    for (int k = __ldg(row_ptr + row) + lane; k < end; k += PERSIST_BATCH * nt) {
        double a[PERSIST_BATCH];
        typename O::V xk[PERSIST_BATCH];
#pragma unroll
        for (int u = 0; u < PERSIST_BATCH; u++) {
            if (k + u * nt < end) {
                a[u] = __ldg(val + k + u * nt);
                xk[u] = persist_x<O>(p, __ldg(col_idx + k + u * nt));
            }
        }
#pragma unroll
        for (int u = 0; u < PERSIST_BATCH; u++) {
            if (k + u * nt < end) s = O::add_mul_f64(s, xk[u], a[u]);
        }
    }
    return s;
}

// One tile of q = A x (rows of nt lanes, spmv_{p}_nt{nt}'s order), stored in q; returns row
// t * TILE_ROWS + threadIdx.x's value (zero past the last row) in its thread.
template <class O>
__device__ __forceinline__ typename O::V persist_spmv_rows(int t, int n, int nt,
                                                           const int* __restrict__ row_ptr,
                                                           const int* __restrict__ col_idx,
                                                           const double* __restrict__ val,
                                                           const typename O::T* __restrict__ x,
                                                           typename O::T* __restrict__ q) {
    const int row = t * TILE_ROWS + threadIdx.x;
    typename O::V qr = O::of(0.0);
    if (nt == 1) {
        if (row < n) {
            qr = persist_lane<O>(row, 1, 0, row_ptr, col_idx, val, x);
            O::store(q, row, qr);
        }
        return qr;
    }
    const int lane = threadIdx.x % nt;
    for (int j = threadIdx.x / nt; j < TILE_ROWS; j += DOT_THREADS / nt) {
        const int r = t * TILE_ROWS + j;
        typename O::V s = r < n ? persist_lane<O>(r, nt, lane, row_ptr, col_idx, val, x) : O::of(0.0);
        for (int off = nt / 2; off > 0; off >>= 1) s = O::add(s, O::shfl_down(s, off, nt));
        if (r < n && lane == 0) O::store(q, r, s);
    }
    __syncthreads();
    if (row < n) qr = O::load_cg(q, row);
    return qr;
}

// One tile of q = A x (persist_spmv_rows), then its partials: DOTS = 1, <w, q> (products w q:
// spmv_dot_{p}_nt1, dot_tile_{p}_partial(w, q)); DOTS = 2, <q, q> and <q, w> (products q q and
// q w: spmv_dot2_{p}_nt1). Into tiles[t] (and tiles2[t]).
template <class O, int DOTS>
__device__ __forceinline__ void persist_spmv_tile(int t, int n, int nt,
                                                  const int* __restrict__ row_ptr,
                                                  const int* __restrict__ col_idx,
                                                  const double* __restrict__ val,
                                                  const typename O::T* __restrict__ x,
                                                  const typename O::T* __restrict__ w,
                                                  typename O::T* __restrict__ q,
                                                  typename O::T* __restrict__ tiles,
                                                  typename O::T* __restrict__ tiles2) {
    const int row = t * TILE_ROWS + threadIdx.x;
    const typename O::V qr = persist_spmv_rows<O>(t, n, nt, row_ptr, col_idx, val, x, q);
    if (DOTS == 1) {
        const typename O::V prod = row < n ? O::mul(O::load_cg(w, row), qr) : O::of(0.0);
        const typename O::V sum = O::tree(prod);
        if (threadIdx.x == 0) O::store(tiles, t, sum);
    } else {
        const typename O::V wr = row < n ? O::load_cg(w, row) : O::of(0.0);
        const typename O::V qq = O::tree(row < n ? O::mul(qr, qr) : O::of(0.0));
        if (threadIdx.x == 0) O::store(tiles, t, qq);
        __syncthreads();
        const typename O::V qw = O::tree(row < n ? O::mul(qr, wr) : O::of(0.0));
        if (threadIdx.x == 0) O::store(tiles2, t, qw);
    }
}

// Terms of a lane that persist_chunked_sum loads before it adds any (the same order): in dd
// all of them, in f64 a batch of 8 (gpu-resident.md, "Rows in registers"). A kernel that keeps
// more of its own values in registers passes a smaller dd batch (BiCGStab's: 32 spilled).
#ifndef CHUNK_BATCH_F64
#define CHUNK_BATCH_F64 8
#endif
#ifndef CHUNK_BATCH_DD
#define CHUNK_BATCH_DD DOT_PER_THREAD
#endif

// The whole of a dot product in the chunked order (dot_{p}'s: the chunk partials as
// r_update_chunk's, then chunks_final's) over terms already formed, terms[i] for i < n, written
// by other blocks before a grid barrier. Each block sums every chunk itself, one tree after the
// other, and then their partials from shared memory as chunks_final_few does: where a chunk's
// block and the final stage would need a barrier between them, this needs none. For at most 32
// chunks (the caller checks). Valid in thread 0.
template <class O, int BatchDd = CHUNK_BATCH_DD>
__device__ __forceinline__ typename O::V persist_chunked_sum(long long n,
                                                             const typename O::T* terms) {
    __shared__ typename O::T partial[32];
    const int m = (int)((n + DOT_CHUNK - 1) / DOT_CHUNK);
    constexpr int batch = sizeof(typename O::T) == 8 ? CHUNK_BATCH_F64 : BatchDd;
    for (int c = 0; c < m; c++) {
        const long long base = (long long)c * DOT_CHUNK + threadIdx.x;
        typename O::V sum = O::of(0.0);
        for (int j = 0; j < DOT_PER_THREAD && base + (long long)j * DOT_THREADS < n; j += batch) {
            typename O::V v[batch];
#pragma unroll
            for (int u = 0; u < batch; u++) {
                const long long i = base + (long long)(j + u) * DOT_THREADS;
                if (j + u < DOT_PER_THREAD && i < n) v[u] = O::load_cg(terms, i);
            }
#pragma unroll
            for (int u = 0; u < batch; u++) {
                const long long i = base + (long long)(j + u) * DOT_THREADS;
                if (j + u < DOT_PER_THREAD && i < n) sum = O::add(sum, v[u]);
            }
        }
        sum = O::tree(sum);
        if (threadIdx.x == 0) O::store(partial, c, sum);
    }
    __syncthreads();
    const bool has = (int)threadIdx.x < m;
    return chunks_final_few_of<O>(m, has ? O::load(partial, threadIdx.x) : O::of(0.0));
}
