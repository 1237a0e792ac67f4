// BiCGStab without a preconditioner as one kernel that runs a whole batch of iterations
// (src/backend/cuda/bicgstab.rs): as CG's persistent kernel (cg_persistent.cu), for matrices
// whose tiles fit in one wave of blocks, either one block launched as any kernel (beside other
// solves: `solver batch`) or a grid launched cooperatively. An iteration is five barriers where
// the step kernels (bicgstab.cu) are nine launches.
//
// The bits are the step kernels' (and so HostBicgstab's): each phase computes what one of them
// does in the same order: the direction as bgs_direction_{p}; v = A p with <r~, v>'s tile
// partials as spmv_dot_{p}_nt1 (products r~ v); alpha as bgs_alpha_tiles_{p}; s with <s, s>'s
// chunk partials as bicg_s_{p}; t = A s with <t, t>'s and <t, s>'s tile partials as
// spmv_dot2_{p}_nt1; <s, s>'s final stage as dot_{p}_final, omega and the half-step flag as
// bgs_omega_tiles_{p}; x as bicg_x_{p}; r with <r, r>'s and the next rho's chunk partials as
// bicg_r_{p}; the stopping tests and beta as bgs_close_{p}. Every block sums the partials itself
// (the same values in every block); block 0 alone writes the state and the records, so the host
// reads them back as it reads the step kernels'.
//
// Where every block owns one tile (as in cg_persistent.cu), thread t of block b owns row
// b * TILE_ROWS + t and keeps its p, v, r, r~, s, t and x in registers: the vector updates load
// nothing, and only p and s (which the SpMVs gather) are stored during the iteration. The dots'
// terms (s s, r r, r~ r) go to vectors no block reads in that phase (v after alpha, t and s
// after t = A s's barrier), and after the next barrier every block sums them itself in the
// chunks' order (persist_chunked_sum); the launch ends with a barrier and every register
// stored back, so it leaves the vectors as the step kernels would.
//
// In f64 on every such grid; in dd from BGP_REGISTERS_DD_MIN_TILES to BGP_REGISTERS_DD_MAX_TILES
// tiles (a maximum of 0 keeps dd's rows in memory). dd's sums load 16 terms a batch (32, as
// CG's, spilled: 255 registers). On an H100 against its rows in memory: 2-11% longer on 1-2
// tiles, even at 4, 3-20% shorter on 5-48 tiles, 5-13% longer on 54-62, where every block's
// sums over the whole vector outweigh the loads saved (gpu-resident.md, "BiCGStab's rows in
// registers").
#ifndef BGP_REGISTERS_DD_MIN_TILES
#define BGP_REGISTERS_DD_MIN_TILES 5
#endif
#ifndef BGP_REGISTERS_DD_MAX_TILES
#define BGP_REGISTERS_DD_MAX_TILES 48
#endif
#ifndef BGP_CHUNK_BATCH_DD
#define BGP_CHUNK_BATCH_DD 16
#endif
//
// bgp_run_{p}(int iterations, int n, int nt, const int* row_ptr, const int* col_idx,
//             const double* val, bicg_state<T>* st, bicg_record<T>* rec, int cap, T* p, T* v,
//             T* r, const T* r_tilde, T* s, T* t, T* x, T* tiles_rv, T* tiles_tt,
//             T* tiles_ts, T* ss_chunks, T* rr_chunks, T* rho_chunks, double denominator,
//             double tol, unsigned long long* barrier)
//   DOT_THREADS threads a block, at most one block a tile, all resident; tiles: ceil(n /
//   TILE_ROWS) partials each, chunks: ceil(n / DOT_CHUNK) each; barrier: a zeroed word, used
//   by no other grid size.

// Chunk `chunk` of out <- (-alpha) a + b with <out, out>'s partial (bicg_s_{p}'s loop, out = s,
// a = v, b = r), valid in thread 0.
template <class O>
__device__ __forceinline__ typename O::V bgp_s_chunk(long long chunk, long long n,
                                                     typename O::V minus_alpha,
                                                     const typename O::T* __restrict__ a,
                                                     const typename O::T* __restrict__ b,
                                                     typename O::T* __restrict__ out) {
    const long long base = chunk * DOT_CHUNK + threadIdx.x;
    typename O::V sum = O::of(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const typename O::V z = axpy_of<O>(minus_alpha, O::load_cg(a, i), O::load_cg(b, i));
            O::store(out, i, z);
            sum = O::add(sum, O::mul(z, z));
        }
    }
    return O::tree(sum);
}

// Chunk `chunk` of r <- (-omega) t + s with <r, r>'s and <r~, r>'s partials (bicg_r_{p}'s
// loop), into rr[chunk] and rho[chunk].
template <class O>
__device__ __forceinline__ void bgp_r_chunk(long long chunk, long long n, typename O::V minus_omega,
                                            const typename O::T* __restrict__ t,
                                            const typename O::T* __restrict__ s,
                                            const typename O::T* __restrict__ r_tilde,
                                            typename O::T* __restrict__ r,
                                            typename O::T* __restrict__ rr,
                                            typename O::T* __restrict__ rho) {
    const long long base = chunk * DOT_CHUNK + threadIdx.x;
    typename O::V sum = O::of(0.0), dot = O::of(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const typename O::V z = axpy_of<O>(minus_omega, O::load_cg(t, i), O::load_cg(s, i));
            O::store(r, i, z);
            sum = O::add(sum, O::mul(z, z));
            dot = O::add(dot, O::mul(O::load_cg(r_tilde, i), z));
        }
    }
    sum = O::tree(sum);
    if (threadIdx.x == 0) O::store(rr, chunk, sum);
    __syncthreads();
    dot = O::tree(dot);
    if (threadIdx.x == 0) O::store(rho, chunk, dot);
}

// bgs_direction's element: r at the first iteration, else r + beta ((-omega) v + p).
template <class O>
__device__ __forceinline__ typename O::V bgp_direction_of(int done, typename O::V beta,
                                                          typename O::V minus_omega,
                                                          typename O::V r, typename O::V v,
                                                          typename O::V p) {
    if (done == 0) return r;
    return O::add(r, O::mul(beta, O::add(O::mul(minus_omega, v), p)));
}

// bicg_x's element: x + alpha p, then + omega s unless the half step converged; x unchanged
// where omega is not finite.
template <class O>
__device__ __forceinline__ typename O::V bgp_x_of(typename O::V alpha, typename O::V om,
                                                  bool half, bool om_ok, typename O::V p,
                                                  typename O::V s, typename O::V x) {
    const typename O::V xi = O::add(O::mul(alpha, p), x);
    if (half) return xi;
    return om_ok ? O::add(O::mul(om, s), xi) : x;
}

// p <- r + beta (p - omega v), p <- r at the first iteration (bgs_direction's bits), over the
// elements first, first + stride, ...: shared with bicgstab_ilu_block.cu.
template <class O>
__device__ __forceinline__ void bgp_direction(long long first, long long stride, long long n,
                                              int done, typename O::V beta, typename O::V omega,
                                              const typename O::T* __restrict__ r,
                                              const typename O::T* __restrict__ v,
                                              typename O::T* __restrict__ p) {
    const typename O::V minus_omega = O::neg(omega);
    for (long long i = first; i < n; i += stride) {
        const typename O::V ri = O::load_cg(r, i);
        if (done == 0) {
            O::store(p, i, ri);
            continue;
        }
        const typename O::V vi = O::load_cg(v, i), pi = O::load_cg(p, i);
        O::store(p, i, bgp_direction_of<O>(done, beta, minus_omega, ri, vi, pi));
    }
}

// x <- x + alpha p (+ omega s unless the half step converged) (bicg_x's bits; p and s stored,
// or doubles read widened as bicg_x_wide's), over the elements first, first + stride, ...
template <class O, typename HT>
__device__ __forceinline__ void bgp_x_update(long long first, long long stride, long long n,
                                             typename O::V alpha, typename O::V om, bool half,
                                             bool om_ok, const HT* __restrict__ p,
                                             const HT* __restrict__ s,
                                             typename O::T* __restrict__ x) {
    for (long long i = first; i < n; i += stride) {
        if (!half && !om_ok) continue;  // x unchanged
        const typename O::V pi = persist_x<O>(p, i), si = half ? O::of(0.0) : persist_x<O>(s, i);
        O::store(x, i, bgp_x_of<O>(alpha, om, half, om_ok, pi, si, O::load_cg(x, i)));
    }
}

// Thread 0's decisions of an iteration, shared with bicgstab_ilu_block.cu: each writes the
// state and records where `write` (one block of a grid) and hands the block what it decided in
// `scalar` and `flag` (shared memory; read after a __syncthreads).

// alpha from <r~, v> (bgs_alpha_of's test), or the stop: scalar[0], flag[0].
template <class O>
__device__ __forceinline__ void bgp_alpha(bool write, int k, typename O::V rv, typename O::V rho,
                                          bicg_state<typename O::T>* st,
                                          bicg_record<typename O::T>* rec, int cap,
                                          typename O::T* scalar, int* flag) {
    const bool ok = O::finite(rv) && !O::is_zero(rv);
    const typename O::V a = ok ? O::div(rho, rv) : O::of(0.0);
    if (write) {
        O::store(&rec[(k - 1) % cap].rv, 0, rv);
        O::store(&st->rv, 0, rv);
        O::store(&st->alpha, 0, a);
        O::store(&st->accepted, 0, O::of(ok ? 1.0 : 0.0));
        if (!ok) st->frozen = k;
    }
    O::store(scalar, 0, a);
    flag[0] = ok;
}

// omega and the half-step flag (bicg_decide's: no finiteness check in the half-step test, the
// close's has one): omega in scalar[1], <s, s> in scalar[2], the flags in flag[1] and flag[2].
template <class O>
__device__ __forceinline__ void bgp_omega(bool write, typename O::V ss, typename O::V tt,
                                          typename O::V ts, double denominator, double tol,
                                          bicg_state<typename O::T>* st, typename O::T* scalar,
                                          int* flag) {
    const bool half = __ddiv_rn(O::norm(ss), denominator) <= tol;
    const typename O::V om = O::div(ts, tt);
    const bool om_ok = O::finite(om);
    if (write) {
        O::store(&st->ss, 0, ss);
        O::store(&st->tt, 0, tt);
        O::store(&st->ts, 0, ts);
        O::store(&st->half, 0, O::of(half ? 1.0 : 0.0));
        O::store(&st->omega, 0, om);
        O::store(&st->omega_ok, 0, O::of(om_ok ? 1.0 : 0.0));
    }
    O::store(scalar, 1, om);
    O::store(scalar, 2, ss);
    flag[1] = half;
    flag[2] = om_ok;
}

// The stop at the half step, or at an omega that is not finite (bgs_close's first test), by
// the thread that writes the state.
template <class O>
__device__ __forceinline__ void bgp_half_stop(int k, typename O::V ss, typename O::V om,
                                              double denominator, double tol,
                                              bicg_state<typename O::T>* st,
                                              bicg_record<typename O::T>* rec, int cap) {
    const bool half_stop = threshold_reached(O::norm(ss), denominator, tol);
    O::store(&rec[(k - 1) % cap].ss, 0, ss);
    O::store(&rec[(k - 1) % cap].omega, 0, om);
    st->done = half_stop ? k : k - 1;
    freeze_at<O>(st, k);
}

// The close (bgs_close's tests and beta): the next rho in scalar[3], in flag[3] the iteration
// that stops the solve (0: none).
template <class O>
__device__ __forceinline__ void bgp_close(bool write, int k, typename O::V ss, typename O::V om,
                                          typename O::V rr, typename O::V rho_next,
                                          typename O::V rho, typename O::V alpha,
                                          double denominator, double tol,
                                          bicg_state<typename O::T>* st,
                                          bicg_record<typename O::T>* rec, int cap,
                                          typename O::T* scalar, int* flag) {
    const bool stop = threshold_reached(O::norm(rr), denominator, tol) || O::is_zero(om);
    const bool rho_stop = !stop && rho_stops<O>(rho_next);
    if (write) {
        bicg_record<typename O::T>* record = &rec[(k - 1) % cap];
        O::store(&record->ss, 0, ss);
        O::store(&record->omega, 0, om);
        O::store(&record->rr, 0, rr);
        O::store(&st->rr, 0, rr);
        O::store(&st->rho_next, 0, rho_next);
        st->done = k;
        if (stop) {
            freeze_at<O>(st, k);
        } else {
            O::store(&st->beta, 0, O::mul(O::div(rho_next, rho), O::div(alpha, om)));
            O::store(&st->rho_prev, 0, rho);
            O::store(&st->rho, 0, rho_next);
            O::store(&rec[k % cap].rho, 0, rho_next);
            if (rho_stop) freeze_at<O>(st, k + 1);
        }
    }
    O::store(scalar, 3, rho_next);
    flag[3] = stop ? k : (rho_stop ? k + 1 : 0);
}

template <class O>
__device__ __forceinline__ void bgp_run(
    int iterations, int n, int nt, const int* __restrict__ row_ptr,
    const int* __restrict__ col_idx, const double* __restrict__ val,
    bicg_state<typename O::T>* st, bicg_record<typename O::T>* rec, int cap,
    typename O::T* __restrict__ p, typename O::T* __restrict__ v, typename O::T* __restrict__ r,
    const typename O::T* __restrict__ r_tilde, typename O::T* __restrict__ s,
    typename O::T* __restrict__ t, typename O::T* __restrict__ x, typename O::T* tiles_rv,
    typename O::T* tiles_tt, typename O::T* tiles_ts, typename O::T* ss_chunks,
    typename O::T* rr_chunks, typename O::T* rho_chunks, double denominator, double tol,
    unsigned long long* barrier) {
    typedef typename O::V V;
    typedef typename O::T T;
    // this iteration's scalars, decided by thread 0 and handed to the block
    __shared__ T shared_scalar[4];
    __shared__ int shared_flag[4];
    const bool writer = blockIdx.x == 0 && threadIdx.x == 0;
    V rho = O::load(&st->rho, 0), beta = O::load(&st->beta, 0), omega = O::load(&st->omega, 0);
    int done = st->done, frozen = st->frozen;
    const int tile_count = (n + TILE_ROWS - 1) / TILE_ROWS;
    const int chunk_count = (n + DOT_CHUNK - 1) / DOT_CHUNK;
    const long long first = (long long)blockIdx.x * DOT_THREADS + threadIdx.x;
    const long long stride = (long long)gridDim.x * DOT_THREADS;
    grid_sync sync = grid_sync_start(barrier);
    const bool dd_reach =
        tile_count >= BGP_REGISTERS_DD_MIN_TILES && tile_count <= BGP_REGISTERS_DD_MAX_TILES;
    const bool owned = (sizeof(T) == 8 || dd_reach) && gridDim.x == tile_count && chunk_count <= 32;
    const long long own = first;  // the owned row, where owned
    const bool mine = owned && own < n;
    V p_own = O::of(0.0), v_own = O::of(0.0), r_own = O::of(0.0), rt_own = O::of(0.0);
    V s_own = O::of(0.0), t_own = O::of(0.0), x_own = O::of(0.0);
    if (mine) {
        p_own = O::load_cg(p, own);
        v_own = O::load_cg(v, own);
        r_own = O::load_cg(r, own);
        rt_own = O::load_cg(r_tilde, own);
        s_own = O::load_cg(s, own);
        t_own = O::load_cg(t, own);
        x_own = O::load_cg(x, own);
    }
    PHASES_BEGIN
    for (int it = 0; it < iterations && !frozen; it++) {
        const int k = done + 1;
        PHASE_ITERATION
        // p <- r + beta (p - omega v), p <- r first (bgs_direction)
        if (mine) {
            p_own = bgp_direction_of<O>(done, beta, O::neg(omega), r_own, v_own, p_own);
            O::store(p, own, p_own);
        }
        if (!owned) bgp_direction<O>(first, stride, n, done, beta, omega, r, v, p);
        PHASE(0)
        grid_barrier(sync);
        PHASE(1)
        // v <- A p with <r~, v>'s tile partials
        if (owned) {
            v_own = persist_spmv_rows<O>(blockIdx.x, n, nt, row_ptr, col_idx, val, p, v);
            const V sum = O::tree(mine ? O::mul(rt_own, v_own) : O::of(0.0));
            if (threadIdx.x == 0) O::store(tiles_rv, blockIdx.x, sum);
        }
        for (int tile = blockIdx.x; !owned && tile < tile_count; tile += gridDim.x) {
            persist_spmv_tile<O, 1>(tile, n, nt, row_ptr, col_idx, val, p, r_tilde, v, tiles_rv,
                                    nullptr);
        }
        PHASE(2)
        grid_barrier(sync);
        PHASE(3)
        // alpha (bgs_alpha_tiles)
        const V rv = tiles_final_emulated<O>(tile_count, tiles_rv);
        if (threadIdx.x == 0) {
            bgp_alpha<O>(writer, k, rv, rho, st, rec, cap, shared_scalar, shared_flag);
        }
        __syncthreads();
        const V alpha = O::load(shared_scalar, 0);
        if (!shared_flag[0]) break;  // every block: the same <r~, v>
        PHASE(4)
        // s <- r - alpha v with <s, s>'s chunk partials (bicg_s)
        const V minus_alpha = O::neg(alpha);
        if (mine) {  // <s, s>'s terms into v, which no block reads until the launch ends
            s_own = axpy_of<O>(minus_alpha, v_own, r_own);
            O::store(s, own, s_own);
            O::store(v, own, O::mul(s_own, s_own));
        }
        for (int c = blockIdx.x; !owned && c < chunk_count; c += gridDim.x) {
            const V sum = bgp_s_chunk<O>(c, n, minus_alpha, v, r, s);
            if (threadIdx.x == 0) O::store(ss_chunks, c, sum);
        }
        PHASE(5)
        grid_barrier(sync);
        PHASE(6)
        // t <- A s with <t, t>'s and <t, s>'s tile partials
        if (owned) {
            t_own = persist_spmv_rows<O>(blockIdx.x, n, nt, row_ptr, col_idx, val, s, t);
            const V tt = O::tree(mine ? O::mul(t_own, t_own) : O::of(0.0));
            if (threadIdx.x == 0) O::store(tiles_tt, blockIdx.x, tt);
            __syncthreads();
            const V ts = O::tree(mine ? O::mul(t_own, s_own) : O::of(0.0));
            if (threadIdx.x == 0) O::store(tiles_ts, blockIdx.x, ts);
        }
        for (int tile = blockIdx.x; !owned && tile < tile_count; tile += gridDim.x) {
            persist_spmv_tile<O, 2>(tile, n, nt, row_ptr, col_idx, val, s, s, t, tiles_tt,
                                    tiles_ts);
        }
        PHASE(7)
        grid_barrier(sync);
        PHASE(8)
        // <s, s> (dot_final's order), <t, t>, <t, s>, omega and the half-step flag
        // (bgs_omega_tiles; its test has no finiteness check, the close's has)
        const V ss = owned ? persist_chunked_sum<O, BGP_CHUNK_BATCH_DD>(n, v)
                           : O::chunks_final_fresh(chunk_count, ss_chunks);
        __syncthreads();
        const V tt = tiles_final_emulated<O>(tile_count, tiles_tt);
        const V ts = tiles_final_emulated<O>(tile_count, tiles_ts);
        if (threadIdx.x == 0) {
            bgp_omega<O>(writer, ss, tt, ts, denominator, tol, st, shared_scalar, shared_flag);
        }
        __syncthreads();
        const V om = O::load(shared_scalar, 1);
        const V ss_all = O::load(shared_scalar, 2);
        const bool half = shared_flag[1], om_ok = shared_flag[2];
        PHASE(9)
        // x <- x + alpha p (+ omega s) (bicg_x)
        if (mine) {
            x_own = bgp_x_of<O>(alpha, om, half, om_ok, p_own, s_own, x_own);
            // r <- s - omega t (bicg_r); <r, r>'s terms into t, <r~, r>'s into s: no block
            // reads either until the launch ends
            if (!half && om_ok) {
                r_own = axpy_of<O>(O::neg(om), t_own, s_own);
                O::store(t, own, O::mul(r_own, r_own));
                O::store(s, own, O::mul(rt_own, r_own));
            }
        }
        if (!owned) bgp_x_update<O>(first, stride, n, alpha, om, half, om_ok, p, s, x);
        // r <- s - omega t with <r, r>'s and the next rho's chunk partials (bicg_r)
        if (!owned && !half && om_ok) {
            const V minus_om = O::neg(om);
            for (int c = blockIdx.x; c < chunk_count; c += gridDim.x) {
                bgp_r_chunk<O>(c, n, minus_om, t, s, r_tilde, r, rr_chunks, rho_chunks);
            }
        }
        PHASE(10)
        grid_barrier(sync);
        PHASE(11)
        // the stopping tests, beta, the next rho (bgs_close)
        if (threshold_reached(O::norm(ss_all), denominator, tol) || !om_ok) {
            if (writer) bgp_half_stop<O>(k, ss_all, om, denominator, tol, st, rec, cap);
            break;  // every block: the same <s, s> and omega
        }
        const V rr = owned ? persist_chunked_sum<O, BGP_CHUNK_BATCH_DD>(n, t)
                           : O::chunks_final_fresh(chunk_count, rr_chunks);
        __syncthreads();
        const V rho_next = owned ? persist_chunked_sum<O, BGP_CHUNK_BATCH_DD>(n, s)
                                 : O::chunks_final_fresh(chunk_count, rho_chunks);
        if (threadIdx.x == 0) {
            bgp_close<O>(writer, k, ss_all, om, rr, rho_next, rho, alpha, denominator, tol, st,
                         rec, cap, shared_scalar, shared_flag);
        }
        __syncthreads();
        const V next_rho = O::load(shared_scalar, 3);
        beta = O::mul(O::div(next_rho, rho), O::div(alpha, om));
        rho = next_rho;
        omega = om;
        frozen = shared_flag[3];
        done = k;
        __syncthreads();  // shared_scalar is written again next iteration
        PHASE(12)
    }
    // The vectors as the step kernels leave them, over the terms stored in v, s and t: after
    // every block has summed those (every block leaves the loop at the same point).
    if (owned) grid_barrier(sync);
    if (mine) {
        O::store(p, own, p_own);
        O::store(v, own, v_own);
        O::store(r, own, r_own);
        O::store(s, own, s_own);
        O::store(t, own, t_own);
        O::store(x, own, x_own);
    }
    PHASES_END(sizeof(T) == 8 ? "bicgstab-f64" : "bicgstab-dd")
}

#define BICGSTAB_PERSISTENT(P, O)                                                               \
    extern "C" __global__ void __launch_bounds__(DOT_THREADS) bgp_run_##P(                      \
        int iterations, int n, int nt, const int* __restrict__ row_ptr,                         \
        const int* __restrict__ col_idx, const double* __restrict__ val, bicg_state<O::T>* st,  \
        bicg_record<O::T>* rec, int cap, O::T* p, O::T* v, O::T* r, const O::T* r_tilde,         \
        O::T* s, O::T* t, O::T* x, O::T* tiles_rv, O::T* tiles_tt, O::T* tiles_ts,              \
        O::T* ss_chunks, O::T* rr_chunks, O::T* rho_chunks, double denominator, double tol,      \
        unsigned long long* barrier) {                                                          \
        bgp_run<O>(iterations, n, nt, row_ptr, col_idx, val, st, rec, cap, p, v, r, r_tilde, s,   \
                   t, x, tiles_rv, tiles_tt, tiles_ts, ss_chunks, rr_chunks, rho_chunks,         \
                   denominator, tol, barrier);                                                  \
    }

BICGSTAB_PERSISTENT(f64, f64_ops)
BICGSTAB_PERSISTENT(dd, dd_ops)
