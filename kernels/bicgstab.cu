
// BiCGStab's step with its scalars kept on the device (Backend::bicgstab_half/_finish). The block
// holds, as T: [0] <r~, v>, [1] alpha, [2] accepted, [3] <s, s>, [4] half-step converged,
// [5] <t, t>, [6] <t, s>, [7] omega, [8] omega finite, [9] <r, r>, [10] next rho. Flags are
// 1 or 0 in the high word. Without a preconditioner <r~, v>, <t, t> and <t, s> are in the tiled
// order, summed beside the SpMVs (spmv_dot_{p}_*, spmv_dot2_{p}_*, spmv_csr.cu) or by
// dot_tile_{p}_partial; with one (p^ and s^ in double), and for the other reductions, in the dot
// products' layout (dot_{p}_final). Backend::bicgstab_half says why.
// bicg_alpha_{p}(int m, const T* partial, S rho, T* block)                     one block
// bicg_alpha_tiles_{p}(int m, const T* partial, S rho, T* block)
//   one block of TILE_FINAL_THREADS: <r~, v> from its m tile partials, alpha
// bicg_s_{p}(long long n, const T* block, const T* v, const T* r, T* s, T* partial)
// bicg_tt_ts_{p}(long long n, const T* t, const T* s, T* partial_tt, T* partial_ts)
// bicg_decide_{p}(T* block, double denominator, double tol)                     one thread
// bicg_x_{p}(long long n, const T* block, const T* p_hat, const T* s_hat, T* x)
// bicg_x_wide_dd(long long n, const double2* block, const double* p_hat, const double* s_hat,
//                double2* x): p_hat and s_hat (preconditioned, kept in double) read widened
// bicg_r_{p}(long long n, const T* block, const T* t, const T* s, const T* r_tilde, T* r,
//            T* partial_rr, T* partial_rho)

extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)
    bicg_alpha_tiles_f64(int m, const double* __restrict__ partial, double rho, double* block) {
    alpha_from_tiles_f64<false>(m, partial, rho, block);
}

extern "C" __global__ void bicg_alpha_f64(int m, const double* __restrict__ partial, double rho, double* block) {
    __shared__ double shared[DOT_THREADS];
    double s = 0.0;
    for (int i = threadIdx.x; i < m; i += DOT_THREADS) s = __dadd_rn(s, partial[i]);
    s = tree_reduce_f64(s, shared);
    if (threadIdx.x == 0) {
        const int ok = isfinite(s) && (s != 0.0);
        block[0] = s;
        block[1] = ok ? __ddiv_rn(rho, s) : 0.0;
        block[2] = (ok ? 1.0 : 0.0);
    }
}

extern "C" __global__ void bicg_s_f64(long long n, const double* __restrict__ block, const double* __restrict__ v,
                                    const double* __restrict__ r, double* __restrict__ s_out, double* partial) {
    __shared__ double shared[DOT_THREADS];
    if (!(block[2] != 0.0)) return;
    const double minus_alpha = (-block[1]);
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    double s = 0.0;
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const double z = __dadd_rn(__dmul_rn(minus_alpha, v[i]), r[i]);
            s_out[i] = z;
            s = __dadd_rn(s, __dmul_rn(z, z));
        }
    }
    s = tree_reduce_f64(s, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

extern "C" __global__ void bicg_tt_ts_f64(long long n, const double* __restrict__ t, const double* __restrict__ s_in,
                                        double* partial_tt, double* partial_ts) {
    __shared__ double shared[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    double s = 0.0;
    double u = 0.0;
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const double ti = t[i];
            s = __dadd_rn(s, __dmul_rn(ti, ti));
            u = __dadd_rn(u, __dmul_rn(ti, s_in[i]));
        }
    }
    s = tree_reduce_f64(s, shared);
    if (threadIdx.x == 0) partial_tt[blockIdx.x] = s;
    __syncthreads();
    u = tree_reduce_f64(u, shared);
    if (threadIdx.x == 0) partial_ts[blockIdx.x] = u;
}

extern "C" __global__ void bicg_decide_f64(double* block, double denominator, double tol) {
    if (threadIdx.x != 0 || blockIdx.x != 0 || !(block[2] != 0.0)) return;
    // As the host's tracker: ||s|| = sqrt(<s, s>), rounded to double, over the denominator.
    const int half = __ddiv_rn(__dsqrt_rn(block[3]), denominator) <= tol;
    const double omega = __ddiv_rn(block[6], block[5]);
    block[4] = (half ? 1.0 : 0.0);
    block[7] = omega;
    block[8] = (isfinite(omega) ? 1.0 : 0.0);
}

extern "C" __global__ void bicg_x_f64(long long n, const double* __restrict__ block, const double* __restrict__ p_hat,
                                    const double* __restrict__ s_hat, double* __restrict__ x) {
    ELEMENT_INDEX
    if (!(block[2] != 0.0)) return;
    const double t = __dadd_rn(__dmul_rn(block[1], p_hat[i]), x[i]);
    if ((block[4] != 0.0)) {
        x[i] = t;
    } else if ((block[8] != 0.0)) {
        x[i] = __dadd_rn(__dmul_rn(block[7], s_hat[i]), t);
    }
}

extern "C" __global__ void bicg_r_f64(long long n, const double* __restrict__ block, const double* __restrict__ t,
                                    const double* __restrict__ s_in, const double* __restrict__ r_tilde,
                                    double* __restrict__ r, double* partial_rr, double* partial_rho) {
    __shared__ double shared[DOT_THREADS];
    if (!(block[2] != 0.0) || (block[4] != 0.0) || !(block[8] != 0.0)) return;
    const double minus_omega = (-block[7]);
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    double s = 0.0;
    double u = 0.0;
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const double z = __dadd_rn(__dmul_rn(minus_omega, t[i]), s_in[i]);
            r[i] = z;
            s = __dadd_rn(s, __dmul_rn(z, z));
            u = __dadd_rn(u, __dmul_rn(r_tilde[i], z));
        }
    }
    s = tree_reduce_f64(s, shared);
    if (threadIdx.x == 0) partial_rr[blockIdx.x] = s;
    __syncthreads();
    u = tree_reduce_f64(u, shared);
    if (threadIdx.x == 0) partial_rho[blockIdx.x] = u;
}

extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)
    bicg_alpha_tiles_dd(int m, const double2* __restrict__ partial, double2 rho, double2* block) {
    alpha_from_tiles_dd<false>(m, partial, rho, block);
}

extern "C" __global__ void bicg_alpha_dd(int m, const double2* __restrict__ partial, double2 rho, double2* block) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    dd_t s = dd_from_f64(0.0);
    for (int i = threadIdx.x; i < m; i += DOT_THREADS) s = dd_add(s, dd_load(partial, i));
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) {
        const int ok = (isfinite(s.hi) && isfinite(s.lo)) && (s.hi != 0.0 || s.lo != 0.0);
        dd_store(block, 0, s);
        dd_store(block, 1, ok ? dd_div(dd_of(rho), s) : dd_from_f64(0.0));
        dd_store(block, 2, dd_from_f64(ok ? 1.0 : 0.0));
    }
}

extern "C" __global__ void bicg_s_dd(long long n, const double2* __restrict__ block, const double2* __restrict__ v,
                                    const double2* __restrict__ r, double2* __restrict__ s_out, double2* partial) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    if (!(block[2].x != 0.0)) return;
    const dd_t minus_alpha = dd_neg(dd_load(block, 1));
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    dd_t s = dd_from_f64(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const dd_t z = dd_add(dd_mul(minus_alpha, dd_load(v, i)), dd_load(r, i));
            dd_store(s_out, i, z);
            s = dd_add(s, dd_mul(z, z));
        }
    }
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial, blockIdx.x, s);
}

extern "C" __global__ void bicg_tt_ts_dd(long long n, const double2* __restrict__ t, const double2* __restrict__ s_in,
                                        double2* partial_tt, double2* partial_ts) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    dd_t s = dd_from_f64(0.0);
    dd_t u = dd_from_f64(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const dd_t ti = dd_load(t, i);
            s = dd_add(s, dd_mul(ti, ti));
            u = dd_add(u, dd_mul(ti, dd_load(s_in, i)));
        }
    }
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial_tt, blockIdx.x, s);
    __syncthreads();
    u = tree_reduce_dd(u, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial_ts, blockIdx.x, u);
}

extern "C" __global__ void bicg_decide_dd(double2* block, double denominator, double tol) {
    if (threadIdx.x != 0 || blockIdx.x != 0 || !(block[2].x != 0.0)) return;
    // As the host's tracker: ||s|| = sqrt(<s, s>), rounded to double, over the denominator.
    const int half = __ddiv_rn(dd_to_f64(dd_sqrt(dd_load(block, 3))), denominator) <= tol;
    const dd_t omega = dd_div(dd_load(block, 6), dd_load(block, 5));
    dd_store(block, 4, dd_from_f64(half ? 1.0 : 0.0));
    dd_store(block, 7, omega);
    dd_store(block, 8, dd_from_f64((isfinite(omega.hi) && isfinite(omega.lo)) ? 1.0 : 0.0));
}

// p^[i] and s^[i] as double-doubles: stored, or doubles widened exactly.
__device__ __forceinline__ dd_t bicg_hat(const double2* __restrict__ v, long long i) {
    return dd_load(v, i);
}
__device__ __forceinline__ dd_t bicg_hat(const double* __restrict__ v, long long i) {
    return dd_from_f64(v[i]);
}

template <typename H>
__device__ __forceinline__ void bicg_x_dd_body(long long n, const double2* __restrict__ block,
                                               const H* __restrict__ p_hat,
                                               const H* __restrict__ s_hat,
                                               double2* __restrict__ x) {
    ELEMENT_INDEX
    if (!(block[2].x != 0.0)) return;
    const dd_t t = dd_add(dd_mul(dd_load(block, 1), bicg_hat(p_hat, i)), dd_load(x, i));
    if ((block[4].x != 0.0)) {
        dd_store(x, i, t);
    } else if ((block[8].x != 0.0)) {
        dd_store(x, i, dd_add(dd_mul(dd_load(block, 7), bicg_hat(s_hat, i)), t));
    }
}

extern "C" __global__ void bicg_x_dd(long long n, const double2* block, const double2* p_hat,
                                    const double2* s_hat, double2* x) {
    bicg_x_dd_body(n, block, p_hat, s_hat, x);
}

extern "C" __global__ void bicg_x_wide_dd(long long n, const double2* block, const double* p_hat,
                                         const double* s_hat, double2* x) {
    bicg_x_dd_body(n, block, p_hat, s_hat, x);
}

extern "C" __global__ void bicg_r_dd(long long n, const double2* __restrict__ block, const double2* __restrict__ t,
                                    const double2* __restrict__ s_in, const double2* __restrict__ r_tilde,
                                    double2* __restrict__ r, double2* partial_rr, double2* partial_rho) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    if (!(block[2].x != 0.0) || (block[4].x != 0.0) || !(block[8].x != 0.0)) return;
    const dd_t minus_omega = dd_neg(dd_load(block, 7));
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    dd_t s = dd_from_f64(0.0);
    dd_t u = dd_from_f64(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const dd_t z = dd_add(dd_mul(minus_omega, dd_load(t, i)), dd_load(s_in, i));
            dd_store(r, i, z);
            s = dd_add(s, dd_mul(z, z));
            u = dd_add(u, dd_mul(dd_load(r_tilde, i), z));
        }
    }
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial_rr, blockIdx.x, s);
    __syncthreads();
    u = tree_reduce_dd(u, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial_rho, blockIdx.x, u);
}

// ------------------------------------------------------------------------------------------
// BiCGStab's steps with the scalars on the device (src/backend/cuda/bicgstab.rs): the block
// above is the start of bicg_state<T>, so bicg_s, bicg_decide, bicg_x and bicg_r read it as
// they are; the kernels below add what the host did between iterations (beta, the direction
// update, rho), the records the host reads many iterations at a time, and the tests that stop
// the solve, twins of those in src/solver/bicgstab/steps.rs. Once s->frozen is set every kernel
// here does nothing, and block[2] (accepted) is 0, so neither do bicg_s, bicg_decide, bicg_x and
// bicg_r.
// bgs_direction_{p}(long long n, const bicg_state* s, const T* r, const T* v, T* p)
//   first iteration p <- r; then p <- r + beta (p - omega v) (bicgstab_direction_{p}'s bits)
// bgs_alpha_tiles_{p}(int m, const T* tiles, bicg_state* s, bicg_record* rec, int cap)
//   one block of TILE_FINAL_THREADS: <r~, v> from its tile partials; alpha, or the stop
// bgs_alpha_{p}(int m, const T* partial, bicg_state* s, bicg_record* rec, int cap)
//   the same from chunk partials (one block of DOT_THREADS; preconditioned: p^ in double)
// bgs_omega_tiles_{p}(int m, const T* tt_tiles, const T* ts_tiles, bicg_state* s,
//                     double denominator, double tol)    one block of TILE_FINAL_THREADS
//   <t, t>, <t, s> from their tile partials, then omega and the half-step flag (bicg_decide's)
// bgs_close_{p}(int m, const T* rr_partial, const T* rho_partial, bicg_state* s,
//               bicg_record* rec, int cap, double denominator, double tol)     one block
//   the half-step test, omega's, <r, r> and the next rho; the stopping tests; beta

// bicg_state<T> and bicg_record<T>: kernels/common/states.cuh (shared with
// bicgstab_persistent.cu).

template <class O>
__device__ __forceinline__ void bgs_alpha_of(typename O::V rv, bicg_state<typename O::T>* s,
                                             bicg_record<typename O::T>* rec, int cap) {
    const int k = s->done + 1;
    O::store(&rec[(k - 1) % cap].rv, 0, rv);
    // BiCGStab's alpha_from_tiles: <r~, v> finite and non-zero
    const bool ok = O::finite(rv) && !O::is_zero(rv);
    O::store(&s->rv, 0, rv);
    O::store(&s->alpha, 0, ok ? O::div(O::load(&s->rho, 0), rv) : O::of(0.0));
    O::store(&s->accepted, 0, O::of(ok ? 1.0 : 0.0));
    if (!ok) s->frozen = k;
}

template <class O>
__device__ __forceinline__ void bgs_close(int m, const typename O::T* __restrict__ rr_partial,
                                          const typename O::T* __restrict__ rho_partial,
                                          bicg_state<typename O::T>* s,
                                          bicg_record<typename O::T>* rec, int cap,
                                          double denominator, double tol) {
    typedef typename O::V V;
    if (s->frozen) return;
    const int k = s->done + 1;
    const V ss = O::load(&s->ss, 0);
    const V omega = O::load(&s->omega, 0);
    const bool half = threshold_reached(O::norm(ss), denominator, tol);
    const bool omega_ok = O::finite(omega);
    if (half || !omega_ok) {
        if (threadIdx.x != 0) return;
        O::store(&rec[(k - 1) % cap].ss, 0, ss);
        O::store(&rec[(k - 1) % cap].omega, 0, omega);
        s->done = half ? k : k - 1;
        freeze_at<O>(s, k);
        return;
    }
    const V rr = O::chunks_final(m, rr_partial);
    __syncthreads();
    const V rho_next = O::chunks_final(m, rho_partial);
    if (threadIdx.x != 0) return;
    bicg_record<typename O::T>* r = &rec[(k - 1) % cap];
    O::store(&r->ss, 0, ss);
    O::store(&r->omega, 0, omega);
    O::store(&r->rr, 0, rr);
    O::store(&s->rr, 0, rr);
    O::store(&s->rho_next, 0, rho_next);
    s->done = k;
    if (threshold_reached(O::norm(rr), denominator, tol) || O::is_zero(omega)) {
        freeze_at<O>(s, k);
        return;
    }
    // beta = (rho / rho_prev) (alpha / omega) of the next iteration, rho_prev the rho of this
    const V rho = O::load(&s->rho, 0);
    O::store(&s->beta, 0, O::mul(O::div(rho_next, rho), O::div(O::load(&s->alpha, 0), omega)));
    O::store(&s->rho_prev, 0, rho);
    O::store(&s->rho, 0, rho_next);
    O::store(&rec[k % cap].rho, 0, rho_next);
    if (rho_stops<O>(rho_next)) freeze_at<O>(s, k + 1);
}

// <t, t> and <t, s> from the tile partials of t = A s, then bicg_decide_{p}'s omega and
// half-step flag: one launch where there were three (bicgstab without a preconditioner).
template <class O>
__device__ __forceinline__ void bgs_omega(int m, const typename O::T* __restrict__ tt_tiles,
                                          const typename O::T* __restrict__ ts_tiles,
                                          bicg_state<typename O::T>* s, double denominator,
                                          double tol) {
    typedef typename O::V V;
    const V tt = O::tiles_final(m, tt_tiles);
    __syncthreads();
    const V ts = O::tiles_final(m, ts_tiles);
    if (threadIdx.x != 0) return;
    O::store(&s->tt, 0, tt);
    O::store(&s->ts, 0, ts);
    if (O::to_f64(O::load(&s->accepted, 0)) == 0.0) return;
    // As the host's tracker: ||s|| = sqrt(<s, s>), rounded to double, over the denominator.
    const bool half = __ddiv_rn(O::norm(O::load(&s->ss, 0)), denominator) <= tol;
    const V omega = O::div(ts, tt);
    O::store(&s->half, 0, O::of(half ? 1.0 : 0.0));
    O::store(&s->omega, 0, omega);
    O::store(&s->omega_ok, 0, O::of(O::finite(omega) ? 1.0 : 0.0));
}

#define BICGSTAB_STEPS(P, O)                                                                    \
    extern "C" __global__ void bgs_direction_##P(long long n, const bicg_state<O::T>* s,        \
                                                 const O::T* __restrict__ r,                    \
                                                 const O::T* __restrict__ v, O::T* p) {         \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                   \
        if (i >= n || s->frozen) return;                                                        \
        if (s->done == 0) {                                                                     \
            O::store(p, i, O::load(r, i));                                                      \
            return;                                                                             \
        }                                                                                       \
        const O::V minus_omega = O::neg(O::load(&s->omega, 0));                                 \
        const O::V t = O::add(O::mul(minus_omega, O::load(v, i)), O::load(p, i));               \
        O::store(p, i, O::add(O::load(r, i), O::mul(O::load(&s->beta, 0), t)));                 \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)                            \
        bgs_alpha_tiles_##P(int m, const O::T* tiles, bicg_state<O::T>* s,                      \
                            bicg_record<O::T>* rec, int cap) {                                  \
        if (s->frozen) return;                                                                  \
        const O::V rv = O::tiles_final(m, tiles);                                               \
        if (threadIdx.x == 0) bgs_alpha_of<O>(rv, s, rec, cap);                                 \
    }                                                                                           \
    extern "C" __global__ void bgs_alpha_##P(int m, const O::T* partial, bicg_state<O::T>* s,   \
                                             bicg_record<O::T>* rec, int cap) {                 \
        if (s->frozen) return;                                                                  \
        const O::V rv = O::chunks_final(m, partial);                                            \
        if (threadIdx.x == 0) bgs_alpha_of<O>(rv, s, rec, cap);                                 \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)                            \
        bgs_omega_tiles_##P(int m, const O::T* tt_tiles, const O::T* ts_tiles,                  \
                            bicg_state<O::T>* s, double denominator, double tol) {              \
        bgs_omega<O>(m, tt_tiles, ts_tiles, s, denominator, tol);                               \
    }                                                                                           \
    extern "C" __global__ void bgs_close_##P(int m, const O::T* rr_partial,                     \
                                             const O::T* rho_partial, bicg_state<O::T>* s,      \
                                             bicg_record<O::T>* rec, int cap,                   \
                                             double denominator, double tol) {                  \
        bgs_close<O>(m, rr_partial, rho_partial, s, rec, cap, denominator, tol);                \
    }

BICGSTAB_STEPS(f64, f64_ops)
BICGSTAB_STEPS(dd, dd_ops)
