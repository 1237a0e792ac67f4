// The kernels of xprec.cu's templates for mp:<bits> (compiled after common/mp.cuh and xprec.cu
// as one source per precision, `mp{bits}`, with MP_LIMBS, MP_BITS and MP_SUFFIX defined first:
// kernel names end in `_mp{bits}`). Vectors are limb-major structures of arrays, as MPRES-BLAS
// lays out its digits: limb l of element i at base[l * stride + i], the header word (exponent,
// precision, sign, kind) at base[MP_LIMBS * stride + i], so a warp's loads of one limb are
// coalesced. Scalars are passed by value in the packed form (limbs, then the header).
//
// Every operation is correctly rounded, and the templates keep the CPU's order (the compute
// type is the precision itself, as for qd), so the kernels give the CPU backend's bits.

struct mp_ptr {
    mp_u64* base;
    long long stride;
};
struct mp_s {
    mp_u64 w[MP_LIMBS + 1];
};

struct MpOps {
    typedef mp_t V;
    typedef mp_ptr Vec;
    typedef mp_s S;
    // A reduction's block of values in shared memory, at most 48 KiB: beyond 1,024 bits half
    // a block (xprec.cu's tree_reduce_x).
    enum { W = MP_LIMBS + 1, SLOTS = MP_LIMBS > 16 ? DOT_THREADS / 2 : DOT_THREADS };
    static __device__ __forceinline__ V load(Vec v, long long i) {
        return mp_unpack(v.base + i, v.stride, v.base[MP_LIMBS * v.stride + i]);
    }
    static __device__ __forceinline__ void store(Vec v, long long i, V a) {
        mp_pack(a, v.base + i, v.stride, v.base + MP_LIMBS * v.stride + i);
    }
    static __device__ __forceinline__ Vec at(Vec v, long long i) {
        Vec r = {v.base + i, v.stride};
        return r;
    }
    static __device__ __forceinline__ V of(S s) { return mp_unpack(s.w, 1, s.w[MP_LIMBS]); }
    static __device__ __forceinline__ V zero() { return mp_special(MP_ZERO, 0, MP_BITS); }
    static __device__ __forceinline__ V from_f64(double x) { return mp_from_f64(x, MP_BITS); }
    static __device__ __forceinline__ V add(V a, V b) { return mp_add(a, b); }
    static __device__ __forceinline__ V sub(V a, V b) { return mp_sub(a, b); }
    static __device__ __forceinline__ V mul(V a, V b) { return mp_mul(a, b); }
    static __device__ __forceinline__ V div(V a, V b) { return mp_div(a, b); }
    static __device__ __forceinline__ V sqrt(V a) { return mp_sqrt(a); }
    static __device__ __forceinline__ V neg(V a) { return mp_neg(a); }
    // The compute type is mp itself.
    typedef mp_t A;
    typedef mp_ptr AVec;
    static __device__ __forceinline__ A a_zero() { return zero(); }
    static __device__ __forceinline__ A a_from_f64(double x) { return from_f64(x); }
    static __device__ __forceinline__ A a_add(A a, A b) { return mp_add(a, b); }
    static __device__ __forceinline__ A a_sub(A a, A b) { return mp_sub(a, b); }
    static __device__ __forceinline__ A a_mul(A a, A b) { return mp_mul(a, b); }
    // Two roundings, as the CPU's: the step rounded once (MPFR's fma) measured 1-11% slower
    // an iteration (benches/results/mp-gpu.md, "Tried, not kept").
    static __device__ __forceinline__ A a_add_mul_f64(A s, double a, A x) {
        return mp_add(s, mp_mul_f64(x, a));
    }
    static __device__ __forceinline__ V round(A a) { return a; }
    static __device__ __forceinline__ A a_load(AVec v, long long i) { return load(v, i); }
    static __device__ __forceinline__ void a_store(AVec v, long long i, A a) { store(v, i, a); }
    static __device__ __forceinline__ double to_f64(V a) { return mp_to_f64(a); }
    static __device__ __forceinline__ bool is_finite(V a) {
        return a.kind == MP_ZERO || a.kind == MP_NORMAL;
    }
    static __device__ __forceinline__ bool nonzero(V a) { return a.kind != MP_ZERO; }
    static __device__ __forceinline__ bool flag(V a) { return a.kind != MP_ZERO; }
    static __device__ __forceinline__ void put(double* sh, int t, V a) {
        mp_u64* w = (mp_u64*)sh;
        mp_pack(a, w + t, SLOTS, w + MP_LIMBS * SLOTS + t);
    }
    static __device__ __forceinline__ V get(const double* sh, int t) {
        const mp_u64* w = (const mp_u64*)sh;
        return mp_unpack(w + t, SLOTS, w[MP_LIMBS * SLOTS + t]);
    }
    static __device__ __forceinline__ V shfl_down(V a, int off, int width) {
        V r;
        for (int l = 0; l < MP_LIMBS; l++) r.s[l] = __shfl_down_sync(0xffffffffu, a.s[l], off, width);
        const mp_u64 h = __shfl_down_sync(0xffffffffu, mp_header(a), off, width);
        r.exp = (int)(unsigned int)(h & 0xffffffffULL);
        r.bits = (int)((h >> 32) & 0xffff);
        r.neg = (int)((h >> 48) & 1);
        r.kind = (int)(h >> 56);
        return r;
    }
};

// The module holds one group of the precision's kernels (MP_PIECE: 0 the dots, CG's updates and
// the conversions, 1 BiCGStab's, 2 the SpMVs), so that the three compile in parallel; the
// macros paste their first argument: expand MP_SUFFIX (mp256) first.
#define X_KERNELS_CORE_OF(P, O) X_KERNELS_CORE(P, O)
#define X_KERNELS_BICG_OF(P, O) X_KERNELS_BICG(P, O)
#define X_KERNELS_SPMV_OF(P, O) X_KERNELS_SPMV(P, O)
#if MP_PIECE == 1
X_KERNELS_BICG_OF(MP_SUFFIX, MpOps)
#elif MP_PIECE == 2
X_KERNELS_SPMV_OF(MP_SUFFIX, MpOps)
#else
X_KERNELS_CORE_OF(MP_SUFFIX, MpOps)

#define MP_CONVERTS(P)                                                                         \
    extern "C" __global__ void convert_f64_to_##P(long long n, const double* x, mp_ptr y) {   \
        ELEMENT_INDEX                                                                          \
        MpOps::store(y, i, mp_from_f64(x[i], MP_BITS));                                        \
    }                                                                                          \
    extern "C" __global__ void convert_##P##_to_f64(long long n, mp_ptr x, double* y) {       \
        ELEMENT_INDEX                                                                          \
        y[i] = mp_to_f64(MpOps::load(x, i));                                                   \
    }                                                                                          \
    /* The CPU's MpFloat::to_dd: hi the nearest double, lo the nearest to x - hi (exact at */   \
    /* x's precision): the true residual's iterate where the precision is at most dd's. */      \
    extern "C" __global__ void convert_##P##_to_dd(long long n, mp_ptr x, double2* y) {       \
        ELEMENT_INDEX                                                                          \
        const mp_t v = MpOps::load(x, i);                                                      \
        const double hi = mp_to_f64(v);                                                        \
        const double lo = isfinite(hi) ? mp_to_f64(mp_sub(v, mp_from_f64(hi, v.bits))) : 0.0;  \
        y[i] = make_double2(hi, lo);                                                           \
    }
#define MP_CONVERTS_OF(P) MP_CONVERTS(P)
MP_CONVERTS_OF(MP_SUFFIX)
#endif
