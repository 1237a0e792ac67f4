// Scalar operations of the working precisions, for kernels written once over them (the
// device-resident solver steps: kernels/cg.cu, kernels/bicgstab.cu): O::T is the stored type
// (double, double2), O::V the one computed with (double, dd_t). Each operation has the bits of
// its twin in src/precision (f64, Dd).

// chunks_final over at most 32 partials, defined after the operations below.
template <class O>
__device__ __forceinline__ typename O::V chunks_final_few(int m, const typename O::T* partial);

struct f64_ops {
    typedef double T;
    typedef double V;
    static __device__ __forceinline__ V load(const T* v, long long i) { return v[i]; }
    static __device__ __forceinline__ void store(T* v, long long i, V a) { v[i] = a; }
    static __device__ __forceinline__ V widen(double a) { return a; }
    static __device__ __forceinline__ V of(double a) { return a; }
    static __device__ __forceinline__ V add(V a, V b) { return __dadd_rn(a, b); }
    static __device__ __forceinline__ V mul(V a, V b) { return __dmul_rn(a, b); }
    static __device__ __forceinline__ V neg(V a) { return -a; }
    static __device__ __forceinline__ V div(V a, V b) { return __ddiv_rn(a, b); }
    static __device__ __forceinline__ bool finite(V a) { return isfinite(a); }
    static __device__ __forceinline__ bool is_zero(V a) { return a == 0.0; }
    static __device__ __forceinline__ double to_f64(V a) { return a; }
    static __device__ __forceinline__ double norm(V rr) { return __dsqrt_rn(rr); }
    static __device__ __forceinline__ V chunks_final(int m, const T* partial) {
        __shared__ double shared[DOT_THREADS];
        return chunks_final_f64(m, partial, shared);
    }
    static __device__ __forceinline__ V tiles_final(int m, const T* partial) {
        __shared__ double shared[32];
        return tile_final_f64(m, partial, shared);
    }
    // chunks_final over partials blocks of this kernel wrote (ld_fresh)
    static __device__ __forceinline__ V chunks_final_fresh(int m, const T* partial) {
        if (m <= 32) return chunks_final_few<f64_ops>(m, partial);
        __shared__ double shared[DOT_THREADS];
        double s = 0.0;
        for (int i = threadIdx.x; i < m; i += DOT_THREADS) s = __dadd_rn(s, ld_fresh(partial + i));
        return tree_reduce_f64(s, shared);
    }
    // For kernels that run a whole solve (kernels/cg_persistent.cu): element i as written
    // earlier in the kernel (ld_fresh), the halving tree of one block, a warp's tree, a
    // shuffle within `width` lanes, and an SpMV row's step s + a x.
    static __device__ __forceinline__ V load_cg(const T* v, long long i) { return ld_fresh(v + i); }
    static __device__ __forceinline__ V tree(V s) {
        __shared__ double shared[DOT_THREADS];
        return tree_reduce_f64(s, shared);
    }
    static __device__ __forceinline__ V warp_tree(V s) { return warp_tree_f64(s); }
    static __device__ __forceinline__ V shfl_down(V s, int off, int width) {
        return __shfl_down_sync(0xffffffffu, s, off, width);
    }
    static __device__ __forceinline__ V add_mul_f64(V s, V x, double a) {
        return __dadd_rn(s, __dmul_rn(a, x));
    }
};

struct dd_ops {
    typedef double2 T;
    typedef dd_t V;
    static __device__ __forceinline__ V load(const T* v, long long i) { return dd_load(v, i); }
    static __device__ __forceinline__ void store(T* v, long long i, V a) { dd_store(v, i, a); }
    static __device__ __forceinline__ V widen(double a) { return dd_from_f64(a); }
    static __device__ __forceinline__ V of(double a) { return dd_from_f64(a); }
    static __device__ __forceinline__ V add(V a, V b) { return dd_add(a, b); }
    static __device__ __forceinline__ V mul(V a, V b) { return dd_mul(a, b); }
    static __device__ __forceinline__ V neg(V a) { return dd_neg(a); }
    static __device__ __forceinline__ V div(V a, V b) { return dd_div(a, b); }
    static __device__ __forceinline__ bool finite(V a) { return isfinite(a.hi) && isfinite(a.lo); }
    static __device__ __forceinline__ bool is_zero(V a) { return a.hi == 0.0 && a.lo == 0.0; }
    static __device__ __forceinline__ double to_f64(V a) { return dd_to_f64(a); }
    static __device__ __forceinline__ double norm(V rr) { return dd_to_f64(dd_sqrt(rr)); }
    static __device__ __forceinline__ V chunks_final(int m, const T* partial) {
        __shared__ double shared_hi[DOT_THREADS];
        __shared__ double shared_lo[DOT_THREADS];
        return chunks_final_dd(m, partial, shared_hi, shared_lo);
    }
    static __device__ __forceinline__ V tiles_final(int m, const T* partial) {
        __shared__ double shared_hi[32];
        __shared__ double shared_lo[32];
        return tile_final_dd(m, partial, shared_hi, shared_lo);
    }
    static __device__ __forceinline__ V chunks_final_fresh(int m, const T* partial) {
        if (m <= 32) return chunks_final_few<dd_ops>(m, partial);
        __shared__ double shared_hi[DOT_THREADS];
        __shared__ double shared_lo[DOT_THREADS];
        dd_t s = dd_from_f64(0.0);
        for (int i = threadIdx.x; i < m; i += DOT_THREADS) s = dd_add(s, dd_of(ld_fresh(partial + i)));
        return tree_reduce_dd(s, shared_hi, shared_lo);
    }
    static __device__ __forceinline__ V load_cg(const T* v, long long i) { return dd_of(ld_fresh(v + i)); }
    static __device__ __forceinline__ V tree(V s) {
        __shared__ double shared_hi[DOT_THREADS];
        __shared__ double shared_lo[DOT_THREADS];
        return tree_reduce_dd(s, shared_hi, shared_lo);
    }
    static __device__ __forceinline__ V warp_tree(V s) { return warp_tree_dd(s); }
    static __device__ __forceinline__ V shfl_down(V s, int off, int width) {
        return dd_t{__shfl_down_sync(0xffffffffu, s.hi, off, width),
                    __shfl_down_sync(0xffffffffu, s.lo, off, width)};
    }
    // spmv_dd_lane's step: add(s, mul_f64(x, a))
    static __device__ __forceinline__ V add_mul_f64(V s, V x, double a) {
        return dd_add(s, dd_mul_f64(x, a));
    }
};


// chunks_final_fresh's sum where m <= 32 (a chunk's partial, `mine`, in each of the first m
// threads): the halving tree's levels above a warp add zero to each lane of warp 0, so warp 0
// makes those additions itself and the block neither writes shared memory nor waits at a
// barrier. The same operations on the same operands, so the same bits. Valid in thread 0.
template <class O>
__device__ __forceinline__ typename O::V chunks_final_few_of(int m, typename O::V mine) {
    typename O::V s = O::of(0.0);
    if (threadIdx.x < 32) {
        if ((int)threadIdx.x < m) s = O::add(s, mine);
        for (int off = DOT_THREADS / 2; off >= 32; off >>= 1) s = O::add(s, O::of(0.0));
        s = O::warp_tree(s);
    }
    return s;
}

// The same with partial t in partial[t], written by other blocks (past L1).
template <class O>
__device__ __forceinline__ typename O::V chunks_final_few(int m, const typename O::T* partial) {
    const bool has = (int)threadIdx.x < m;
    return chunks_final_few_of<O>(m, has ? O::load_cg(partial, threadIdx.x) : O::of(0.0));
}

// The device-resident steps' tests, twins of those in src/solver (cg/steps.rs, bicgstab/steps.rs).

// rho_stops: rho (CG's <r, z>, BiCGStab's <r~, r>) not finite, or zero.
template <class O>
__device__ __forceinline__ bool rho_stops(typename O::V rho) {
    return !O::finite(rho) || O::is_zero(rho);
}

// Threshold::reached: the norm (rounded to double) not finite, or over the denominator <= tol.
__device__ __forceinline__ bool threshold_reached(double norm, double denominator, double tol) {
    return !isfinite(norm) || __ddiv_rn(norm, denominator) <= tol;
}

// Iteration k stopped the solve: later kernels do nothing, and those that check `accepted`
// (cg_update_{p}, bicg_s, bicg_decide, bicg_x, bicg_r) leave the vectors alone. S is a solver's
// device state (cg_state<T>, bicg_state<T>).
template <class O, class S>
__device__ __forceinline__ void freeze_at(S* s, int k) {
    s->frozen = k;
    O::store(&s->accepted, 0, O::of(0.0));
}

// a x + y at one element: the updates the solvers' loops and the persistent kernels' rows in
// registers share, each with a negated scalar: CG's r <- (-alpha) q + r (r_update_chunk,
// cg_persistent.cu), BiCGStab's s <- (-alpha) v + r and r <- (-omega) t + s
// (bicgstab_persistent.cu).
template <class O>
__device__ __forceinline__ typename O::V axpy_of(typename O::V a, typename O::V x,
                                                 typename O::V y) {
    return O::add(O::mul(a, x), y);
}

// Chunk `chunk` of CG's r <- (-alpha) q + r with its partial of <r, r> in the dot products'
// layout (thread t: elements t, t + DOT_THREADS, ... of the chunk, summed from zero, then the
// block's tree), valid in thread 0: the one loop of cg_update_{p} (blas1.cu), cgs_update_{p}
// (cg.cu) and the persistent kernel (cg_persistent.cu). FRESH reads q and r past L1, for a
// kernel in which other blocks wrote them.
template <class O, bool FRESH>
__device__ __forceinline__ typename O::V r_update_chunk(long long chunk, long long n,
                                                       typename O::V minus_alpha,
                                                       const typename O::T* __restrict__ q,
                                                       typename O::T* __restrict__ r) {
    const long long base = chunk * DOT_CHUNK + threadIdx.x;
    typename O::V sum = O::of(0.0);
    for (int j = 0; j < DOT_PER_THREAD; j++) {
        const long long i = base + (long long)j * DOT_THREADS;
        if (i < n) {
            const typename O::V qi = FRESH ? O::load_cg(q, i) : O::load(q, i);
            const typename O::V ri = FRESH ? O::load_cg(r, i) : O::load(r, i);
            const typename O::V v = axpy_of<O>(minus_alpha, qi, ri);
            O::store(r, i, v);
            sum = O::add(sum, O::mul(v, v));
        }
    }
    return O::tree(sum);
}
