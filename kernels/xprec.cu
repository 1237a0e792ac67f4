// The vector, reduction, SpMV and BiCGStab kernels of blas1.cu, spmv_csr.cu and bicgstab.cu for
// the precisions td and qd, written once as templates over an "Ops" type and instantiated with
// the suffixes _td and _qd. Each template is the dd kernel of the same name with dd_* replaced by
// the Ops routine, in the same order, so the CPU backend's generic code (src/backend/cpu) gives
// the same bits. Signatures are those of the f64/dd kernels with
//   td: T* = td_ptr (n doubles hi, n ints lo; by value), S = double2 (the Dd value, exact)
//   qd: T* = double* (4 doubles per element), S = qd_elem (Rust's #[repr(C)] Qd)
// except the partial results of reductions, which are buffers of the compute type (A* below).
//
// Two sets of arithmetic, as Precision and Precision::Acc on the CPU:
//   * the vector kernels compute in the accumulation type A (a_* routines: DD for td, qd for
//     qd) from the loaded values (a td load is exact in DD) and round once per stored element
//     (a td store packs; where a rounded value is also used again, as v in `r = v; <r, r>`, it
//     is rounded first with O::round, as the CPU's unfused axpy-then-dot reads the stored r);
//     reductions keep their lanes, tree and per-block partials in A;
//   * the scalars the solver keeps (alpha, rho, omega, <p, q>, ...) are P values, and the
//     scalar kernels (cg_alpha, bicg_alpha, bicg_decide) use P's own operations (add, div,
//     sqrt: for td, the DD routine then td_round), as the CPU's solver loops do.
// For qd, A is P and round is the identity, so both sets are qd's operations.

struct TdOps {
    typedef dd_t V;
    typedef td_ptr Vec;
    typedef double2 S;
    enum { W = 2, SLOTS = DOT_THREADS };
    static __device__ __forceinline__ V load(Vec v, long long i) { return td_load(v, i); }
    static __device__ __forceinline__ void store(Vec v, long long i, V a) { td_store(v, i, a); }
    static __device__ __forceinline__ Vec at(Vec v, long long i) {
        Vec r = {v.hi + i, v.lo + i};
        return r;
    }
    static __device__ __forceinline__ V of(S s) { return dd_of(s); }
    static __device__ __forceinline__ V zero() { return dd_from_f64(0.0); }
    static __device__ __forceinline__ V from_f64(double x) { return dd_from_f64(x); }
    static __device__ __forceinline__ V add(V a, V b) { return td_round(dd_add(a, b)); }
    static __device__ __forceinline__ V sub(V a, V b) { return td_round(dd_sub(a, b)); }
    static __device__ __forceinline__ V mul(V a, V b) { return td_round(dd_mul(a, b)); }
    static __device__ __forceinline__ V div(V a, V b) { return td_round(dd_div(a, b)); }
    static __device__ __forceinline__ V sqrt(V a) { return td_round(dd_sqrt(a)); }
    static __device__ __forceinline__ V neg(V a) { return dd_neg(a); }
    // The compute type: double-double, the stored values widened exactly.
    typedef dd_t A;
    typedef double2* AVec;
    static __device__ __forceinline__ A a_zero() { return dd_from_f64(0.0); }
    static __device__ __forceinline__ A a_from_f64(double x) { return dd_from_f64(x); }
    static __device__ __forceinline__ A a_add(A a, A b) { return dd_add(a, b); }
    static __device__ __forceinline__ A a_sub(A a, A b) { return dd_sub(a, b); }
    static __device__ __forceinline__ A a_mul(A a, A b) { return dd_mul(a, b); }
    static __device__ __forceinline__ A a_add_mul_f64(A s, double a, A x) {
        return dd_add(s, dd_mul_f64(x, a));
    }
    static __device__ __forceinline__ V round(A a) { return td_round(a); }
    static __device__ __forceinline__ A a_load(AVec v, long long i) { return dd_load(v, i); }
    static __device__ __forceinline__ void a_store(AVec v, long long i, A a) { dd_store(v, i, a); }
    static __device__ __forceinline__ double to_f64(V a) { return dd_to_f64(a); }
    static __device__ __forceinline__ bool is_finite(V a) { return isfinite(a.hi) && isfinite(a.lo); }
    static __device__ __forceinline__ bool nonzero(V a) { return a.hi != 0.0 || a.lo != 0.0; }
    static __device__ __forceinline__ bool flag(V a) { return a.hi != 0.0; }
    static __device__ __forceinline__ void put(double* sh, int t, V a) {
        sh[t] = a.hi;
        sh[DOT_THREADS + t] = a.lo;
    }
    static __device__ __forceinline__ V get(const double* sh, int t) {
        dd_t r = {sh[t], sh[DOT_THREADS + t]};
        return r;
    }
    static __device__ __forceinline__ V shfl_down(V a, int off, int width) {
        dd_t r = {__shfl_down_sync(0xffffffffu, a.hi, off, width),
                  __shfl_down_sync(0xffffffffu, a.lo, off, width)};
        return r;
    }
};

struct QdOps {
    typedef qd_t V;
    typedef double* Vec;
    typedef qd_elem S;
    enum { W = 4, SLOTS = DOT_THREADS };
    static __device__ __forceinline__ V load(Vec v, long long i) { return qd_load(v, i); }
    static __device__ __forceinline__ void store(Vec v, long long i, V a) { qd_store(v, i, a); }
    static __device__ __forceinline__ Vec at(Vec v, long long i) { return v + 4 * i; }
    static __device__ __forceinline__ V of(S s) { return qd_of(s); }
    static __device__ __forceinline__ V zero() { return qd_from_f64(0.0); }
    static __device__ __forceinline__ V from_f64(double x) { return qd_from_f64(x); }
    static __device__ __forceinline__ V add(V a, V b) { return qd_add(a, b); }
    static __device__ __forceinline__ V sub(V a, V b) { return qd_sub(a, b); }
    static __device__ __forceinline__ V mul(V a, V b) { return qd_mul(a, b); }
    static __device__ __forceinline__ V div(V a, V b) { return qd_div(a, b); }
    static __device__ __forceinline__ V sqrt(V a) { return qd_sqrt(a); }
    static __device__ __forceinline__ V neg(V a) { return qd_neg(a); }
    // The compute type is qd itself.
    typedef qd_t A;
    typedef double* AVec;
    static __device__ __forceinline__ A a_zero() { return qd_from_f64(0.0); }
    static __device__ __forceinline__ A a_from_f64(double x) { return qd_from_f64(x); }
    static __device__ __forceinline__ A a_add(A a, A b) { return qd_add(a, b); }
    static __device__ __forceinline__ A a_sub(A a, A b) { return qd_sub(a, b); }
    static __device__ __forceinline__ A a_mul(A a, A b) { return qd_mul(a, b); }
    static __device__ __forceinline__ A a_add_mul_f64(A s, double a, A x) {
        return qd_add(s, qd_mul_f64(x, a));
    }
    static __device__ __forceinline__ V round(A a) { return a; }
    static __device__ __forceinline__ A a_load(AVec v, long long i) { return qd_load(v, i); }
    static __device__ __forceinline__ void a_store(AVec v, long long i, A a) { qd_store(v, i, a); }
    static __device__ __forceinline__ double to_f64(V a) { return a.x0; }
    static __device__ __forceinline__ bool is_finite(V a) { return qd_is_finite(a); }
    static __device__ __forceinline__ bool nonzero(V a) { return qd_nonzero(a); }
    static __device__ __forceinline__ bool flag(V a) { return a.x0 != 0.0; }
    static __device__ __forceinline__ void put(double* sh, int t, V a) {
        sh[t] = a.x0;
        sh[DOT_THREADS + t] = a.x1;
        sh[2 * DOT_THREADS + t] = a.x2;
        sh[3 * DOT_THREADS + t] = a.x3;
    }
    static __device__ __forceinline__ V get(const double* sh, int t) {
        return qd_make(sh[t], sh[DOT_THREADS + t], sh[2 * DOT_THREADS + t], sh[3 * DOT_THREADS + t]);
    }
    static __device__ __forceinline__ V shfl_down(V a, int off, int width) {
        return qd_make(__shfl_down_sync(0xffffffffu, a.x0, off, width),
                       __shfl_down_sync(0xffffffffu, a.x1, off, width),
                       __shfl_down_sync(0xffffffffu, a.x2, off, width),
                       __shfl_down_sync(0xffffffffu, a.x3, off, width));
    }
};

// The halving tree within a warp (reduce.cuh's warp_tree_*), in A.
template <class O>
__device__ __forceinline__ typename O::A warp_tree_x(typename O::A s) {
    for (int off = 16; off > 0; off >>= 1) s = O::a_add(s, O::shfl_down(s, off, 32));
    return s;  // valid in lane 0
}

// The halving tree of common/reduce.cuh: shared memory down to a warp, then shuffles; in A.
// Where a block's values do not fit in 48 KiB (O::SLOTS, the values the shared buffer holds,
// is half the block: mp beyond 1,024 bits), each level's upper half is handed down through the
// buffer instead: the same sums, two barriers a level.
template <class O>
__device__ __forceinline__ typename O::A tree_reduce_x(typename O::A s, double* shared) {
    const int t = threadIdx.x;
    if (O::SLOTS < DOT_THREADS) {
        for (int off = DOT_THREADS / 2; off >= 32; off >>= 1) {
            if (t >= off && t < 2 * off) O::put(shared, t - off, s);
            __syncthreads();
            if (t < off) s = O::a_add(s, O::get(shared, t));
            __syncthreads();
        }
        if (t < 32) s = warp_tree_x<O>(s);
        return s;
    }
    O::put(shared, t, s);
    __syncthreads();
    for (int off = DOT_THREADS / 2; off >= 32; off >>= 1) {
        if (t < off) O::put(shared, t, O::a_add(O::get(shared, t), O::get(shared, t + off)));
        __syncthreads();
    }
    if (t < 32) s = warp_tree_x<O>(O::get(shared, t));
    return s;  // valid in thread 0
}

#define X_SHARED(O) __shared__ double shared[O::W * O::SLOTS]
#define X_BASE const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x
#define X_FOR_CHUNK                                   \
    for (int j = 0; j < DOT_PER_THREAD; j++) {        \
        const long long i = base + (long long)j * DOT_THREADS; \
        if (i < n)

// An input vector read as the compute type: P's own (`Own`), or doubles widened exactly
// (`Wide`: CG's preconditioned residual, BiCGStab's p^ and s^, the *_wide_* kernels).
template <class O>
struct Own {
    typename O::Vec v;
    __device__ __forceinline__ typename O::A operator[](long long i) const { return O::load(v, i); }
};
template <class O>
struct Wide {
    const double* v;
    __device__ __forceinline__ typename O::A operator[](long long i) const {
        return O::a_from_f64(v[i]);
    }
};

template <class O, class Y>
__device__ __forceinline__ void dot_partial_x(long long n, typename O::Vec x, Y y,
                                              typename O::AVec partial) {
    X_SHARED(O);
    X_BASE;
    typename O::A s = O::a_zero();
    X_FOR_CHUNK s = O::a_add(s, O::a_mul(O::load(x, i), y[i]));
    }
    s = tree_reduce_x<O>(s, shared);
    if (threadIdx.x == 0) O::a_store(partial, blockIdx.x, s);
}

// The tiled order of CG's <p, q> (common/reduce.cuh): a tile's sum (the block's tree), and the
// final sum of the tile sums (one block of TILE_FINAL_THREADS), in A. Tile sums loaded 4 at a
// time in the final (qd's 4 words a value).
#define X_FINAL_BATCH 4
template <class O>
__device__ __forceinline__ typename O::A tile_final_x(int m, typename O::AVec partial,
                                                      double* shared) {
    typename O::A s = O::a_zero();
    for (int i0 = threadIdx.x; i0 < m; i0 += X_FINAL_BATCH * TILE_FINAL_THREADS) {
        typename O::A v[X_FINAL_BATCH];
#pragma unroll
        for (int u = 0; u < X_FINAL_BATCH; u++) {
            const int i = i0 + u * TILE_FINAL_THREADS;
            v[u] = i < m ? O::a_load(partial, i) : O::a_zero();
        }
#pragma unroll
        for (int u = 0; u < X_FINAL_BATCH; u++) {
            if (i0 + u * TILE_FINAL_THREADS < m) s = O::a_add(s, v[u]);
        }
    }
    s = warp_tree_x<O>(s);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) O::put(shared, warp, s);
    __syncthreads();
    if (warp == 0) s = warp_tree_x<O>(O::get(shared, lane));
    return s;  // valid in thread 0
}

template <class O>
__device__ __forceinline__ void dot_tile_partial_x(long long n, typename O::Vec x,
                                                   typename O::Vec y, typename O::AVec partial) {
    X_SHARED(O);
    const long long i = (long long)blockIdx.x * TILE_ROWS + threadIdx.x;
    const typename O::A prod = i < n ? O::a_mul(O::load(x, i), O::load(y, i)) : O::a_zero();
    const typename O::A s = tree_reduce_x<O>(prod, shared);
    if (threadIdx.x == 0) O::a_store(partial, blockIdx.x, s);
}

// The final stage's sum over m partials (strided lane sums, then the tree), in A; the caller
// rounds it to a P value (the reduction's result).
template <class O>
__device__ __forceinline__ typename O::A sum_partials_x(int m, typename O::AVec partial,
                                                        double* shared) {
    typename O::A s = O::a_zero();
    for (int i = threadIdx.x; i < m; i += DOT_THREADS) s = O::a_add(s, O::a_load(partial, i));
    return tree_reduce_x<O>(s, shared);
}

template <class O>
__device__ __forceinline__ void dot_final_x(int m, typename O::AVec partial,
                                            typename O::Vec out) {
    X_SHARED(O);
    const typename O::A s = sum_partials_x<O>(m, partial, shared);
    if (threadIdx.x == 0) O::store(out, 0, O::round(s));
}

template <class O>
__device__ __forceinline__ void axpy_x(long long n, typename O::S alpha, typename O::Vec x,
                                       typename O::Vec y) {
    ELEMENT_INDEX
    O::store(y, i, O::a_add(O::a_mul(O::of(alpha), O::load(x, i)), O::load(y, i)));
}

template <class O, class X>
__device__ __forceinline__ void xpay_x(long long n, X x, typename O::S beta, typename O::Vec y) {
    ELEMENT_INDEX
    O::store(y, i, O::a_add(x[i], O::a_mul(O::of(beta), O::load(y, i))));
}

template <class O>
__device__ __forceinline__ void axpyz_x(long long n, typename O::S alpha, typename O::Vec x,
                                        typename O::Vec y, typename O::Vec z) {
    ELEMENT_INDEX
    O::store(z, i, O::a_add(O::a_mul(O::of(alpha), O::load(x, i)), O::load(y, i)));
}

template <class O>
__device__ __forceinline__ void bicgstab_direction_x(long long n, typename O::Vec r,
                                                     typename O::S beta,
                                                     typename O::S minus_omega,
                                                     typename O::Vec v, typename O::Vec p) {
    ELEMENT_INDEX
    // fused: t stays in A, one rounding at the store (as the CPU's fused kernel)
    const typename O::A t =
        O::a_add(O::a_mul(O::of(minus_omega), O::load(v, i)), O::load(p, i));
    O::store(p, i, O::a_add(O::load(r, i), O::a_mul(O::of(beta), t)));
}

template <class O>
__device__ __forceinline__ void axpyz_norm_x(long long n, typename O::S alpha, typename O::Vec x,
                                             typename O::Vec y, typename O::Vec z,
                                             typename O::AVec partial) {
    X_SHARED(O);
    X_BASE;
    const typename O::A a = O::of(alpha);
    typename O::A s = O::a_zero();
    X_FOR_CHUNK {
        // the stored z (rounded), as `axpyz` then `dot(z, z)` reads it
        const typename O::V v = O::round(O::a_add(O::a_mul(a, O::load(x, i)), O::load(y, i)));
        O::store(z, i, v);
        s = O::a_add(s, O::a_mul(v, v));
    }
    }
    s = tree_reduce_x<O>(s, shared);
    if (threadIdx.x == 0) O::a_store(partial, blockIdx.x, s);
}

template <class O>
__device__ __forceinline__ void x_update_x(long long n, typename O::S alpha, typename O::Vec p,
                                           typename O::S omega, typename O::Vec s,
                                           typename O::Vec x) {
    ELEMENT_INDEX
    // two axpys: the first result rounded as if stored
    const typename O::V t =
        O::round(O::a_add(O::a_mul(O::of(alpha), O::load(p, i)), O::load(x, i)));
    O::store(x, i, O::a_add(O::a_mul(O::of(omega), O::load(s, i)), t));
}

// alpha = rho / s from the m tile partials of s (CG's <p, q>, BiCGStab's <r~, v>): [0] s,
// [1] alpha, [2] accepted: s finite and positive (CG) or finite and non-zero (BiCGStab).
template <class O, bool CG>
__device__ __forceinline__ void alpha_from_tiles_x(int m, typename O::AVec partial,
                                                   typename O::S rho, typename O::Vec scalars) {
    X_SHARED(O);
    const typename O::V s = O::round(tile_final_x<O>(m, partial, shared));
    if (threadIdx.x == 0) {
        const bool ok = O::is_finite(s) && (CG ? O::to_f64(s) > 0.0 : O::nonzero(s));
        O::store(scalars, 0, s);
        O::store(scalars, 1, ok ? O::div(O::of(rho), s) : O::zero());
        O::store(scalars, 2, O::from_f64(ok ? 1.0 : 0.0));
    }
}

template <class O>
__device__ __forceinline__ void cg_update_x(long long n, typename O::Vec scalars,
                                            typename O::Vec q, typename O::Vec r,
                                            typename O::AVec partial) {
    X_SHARED(O);
    if (!O::flag(O::load(scalars, 2))) return;  // rejected step (same for every thread)
    const typename O::V minus_alpha = O::neg(O::load(scalars, 1));
    X_BASE;
    typename O::A s = O::a_zero();
    X_FOR_CHUNK {
        const typename O::V v =
            O::round(O::a_add(O::a_mul(minus_alpha, O::load(q, i)), O::load(r, i)));
        O::store(r, i, v);
        s = O::a_add(s, O::a_mul(v, v));
    }
    }
    s = tree_reduce_x<O>(s, shared);
    if (threadIdx.x == 0) O::a_store(partial, blockIdx.x, s);
}

// x <- alpha p + x, then p <- z + beta p: axpy_x then xpay_x on each element.
template <class O, class Z>
__device__ __forceinline__ void cg_direction_x(long long n, typename O::S alpha, Z z,
                                               typename O::S beta, typename O::Vec p,
                                               typename O::Vec x) {
    ELEMENT_INDEX
    const typename O::V pi = O::load(p, i);
    O::store(x, i, O::a_add(O::a_mul(O::of(alpha), pi), O::load(x, i)));
    O::store(p, i, O::a_add(z[i], O::a_mul(O::of(beta), pi)));
}

template <class O>
__device__ __forceinline__ void bicg_alpha_x(int m, typename O::AVec partial, typename O::S rho,
                                             typename O::Vec block) {
    X_SHARED(O);
    const typename O::V s = O::round(sum_partials_x<O>(m, partial, shared));
    if (threadIdx.x == 0) {
        const bool ok = O::is_finite(s) && O::nonzero(s);
        O::store(block, 0, s);
        O::store(block, 1, ok ? O::div(O::of(rho), s) : O::zero());
        O::store(block, 2, O::from_f64(ok ? 1.0 : 0.0));
    }
}

template <class O>
__device__ __forceinline__ void bicg_s_x(long long n, typename O::Vec block, typename O::Vec v,
                                         typename O::Vec r, typename O::Vec s_out,
                                         typename O::AVec partial) {
    X_SHARED(O);
    if (!O::flag(O::load(block, 2))) return;
    const typename O::V minus_alpha = O::neg(O::load(block, 1));
    X_BASE;
    typename O::A s = O::a_zero();
    X_FOR_CHUNK {
        const typename O::V z =
            O::round(O::a_add(O::a_mul(minus_alpha, O::load(v, i)), O::load(r, i)));
        O::store(s_out, i, z);
        s = O::a_add(s, O::a_mul(z, z));
    }
    }
    s = tree_reduce_x<O>(s, shared);
    if (threadIdx.x == 0) O::a_store(partial, blockIdx.x, s);
}

template <class O>
__device__ __forceinline__ void bicg_tt_ts_x(long long n, typename O::Vec t, typename O::Vec s_in,
                                             typename O::AVec partial_tt,
                                             typename O::AVec partial_ts) {
    X_SHARED(O);
    X_BASE;
    typename O::A s = O::a_zero();
    typename O::A u = O::a_zero();
    X_FOR_CHUNK {
        const typename O::V ti = O::load(t, i);
        s = O::a_add(s, O::a_mul(ti, ti));
        u = O::a_add(u, O::a_mul(ti, O::load(s_in, i)));
    }
    }
    s = tree_reduce_x<O>(s, shared);
    if (threadIdx.x == 0) O::a_store(partial_tt, blockIdx.x, s);
    __syncthreads();
    u = tree_reduce_x<O>(u, shared);
    if (threadIdx.x == 0) O::a_store(partial_ts, blockIdx.x, u);
}

template <class O>
__device__ __forceinline__ void bicg_decide_x(typename O::Vec block, double denominator,
                                              double tol) {
    if (threadIdx.x != 0 || blockIdx.x != 0 || !O::flag(O::load(block, 2))) return;
    // As the host's tracker: ||s|| = sqrt(<s, s>), rounded to double, over the denominator.
    const bool half = __ddiv_rn(O::to_f64(O::sqrt(O::load(block, 3))), denominator) <= tol;
    const typename O::V omega = O::div(O::load(block, 6), O::load(block, 5));
    O::store(block, 4, O::from_f64(half ? 1.0 : 0.0));
    O::store(block, 7, omega);
    O::store(block, 8, O::from_f64(O::is_finite(omega) ? 1.0 : 0.0));
}

template <class O, class H>
__device__ __forceinline__ void bicg_x_x(long long n, typename O::Vec block, H p_hat, H s_hat,
                                         typename O::Vec x) {
    ELEMENT_INDEX
    if (!O::flag(O::load(block, 2))) return;
    // axpy, or two axpys (x_update): the first result rounded as if stored
    const typename O::V t =
        O::round(O::a_add(O::a_mul(O::load(block, 1), p_hat[i]), O::load(x, i)));
    if (O::flag(O::load(block, 4))) {
        O::store(x, i, t);
    } else if (O::flag(O::load(block, 8))) {
        O::store(x, i, O::a_add(O::a_mul(O::load(block, 7), s_hat[i]), t));
    }
}

template <class O>
__device__ __forceinline__ void bicg_r_x(long long n, typename O::Vec block, typename O::Vec t,
                                         typename O::Vec s_in, typename O::Vec r_tilde,
                                         typename O::Vec r, typename O::AVec partial_rr,
                                         typename O::AVec partial_rho) {
    X_SHARED(O);
    if (!O::flag(O::load(block, 2)) || O::flag(O::load(block, 4)) || !O::flag(O::load(block, 8)))
        return;
    const typename O::V minus_omega = O::neg(O::load(block, 7));
    X_BASE;
    typename O::A s = O::a_zero();
    typename O::A u = O::a_zero();
    X_FOR_CHUNK {
        const typename O::V z =
            O::round(O::a_add(O::a_mul(minus_omega, O::load(t, i)), O::load(s_in, i)));
        O::store(r, i, z);
        s = O::a_add(s, O::a_mul(z, z));
        u = O::a_add(u, O::a_mul(O::load(r_tilde, i), z));
    }
    }
    s = tree_reduce_x<O>(s, shared);
    if (threadIdx.x == 0) O::a_store(partial_rr, blockIdx.x, s);
    __syncthreads();
    u = tree_reduce_x<O>(u, shared);
    if (threadIdx.x == 0) O::a_store(partial_rho, blockIdx.x, u);
}

// CSR-vector SpMV (spmv_csr.cu), lane sums by Precision::add_mul_f64 in A, then the shuffle
// tree in A, then b - sum in A; one rounding when the row is stored.
// Lane `lane` of row `row`'s sum with NT lanes (entries lane, lane + NT, ... from zero), and a
// row's sum in the sliced layout (entry by entry from zero): spmv_x, spmv_sell_x and the fused
// spmv_dot_* kernels sum their rows through these.
template <class O, int NT, class X>
__device__ __forceinline__ typename O::A csr_lane_x(const int* __restrict__ row_ptr,
                                                    const int* __restrict__ col_idx,
                                                    const double* __restrict__ val, X x,
                                                    long long row, int lane) {
    typename O::A s = O::a_zero();
    const int end = row_ptr[row + 1];
    for (int k = row_ptr[row] + lane; k < end; k += NT) {
        s = O::a_add_mul_f64(s, val[k], x[col_idx[k]]);
    }
    return s;
}

#define SELL_C 32
template <class O, class X>
__device__ __forceinline__ typename O::A sell_row_x(const int* __restrict__ row_ptr,
                                                    const int* __restrict__ slice_ptr,
                                                    const int* __restrict__ col_idx,
                                                    const double* __restrict__ val, X x,
                                                    int row) {
    const int first = slice_ptr[row / SELL_C] + row % SELL_C;
    const int len = row_ptr[row + 1] - row_ptr[row];
    typename O::A s = O::a_zero();
    for (int k = 0; k < len; k++) {
        const int at = first + k * SELL_C;
        s = O::a_add_mul_f64(s, val[at], x[col_idx[at]]);
    }
    return s;
}

template <class O, int NT, class X>
__device__ __forceinline__ void spmv_x(int nrows, const int* __restrict__ row_ptr,
                                       const int* __restrict__ col_idx,
                                       const double* __restrict__ val, X x,
                                       typename O::Vec y, const double* __restrict__ b,
                                       int has_b) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long row = tid / NT;
    const int lane = threadIdx.x % NT;
    typename O::A s = row < nrows ? csr_lane_x<O, NT>(row_ptr, col_idx, val, x, row, lane)
                                  : O::a_zero();
    for (int off = NT / 2; off > 0; off >>= 1) s = O::a_add(s, O::shfl_down(s, off, NT));
    if (row < nrows && lane == 0) {
        O::store(y, row, has_b ? O::a_sub(O::a_from_f64(b[row]), s) : s);
    }
}

// SELL SpMV (spmv_csr.cu's spmv_{f64,dd}_sell): one thread per row, entries read from the sliced
// layout, each row summed as spmv_x<O, 1> sums it.
template <class O, class X>
__device__ __forceinline__ void spmv_sell_x(int nrows, const int* __restrict__ row_ptr,
                                            const int* __restrict__ slice_ptr,
                                            const int* __restrict__ col_idx,
                                            const double* __restrict__ val, X x,
                                            typename O::Vec y, const double* __restrict__ b,
                                            int has_b) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= nrows) return;
    const typename O::A s = sell_row_x<O>(row_ptr, slice_ptr, col_idx, val, x, row);
    O::store(y, row, has_b ? O::a_sub(O::a_from_f64(b[row]), s) : s);
}

// An SpMV fused with tiled dots of its result (spmv_csr.cu's spmv_dot{,2}_{f64,dd}_{sell,nt1}):
// one block of TILE_ROWS threads per tile, each row as spmv_sell_x / spmv_x<O, 1> sums it; the
// products take q as stored (rounded to P), as the CPU's dots of the stored q do. DOTS = 1:
// <w, q> (products w q); DOTS = 2: <q, q> and <q, w>.
template <class O, bool SELL, int DOTS>
__device__ __forceinline__ void spmv_dots_x(int nrows, const int* __restrict__ row_ptr,
                                            const int* __restrict__ slice_ptr,
                                            const int* __restrict__ col_idx,
                                            const double* __restrict__ val, Own<O> x,
                                            typename O::Vec w, typename O::Vec q,
                                            typename O::AVec partial,
                                            typename O::AVec partial2) {
    X_SHARED(O);
    const int row = blockIdx.x * TILE_ROWS + threadIdx.x;
    typename O::A first = O::a_zero(), second = O::a_zero();
    if (row < nrows) {
        const typename O::A s = SELL ? sell_row_x<O>(row_ptr, slice_ptr, col_idx, val, x, row)
                                     : csr_lane_x<O, 1>(row_ptr, col_idx, val, x, row, 0);
        O::store(q, row, s);
        const typename O::V qr = O::load(q, row), wr = O::load(w, row);
        first = DOTS == 1 ? O::a_mul(wr, qr) : O::a_mul(qr, qr);
        if (DOTS == 2) second = O::a_mul(qr, wr);
    }
    first = tree_reduce_x<O>(first, shared);
    if (threadIdx.x == 0) O::a_store(partial, blockIdx.x, first);
    if (DOTS == 2) {
        __syncthreads();
        second = tree_reduce_x<O>(second, shared);
        if (threadIdx.x == 0) O::a_store(partial2, blockIdx.x, second);
    }
}

// The fused kernels of P for one layout (L = sell or nt1).
#define X_SPMV_DOT_LAYOUT(P, O, L, SELL, SLICE_DECL, SLICE)                                    \
    extern "C" __global__ void __launch_bounds__(TILE_ROWS) spmv_dot_##P##_##L(                \
        int nrows, const int* row_ptr SLICE_DECL, const int* col_idx, const double* val,       \
        O::Vec x, O::Vec w, O::Vec q, O::AVec partial) {                                       \
        spmv_dots_x<O, SELL, 1>(nrows, row_ptr, SLICE, col_idx, val, Own<O>{x}, w, q, partial, \
                                partial);                                                      \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_ROWS) spmv_dot2_##P##_##L(               \
        int nrows, const int* row_ptr SLICE_DECL, const int* col_idx, const double* val,       \
        O::Vec x, O::Vec w, O::Vec q, O::AVec partial_qq, O::AVec partial_qw) {                \
        spmv_dots_x<O, SELL, 2>(nrows, row_ptr, SLICE, col_idx, val, Own<O>{x}, w, q,          \
                                partial_qq, partial_qw);                                       \
    }

#define X_SPMV_DOT(P, O)                                                                       \
    X_SPMV_DOT_LAYOUT(P, O, sell, true, X_SELL_PARAM, slice_ptr)                               \
    X_SPMV_DOT_LAYOUT(P, O, nt1, false, X_NO_PARAM, nullptr)
#define X_SELL_PARAM , const int* slice_ptr
#define X_NO_PARAM

#define X_SPMV_SELL(P, O)                                                                      \
    extern "C" __global__ void spmv_##P##_sell(int nrows, const int* row_ptr,                  \
                                               const int* slice_ptr, const int* col_idx,       \
                                               const double* val, O::Vec x, O::Vec y,          \
                                               const double* b, int has_b) {                   \
        spmv_sell_x<O>(nrows, row_ptr, slice_ptr, col_idx, val, Own<O>{x}, y, b, has_b);      \
    }                                                                                          \
    extern "C" __global__ void spmv_wide_##P##_sell(int nrows, const int* row_ptr,             \
                                                    const int* slice_ptr, const int* col_idx,  \
                                                    const double* val, const double* x,        \
                                                    O::Vec y, const double* b, int has_b) {    \
        spmv_sell_x<O>(nrows, row_ptr, slice_ptr, col_idx, val, Wide<O>{x}, y, b, has_b);     \
    }

#define X_SPMV(P, O, NT)                                                                       \
    extern "C" __global__ void spmv_##P##_nt##NT(int nrows, const int* row_ptr,                \
                                                 const int* col_idx, const double* val,        \
                                                 O::Vec x, O::Vec y, const double* b,          \
                                                 int has_b) {                                  \
        spmv_x<O, NT>(nrows, row_ptr, col_idx, val, Own<O>{x}, y, b, has_b);                   \
    }                                                                                          \
    extern "C" __global__ void spmv_wide_##P##_nt##NT(int nrows, const int* row_ptr,           \
                                                      const int* col_idx, const double* val,   \
                                                      const double* x, O::Vec y,               \
                                                      const double* b, int has_b) {            \
        spmv_x<O, NT>(nrows, row_ptr, col_idx, val, Wide<O>{x}, y, b, has_b);                  \
    }

// Every kernel of precision P, in three groups that an mp precision compiles as three modules
// in parallel (`MP_PIECE`, kernels/xprec_mp.cu): the dots and CG's updates, BiCGStab's, the SpMVs.
#define X_KERNELS_CORE(P, O)                                                                   \
    extern "C" __global__ void dot_##P##_partial(long long n, O::Vec x, O::Vec y,             \
                                                 O::AVec partial) {                            \
        dot_partial_x<O>(n, x, Own<O>{y}, partial);                                            \
    }                                                                                          \
    extern "C" __global__ void dot_wide_##P##_partial(long long n, O::Vec x, const double* y, \
                                                      O::AVec partial) {                       \
        dot_partial_x<O>(n, x, Wide<O>{y}, partial);                                           \
    }                                                                                          \
    extern "C" __global__ void dot_tile_##P##_partial(long long n, O::Vec x, O::Vec y,        \
                                                      O::AVec partial) {                       \
        dot_tile_partial_x<O>(n, x, y, partial);                                               \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)                           \
        dot_tile_##P##_final(int m, O::AVec partial, O::Vec out) {                             \
        X_SHARED(O);                                                                           \
        const O::A s = tile_final_x<O>(m, partial, shared);                                    \
        if (threadIdx.x == 0) O::store(out, 0, O::round(s));                                   \
    }                                                                                          \
    extern "C" __global__ void dot_##P##_final(int m, O::AVec partial, O::Vec out) {          \
        dot_final_x<O>(m, partial, out);                                                       \
    }                                                                                          \
    extern "C" __global__ void axpy_##P(long long n, O::S alpha, O::Vec x, O::Vec y) {        \
        axpy_x<O>(n, alpha, x, y);                                                             \
    }                                                                                          \
    extern "C" __global__ void xpay_##P(long long n, O::Vec x, O::S beta, O::Vec y) {         \
        xpay_x<O>(n, Own<O>{x}, beta, y);                                                      \
    }                                                                                          \
    extern "C" __global__ void xpay_wide_##P(long long n, const double* x, O::S beta,         \
                                             O::Vec y) {                                       \
        xpay_x<O>(n, Wide<O>{x}, beta, y);                                                     \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)                           \
        cg_alpha_##P(int m, O::AVec partial, O::S rho, O::Vec scalars) {                       \
        alpha_from_tiles_x<O, true>(m, partial, rho, scalars);                                 \
    }                                                                                          \
    extern "C" __global__ void cg_update_##P(long long n, O::Vec scalars, O::Vec q, O::Vec r, \
                                             O::AVec partial) {                                \
        cg_update_x<O>(n, scalars, q, r, partial);                                             \
    }                                                                                          \
    extern "C" __global__ void cg_direction_##P(long long n, O::S alpha, O::Vec z, O::S beta, \
                                                O::Vec p, O::Vec x) {                          \
        cg_direction_x<O>(n, alpha, Own<O>{z}, beta, p, x);                                    \
    }                                                                                          \
    extern "C" __global__ void cg_direction_wide_##P(long long n, O::S alpha, const double* z,\
                                                     O::S beta, O::Vec p, O::Vec x) {          \
        cg_direction_x<O>(n, alpha, Wide<O>{z}, beta, p, x);                                   \
    }

#define X_KERNELS_BICG(P, O)                                                                   \
    extern "C" __global__ void axpyz_##P(long long n, O::S alpha, O::Vec x, O::Vec y,         \
                                         O::Vec z) {                                           \
        axpyz_x<O>(n, alpha, x, y, z);                                                         \
    }                                                                                          \
    extern "C" __global__ void bicgstab_direction_##P(long long n, O::Vec r, O::S beta,       \
                                                      O::S minus_omega, O::Vec v, O::Vec p) {  \
        bicgstab_direction_x<O>(n, r, beta, minus_omega, v, p);                                \
    }                                                                                          \
    extern "C" __global__ void axpyz_norm_##P(long long n, O::S alpha, O::Vec x, O::Vec y,    \
                                              O::Vec z, O::AVec partial) {                     \
        axpyz_norm_x<O>(n, alpha, x, y, z, partial);                                           \
    }                                                                                          \
    extern "C" __global__ void x_update_##P(long long n, O::S alpha, O::Vec p, O::S omega,    \
                                            O::Vec s, O::Vec x) {                              \
        x_update_x<O>(n, alpha, p, omega, s, x);                                               \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)                           \
        bicg_alpha_tiles_##P(int m, O::AVec partial, O::S rho, O::Vec block) {                 \
        alpha_from_tiles_x<O, false>(m, partial, rho, block);                                  \
    }                                                                                          \
    extern "C" __global__ void bicg_alpha_##P(int m, O::AVec partial, O::S rho,               \
                                              O::Vec block) {                                  \
        bicg_alpha_x<O>(m, partial, rho, block);                                               \
    }                                                                                          \
    extern "C" __global__ void bicg_s_##P(long long n, O::Vec block, O::Vec v, O::Vec r,      \
                                          O::Vec s_out, O::AVec partial) {                     \
        bicg_s_x<O>(n, block, v, r, s_out, partial);                                           \
    }                                                                                          \
    extern "C" __global__ void bicg_tt_ts_##P(long long n, O::Vec t, O::Vec s_in,             \
                                              O::AVec partial_tt, O::AVec partial_ts) {        \
        bicg_tt_ts_x<O>(n, t, s_in, partial_tt, partial_ts);                                   \
    }                                                                                          \
    extern "C" __global__ void bicg_decide_##P(O::Vec block, double denominator, double tol) {\
        bicg_decide_x<O>(block, denominator, tol);                                             \
    }                                                                                          \
    extern "C" __global__ void bicg_x_##P(long long n, O::Vec block, O::Vec p_hat,            \
                                          O::Vec s_hat, O::Vec x) {                            \
        bicg_x_x<O>(n, block, Own<O>{p_hat}, Own<O>{s_hat}, x);                                \
    }                                                                                          \
    extern "C" __global__ void bicg_x_wide_##P(long long n, O::Vec block, const double* p_hat, \
                                               const double* s_hat, O::Vec x) {                \
        bicg_x_x<O>(n, block, Wide<O>{p_hat}, Wide<O>{s_hat}, x);                              \
    }                                                                                          \
    extern "C" __global__ void bicg_r_##P(long long n, O::Vec block, O::Vec t, O::Vec s_in,   \
                                          O::Vec r_tilde, O::Vec r, O::AVec partial_rr,        \
                                          O::AVec partial_rho) {                               \
        bicg_r_x<O>(n, block, t, s_in, r_tilde, r, partial_rr, partial_rho);                   \
    }

#define X_KERNELS_SPMV(P, O)                                                                   \
    X_SPMV(P, O, 1)                                                                            \
    X_SPMV(P, O, 2)                                                                            \
    X_SPMV(P, O, 4)                                                                            \
    X_SPMV(P, O, 8)                                                                            \
    X_SPMV(P, O, 16)                                                                           \
    X_SPMV(P, O, 32)                                                                           \
    X_SPMV_SELL(P, O)

#define X_KERNELS(P, O) X_KERNELS_CORE(P, O) X_KERNELS_BICG(P, O) X_KERNELS_SPMV(P, O)
