// ILU(0) helpers shared by kernels/ilu0.cu and kernels/ilu0_parts.cu.
//
// ilu_in / ilu_out: Precision::to_f64 of the right-hand side, Precision::from_f64 of the result,
// for each working precision, as src/backend/cpu/trisolve.rs.
// ilu_load_pair / ilu_store_pair: a result published with its readiness, {value, generation} as
// one 16-byte access (st/ld.volatile.v2, or relaxed GPU scope with sync == 3).

// Entries whose loads a row issues at once.
#define ILU_CHUNK 4

__device__ __forceinline__ double ilu_in(const double* r, int i) { return r[i]; }
__device__ __forceinline__ double ilu_in(const double2* r, int i) {
    const double2 v = r[i];
    return __dadd_rn(v.x, v.y);  // Dd::to_f64
}
__device__ __forceinline__ void ilu_out(double* z, int i, double x) { z[i] = x; }
__device__ __forceinline__ void ilu_out(double2* z, int i, double x) { z[i] = make_double2(x, 0.0); }
// td (structure of arrays, by value) and qd (4 doubles per element): Precision::to_f64 in,
// Precision::from_f64 out, as the CPU's trisolve.
__device__ __forceinline__ double ilu_in(td_ptr r, int i) { return dd_to_f64(td_load(r, i)); }
__device__ __forceinline__ void ilu_out(td_ptr z, int i, double x) { td_store(z, i, dd_from_f64(x)); }
__device__ __forceinline__ double ilu_in(const qd_elem* r, int i) { return r[i].v[0]; }
__device__ __forceinline__ void ilu_out(qd_elem* z, int i, double x) {
    qd_store(reinterpret_cast<double*>(z), i, qd_from_f64(x));
}

// sync == 3 uses relaxed GPU-scope accesses, the others volatile ones (relaxed, system scope).
__device__ __forceinline__ void ilu_load_pair(const double* w, int d, double& v,
                                              unsigned long long& g, int sync) {
    unsigned long long bits;
    if (sync == 3) {
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(bits), "=l"(g)
                     : "l"(w + 2 * (long long)d));
    } else {
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(bits), "=l"(g)
                     : "l"(w + 2 * (long long)d));
    }
    v = __longlong_as_double(bits);
}

__device__ __forceinline__ void ilu_store_pair(double* w, long long p, double v,
                                               unsigned long long g, int sync) {
    if (sync == 3) {
        asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(w + 2 * p),
                     "l"(__double_as_longlong(v)), "l"(g)
                     : "memory");
    } else {
        asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(w + 2 * p),
                     "l"(__double_as_longlong(v)), "l"(g)
                     : "memory");
    }
}
