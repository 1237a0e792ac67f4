// Double-double device arithmetic: the twin of src/precision/dd.rs, operation for operation.
// Every rounding is explicit (__dadd_rn, __dmul_rn, __fma_rn) and NVRTC runs with --fmad=false,
// so no multiply-add is contracted behind our back: GPU and CPU give the same bits.
// Algorithms: QD library (Hida, Li, Bailey), thesis ch. 2 Alg. 1-6.

struct dd_t {
    double hi;
    double lo;
};

// TwoSum (Knuth; thesis Alg. 1).
__device__ __forceinline__ dd_t dd_two_sum(double a, double b) {
    double s = __dadd_rn(a, b);
    double v = __dsub_rn(s, a);
    double e = __dadd_rn(__dsub_rn(a, __dsub_rn(s, v)), __dsub_rn(b, v));
    dd_t r = {s, e};
    return r;
}

// QuickTwoSum (Dekker; thesis Alg. 2), |a| >= |b|.
__device__ __forceinline__ dd_t dd_quick_two_sum(double a, double b) {
    double s = __dadd_rn(a, b);
    double e = __dsub_rn(b, __dsub_rn(s, a));
    dd_t r = {s, e};
    return r;
}

// TwoProdFMA (Karp & Markstein; thesis Alg. 3).
__device__ __forceinline__ dd_t dd_two_prod(double a, double b) {
    double p = __dmul_rn(a, b);
    double e = __fma_rn(a, b, -p);
    dd_t r = {p, e};
    return r;
}

__device__ __forceinline__ dd_t dd_from_f64(double x) {
    dd_t r = {x, 0.0};
    return r;
}

__device__ __forceinline__ dd_t dd_neg(dd_t a) {
    dd_t r = {-a.hi, -a.lo};
    return r;
}

// QuadAdd (Bailey; thesis Alg. 4, QD ieee_add): the accurate add.
__device__ __forceinline__ dd_t dd_add(dd_t a, dd_t b) {
    dd_t s = dd_two_sum(a.hi, b.hi);
    dd_t t = dd_two_sum(a.lo, b.lo);
    double s2 = __dadd_rn(s.lo, t.hi);
    dd_t u = dd_quick_two_sum(s.hi, s2);
    double u2 = __dadd_rn(u.lo, t.lo);
    return dd_quick_two_sum(u.hi, u2);
}

__device__ __forceinline__ dd_t dd_sub(dd_t a, dd_t b) {
    return dd_add(a, dd_neg(b));
}

// QuadMul (Bailey; thesis Alg. 6, QD operator*): a.lo * b.lo is not used.
__device__ __forceinline__ dd_t dd_mul(dd_t a, dd_t b) {
    dd_t p = dd_two_prod(a.hi, b.hi);
    double cross = __dadd_rn(__dmul_rn(a.hi, b.lo), __dmul_rn(a.lo, b.hi));
    double p2 = __dadd_rn(p.lo, cross);
    return dd_quick_two_sum(p.hi, p2);
}

// Double-double times double (QD operator*(dd_real, double)).
__device__ __forceinline__ dd_t dd_mul_f64(dd_t a, double b) {
    dd_t p = dd_two_prod(a.hi, b);
    double p2 = __dadd_rn(p.lo, __dmul_rn(a.lo, b));
    return dd_quick_two_sum(p.hi, p2);
}

__device__ __forceinline__ dd_t dd_load(const double2* __restrict__ v, long long i) {
    double2 x = v[i];
    dd_t r = {x.x, x.y};
    return r;
}

__device__ __forceinline__ void dd_store(double2* v, long long i, dd_t a) {
    v[i] = make_double2(a.hi, a.lo);
}

// Scalars arrive from the host as double2 by value (Rust's #[repr(C)] Dd).
__device__ __forceinline__ dd_t dd_of(double2 x) {
    dd_t r = {x.x, x.y};
    return r;
}

// Accurate division (QD accurate_div), as Dd::div.
__device__ __forceinline__ dd_t dd_div(dd_t a, dd_t b) {
    const double q1 = __ddiv_rn(a.hi, b.hi);
    dd_t r = dd_sub(a, dd_mul_f64(b, q1));
    const double q2 = __ddiv_rn(r.hi, b.hi);
    r = dd_sub(r, dd_mul_f64(b, q2));
    const double q3 = __ddiv_rn(r.hi, b.hi);
    dd_t q = dd_quick_two_sum(q1, q2);
    return dd_add(q, dd_from_f64(q3));
}

// Precision::to_f64 for Dd: hi + lo, rounded.
__device__ __forceinline__ double dd_to_f64(dd_t a) {
    return __dadd_rn(a.hi, a.lo);
}

// Square root by one Newton step from the double root (Karp's trick, QD sqrt), as Dd::sqrt.
__device__ __forceinline__ dd_t dd_sqrt(dd_t a) {
    if (a.hi == 0.0) return dd_from_f64(0.0);
    if (a.hi < 0.0 || isnan(a.hi)) return dd_from_f64(__longlong_as_double(0x7ff8000000000000LL));
    if (isinf(a.hi)) return a;
    const double x = __ddiv_rn(1.0, __dsqrt_rn(a.hi));
    const double ax = __dmul_rn(a.hi, x);
    const dd_t diff = dd_sub(a, dd_two_prod(ax, ax));
    return dd_two_sum(ax, __dmul_rn(diff.hi, __dmul_rn(x, 0.5)));
}
