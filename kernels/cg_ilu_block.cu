// CG with ILU(0) as one kernel of one block that runs a whole batch of iterations
// (src/backend/cuda/cg.rs), for small matrices whose ILU(0) results fit in the block's shared
// memory; compiled after ilu0_block.cu and ilu_block_solve.cu (source ilu_block_solvers).
//
// Why: beside other solves (`solver batch --in-flight`), the step kernels' six launches an
// iteration and ILU(0)'s round trip to the host (where small, many-level factors go) contend
// with every other solve's for the driver; one block a batch takes one multiprocessor and no
// host thread.
//
// The bits are the preconditioned step kernels' (and so HostCg's): z = M^-1 r as
// ilu0b_{p}_f64 (in double); <r, z>'s chunks as dot_{p}_partial (dot_wide_dd_partial: z
// widened) and cgs_rho_{p}; the direction as cgs_direction_wide_{p}; q = A p with <p, q>'s tile
// partials as spmv_dot_{p}_nt1 (or spmv_{p}_nt{NT} and dot_tile_{p}_partial) and cgs_alpha_{p}
// (tile_final's order, emulated); r with <r, r>'s chunks as cgs_update_{p}, and its close
// (preconditioned: no next rho). Thread 0 decides the scalars, writes the state and records
// as those kernels do, and hands the scalars to the block.
//
// cgi_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
//             const double* val, const int* lrow, const int* lptr, const int* ldep,
//             const double* lval, const int* urow, const int* uptr, const int* udep,
//             const double* uval, const double* diag, const int* src, double* yg, int sleep_ns,
//             unsigned long long* ilu_ns, cg_state<T>* s, cg_record<T>* rec, int cap, T* p,
//             T* q, T* r, T* x, double* z, T* tiles, T* rr_chunks, T* rho_chunks,
//             double denominator, double tol)
//   One block of DOT_THREADS threads, 9 n bytes of dynamic shared memory (ilu0_block.cu's);
//   tiles: ceil(n / TILE_ROWS) partials, chunks: ceil(n / DOT_CHUNK) each; yg: n doubles;
//   *ilu_ns gains the nanoseconds the triangular solves took.

// Chunk `chunk` of <r, z> with z of doubles widened (dot_{p}_partial, dot_wide_dd_partial),
// valid in thread 0.
template <class O>
__device__ __forceinline__ typename O::V cgi_rz_chunk(long long chunk, long long n,
                                                      const typename O::T* r, const double* z) {
    const long long base = chunk * DOT_CHUNK + threadIdx.x;
    typename O::V sum = O::of(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) sum = O::add(sum, O::mul(O::load_cg(r, i), O::widen(ld_fresh(z + i))));
    }
    return O::tree(sum);
}

template <class O>
__device__ __forceinline__ void cgi_run(int iterations, int n, int nt,
                                        const int* __restrict__ row_ptr,
                                        const int* __restrict__ col_idx,
                                        const double* __restrict__ val, const block_ilu& f,
                                        cg_state<typename O::T>* s, cg_record<typename O::T>* rec,
                                        int cap, typename O::T* p, typename O::T* q,
                                        typename O::T* r, typename O::T* x, double* z,
                                        typename O::T* tiles, typename O::T* rr_chunks,
                                        typename O::T* rho_chunks, double denominator, double tol,
                                        unsigned long long* ilu_ns) {
    typedef typename O::V V;
    typedef typename O::T T;
    // this iteration's scalars, decided by thread 0 and handed to the block
    __shared__ T shared_scalar[2];
    __shared__ int shared_flag[3];
    const bool writer = threadIdx.x == 0;
    unsigned long long spent = 0;
    V alpha = O::load(&s->alpha, 0), beta = O::load(&s->beta, 0), rho = O::load(&s->rho, 0);
    int done = s->done, frozen = s->frozen, pending = s->pending;
    const int tile_count = (n + TILE_ROWS - 1) / TILE_ROWS;
    const int chunk_count = (n + DOT_CHUNK - 1) / DOT_CHUNK;
    for (int it = 0; it < iterations && !frozen; it++) {
        const int k = done + 1;
        // z <- M^-1 r ; rho <- <r, z> (cgs_rho): stops, or beta = rho / rho_prev
        block_ilu_apply(n, f, r, z, spent);
        for (int c = 0; c < chunk_count; c++) {
            const V sum = cgi_rz_chunk<O>(c, n, r, z);
            if (threadIdx.x == 0) O::store(rho_chunks, c, sum);
        }
        __syncthreads();
        const V rho_now = O::chunks_final_fresh(chunk_count, rho_chunks);
        if (writer) {
            shared_flag[0] = cg_take_rho<O>(k, rho_now, s, rec, cap);
            O::store(shared_scalar, 0, O::load(&s->beta, 0));
        }
        __syncthreads();
        if (shared_flag[0]) break;  // every thread: the same rho
        beta = O::load(shared_scalar, 0);
        rho = rho_now;
        // (x <- x + alpha p ;) p <- z + beta p  (cgs_direction_wide)
        for (int i = threadIdx.x; i < n; i += DOT_THREADS) {
            const V zi = O::widen(ld_fresh(z + i));
            if (done == 0) {
                O::store(p, i, zi);
                continue;
            }
            const V pi = O::load_cg(p, i);
            if (pending) O::store(x, i, O::add(O::mul(alpha, pi), O::load_cg(x, i)));
            O::store(p, i, O::add(zi, O::mul(beta, pi)));
        }
        __syncthreads();
        // q <- A p with <p, q>'s tile partials
        for (int t = 0; t < tile_count; t++) {
            persist_spmv_tile<O, 1>(t, n, nt, row_ptr, col_idx, val, p, p, q, tiles, nullptr);
        }
        __syncthreads();
        // alpha (cgs_alpha)
        const V pq = tiles_final_emulated<O>(tile_count, tiles);
        if (writer) {
            V a;
            shared_flag[1] = cg_take_pq<O>(true, k, pq, rho, s, rec, cap, a);
            O::store(shared_scalar, 1, a);
        }
        __syncthreads();
        alpha = O::load(shared_scalar, 1);
        pending = shared_flag[1];
        if (!pending) break;  // every thread: the same pq
        // r <- r - alpha q with <r, r>'s chunk partials (cgs_update)
        const V minus_alpha = O::neg(alpha);
        for (int c = 0; c < chunk_count; c++) {
            const V sum = r_update_chunk<O, true>(c, n, minus_alpha, q, r);
            if (threadIdx.x == 0) O::store(rr_chunks, c, sum);
        }
        __syncthreads();
        // <r, r> and the stopping test (cgs_close with a preconditioner: no next rho)
        const V rr = O::chunks_final_fresh(chunk_count, rr_chunks);
        if (writer) {
            shared_flag[2] = cg_close<O>(true, k, rr, rho, false, s, rec, cap, denominator, tol);
        }
        __syncthreads();
        frozen = shared_flag[2];
        done = k;
        __syncthreads();  // shared_scalar is written again next iteration
    }
    if (writer) *ilu_ns += spent;
}

#define CG_ILU_BLOCK(P, O)                                                                      \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS) cgi_run_##P(                      \
        int iterations, int n, int nt, const int* __restrict__ row_ptr,                         \
        const int* __restrict__ col_idx, const double* __restrict__ val, const int* lrow,      \
        const int* lptr, const int* ldep, const double* lval, const int* urow, const int* uptr, \
        const int* udep, const double* uval, const double* diag, const int* src, double* yg,   \
        int sleep_ns, unsigned long long* ilu_ns, cg_state<O::T>* s, cg_record<O::T>* rec,     \
        int cap, O::T* p, O::T* q, O::T* r, O::T* x, double* z, O::T* tiles, O::T* rr_chunks,   \
        O::T* rho_chunks, double denominator, double tol) {                                     \
        const block_ilu f = {lrow, lptr, ldep, lval, urow, uptr, udep, uval, diag, src, yg,     \
                             sleep_ns};                                                         \
        cgi_run<O>(iterations, n, nt, row_ptr, col_idx, val, f, s, rec, cap, p, q, r, x, z,     \
                   tiles, rr_chunks, rho_chunks, denominator, tol, ilu_ns);                     \
    }

CG_ILU_BLOCK(f64, f64_ops)
CG_ILU_BLOCK(dd, dd_ops)
