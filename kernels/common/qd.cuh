// Quad-double device arithmetic: the twin of src/precision/qd.rs, operation for operation (same
// argument order, same left-to-right grouping, the same data-dependent branches). Every
// rounding is explicit (__dadd_rn, __dmul_rn, __fma_rn through dd.cuh's error-free
// transformations) and NVRTC runs with --fmad=false. Data-dependent indices of the Rust code
// (the merge's two pointers, VecSumErrBranch's output slot) become register queues and selects
// here, so nothing spills to local memory; the values and branches taken are the same.

struct qd_t {
    double x0, x1, x2, x3;
};

// A vector element (4 doubles, 32 bytes) and a scalar argument by value (Rust's #[repr(C)] Qd).
struct qd_elem {
    double v[4];
};

__device__ __forceinline__ qd_t qd_make(double a, double b, double c, double d) {
    qd_t r = {a, b, c, d};
    return r;
}

__device__ __forceinline__ qd_t qd_from_f64(double a) { return qd_make(a, 0.0, 0.0, 0.0); }

__device__ __forceinline__ qd_t qd_of(qd_elem e) { return qd_make(e.v[0], e.v[1], e.v[2], e.v[3]); }

__device__ __forceinline__ qd_t qd_load(const double* __restrict__ v, long long i) {
    const double2* p = reinterpret_cast<const double2*>(v) + 2 * i;
    const double2 a = p[0];
    const double2 b = p[1];
    return qd_make(a.x, a.y, b.x, b.y);
}

__device__ __forceinline__ void qd_store(double* v, long long i, qd_t a) {
    double2* p = reinterpret_cast<double2*>(v) + 2 * i;
    p[0] = make_double2(a.x0, a.x1);
    p[1] = make_double2(a.x2, a.x3);
}

__device__ __forceinline__ qd_t qd_neg(qd_t a) { return qd_make(-a.x0, -a.x1, -a.x2, -a.x3); }

__device__ __forceinline__ bool qd_is_finite(qd_t a) {
    return isfinite(a.x0) && isfinite(a.x1) && isfinite(a.x2) && isfinite(a.x3);
}

__device__ __forceinline__ bool qd_nonzero(qd_t a) {
    return a.x0 != 0.0 || a.x1 != 0.0 || a.x2 != 0.0 || a.x3 != 0.0;
}

// QD three_sum: (a, b, c) in place.
__device__ __forceinline__ void qd_three_sum(double& a, double& b, double& c) {
    const dd_t t = dd_two_sum(a, b);
    const dd_t u = dd_two_sum(c, t.hi);
    const dd_t w = dd_two_sum(t.lo, u.lo);
    a = u.hi;
    b = w.hi;
    c = w.lo;
}

// QD three_sum2: (a, b) <- (rounded sum, t2 + t3); c only read.
__device__ __forceinline__ void qd_three_sum2(double& a, double& b, double c) {
    const dd_t t = dd_two_sum(a, b);
    const dd_t u = dd_two_sum(c, t.hi);
    a = u.hi;
    b = __dadd_rn(t.lo, u.lo);
}

// QD renorm(c0, c1, c2, c3).
__device__ __forceinline__ qd_t qd_renorm4(double c0, double c1, double c2, double c3) {
    if (isinf(c0)) return qd_make(c0, c1, c2, c3);
    dd_t t = dd_quick_two_sum(c2, c3);
    double s0 = t.hi;
    c3 = t.lo;
    t = dd_quick_two_sum(c1, s0);
    s0 = t.hi;
    c2 = t.lo;
    t = dd_quick_two_sum(c0, s0);
    c0 = t.hi;
    c1 = t.lo;

    s0 = c0;
    double s1 = c1, s2 = 0.0, s3 = 0.0;
    if (s1 != 0.0) {
        t = dd_quick_two_sum(s1, c2); s1 = t.hi; s2 = t.lo;
        if (s2 != 0.0) {
            t = dd_quick_two_sum(s2, c3); s2 = t.hi; s3 = t.lo;
        } else {
            t = dd_quick_two_sum(s1, c3); s1 = t.hi; s2 = t.lo;
        }
    } else {
        t = dd_quick_two_sum(s0, c2); s0 = t.hi; s1 = t.lo;
        if (s1 != 0.0) {
            t = dd_quick_two_sum(s1, c3); s1 = t.hi; s2 = t.lo;
        } else {
            t = dd_quick_two_sum(s0, c3); s0 = t.hi; s1 = t.lo;
        }
    }
    return qd_make(s0, s1, s2, s3);
}

// QD renorm(c0, c1, c2, c3, c4).
__device__ __forceinline__ qd_t qd_renorm5(double c0, double c1, double c2, double c3, double c4) {
    if (isinf(c0)) return qd_make(c0, c1, c2, c3);
    dd_t t = dd_quick_two_sum(c3, c4);
    double s0 = t.hi;
    c4 = t.lo;
    t = dd_quick_two_sum(c2, s0); s0 = t.hi; c3 = t.lo;
    t = dd_quick_two_sum(c1, s0); s0 = t.hi; c2 = t.lo;
    t = dd_quick_two_sum(c0, s0); c0 = t.hi; c1 = t.lo;

    s0 = c0;
    double s1 = c1, s2 = 0.0, s3 = 0.0;
    if (s1 != 0.0) {
        t = dd_quick_two_sum(s1, c2); s1 = t.hi; s2 = t.lo;
        if (s2 != 0.0) {
            t = dd_quick_two_sum(s2, c3); s2 = t.hi; s3 = t.lo;
            if (s3 != 0.0) {
                s3 = __dadd_rn(s3, c4);
            } else {
                t = dd_quick_two_sum(s2, c4); s2 = t.hi; s3 = t.lo;
            }
        } else {
            t = dd_quick_two_sum(s1, c3); s1 = t.hi; s2 = t.lo;
            if (s2 != 0.0) {
                t = dd_quick_two_sum(s2, c4); s2 = t.hi; s3 = t.lo;
            } else {
                t = dd_quick_two_sum(s1, c4); s1 = t.hi; s2 = t.lo;
            }
        }
    } else {
        t = dd_quick_two_sum(s0, c2); s0 = t.hi; s1 = t.lo;
        if (s1 != 0.0) {
            t = dd_quick_two_sum(s1, c3); s1 = t.hi; s2 = t.lo;
            if (s2 != 0.0) {
                t = dd_quick_two_sum(s2, c4); s2 = t.hi; s3 = t.lo;
            } else {
                t = dd_quick_two_sum(s1, c4); s1 = t.hi; s2 = t.lo;
            }
        } else {
            t = dd_quick_two_sum(s0, c3); s0 = t.hi; s1 = t.lo;
            if (s1 != 0.0) {
                t = dd_quick_two_sum(s1, c4); s1 = t.hi; s2 = t.lo;
            } else {
                t = dd_quick_two_sum(s0, c4); s0 = t.hi; s1 = t.lo;
            }
        }
    }
    return qd_make(s0, s1, s2, s3);
}

// The accurate addition (JMMP: merge, VecSum, VecSumErrBranch to four terms), as Qd::add.
__device__ __forceinline__ qd_t qd_add(qd_t a, qd_t b) {
    // merge8: two-pointer merge by decreasing magnitude, ties to a; the heads are a0 and b0,
    // taking one shifts its queue.
    double a0 = a.x0, a1 = a.x1, a2 = a.x2, a3 = a.x3;
    double b0 = b.x0, b1 = b.x1, b2 = b.x2, b3 = b.x3;
    int na = 4, nb = 4;
    double f[8];
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const bool take_a = nb == 0 || (na > 0 && fabs(a0) >= fabs(b0));
        if (take_a) {
            f[k] = a0;
            a0 = a1; a1 = a2; a2 = a3;
            na--;
        } else {
            f[k] = b0;
            b0 = b1; b1 = b2; b2 = b3;
            nb--;
        }
    }
    // vec_sum8
    double e[8];
    double s = f[7];
#pragma unroll
    for (int i = 6; i >= 0; i--) {
        const dd_t t = dd_two_sum(f[i], s);
        e[i + 1] = t.lo;
        s = t.hi;
    }
    e[0] = s;
    // vec_sum_err_branch, four outputs
    double r0 = 0.0, r1 = 0.0, r2 = 0.0, r3 = 0.0;
    int j = 0;
    double err = e[0];
    bool done = false;
#pragma unroll
    for (int k = 1; k < 8; k++) {
        if (!done) {
            const dd_t t = dd_two_sum(err, e[k]);
            if (j == 0) r0 = t.hi;
            else if (j == 1) r1 = t.hi;
            else if (j == 2) r2 = t.hi;
            else r3 = t.hi;
            if (t.lo != 0.0) {
                if (j == 3) {
                    done = true;
                } else {
                    j++;
                    err = t.lo;
                }
            } else {
                err = t.hi;
            }
        }
    }
    if (!done && err != 0.0) {
        if (j == 0) r0 = err;
        else if (j == 1) r1 = err;
        else if (j == 2) r2 = err;
        else r3 = err;
    }
    return qd_make(r0, r1, r2, r3);
}

__device__ __forceinline__ qd_t qd_sub(qd_t a, qd_t b) { return qd_add(a, qd_neg(b)); }

// QD operator+(qd_real, double).
__device__ __forceinline__ qd_t qd_add_f64(qd_t a, double b) {
    dd_t t = dd_two_sum(a.x0, b);
    const double c0 = t.hi;
    t = dd_two_sum(a.x1, t.lo);
    const double c1 = t.hi;
    t = dd_two_sum(a.x2, t.lo);
    const double c2 = t.hi;
    t = dd_two_sum(a.x3, t.lo);
    return qd_renorm5(c0, c1, c2, t.hi, t.lo);
}

// QD operator*(qd_real, double).
__device__ __forceinline__ qd_t qd_mul_f64(qd_t a, double b) {
    const dd_t pq0 = dd_two_prod(a.x0, b);
    const dd_t pq1 = dd_two_prod(a.x1, b);
    const dd_t pq2 = dd_two_prod(a.x2, b);
    const double p3 = __dmul_rn(a.x3, b);
    double q1 = pq1.lo, q2 = pq2.lo, p2 = pq2.hi;

    const double s0 = pq0.hi;
    const dd_t t = dd_two_sum(pq0.lo, pq1.hi);
    const double s1 = t.hi;
    double s2 = t.lo;
    qd_three_sum(s2, q1, p2);
    qd_three_sum2(q1, q2, p3);
    const double s3 = q1;
    const double s4 = __dadd_rn(q2, p2);
    return qd_renorm5(s0, s1, s2, s3, s4);
}

// QD qd_real::accurate_mul.
__device__ __forceinline__ qd_t qd_mul(qd_t a, qd_t b) {
    dd_t t = dd_two_prod(a.x0, b.x0);
    const double p0 = t.hi;
    double q0 = t.lo;
    t = dd_two_prod(a.x0, b.x1);
    double p1 = t.hi, q1 = t.lo;
    t = dd_two_prod(a.x1, b.x0);
    double p2 = t.hi, q2 = t.lo;
    t = dd_two_prod(a.x0, b.x2);
    double p3 = t.hi, q3 = t.lo;
    t = dd_two_prod(a.x1, b.x1);
    double p4 = t.hi, q4 = t.lo;
    t = dd_two_prod(a.x2, b.x0);
    double p5 = t.hi, q5 = t.lo;

    qd_three_sum(p1, p2, q0);

    qd_three_sum(p2, q1, q2);
    qd_three_sum(p3, p4, p5);
    t = dd_two_sum(p2, p3);
    const double s0 = t.hi;
    double t0 = t.lo;
    t = dd_two_sum(q1, p4);
    double s1 = t.hi;
    double t1 = t.lo;
    double s2 = __dadd_rn(q2, p5);
    t = dd_two_sum(s1, t0);
    s1 = t.hi;
    t0 = t.lo;
    s2 = __dadd_rn(s2, __dadd_rn(t0, t1));

    t = dd_two_prod(a.x0, b.x3);
    double p6 = t.hi;
    const double q6 = t.lo;
    t = dd_two_prod(a.x1, b.x2);
    double p7 = t.hi;
    const double q7 = t.lo;
    t = dd_two_prod(a.x2, b.x1);
    double p8 = t.hi;
    const double q8 = t.lo;
    t = dd_two_prod(a.x3, b.x0);
    double p9 = t.hi;
    const double q9 = t.lo;

    t = dd_two_sum(q0, q3); q0 = t.hi; q3 = t.lo;
    t = dd_two_sum(q4, q5); q4 = t.hi; q5 = t.lo;
    t = dd_two_sum(p6, p7); p6 = t.hi; p7 = t.lo;
    t = dd_two_sum(p8, p9); p8 = t.hi; p9 = t.lo;
    t = dd_two_sum(q0, q4);
    t0 = t.hi;
    t1 = __dadd_rn(t.lo, __dadd_rn(q3, q5));
    t = dd_two_sum(p6, p8);
    const double r0 = t.hi;
    const double r1 = __dadd_rn(t.lo, __dadd_rn(p7, p9));
    t = dd_two_sum(t0, r0);
    q3 = t.hi;
    q4 = __dadd_rn(t.lo, __dadd_rn(t1, r1));
    t = dd_two_sum(q3, s1);
    t0 = t.hi;
    t1 = __dadd_rn(t.lo, q4);

    double tail = __dadd_rn(__dmul_rn(a.x1, b.x3), __dmul_rn(a.x2, b.x2));
    tail = __dadd_rn(tail, __dmul_rn(a.x3, b.x1));
    tail = __dadd_rn(tail, q6);
    tail = __dadd_rn(tail, q7);
    tail = __dadd_rn(tail, q8);
    tail = __dadd_rn(tail, q9);
    tail = __dadd_rn(tail, s2);
    t1 = __dadd_rn(t1, tail);

    return qd_renorm5(p0, p1, s0, t0, t1);
}

// QD sqr(qd_real).
__device__ __forceinline__ qd_t qd_sqr(qd_t a) {
    dd_t t = dd_two_prod(a.x0, a.x0);
    const double p0 = t.hi;
    double q0 = t.lo;
    t = dd_two_prod(__dmul_rn(2.0, a.x0), a.x1);
    double p1 = t.hi, q1 = t.lo;
    t = dd_two_prod(__dmul_rn(2.0, a.x0), a.x2);
    double p2 = t.hi, q2 = t.lo;
    t = dd_two_prod(a.x1, a.x1);
    double p3 = t.hi, q3 = t.lo;

    t = dd_two_sum(q0, p1); p1 = t.hi; q0 = t.lo;
    t = dd_two_sum(q0, q1); q0 = t.hi; q1 = t.lo;
    t = dd_two_sum(p2, p3); p2 = t.hi; p3 = t.lo;

    t = dd_two_sum(q0, p2);
    const double s0 = t.hi;
    double t0 = t.lo;
    t = dd_two_sum(q1, p3);
    double s1 = t.hi;
    double t1 = t.lo;

    t = dd_two_sum(s1, t0); s1 = t.hi; t0 = t.lo;
    t0 = __dadd_rn(t0, t1);

    t = dd_quick_two_sum(s1, t0); s1 = t.hi; t0 = t.lo;
    t = dd_quick_two_sum(s0, s1); p2 = t.hi; t1 = t.lo;
    t = dd_quick_two_sum(t1, t0); p3 = t.hi; q0 = t.lo;

    double p4 = __dmul_rn(__dmul_rn(2.0, a.x0), a.x3);
    double p5 = __dmul_rn(__dmul_rn(2.0, a.x1), a.x2);

    t = dd_two_sum(p4, p5); p4 = t.hi; p5 = t.lo;
    t = dd_two_sum(q2, q3); q2 = t.hi; q3 = t.lo;

    t = dd_two_sum(p4, q2);
    t0 = t.hi;
    t1 = __dadd_rn(__dadd_rn(t.lo, p5), q3);

    t = dd_two_sum(p3, t0);
    p3 = t.hi;
    p4 = __dadd_rn(__dadd_rn(t.lo, q0), t1);

    return qd_renorm5(p0, p1, p2, p3, p4);
}

// QD qd_real::accurate_div.
__device__ __forceinline__ qd_t qd_div(qd_t a, qd_t b) {
    const double q0 = __ddiv_rn(a.x0, b.x0);
    qd_t r = qd_sub(a, qd_mul_f64(b, q0));
    const double q1 = __ddiv_rn(r.x0, b.x0);
    r = qd_sub(r, qd_mul_f64(b, q1));
    const double q2 = __ddiv_rn(r.x0, b.x0);
    r = qd_sub(r, qd_mul_f64(b, q2));
    const double q3 = __ddiv_rn(r.x0, b.x0);
    r = qd_sub(r, qd_mul_f64(b, q3));
    const double q4 = __ddiv_rn(r.x0, b.x0);
    return qd_renorm5(q0, q1, q2, q3, q4);
}

// QD sqrt(qd_real), as Qd::sqrt.
__device__ __noinline__ qd_t qd_sqrt(qd_t a) {
    const double a0 = a.x0;
    if (a0 == 0.0) return qd_from_f64(0.0);
    if (a0 < 0.0 || isnan(a0)) return qd_from_f64(__longlong_as_double(0x7ff8000000000000LL));
    if (isinf(a0)) return a;
    qd_t r = qd_from_f64(__ddiv_rn(1.0, __dsqrt_rn(a0)));
    const qd_t h = qd_make(__dmul_rn(a.x0, 0.5), __dmul_rn(a.x1, 0.5), __dmul_rn(a.x2, 0.5),
                           __dmul_rn(a.x3, 0.5));
    for (int k = 0; k < 3; k++) {
        const qd_t t = qd_add_f64(qd_neg(qd_mul(h, qd_sqr(r))), 0.5);
        r = qd_add(r, qd_mul(t, r));
    }
    return qd_mul(r, a);
}
