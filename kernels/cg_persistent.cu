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
// cgp_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
//             const double* val, cg_state<T>* s, cg_record<T>* rec, int cap, T* p, T* q, T* r,
//             T* x, T* tiles, T* chunks, double denominator, double tol, unsigned long long* barrier)
//   DOT_THREADS threads a block, at most one block a tile, all resident (cooperative launch);
//   tiles: ceil(n / TILE_ROWS) partials, chunks: ceil(n / DOT_CHUNK); barrier: a zeroed word,
//   used by no other grid size.
//
// Where every block owns one tile (the grid as the launch sizes it, unless OneBlock mode gives
// one block several), thread t of block b owns row b * TILE_ROWS + t and keeps its p, r, x and
// (A p) in registers: the direction, <p, q>'s products and the r update read no vector, and
// <r, r>'s squares go to q (free once the r update has read A p) where, after the barrier, every
// block sums them in the chunks' order itself (persist_chunked_sum), instead of a chunk's block
// summing them before the barrier and every block the chunks' partials after it. p, r and x
// are still stored as they change, so the launch ends as the step kernels would leave them; q,
// which every iteration writes before it reads it, ends holding the squares.
//
// Vectors written during the kernel are read with ld_fresh (past L1 where other blocks write
// them, through it in a grid of one block); the matrix, which nothing writes, through the
// read-only path.

// cgs_direction's expressions: p <- r on the first iteration; then (x <- x + alpha p where the
// last step is pending ;) p <- r + beta p.
template <class O>
__device__ __forceinline__ void cgp_direction(bool first, bool pending, typename O::V alpha,
                                              typename O::V beta, typename O::V r,
                                              typename O::V& p, typename O::V& x) {
    if (first) {
        p = r;
        return;
    }
    if (pending) x = O::add(O::mul(alpha, p), x);
    p = O::add(r, O::mul(beta, p));
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
    const bool owned = gridDim.x == tile_count && chunk_count <= 32;
    const long long own = (long long)blockIdx.x * TILE_ROWS + threadIdx.x;
    const bool mine = owned && own < n;
    V p_own = O::of(0.0), q_own = O::of(0.0), r_own = O::of(0.0), x_own = O::of(0.0);
    if (mine) {
        r_own = O::load_cg(r, own);
        x_own = O::load_cg(x, own);
        if (done > 0) p_own = O::load_cg(p, own);
    }
    PHASES_BEGIN
    for (int it = 0; it < iterations && !frozen; it++) {
        const int k = done + 1;
        PHASE_ITERATION
        // (x <- x + alpha p ;) p <- r + beta p  (cgs_direction)
        if (mine) {
            cgp_direction<O>(done == 0, pending, alpha, beta, r_own, p_own, x_own);
            if (done > 0 && pending) O::store(x, own, x_own);
            O::store(p, own, p_own);
        }
        for (long long i = (long long)blockIdx.x * DOT_THREADS + threadIdx.x; !owned && i < n;
             i += stride) {
            V pi = done == 0 ? O::of(0.0) : O::load_cg(p, i);
            V xi = done > 0 && pending ? O::load_cg(x, i) : O::of(0.0);
            cgp_direction<O>(done == 0, pending, alpha, beta, O::load_cg(r, i), pi, xi);
            if (done > 0 && pending) O::store(x, i, xi);
            O::store(p, i, pi);
        }
        PHASE(0)
        grid_barrier(sync);
        PHASE(1)
        // q <- A p with <p, q>'s tile partials
        if (owned) {
            q_own = persist_spmv_rows<O>(blockIdx.x, n, nt, row_ptr, col_idx, val, p, q);
            const V sum = O::tree(mine ? O::mul(p_own, q_own) : O::of(0.0));
            if (threadIdx.x == 0) O::store(tiles, blockIdx.x, sum);
        }
        for (int t = blockIdx.x; !owned && t < tile_count; t += gridDim.x) {
            persist_spmv_tile<O, 1>(t, n, nt, row_ptr, col_idx, val, p, p, q, tiles, nullptr);
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
        if (mine) {
            r_own = axpy_of<O>(minus_alpha, q_own, r_own);
            O::store(r, own, r_own);
            O::store(q, own, O::mul(r_own, r_own));
        }
        for (int c = blockIdx.x; !owned && c < chunk_count; c += gridDim.x) {
            const V sum = r_update_chunk<O, true>(c, n, minus_alpha, q, r);
            if (threadIdx.x == 0) O::store(chunks, c, sum);
        }
        PHASE(5)
        grid_barrier(sync);
        PHASE(6)
        // <r, r>, the stopping test, the next rho and beta (cgs_close without a preconditioner)
        const V rr = owned ? persist_chunked_sum<O>(n, q) : O::chunks_final_fresh(chunk_count, chunks);
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
    PHASES_END(sizeof(T) == 8 ? "cg-f64" : "cg-dd")
}

#define CG_PERSISTENT(P, O)                                                                     \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS) cgp_run_##P(                      \
        int iterations, int n, int nt, const int* __restrict__ row_ptr,                         \
        const int* __restrict__ col_idx, const double* __restrict__ val, cg_state<O::T>* s,     \
        cg_record<O::T>* rec, int cap, O::T* p, O::T* q, O::T* r, O::T* x, O::T* tiles,         \
        O::T* chunks, double denominator, double tol, unsigned long long* barrier) {                  \
        cgp_run<O>(iterations, n, nt, row_ptr, col_idx, val, s, rec, cap, p, q, r, x, tiles,    \
                   chunks, denominator, tol, barrier);                                          \
    }

CG_PERSISTENT(f64, f64_ops)
CG_PERSISTENT(dd, dd_ops)
