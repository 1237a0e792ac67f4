// CG's steps with the scalars on the device (src/backend/cuda/cg.rs): iterations run one after
// another with no transfer to the host; the host reads the records of many at once. Every test
// here is the twin of one in src/solver/cg/steps.rs (rho_stops, pq_accepted, Threshold::reached),
// so the kernels stop changing the vectors at exactly the iteration where the host's loop,
// reading the records, stops. Every value has the bits of the portable steps (HostCg): the same
// formulas as cg_direction_{p}, xpay_{p}, axpy_{p}, and the reductions' orders of reduce.cuh.
//
// cgs_rho_{p}(int m, const T* partial, cg_state* s, cg_record* rec, int cap)          one block
//   preconditioned: rho = <r, z> from dot_wide's partials; stops, or beta = rho / rho_prev
// cgs_direction_{p}(long long n, const cg_state* s, const T* z, T* p, T* x)
// cgs_direction_wide_{p}(long long n, const cg_state* s, const double* z, T* p, T* x)
//   first iteration p <- z; then (x <- x + alpha p where pending ;) p <- z + beta p
// cgs_alpha_{p}(int m, const T* tiles, cg_state* s, cg_record* rec, int cap)          one block
//   <p, q> from the SpMV's tile partials; alpha = rho / <p, q> where accepted, else stops
// cgs_update_{p}(long long n, cg_state* s, cg_record* rec, int cap, const T* q, T* r,
//                T* partial, double denominator, double tol, int identity)   reduction layout
//   r <- r - alpha q with <r, r>'s partials (cg_update_{p}'s bits); the last block to finish
//   sums them: the iteration is done; the stopping test; without a preconditioner the next rho
// cgs_update_partials_{p}(long long n, const cg_state* s, const T* q, T* r, T* partial)
//   a block solve's (--devices): cgs_update's r update and partials, without the close
// cgs_close_{p}(int m, const T* partial, cg_state* s, cg_record* rec, int cap,
//               double denominator, double tol, int identity)                      one block
//   a block solve's: <r, r> from every GPU's partials gathered (m of them), then the close
// cgs_settle_{p}(long long n, const cg_state* s, const T* p, T* x)   x <- x + alpha p if pending
// cgs_settled_{p}(cg_state* s)                                        one thread: nothing pending
//
// Every kernel but cgs_settle does nothing once s->frozen is set (the same for all threads: no
// kernel changes it before all its threads have read it).

// cg_state<T> and cg_record<T>: kernels/common/states.cuh (shared with cg_persistent.cu).

template <class O>
__device__ __forceinline__ void cgs_rho(int m, const typename O::T* __restrict__ partial,
                                        cg_state<typename O::T>* s,
                                        cg_record<typename O::T>* rec, int cap) {
    if (s->frozen) return;
    const typename O::V rho = O::chunks_final(m, partial);
    if (threadIdx.x != 0) return;
    cg_take_rho<O>(s->done + 1, rho, s, rec, cap);
}

// Element i of the direction update, z_i read (widened where z is a double vector).
template <class O>
__device__ __forceinline__ void cgs_direction(long long i, const cg_state<typename O::T>* s,
                                              typename O::T* p, typename O::T* x,
                                              typename O::V zi) {
    if (s->done == 0) {
        O::store(p, i, zi);
        return;
    }
    const typename O::V pi = O::load(p, i);
    if (s->pending) O::store(x, i, O::add(O::mul(O::load(&s->alpha, 0), pi), O::load(x, i)));
    O::store(p, i, O::add(zi, O::mul(O::load(&s->beta, 0), pi)));
}

template <class O>
__device__ __forceinline__ void cgs_alpha(int m, const typename O::T* __restrict__ tiles,
                                          cg_state<typename O::T>* s,
                                          cg_record<typename O::T>* rec, int cap) {
    if (s->frozen) return;
    const typename O::V pq = O::tiles_final(m, tiles);
    if (threadIdx.x != 0) return;
    typename O::V alpha;
    cg_take_pq<O>(true, s->done + 1, pq, O::load(&s->rho, 0), s, rec, cap, alpha);
}

// Thread 0, with <r, r> summed: the iteration is done; the stopping test; without a
// preconditioner, the next iteration's rho.
template <class O>
__device__ __forceinline__ void cgs_close(typename O::V rr, cg_state<typename O::T>* s,
                                          cg_record<typename O::T>* rec, int cap,
                                          double denominator, double tol, int identity) {
    cg_close<O>(true, s->done + 1, rr, O::load(&s->rho, 0), identity, s, rec, cap, denominator,
                tol);
}

// r <- r - alpha q with <r, r>'s chunk partials (cg_update_{p}'s bits), then, in the block that
// finishes last, <r, r> from the partials and the close: one launch where there were two.
template <class O>
__device__ __forceinline__ void cgs_update(cg_state<typename O::T>* s,
                                           cg_record<typename O::T>* rec, int cap,
                                           typename O::T* partial, double denominator, double tol,
                                           int identity, typename O::V sum) {
    __shared__ bool last;
    if (threadIdx.x == 0) {
        O::store(partial, blockIdx.x, sum);
        __threadfence();
        last = atomicAdd(&s->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    const typename O::V rr = O::chunks_final_fresh((int)gridDim.x, partial);
    if (threadIdx.x != 0) return;
    s->ticket = 0;
    cgs_close<O>(rr, s, rec, cap, denominator, tol, identity);
}

#define CG_STEPS(P, O)                                                                          \
    extern "C" __global__ void cgs_rho_##P(int m, const O::T* partial, cg_state<O::T>* s,       \
                                           cg_record<O::T>* rec, int cap) {                     \
        cgs_rho<O>(m, partial, s, rec, cap);                                                    \
    }                                                                                           \
    extern "C" __global__ void cgs_direction_##P(long long n, const cg_state<O::T>* s,          \
                                                 const O::T* __restrict__ z, O::T* p, O::T* x) { \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                   \
        if (i >= n || s->frozen) return;                                                        \
        cgs_direction<O>(i, s, p, x, O::load(z, i));                                         \
    }                                                                                           \
    extern "C" __global__ void cgs_direction_wide_##P(long long n, const cg_state<O::T>* s,     \
                                                      const double* __restrict__ z, O::T* p,    \
                                                      O::T* x) {                                \
        const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;                   \
        if (i >= n || s->frozen) return;                                                        \
        cgs_direction<O>(i, s, p, x, O::widen(z[i]));                                        \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(TILE_FINAL_THREADS)                            \
        cgs_alpha_##P(int m, const O::T* tiles, cg_state<O::T>* s, cg_record<O::T>* rec,        \
                      int cap) {                                                                \
        cgs_alpha<O>(m, tiles, s, rec, cap);                                                    \
    }                                                                                           \
    extern "C" __global__ void cgs_settle_##P(long long n, const cg_state<O::T>* s,             \
                                              const O::T* __restrict__ p, O::T* x) {            \
        ELEMENT_INDEX                                                                           \
        if (!s->pending) return;                                                                \
        O::store(x, i, O::add(O::mul(O::load(&s->alpha, 0), O::load(p, i)), O::load(x, i)));   \
    }                                                                                           \
    extern "C" __global__ void cgs_settled_##P(cg_state<O::T>* s) { s->pending = 0; }      \
    extern "C" __global__ void cgs_update_##P(                                                 \
        long long n, cg_state<O::T>* s, cg_record<O::T>* rec, int cap,                          \
        const O::T* __restrict__ q, O::T* __restrict__ r, O::T* partial, double denominator,    \
        double tol, int identity) {                                                             \
        if (s->frozen) return;                                                                  \
        const O::V minus_alpha = O::neg(O::load(&s->alpha, 0));                                 \
        const O::V sum = r_update_chunk<O, false>(blockIdx.x, n, minus_alpha, q, r);            \
        cgs_update<O>(s, rec, cap, partial, denominator, tol, identity, sum);                   \
    }                                                                                           \
    extern "C" __global__ void cgs_update_partials_##P(long long n, const cg_state<O::T>* s,    \
                                                       const O::T* __restrict__ q,              \
                                                       O::T* __restrict__ r, O::T* partial) {   \
        if (s->frozen) return;                                                                  \
        const O::V minus_alpha = O::neg(O::load(&s->alpha, 0));                                 \
        const O::V sum = r_update_chunk<O, false>(blockIdx.x, n, minus_alpha, q, r);            \
        if (threadIdx.x == 0) O::store(partial, blockIdx.x, sum);                               \
    }                                                                                           \
    extern "C" __global__ void cgs_close_##P(int m, const O::T* partial, cg_state<O::T>* s,     \
                                             cg_record<O::T>* rec, int cap, double denominator, \
                                             double tol, int identity) {                        \
        if (s->frozen) return;                                                                  \
        const O::V rr = O::chunks_final(m, partial);                                            \
        if (threadIdx.x != 0) return;                                                           \
        cgs_close<O>(rr, s, rec, cap, denominator, tol, identity);                              \
    }

CG_STEPS(f64, f64_ops)
CG_STEPS(dd, dd_ops)
