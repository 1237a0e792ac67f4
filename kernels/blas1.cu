// Vector kernels in f64 and dd. Element-wise kernels use one thread per element; dot products
// use the deterministic two-stage reduction of common/reduce.cuh (launch: DOT_THREADS threads,
// ceil(n / DOT_CHUNK) blocks, then one block for the final stage).
//
// dot_{p}_partial(long long n, const T* x, const T* y, T* partial)
// dot_{p}_final(int m, const T* partial, T* out)
// axpy_{p}(long long n, S alpha, const T* x, T* y)            y <- alpha x + y
// xpay_{p}(long long n, const T* x, S beta, T* y)             y <- x + beta y
// axpyz_{p}(long long n, S alpha, const T* x, const T* y, T* z)   z <- alpha x + y
// bicgstab_direction_{p}(long long n, const T* r, S beta, S minus_omega, const T* v, T* p)
//                                                             p <- r + beta (p - omega v)
// convert_f64_to_dd(long long n, const double* x, double2* y), convert_dd_to_f64(...)
// dot_wide_dd_partial(long long n, const double2* x, const double* y, double2* partial),
// xpay_wide_dd(long long n, const double* x, double2 beta, double2* y): y (x) read widened
// with T = double, S = double for f64 and T = double2, S = double2 for dd.


extern "C" __global__ void dot_f64_partial(long long n, const double* __restrict__ x,
                                           const double* __restrict__ y, double* partial) {
    __shared__ double shared[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    double s = 0.0;
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) s = __dadd_rn(s, __dmul_rn(x[i], y[i]));
    }
    s = tree_reduce_f64(s, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

extern "C" __global__ void dot_f64_final(int m, const double* __restrict__ partial, double* out) {
    __shared__ double shared[DOT_THREADS];
    const double s = chunks_final_f64(m, partial, shared);
    if (threadIdx.x == 0) out[0] = s;
}

// <x, y> in the tiled order of CG's <p, q> (common/reduce.cuh, TILE_ROWS): the first stage of
// cg_step where the SpMV cannot compute it (CSR with several threads a row; td and qd: xprec.cu).
// dot_tile_{p}_partial(long long n, const T* x, const T* y, T* partial): one block of TILE_ROWS
// threads per tile, one partial per tile.
// dot_tile_{p}_final(int m, const T* partial, T* out): one block of TILE_FINAL_THREADS.
extern "C" __global__ void dot_tile_f64_partial(long long n, const double* __restrict__ x,
                                                const double* __restrict__ y, double* partial) {
    __shared__ double shared[DOT_THREADS];
    const long long i = (long long)blockIdx.x * TILE_ROWS + threadIdx.x;
    const double s = tree_reduce_f64(i < n ? __dmul_rn(x[i], y[i]) : 0.0, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

extern "C" __global__ void dot_tile_dd_partial(long long n, const double2* __restrict__ x,
                                               const double2* __restrict__ y, double2* partial) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const long long i = (long long)blockIdx.x * TILE_ROWS + threadIdx.x;
    const dd_t prod = i < n ? dd_mul(dd_load(x, i), dd_load(y, i)) : dd_from_f64(0.0);
    const dd_t s = tree_reduce_dd(prod, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial, blockIdx.x, s);
}

extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)
    dot_tile_f64_final(int m, const double* __restrict__ partial, double* out) {
    __shared__ double shared[32];
    const double s = tile_final_f64(m, partial, shared);
    if (threadIdx.x == 0) out[0] = s;
}

extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)
    dot_tile_dd_final(int m, const double2* __restrict__ partial, double2* out) {
    __shared__ double shared_hi[32];
    __shared__ double shared_lo[32];
    const dd_t s = tile_final_dd(m, partial, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(out, 0, s);
}

extern "C" __global__ void dot_dd_partial(long long n, const double2* __restrict__ x,
                                          const double2* __restrict__ y, double2* partial) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    dd_t s = dd_from_f64(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) s = dd_add(s, dd_mul(dd_load(x, i), dd_load(y, i)));
    }
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial, blockIdx.x, s);
}

// <x, y> with y a double vector widened exactly as it is read (CG's preconditioned residual):
// the bits of dot_dd_partial on y converted to dd. Finish with dot_dd_final.
extern "C" __global__ void dot_wide_dd_partial(long long n, const double2* __restrict__ x,
                                               const double* __restrict__ y, double2* partial) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    dd_t s = dd_from_f64(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) s = dd_add(s, dd_mul(dd_load(x, i), dd_from_f64(y[i])));
    }
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial, blockIdx.x, s);
}

extern "C" __global__ void dot_dd_final(int m, const double2* __restrict__ partial, double2* out) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const dd_t s = chunks_final_dd(m, partial, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(out, 0, s);
}

extern "C" __global__ void axpy_f64(long long n, double alpha, const double* __restrict__ x,
                                    double* __restrict__ y) {
    ELEMENT_INDEX
    y[i] = __dadd_rn(__dmul_rn(alpha, x[i]), y[i]);
}

extern "C" __global__ void axpy_dd(long long n, double2 alpha, const double2* __restrict__ x,
                                   double2* __restrict__ y) {
    ELEMENT_INDEX
    dd_store(y, i, dd_add(dd_mul(dd_of(alpha), dd_load(x, i)), dd_load(y, i)));
}

extern "C" __global__ void xpay_f64(long long n, const double* __restrict__ x, double beta,
                                    double* __restrict__ y) {
    ELEMENT_INDEX
    y[i] = __dadd_rn(x[i], __dmul_rn(beta, y[i]));
}

extern "C" __global__ void xpay_dd(long long n, const double2* __restrict__ x, double2 beta,
                                   double2* __restrict__ y) {
    ELEMENT_INDEX
    dd_store(y, i, dd_add(dd_load(x, i), dd_mul(dd_of(beta), dd_load(y, i))));
}

// y <- x + beta y with x a double vector widened exactly as it is read (as dot_wide_dd_partial).
extern "C" __global__ void xpay_wide_dd(long long n, const double* __restrict__ x, double2 beta,
                                        double2* __restrict__ y) {
    ELEMENT_INDEX
    dd_store(y, i, dd_add(dd_from_f64(x[i]), dd_mul(dd_of(beta), dd_load(y, i))));
}

extern "C" __global__ void axpyz_f64(long long n, double alpha, const double* __restrict__ x,
                                     const double* __restrict__ y, double* __restrict__ z) {
    ELEMENT_INDEX
    z[i] = __dadd_rn(__dmul_rn(alpha, x[i]), y[i]);
}

extern "C" __global__ void axpyz_dd(long long n, double2 alpha, const double2* __restrict__ x,
                                    const double2* __restrict__ y, double2* __restrict__ z) {
    ELEMENT_INDEX
    dd_store(z, i, dd_add(dd_mul(dd_of(alpha), dd_load(x, i)), dd_load(y, i)));
}

extern "C" __global__ void bicgstab_direction_f64(long long n, const double* __restrict__ r,
                                                  double beta, double minus_omega,
                                                  const double* __restrict__ v,
                                                  double* __restrict__ p) {
    ELEMENT_INDEX
    const double t = __dadd_rn(__dmul_rn(minus_omega, v[i]), p[i]);
    p[i] = __dadd_rn(r[i], __dmul_rn(beta, t));
}

extern "C" __global__ void bicgstab_direction_dd(long long n, const double2* __restrict__ r,
                                                 double2 beta, double2 minus_omega,
                                                 const double2* __restrict__ v,
                                                 double2* __restrict__ p) {
    ELEMENT_INDEX
    const dd_t t = dd_add(dd_mul(dd_of(minus_omega), dd_load(v, i)), dd_load(p, i));
    dd_store(p, i, dd_add(dd_load(r, i), dd_mul(dd_of(beta), t)));
}

extern "C" __global__ void convert_f64_to_dd(long long n, const double* __restrict__ x,
                                             double2* __restrict__ y) {
    ELEMENT_INDEX
    y[i] = make_double2(x[i], 0.0);
}

// f64::from_dd: the high word (equal to fl(hi + lo) for a normalised value).
extern "C" __global__ void convert_dd_to_f64(long long n, const double2* __restrict__ x,
                                             double* __restrict__ y) {
    ELEMENT_INDEX
    y[i] = x[i].x;
}

// Fused updates that also reduce the squared norm of their result, in the dot products' block
// layout (DOT_CHUNK elements per block, thread t taking t, t + DOT_THREADS, ...), so each gives
// the same bits as the update followed by dot(z, z). Launch like dot_{p}_partial; finish the
// partials with dot_{p}_final.
// axpyz_norm_{p}(long long n, S alpha, const T* x, const T* y, T* z, T* partial)  z <- alpha x + y
// (y may alias z: each element is read before it is written, by the same thread.)
// x_update_{p}(long long n, S alpha, const T* p, S omega, const T* s, T* x)  x <- x + alpha p + omega s

extern "C" __global__ void axpyz_norm_f64(long long n, double alpha, const double* x,
                                          const double* y, double* z, double* partial) {
    __shared__ double shared[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    double s = 0.0;
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const double v = __dadd_rn(__dmul_rn(alpha, x[i]), y[i]);
            z[i] = v;
            s = __dadd_rn(s, __dmul_rn(v, v));
        }
    }
    s = tree_reduce_f64(s, shared);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

extern "C" __global__ void axpyz_norm_dd(long long n, double2 alpha, const double2* x,
                                         const double2* y, double2* z, double2* partial) {
    __shared__ double shared_hi[DOT_THREADS];
    __shared__ double shared_lo[DOT_THREADS];
    const long long base = (long long)blockIdx.x * DOT_CHUNK + threadIdx.x;
    const dd_t a = dd_of(alpha);
    dd_t s = dd_from_f64(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const dd_t v = dd_add(dd_mul(a, dd_load(x, i)), dd_load(y, i));
            dd_store(z, i, v);
            s = dd_add(s, dd_mul(v, v));
        }
    }
    s = tree_reduce_dd(s, shared_hi, shared_lo);
    if (threadIdx.x == 0) dd_store(partial, blockIdx.x, s);
}

extern "C" __global__ void x_update_f64(long long n, double alpha, const double* __restrict__ p,
                                        double omega, const double* __restrict__ s,
                                        double* __restrict__ x) {
    ELEMENT_INDEX
    const double t = __dadd_rn(__dmul_rn(alpha, p[i]), x[i]);
    x[i] = __dadd_rn(__dmul_rn(omega, s[i]), t);
}

extern "C" __global__ void x_update_dd(long long n, double2 alpha, const double2* __restrict__ p,
                                       double2 omega, const double2* __restrict__ s,
                                       double2* __restrict__ x) {
    ELEMENT_INDEX
    const dd_t t = dd_add(dd_mul(dd_of(alpha), dd_load(p, i)), dd_load(x, i));
    dd_store(x, i, dd_add(dd_mul(dd_of(omega), dd_load(s, i)), t));
}

// CG's step with alpha kept on the device (Backend::cg_step). The scalars array holds, as T:
// [0] <p, q>, [1] alpha, [2] accepted (non-zero high word when <p, q> is finite and positive),
// [3] <r, r> after the update, filled by dot_{p}_final on the update's partials.
// cg_alpha_{p}(int m, const T* partial, S rho, T* scalars)
//   one block of TILE_FINAL_THREADS: <p, q> from the tile partials (common/reduce.cuh)
// cg_update_{p}(long long n, const T* scalars, const T* q, T* r, T* partial)
//   r <- (-alpha) q + r ; partial <r, r>, in the dot products' layout (x <- alpha p + x is
//   deferred to cg_direction, which reads p anyway).
// cg_direction_{p}(long long n, S alpha, const T* z, S beta, T* p, T* x)
// cg_direction_wide_{p}(long long n, S alpha, const double* z, S beta, T* p, T* x)
//   x <- alpha p + x, then p <- z + beta p (CG's x update deferred into the next direction
//   update, which reads p anyway): the bits of axpy then xpay; _wide reads z widened.

extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)
    cg_alpha_f64(int m, const double* __restrict__ partial, double rho, double* scalars) {
    alpha_from_tiles_f64<true>(m, partial, rho, scalars);
}

extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)
    cg_alpha_dd(int m, const double2* __restrict__ partial, double2 rho, double2* scalars) {
    alpha_from_tiles_dd<true>(m, partial, rho, scalars);
}

template <class O>
__device__ __forceinline__ void cg_update(long long n, const typename O::T* __restrict__ scalars,
                                          const typename O::T* __restrict__ q,
                                          typename O::T* __restrict__ r, typename O::T* partial) {
    // rejected step: nothing changes (the same for every thread)
    if (O::to_f64(O::load(scalars, 2)) == 0.0) return;
    const typename O::V minus_alpha = O::neg(O::load(scalars, 1));
    const typename O::V s = r_update_chunk<O, false>(blockIdx.x, n, minus_alpha, q, r);
    if (threadIdx.x == 0) O::store(partial, blockIdx.x, s);
}

// (__restrict__ on q and r lets the loads of a thread's 32 elements run ahead of its stores:
// without it each load waited on the store before it, benches/results/gpu-resident.md)
extern "C" __global__ void cg_update_f64(long long n, const double* __restrict__ scalars,
                                         const double* __restrict__ q, double* __restrict__ r,
                                         double* partial) {
    cg_update<f64_ops>(n, scalars, q, r, partial);
}

extern "C" __global__ void cg_update_dd(long long n, const double2* __restrict__ scalars,
                                        const double2* __restrict__ q, double2* __restrict__ r,
                                        double2* partial) {
    cg_update<dd_ops>(n, scalars, q, r, partial);
}

extern "C" __global__ void cg_direction_f64(long long n, double alpha,
                                            const double* __restrict__ z, double beta,
                                            double* __restrict__ p, double* __restrict__ x) {
    ELEMENT_INDEX
    const double pi = p[i];
    x[i] = __dadd_rn(__dmul_rn(alpha, pi), x[i]);
    p[i] = __dadd_rn(z[i], __dmul_rn(beta, pi));
}

extern "C" __global__ void cg_direction_dd(long long n, double2 alpha,
                                           const double2* __restrict__ z, double2 beta,
                                           double2* __restrict__ p, double2* __restrict__ x) {
    ELEMENT_INDEX
    const dd_t pi = dd_load(p, i);
    dd_store(x, i, dd_add(dd_mul(dd_of(alpha), pi), dd_load(x, i)));
    dd_store(p, i, dd_add(dd_load(z, i), dd_mul(dd_of(beta), pi)));
}

extern "C" __global__ void cg_direction_wide_dd(long long n, double2 alpha,
                                                const double* __restrict__ z, double2 beta,
                                                double2* __restrict__ p, double2* __restrict__ x) {
    ELEMENT_INDEX
    const dd_t pi = dd_load(p, i);
    dd_store(x, i, dd_add(dd_mul(dd_of(alpha), pi), dd_load(x, i)));
    dd_store(p, i, dd_add(dd_from_f64(z[i]), dd_mul(dd_of(beta), pi)));
}
