// BiCGStab with ILU(0) as one kernel of one block that runs a whole batch of iterations
// (src/backend/cuda/bicgstab.rs), for small matrices whose ILU(0) results fit in the block's
// shared memory (ilu0_block.cu; this source is compiled after it, ilu_block_solve.cu and
// bicgstab_persistent.cu).
//
// Why: the step kernels are eleven launches an iteration and two triangular solves, each
// waiting on the last; on small matrices ILU(0) went to the host instead, two copies an
// application that make the stream wait. Here an iteration is a chain of __syncthreads, the
// triangular solves publish their results in shared memory, and nothing waits on the host
// between batches, so that many small solves run side by side (`solver batch`).
//
// The bits are the preconditioned step kernels' (and so HostBicgstab's): the direction as
// bgs_direction_{p}; p^ = M^-1 p as ilu0b_{p}_f64 (in double); v = A p^ row by row as
// spmv_wide_{p}_nt{NT} (p^ read widened); <r~, v> as dot_{p}_partial (products r~ v) and
// bgs_alpha_{p}; s with <s, s> as bicg_s_{p} and dot_{p}_final; s^ = M^-1 s; t = A s^;
// <t, t> and <t, s> (s, not s^) as bicg_tt_ts_{p} and dot_{p}_final; omega and the half-step
// flag as bicg_decide_{p}; x as bicg_x_wide (p^ and s^ widened); r with <r, r> and the next
// rho as bicg_r_{p}; the stopping tests and beta as bgs_close_{p}. Reductions are over
// DOT_CHUNK chunks, the block taking the chunks in turn; thread 0 decides the scalars, writes
// the state and records as those kernels do, and hands the scalars to the block.
//
// bgi_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
//             const double* val, const int* lrow, const int* lptr, const int* ldep,
//             const double* lval, const int* urow, const int* uptr, const int* udep,
//             const double* uval, const double* diag, const int* src, double* yg, int sleep_ns,
//             unsigned long long* ilu_ns, bicg_state<T>* st, bicg_record<T>* rec, int cap,
//             T* p, T* v, T* r, const T* r_tilde, T* s, T* t, T* x, double* p_hat,
//             double* s_hat, T* rv_chunks, T* ss_chunks, T* tt_chunks, T* ts_chunks,
//             T* rr_chunks, T* rho_chunks, double denominator, double tol)
//   One block of DOT_THREADS threads, 9 n bytes of dynamic shared memory (ilu0_block.cu's);
//   chunks: ceil(n / DOT_CHUNK) partials each; yg: n doubles; *ilu_ns gains the nanoseconds
//   the triangular solves took (%globaltimer, for the preconditioner's share of the time).

// y = A x by the block, row by row in spmv_{p}_nt{nt}'s order (lane l of a row sums its
// entries l, l + nt, ... from zero, then the shuffle-down tree); every lane of a warp takes
// part in each round, so the shuffles see the whole warp.
template <class O, typename XT>
__device__ __forceinline__ void bgi_spmv(int n, int nt, const int* __restrict__ row_ptr,
                                         const int* __restrict__ col_idx,
                                         const double* __restrict__ val, const XT* x,
                                         typename O::T* y) {
    typedef typename O::V V;
    const int lane = threadIdx.x % nt;
    const int rows_at_once = DOT_THREADS / nt;
    for (int first = 0; first < n; first += rows_at_once) {
        const int row = first + threadIdx.x / nt;
        V s = row < n ? persist_lane<O>(row, nt, lane, row_ptr, col_idx, val, x) : O::of(0.0);
        for (int off = nt / 2; off > 0; off >>= 1) s = O::add(s, O::shfl_down(s, off, nt));
        if (row < n && lane == 0) O::store(y, row, s);
    }
}

// Chunk `chunk` of <a, b> (products a b) in dot_{p}_partial's order, valid in thread 0.
template <class O>
__device__ __forceinline__ typename O::V bgi_dot_chunk(long long chunk, long long n,
                                                       const typename O::T* a,
                                                       const typename O::T* b) {
    const long long base = chunk * DOT_CHUNK + threadIdx.x;
    typename O::V sum = O::of(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) sum = O::add(sum, O::mul(O::load_cg(a, i), O::load_cg(b, i)));
    }
    return O::tree(sum);
}

// Chunk `chunk` of <t, t> and <t, s> into tt[chunk] and ts[chunk] (bicg_tt_ts_{p}'s loop).
template <class O>
__device__ __forceinline__ void bgi_tt_ts_chunk(long long chunk, long long n,
                                                const typename O::T* t, const typename O::T* s,
                                                typename O::T* tt, typename O::T* ts) {
    const long long base = chunk * DOT_CHUNK + threadIdx.x;
    typename O::V sum = O::of(0.0), dot = O::of(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const typename O::V ti = O::load_cg(t, i);
            sum = O::add(sum, O::mul(ti, ti));
            dot = O::add(dot, O::mul(ti, O::load_cg(s, i)));
        }
    }
    sum = O::tree(sum);
    if (threadIdx.x == 0) O::store(tt, chunk, sum);
    __syncthreads();
    dot = O::tree(dot);
    if (threadIdx.x == 0) O::store(ts, chunk, dot);
}

template <class O>
__device__ __forceinline__ void bgi_run(
    int iterations, int n, int nt, const int* __restrict__ row_ptr,
    const int* __restrict__ col_idx, const double* __restrict__ val, const block_ilu& f,
    bicg_state<typename O::T>* st, bicg_record<typename O::T>* rec, int cap, typename O::T* p,
    typename O::T* v, typename O::T* r, const typename O::T* r_tilde, typename O::T* s,
    typename O::T* t, typename O::T* x, double* p_hat, double* s_hat, typename O::T* rv_chunks,
    typename O::T* ss_chunks, typename O::T* tt_chunks, typename O::T* ts_chunks,
    typename O::T* rr_chunks, typename O::T* rho_chunks, double denominator, double tol,
    unsigned long long* ilu_ns) {
    typedef typename O::V V;
    typedef typename O::T T;
    // this iteration's scalars, decided by thread 0 and handed to the block
    __shared__ T shared_scalar[4];
    __shared__ int shared_flag[4];
    const bool writer = threadIdx.x == 0;
    unsigned long long spent = 0;
    V rho = O::load(&st->rho, 0), beta = O::load(&st->beta, 0), omega = O::load(&st->omega, 0);
    int done = st->done, frozen = st->frozen;
    const int chunk_count = (n + DOT_CHUNK - 1) / DOT_CHUNK;
    for (int it = 0; it < iterations && !frozen; it++) {
        const int k = done + 1;
        // p <- r + beta (p - omega v), p <- r first (bgs_direction)
        bgp_direction<O>(threadIdx.x, DOT_THREADS, n, done, beta, omega, r, v, p);
        __syncthreads();
        // p^ <- M^-1 p ; v <- A p^ ; <r~, v>'s chunks
        block_ilu_apply(n, f, p, p_hat, spent);
        bgi_spmv<O>(n, nt, row_ptr, col_idx, val, p_hat, v);
        __syncthreads();
        for (int c = 0; c < chunk_count; c++) {
            const V sum = bgi_dot_chunk<O>(c, n, r_tilde, v);
            if (threadIdx.x == 0) O::store(rv_chunks, c, sum);
        }
        __syncthreads();
        // alpha (bgs_alpha)
        const V rv = O::chunks_final_fresh(chunk_count, rv_chunks);
        if (writer) bgp_alpha<O>(true, k, rv, rho, st, rec, cap, shared_scalar, shared_flag);
        __syncthreads();
        const V alpha = O::load(shared_scalar, 0);
        if (!shared_flag[0]) break;  // every thread: the same flag
        // s <- r - alpha v with <s, s>'s chunks (bicg_s)
        const V minus_alpha = O::neg(alpha);
        for (int c = 0; c < chunk_count; c++) {
            const V sum = bgp_s_chunk<O>(c, n, minus_alpha, v, r, s);
            if (threadIdx.x == 0) O::store(ss_chunks, c, sum);
        }
        __syncthreads();
        // s^ <- M^-1 s ; t <- A s^ ; <t, t>'s and <t, s>'s chunks
        block_ilu_apply(n, f, s, s_hat, spent);
        bgi_spmv<O>(n, nt, row_ptr, col_idx, val, s_hat, t);
        __syncthreads();
        for (int c = 0; c < chunk_count; c++) bgi_tt_ts_chunk<O>(c, n, t, s, tt_chunks, ts_chunks);
        __syncthreads();
        // <s, s>, <t, t>, <t, s> (dot_final's order); omega and the half-step flag
        // (bicg_decide; its test has no finiteness check, the close's has)
        const V ss = O::chunks_final_fresh(chunk_count, ss_chunks);
        __syncthreads();
        const V tt = O::chunks_final_fresh(chunk_count, tt_chunks);
        __syncthreads();
        const V ts = O::chunks_final_fresh(chunk_count, ts_chunks);
        if (writer) bgp_omega<O>(true, ss, tt, ts, denominator, tol, st, shared_scalar, shared_flag);
        __syncthreads();
        const V om = O::load(shared_scalar, 1);
        const V ss_all = O::load(shared_scalar, 2);
        const bool half = shared_flag[1], om_ok = shared_flag[2];
        // x <- x + alpha p^ (+ omega s^) (bicg_x_wide)
        bgp_x_update<O>(threadIdx.x, DOT_THREADS, n, alpha, om, half, om_ok, p_hat, s_hat, x);
        // r <- s - omega t with <r, r>'s and the next rho's chunks (bicg_r)
        if (!half && om_ok) {
            const V minus_om = O::neg(om);
            for (int c = 0; c < chunk_count; c++) {
                bgp_r_chunk<O>(c, n, minus_om, t, s, r_tilde, r, rr_chunks, rho_chunks);
            }
        }
        __syncthreads();
        // the stopping tests, beta, the next rho (bgs_close)
        if (threshold_reached(O::norm(ss_all), denominator, tol) || !om_ok) {
            if (writer) bgp_half_stop<O>(k, ss_all, om, denominator, tol, st, rec, cap);
            break;  // every thread: the same <s, s> and omega
        }
        const V rr = O::chunks_final_fresh(chunk_count, rr_chunks);
        __syncthreads();
        const V rho_next = O::chunks_final_fresh(chunk_count, rho_chunks);
        if (writer) {
            bgp_close<O>(true, k, ss_all, om, rr, rho_next, rho, alpha, denominator, tol, st, rec,
                         cap, shared_scalar, shared_flag);
        }
        __syncthreads();
        const V next_rho = O::load(shared_scalar, 3);
        beta = O::mul(O::div(next_rho, rho), O::div(alpha, om));
        rho = next_rho;
        omega = om;
        frozen = shared_flag[3];
        done = k;
        __syncthreads();  // shared_scalar is written again next iteration
    }
    if (writer) *ilu_ns += spent;
}

#define BICGSTAB_ILU_BLOCK(P, O)                                                                \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS) bgi_run_##P(                      \
        int iterations, int n, int nt, const int* __restrict__ row_ptr,                         \
        const int* __restrict__ col_idx, const double* __restrict__ val, const int* lrow,      \
        const int* lptr, const int* ldep, const double* lval, const int* urow, const int* uptr, \
        const int* udep, const double* uval, const double* diag, const int* src, double* yg,   \
        int sleep_ns, unsigned long long* ilu_ns, bicg_state<O::T>* st, bicg_record<O::T>* rec, \
        int cap, O::T* p, O::T* v, O::T* r, const O::T* r_tilde, O::T* s, O::T* t, O::T* x,     \
        double* p_hat, double* s_hat, O::T* rv_chunks, O::T* ss_chunks, O::T* tt_chunks,        \
        O::T* ts_chunks, O::T* rr_chunks, O::T* rho_chunks, double denominator, double tol) {   \
        const block_ilu f = {lrow, lptr, ldep, lval, urow, uptr, udep, uval, diag, src, yg,   \
                               sleep_ns};                                                       \
        bgi_run<O>(iterations, n, nt, row_ptr, col_idx, val, f, st, rec, cap, p, v, r, r_tilde, \
                   s, t, x, p_hat, s_hat, rv_chunks, ss_chunks, tt_chunks, ts_chunks, rr_chunks, \
                   rho_chunks, denominator, tol, ilu_ns);                                       \
    }

BICGSTAB_ILU_BLOCK(f64, f64_ops)
BICGSTAB_ILU_BLOCK(dd, dd_ops)
