// Triple precision (D+I, thesis section 2.3.4): the twin of src/precision/td.rs (pack/unpack)
// and src/precision/td_impl.rs (the working precision `td`). A vector is a structure of arrays:
// n doubles (hi) and n ints (the upper 32 bits of lo's encoding), passed to kernels as a td_ptr.
// Values live in registers as dd_t (a load widens exactly). The vector kernels (kernels/xprec.cu,
// TdOps::a_*) compute in DD and round once per stored element (td_store packs; td_round where a
// rounded value is used again), as the CPU's kernels do with Precision::Acc = Dd; the scalar
// operations (TdOps::add, div, sqrt, ...) are the dd.cuh routine followed by one td_round,
// exactly as Td's Precision impl does on the CPU.

struct td_ptr {
    double* hi;
    int* lo;
};

// Listing 2.2: lo = the 32 stored bits followed by 32 zero bits. Exact.
__device__ __forceinline__ dd_t td_unpack(double hi, int lo_bits) {
    const unsigned long long bits = ((unsigned long long)(unsigned int)lo_bits) << 32;
    dd_t r = {hi, __longlong_as_double((long long)bits)};
    return r;
}

// Listing 2.1 (round to nearest even on the dropped 32 bits), renormalised by QuickTwoSum; as
// td::pack, including the non-finite and overflow cases.
__device__ __forceinline__ void td_pack(dd_t x, double& hi, int& lo) {
    if (!(isfinite(x.hi) && isfinite(x.lo))) {
        hi = __dadd_rn(x.hi, x.lo);
        lo = 0;
        return;
    }
    const unsigned long long bits = (unsigned long long)__double_as_longlong(x.lo);
    unsigned int upper = (unsigned int)(bits >> 32);
    const unsigned int lower = (unsigned int)bits;
    if (lower > 0x80000000u || (lower == 0x80000000u && (upper & 1u) == 1u)) upper += 1u;
    const double lo_r = __longlong_as_double((long long)(((unsigned long long)upper) << 32));
    const dd_t q = dd_quick_two_sum(x.hi, lo_r);
    if (isfinite(q.hi)) {
        hi = q.hi;
        lo = (int)(unsigned int)(((unsigned long long)__double_as_longlong(q.lo)) >> 32);
    } else {
        hi = x.hi;
        lo = (int)upper;
    }
}

// unpack(pack(x)): the value a td store keeps.
__device__ __forceinline__ dd_t td_round(dd_t x) {
    double hi;
    int lo;
    td_pack(x, hi, lo);
    return td_unpack(hi, lo);
}

__device__ __forceinline__ dd_t td_load(td_ptr v, long long i) {
    return td_unpack(v.hi[i], v.lo[i]);
}

__device__ __forceinline__ void td_store(td_ptr v, long long i, dd_t a) {
    double hi;
    int lo;
    td_pack(a, hi, lo);
    v.hi[i] = hi;
    v.lo[i] = lo;
}
