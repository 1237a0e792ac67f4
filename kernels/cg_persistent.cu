// CG without a preconditioner as one kernel that runs a whole batch of iterations
// (src/backend/cuda/cg.rs, PersistentGrid): for matrices whose tiles fit in one wave of blocks,
// launched cooperatively so that every block is resident, the phases separated by a grid-wide
// barrier. An iteration is three barriers where the step kernels (kernels/cg.cu) are four
// launches, each of which waits for the previous one to drain and the next to start.
//
// The bits are the step kernels' (and so HostCg's): each phase computes what one of them does
// in the same order: the direction as cgs_direction_{p}; the SpMV row by row in spmv_{p}_nt{NT}'s
// order (NT lanes a row, then the shuffle tree) and <p, q>'s tile partials as
// dot_tile_{p}_partial's (products p q, the block's tree); alpha from the tile partials in
// tile_final's order (TILE_FINAL_THREADS lanes, emulated by this block's 256 threads, below);
// the r update with <r, r>'s chunk partials as cgs_update_{p}; <r, r> as chunks_final. Every
// block sums the partials itself (the same values in every block), so that deciding the scalars
// needs no fourth barrier; block 0 alone writes the state and the records, as cg.cu's kernels
// do, so the host reads them back the same way.
//
// With `fused` the direction phase and its barrier go: the SpMV computes each p_j it reads from
// r and the last direction (direction_of, kernels/common/persistent.cuh), which stays in one
// buffer while the new one is written to the other (p, p_next in turn), so an iteration is two
// grid barriers. The same expression on the same values, so the same bits; each gathered entry
// costs one more load and a multiply-add, so the host chooses (`set_cg_fused_direction` in
// src/backend/cuda/mod.rs: off until a GPU has timed it).
//
// cgp_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
//             const double* val, cg_state<T>* s, cg_record<T>* rec, int cap, T* p, T* q, T* r,
//             T* x, T* p_next, int fused, T* tiles, T* chunks, double denominator, double tol,
//             unsigned long long* barrier)
//   DOT_THREADS threads a block, at most one block a tile, all resident (cooperative launch);
//   p_next: n elements (unused unless fused; p holds the direction when the launch ends);
//   tiles: ceil(n / TILE_ROWS) partials, chunks: ceil(n / DOT_CHUNK); barrier: a zeroed word,
//   used by no other grid size.
//
// Vectors written during the kernel are read with ld_fresh (past L1 where other blocks write
// them, through it in a grid of one block); the matrix, which nothing writes, through the
// read-only path.

// cgs_direction at element i: (x <- x + alpha p' ;) p <- r + beta p' (p <- r in the first
// iteration), p' read from `last`, p written to `now` (the same vector in the step order).
template <class O>
__device__ __forceinline__ void cgp_direction(long long i, bool first, int pending,
                                              typename O::V alpha, typename O::V beta,
                                              const typename O::T* r, const typename O::T* last,
                                              typename O::T* now, typename O::T* x) {
    const typename O::V ri = O::load_cg(r, i);
    if (first) {
        O::store(now, i, ri);
        return;
    }
    const typename O::V pi = O::load_cg(last, i);
    if (pending) O::store(x, i, O::add(O::mul(alpha, pi), O::load_cg(x, i)));
    O::store(now, i, O::add(ri, O::mul(beta, pi)));
}

template <class O>
__device__ __forceinline__ void cgp_run(int iterations, int n, int nt,
                                        const int* __restrict__ row_ptr,
                                        const int* __restrict__ col_idx,
                                        const double* __restrict__ val,
                                        cg_state<typename O::T>* s, cg_record<typename O::T>* rec,
                                        int cap, typename O::T* __restrict__ p,
                                        typename O::T* __restrict__ q,
                                        typename O::T* __restrict__ r,
                                        typename O::T* __restrict__ x,
                                        typename O::T* __restrict__ p_next, int fused,
                                        typename O::T* tiles, typename O::T* chunks,
                                        double denominator, double tol, unsigned long long* barrier) {
    typedef typename O::V V;
    typedef typename O::T T;
    // this iteration's scalars, decided by thread 0 and handed to the block
    __shared__ T shared_scalar[2];
    __shared__ int shared_flag[2];
    const bool writer = blockIdx.x == 0 && threadIdx.x == 0;
    V alpha = O::load(&s->alpha, 0), beta = O::load(&s->beta, 0), rho = O::load(&s->rho, 0);
    int done = s->done, frozen = s->frozen, pending = s->pending;
    const int tile_count = (n + TILE_ROWS - 1) / TILE_ROWS;
    const int chunk_count = (n + DOT_CHUNK - 1) / DOT_CHUNK;
    const long long stride = (long long)gridDim.x * DOT_THREADS;
    grid_sync sync = grid_sync_start(barrier);
    PHASES_BEGIN
    int spmvs = 0;  // fused: the direction is in p after an even count, in p_next after an odd
    for (int it = 0; it < iterations && !frozen; it++) {
        const int k = done + 1;
        PHASE_ITERATION
        if (!fused) {
            // (x <- x + alpha p ;) p <- r + beta p  (cgs_direction)
            for (long long i = (long long)blockIdx.x * DOT_THREADS + threadIdx.x; i < n; i += stride)
                cgp_direction<O>(i, done == 0, pending, alpha, beta, r, p, p, x);
            PHASE(0)
            grid_barrier(sync);
            PHASE(1)
            // q <- A p with <p, q>'s tile partials
            for (int t = blockIdx.x; t < tile_count; t += gridDim.x) {
                persist_spmv_tile<O, 1>(t, n, nt, row_ptr, col_idx, val, p, p, q, tiles, nullptr);
            }
        } else {
            // The same, the SpMV computing the direction where it reads it (direction_of) from
            // the last one, kept in the other buffer; each tile's rows' direction (and x) is
            // written by their own threads before the tile's <p, q> reads it.
            typename O::T* last = spmvs % 2 ? p_next : p;
            typename O::T* now = spmvs % 2 ? p : p_next;
            const direction_of<O> dir = {r, last, beta, done == 0};
            for (int t = blockIdx.x; t < tile_count; t += gridDim.x) {
                const long long i = (long long)t * TILE_ROWS + threadIdx.x;
                if (i < n) cgp_direction<O>(i, done == 0, pending, alpha, beta, r, last, now, x);
                persist_spmv_tile<O, 1>(t, n, nt, row_ptr, col_idx, val, dir, now, q, tiles, nullptr);
            }
            spmvs++;
        }
        PHASE(2)
        grid_barrier(sync);
        PHASE(3)
        // alpha (cgs_alpha)
        const V pq = tiles_final_emulated<O>(tile_count, tiles);
        if (threadIdx.x == 0) {
            V a;
            shared_flag[0] = cg_take_pq<O>(writer, k, pq, rho, s, rec, cap, a);
            O::store(shared_scalar, 0, a);
        }
        __syncthreads();
        alpha = O::load(shared_scalar, 0);
        pending = shared_flag[0];
        PHASE(4)
        if (!pending) break;  // every block: the same pq
        // r <- r - alpha q with <r, r>'s chunk partials (cgs_update)
        const V minus_alpha = O::neg(alpha);
        for (int c = blockIdx.x; c < chunk_count; c += gridDim.x) {
            const V sum = r_update_chunk<O, true>(c, n, minus_alpha, q, r);
            if (threadIdx.x == 0) O::store(chunks, c, sum);
        }
        PHASE(5)
        grid_barrier(sync);
        PHASE(6)
        // <r, r>, the stopping test, the next rho and beta (cgs_close without a preconditioner)
        const V rr = O::chunks_final_fresh(chunk_count, chunks);
        if (threadIdx.x == 0) {
            shared_flag[1] =
                cg_close<O>(writer, k, rr, rho, true, s, rec, cap, denominator, tol);
            O::store(shared_scalar, 1, rr);
        }
        __syncthreads();
        const V next_rho = O::load(shared_scalar, 1);
        beta = O::div(next_rho, rho);
        rho = next_rho;
        frozen = shared_flag[1];
        done = k;
        __syncthreads();  // shared_scalar is written again next iteration
        PHASE(7)
    }
    // The direction back in p, where the step kernels and cgs_settle read it: by the threads
    // that wrote it, after the barrier that ended the last SpMV phase (no block reads it since).
    if (spmvs % 2) {
        for (int t = blockIdx.x; t < tile_count; t += gridDim.x) {
            const long long i = (long long)t * TILE_ROWS + threadIdx.x;
            if (i < n) O::store(p, i, O::load_cg(p_next, i));
        }
    }
    PHASES_END(sizeof(T) == 8 ? "cg-f64" : "cg-dd")
}

#define CG_PERSISTENT(P, O)                                                                     \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS) cgp_run_##P(                      \
        int iterations, int n, int nt, const int* __restrict__ row_ptr,                         \
        const int* __restrict__ col_idx, const double* __restrict__ val, cg_state<O::T>* s,     \
        cg_record<O::T>* rec, int cap, O::T* p, O::T* q, O::T* r, O::T* x, O::T* p_next,        \
        int fused, O::T* tiles, O::T* chunks, double denominator, double tol,                   \
        unsigned long long* barrier) {                                                          \
        cgp_run<O>(iterations, n, nt, row_ptr, col_idx, val, s, rec, cap, p, q, r, x, p_next,  \
                   fused, tiles, chunks, denominator, tol, barrier);                            \
    }

CG_PERSISTENT(f64, f64_ops)
CG_PERSISTENT(dd, dd_ops)
