// mp:<bits> on the device: the twin of src/precision/mpfloat (MpFloat<L>), one number per thread,
// MP_LIMBS 64-bit limbs (defined before this header, as the source is compiled for one limb
// count). Every operation is correctly rounded (to nearest, ties to even, at the operands' larger
// precision), so each result is unique and equals the CPU's bit for bit whatever the algorithm;
// the algorithms are still the CPU's (guard limb and sticky bit for add, schoolbook product,
// Knuth's division, Newton's integer square root), in the same file structure: limbs, rounding,
// operations. Only the integer steps are the device's own: the product's limbs are formed on
// 32-bit halves and the sums' carries ripple through the hardware's carry flag (mp_mul32,
// mp_add_n), the same integers as the CPU's 64-bit limbs.
//
// Packed form (device memory and kernel arguments): MP_LIMBS limbs, then one header word:
// exponent (int32) in bits 0-31, precision in bits 32-47, sign in bit 48, kind in bits 56-63
// (0 zero, 1 normal, 2 infinity, 3 NaN). Value = 0.1xxx * 2^exp, MPFR's convention.

#ifdef MP_LIMBS
typedef unsigned long long mp_u64;

#define MP_EMAX ((1 << 30) - 1)
#define MP_EMIN (1 - (1 << 30))
#define MP_ZERO 0
#define MP_NORMAL 1
#define MP_INF 2
#define MP_NAN 3
// The widest integer an operation forms: a square root's 2L + 3 limbs and a spare.
#define MP_WIDE (2 * MP_LIMBS + 4)

// Up to 256 bits the operations the vector kernels use are inlined at each use, their limb loops
// unrolled so that their arrays stay in registers (the fixed-size section below); at 512 bits
// the same code is one function a module (inlined, it makes tens of MB of PTX for the driver to
// compile). From 1,024 bits the unrolled code spills more than the general loops cost (mp:1024
// CG on poisson3d:200, H200: 80 ms an iteration against 54), so those keep the general loops
// (MP_WIDE_LOOPS), all but the near sum (exponents less than a limb apart: most of a solve's
// sums) and the products' rounding, whose few arrays stay in registers: a third off an mp:1024
// iteration, and faster at 2,048 bits although ptxas spills more there. There the sum and the
// products (MP_OP) are left to the compiler, which inlines them, and the general rounding, the
// whole product, the division, the square root and the conversion (MP_FN) are one function a
// module: all inlined, a module took NVRTC 97 s on a lent H100's host and all out of line 22 s,
// but an iteration 32% longer (`benches/results/mp-gpu.md`, "First use"; MP_WIDE_INLINE and
// MP_WIDE_NOINLINE, defines for measuring, build the other two). Either way every result is the
// correctly rounded one.
#if MP_LIMBS <= 4
#define MP_OP __device__ __forceinline__
#define MP_UNROLL _Pragma("unroll")
#elif MP_LIMBS <= 8
#define MP_OP __device__ __noinline__
#define MP_UNROLL _Pragma("unroll")
#else
#define MP_UNROLL
#define MP_WIDE_LOOPS
#endif
#if defined(MP_WIDE_LOOPS) && !defined(MP_WIDE_INLINE)
#define MP_FN __device__ __noinline__
#else
#define MP_FN __device__
#endif
#ifndef MP_OP
#ifdef MP_WIDE_NOINLINE
#define MP_OP MP_FN
#else
#define MP_OP __device__
#endif
#endif

struct mp_t {
    mp_u64 s[MP_LIMBS];
    int exp;
    int bits;
    int neg;
    int kind;
};

// ---- limbs (little-endian), as src/precision/mpfloat/limbs.rs -------------------------------

__device__ __forceinline__ int mp_leading_zeros(const mp_u64* x, int n) {
    int z = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (x[i] != 0) return z + __clzll(x[i]);
        z += 64;
    }
    return z;
}

__device__ __forceinline__ void mp_shl(mp_u64* x, int n, int s) {
    const int limbs = s / 64, bits = s % 64;
    if (limbs > 0) {
        for (int i = n - 1; i >= limbs; i--) x[i] = x[i - limbs];
        for (int i = 0; i < limbs; i++) x[i] = 0;
    }
    if (bits > 0) {
        for (int i = n - 1; i > limbs; i--) x[i] = (x[i] << bits) | (x[i - 1] >> (64 - bits));
        x[limbs] <<= bits;
    }
}

// x >>= s; returns whether a nonzero bit was shifted out
__device__ __forceinline__ bool mp_shr(mp_u64* x, int n, long long s) {
    if (s >= 64LL * n) {
        bool lost = false;
        for (int i = 0; i < n; i++) {
            lost |= x[i] != 0;
            x[i] = 0;
        }
        return lost;
    }
    const int limbs = (int)(s / 64), bits = (int)(s % 64);
    bool lost = false;
    for (int i = 0; i < limbs; i++) lost |= x[i] != 0;
    if (limbs > 0) {
        for (int i = 0; i < n - limbs; i++) x[i] = x[i + limbs];
        for (int i = n - limbs; i < n; i++) x[i] = 0;
    }
    if (bits > 0) {
        lost |= (x[0] << (64 - bits)) != 0;
        for (int i = 0; i < n - 1; i++) x[i] = (x[i] >> bits) | (x[i + 1] << (64 - bits));
        x[n - 1] >>= bits;
    }
    return lost;
}

__device__ __forceinline__ bool mp_add_assign(mp_u64* x, const mp_u64* y, int n) {
    mp_u64 carry = 0;
    for (int i = 0; i < n; i++) {
        mp_u64 s = x[i] + y[i];
        mp_u64 c1 = s < x[i];
        mp_u64 t = s + carry;
        mp_u64 c2 = t < s;
        x[i] = t;
        carry = c1 | c2;
    }
    return carry != 0;
}

__device__ __forceinline__ bool mp_sub_assign(mp_u64* x, const mp_u64* y, int n) {
    mp_u64 borrow = 0;
    for (int i = 0; i < n; i++) {
        mp_u64 d = x[i] - y[i];
        mp_u64 b1 = x[i] < y[i];
        mp_u64 t = d - borrow;
        mp_u64 b2 = d < borrow;
        x[i] = t;
        borrow = b1 | b2;
    }
    return borrow != 0;
}

// out (nx + ny limbs) = x * y; zero limbs of x are skipped
__device__ __forceinline__ void mp_mul_limbs(const mp_u64* x, int nx, const mp_u64* y, int ny,
                                             mp_u64* out) {
    for (int i = 0; i < nx + ny; i++) out[i] = 0;
    for (int i = 0; i < nx; i++) {
        const mp_u64 a = x[i];
        if (a == 0) continue;
        mp_u64 carry = 0;
        for (int j = 0; j < ny; j++) {
            const mp_u64 lo = a * y[j], hi = __umul64hi(a, y[j]);
            mp_u64 t = out[i + j] + lo;
            mp_u64 c = t < lo;
            mp_u64 t2 = t + carry;
            c += t2 < t;
            out[i + j] = t2;
            carry = hi + c;
        }
        out[i + ny] = carry;
    }
}

__device__ __forceinline__ int mp_cmp(const mp_u64* x, const mp_u64* y, int n) {
    for (int i = n - 1; i >= 0; i--) {
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    }
    return 0;
}

// q = floor(u / v), u = u mod v (the remainder in u's low nv limbs). v's top limb nonzero,
// q has nu - nv + 1 limbs, nu + 1 <= MP_WIDE + 1. Knuth's Algorithm D with 64-bit limbs: the
// two-limb estimate divided by the top limb through a 128-by-64 division done in halves.
__device__ __forceinline__ mp_u64 mp_div128(mp_u64 hi, mp_u64 lo, mp_u64 d, mp_u64* rem) {
    // (hi, lo) / d with hi < d, d normalised (top bit set): schoolbook on 32-bit digits
    const mp_u64 d1 = d >> 32, d0 = d & 0xffffffffULL;
    mp_u64 q1 = hi / d1, r = hi % d1;
    while (q1 >> 32 || q1 * d0 > ((r << 32) | (lo >> 32))) {
        q1--;
        r += d1;
        if (r >> 32) break;
    }
    const mp_u64 u1 = (hi << 32) | (lo >> 32);
    const mp_u64 mid = u1 - q1 * d;
    mp_u64 q0 = mid / d1;
    r = mid % d1;
    while (q0 >> 32 || q0 * d0 > ((r << 32) | (lo & 0xffffffffULL))) {
        q0--;
        r += d1;
        if (r >> 32) break;
    }
    const mp_u64 u0 = (mid << 32) | (lo & 0xffffffffULL);
    *rem = u0 - q0 * d;
    return (q1 << 32) | q0;
}

MP_FN void mp_div_rem(mp_u64* u, int nu, const mp_u64* v, int nv, mp_u64* q) {
    const int m = nu - nv;
    for (int i = 0; i <= m; i++) q[i] = 0;
    const int s = __clzll(v[nv - 1]);
    mp_u64 vn[MP_WIDE];
    mp_u64 un[MP_WIDE + 1];
    for (int i = 0; i < nv; i++) vn[i] = v[i];
    mp_shl(vn, nv, s);
    for (int i = 0; i < nu; i++) un[i] = u[i];
    un[nu] = 0;
    mp_shl(un, nu + 1, s);
    if (s > 0) un[nu] |= u[nu - 1] >> (64 - s);
    const mp_u64 vtop = vn[nv - 1];
    const mp_u64 vnext = nv >= 2 ? vn[nv - 2] : 0;
    for (int j = m; j >= 0; j--) {
        // estimate q^ = (un[j+nv], un[j+nv-1]) / vtop, at most b - 1
        mp_u64 qhat, rhat;
        bool rhat_big = false;
        if (un[j + nv] >= vtop) {
            qhat = ~0ULL;
            // rhat = (un[j+nv] * b + un[j+nv-1]) - qhat * vtop = un[j+nv-1] + vtop (may overflow)
            rhat = un[j + nv - 1] + vtop;
            rhat_big = rhat < vtop;
        } else {
            qhat = mp_div128(un[j + nv], un[j + nv - 1], vtop, &rhat);
        }
        if (nv >= 2) {
            while (!rhat_big) {
                // qhat * vnext > rhat * b + un[j+nv-2] ?
                const mp_u64 plo = qhat * vnext, phi = __umul64hi(qhat, vnext);
                const mp_u64 third = un[j + nv - 2];
                if (phi > rhat || (phi == rhat && plo > third)) {
                    qhat--;
                    const mp_u64 r2 = rhat + vtop;
                    rhat_big = r2 < rhat;
                    rhat = r2;
                } else {
                    break;
                }
            }
        }
        // multiply and subtract
        mp_u64 borrow = 0, carry = 0;
        for (int i = 0; i < nv; i++) {
            const mp_u64 plo = qhat * vn[i], phi = __umul64hi(qhat, vn[i]);
            const mp_u64 p = plo + carry;
            carry = phi + (p < plo);
            const mp_u64 t = un[i + j] - p;
            const mp_u64 b1 = un[i + j] < p;
            const mp_u64 t2 = t - borrow;
            const mp_u64 b2 = t < borrow;
            un[i + j] = t2;
            borrow = b1 | b2;
        }
        const mp_u64 top = un[j + nv];
        const mp_u64 t = top - carry;
        const bool b1 = top < carry;
        const mp_u64 t2 = t - borrow;
        const bool b2 = t < borrow;
        un[j + nv] = t2;
        if (b1 || b2) {
            // q^ was one too large: add back
            qhat--;
            const bool c = mp_add_assign(un + j, vn, nv);
            un[j + nv] += c;
        }
        q[j] = qhat;
    }
    mp_shr(un, nv + 1, s);
    for (int i = 0; i < nu; i++) u[i] = i < nv ? un[i] : 0;
}

// root = floor(sqrt(x)), Newton's iteration from a power of two above the root
MP_FN void mp_isqrt(const mp_u64* x, int nx, mp_u64* root, int nr) {
    const int bits = 64 * nx - mp_leading_zeros(x, nx);
    for (int i = 0; i < nr; i++) root[i] = 0;
    if (bits == 0) return;
    const int start = (bits + 1) / 2;
    root[start / 64] = 1ULL << (start % 64);
    mp_u64 num[MP_WIDE], quot[MP_WIDE], next[MP_WIDE];
    for (;;) {
        int rlen = nr;
        while (rlen > 0 && root[rlen - 1] == 0) rlen--;
        const int nn = nx > rlen ? nx : rlen;
        for (int i = 0; i < nn; i++) num[i] = i < nx ? x[i] : 0;
        mp_div_rem(num, nn, root, rlen, quot);
        const int nq = nn - rlen + 1;
        for (int i = 0; i <= nr; i++) next[i] = i < nq ? quot[i] : 0;
        const bool carry = mp_add_assign(next, root, nr);
        next[nr] += carry;
        mp_shr(next, nr + 1, 1);
        if (mp_cmp(next, root, nr) >= 0) return;
        for (int i = 0; i < nr; i++) root[i] = next[i];
    }
}

// ---- fixed-size limb arrays -------------------------------------------------------------------
// The operations the vector kernels run (add, sub, mul, mul_f64 and their rounding) work on
// arrays whose length is known when the kernel is compiled, with every index a constant once the
// loops are unrolled and every shift a barrel of selects: the arrays stay in registers. (With a
// shift's limb count as an index, or an array behind a pointer, they live in local memory, and
// that was most of an iteration's time.) Division and square root, run only on scalars, keep the
// general helpers above.

template <int N>
__device__ __forceinline__ int mp_clz_n(const mp_u64 (&x)[N]) {
    int z = 0;
    bool found = false;
#pragma unroll
    for (int i = N - 1; i >= 0; i--) {
        z += found ? 0 : __clzll(x[i]);
        found = found || x[i] != 0;
    }
    return z;
}

// x <<= b, 0 <= b < 64
template <int N>
__device__ __forceinline__ void mp_shl_bits_n(mp_u64 (&x)[N], int b) {
#pragma unroll
    for (int i = N - 1; i > 0; i--) x[i] = (x[i] << b) | ((x[i - 1] >> 1) >> (63 - b));
    x[0] <<= b;
}

// x <<= s, 0 <= s < 64 N
template <int N>
__device__ __forceinline__ void mp_shl_n(mp_u64 (&x)[N], int s) {
    const int limbs = s >> 6, b = s & 63;
    if (limbs != 0) {  // only after a cancellation: products and most sums shift by bits
#pragma unroll
        for (int k = 0; (1 << k) < N; k++) {
            const int step = 1 << k;
            const bool on = (limbs & step) != 0;
#pragma unroll
            for (int i = N - 1; i >= 0; i--) x[i] = on ? (i >= step ? x[i - step] : 0) : x[i];
        }
    }
    mp_shl_bits_n(x, b);
}

// x >>= s (s >= 0); returns whether a nonzero bit was shifted out
template <int N>
__device__ __forceinline__ bool mp_shr_n(mp_u64 (&x)[N], long long s) {
    bool lost = false;
    if (s >= 64LL * N) {
#pragma unroll
        for (int i = 0; i < N; i++) {
            lost = lost || x[i] != 0;
            x[i] = 0;
        }
        return lost;
    }
    const int limbs = (int)(s >> 6), b = (int)(s & 63);
#pragma unroll
    for (int k = 0; (1 << k) < N; k++) {
        const int step = 1 << k;
        const bool on = (limbs & step) != 0;
#pragma unroll
        for (int i = 0; i < step && i < N; i++) lost = lost || (on && x[i] != 0);
#pragma unroll
        for (int i = 0; i < N; i++) x[i] = on ? (i + step < N ? x[i + step] : 0) : x[i];
    }
    lost = lost || (b > 0 && (x[0] << ((64 - b) & 63)) != 0);
#pragma unroll
    for (int i = 0; i + 1 < N; i++) x[i] = (x[i] >> b) | ((x[i + 1] << 1) << (63 - b));
    x[N - 1] >>= b;
    return lost;
}

// out = a * b on 32-bit limbs, through the hardware's multiply-add with carry (a 64-bit product's
// high half is several instructions on the SMs; a 32-bit `mad.hi` with carry in and out is one,
// and ptxas pairs each lo/hi into one wide multiply-add): an mp:256 product in about 110
// instructions against about 300. The partial products are split by the parity of the column
// their low word lands on, into two accumulators, so that every (lo, hi) pair of a row's carry
// chain sits on the same register pair in every row (split by the limb's parity instead, the
// pairs alternate and ptxas moves registers between rows). A row's chain ends in a limb that is
// still zero (the accumulator holds less than 2^(32 (NA + i)) before row i), so its carry out
// stops there. `volatile` keeps the chains' statements in order: the carry flag is invisible
// to the compiler.
// FROM > 0: only the partial products whose low word lands on column FROM or above (the high
// columns of a short product, as MPFR's mpfr_mulhigh_n); out[k] for k < FROM is zero and the
// columns from FROM lack the carries of the products left out.
template <int NA, int NB, int FROM = 0>
__device__ __forceinline__ void mp_mul32(const unsigned (&a)[NA], const unsigned (&b)[NB],
                                         unsigned (&out)[NA + NB]) {
    constexpr int N = NA + NB;
    unsigned e[N + 2], o[N + 2];
#pragma unroll
    for (int k = 0; k < N + 2; k++) {
        e[k] = 0;
        o[k] = 0;
    }
#pragma unroll
    for (int i = 0; i < NB; i++) {
#pragma unroll
        for (int parity = 0; parity < 2; parity++) {
            unsigned(&acc)[N + 2] = parity == 0 ? e : o;
            // every bound a constant, so that the loops unroll whole and acc's indices fold
            int last = -1;
#pragma unroll
            for (int j = 0; j < NA; j++) {
                if (((i + j) & 1) != parity || i + j < FROM) continue;
                if (last < 0) {
                    asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[i + j]) : "r"(a[j]), "r"(b[i]));
                } else {
                    asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[i + j]) : "r"(a[j]), "r"(b[i]));
                }
                asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[i + j + 1]) : "r"(a[j]), "r"(b[i]));
                last = j;
            }
            if (last >= 0) asm volatile("addc.u32 %0, %0, 0;" : "+r"(acc[i + last + 2]));
        }
    }
#pragma unroll
    for (int k = 0; k < FROM; k++) out[k] = 0;
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(out[FROM]) : "r"(e[FROM]), "r"(o[FROM]));
#pragma unroll
    for (int k = FROM + 1; k < N; k++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(out[k]) : "r"(e[k]), "r"(o[k]));
}

// p (2 MP_LIMBS limbs) = x * y, through mp_mul32 (the halves of a 64-bit limb are a register
// pair: splitting and joining them costs nothing); FROM: mp_mul32's, in 32-bit columns
template <int FROM = 0>
__device__ __forceinline__ void mp_mul_n(const mp_u64 (&x)[MP_LIMBS], const mp_u64 (&y)[MP_LIMBS],
                                         mp_u64 (&p)[2 * MP_LIMBS]) {
    unsigned a[2 * MP_LIMBS], b[2 * MP_LIMBS], q[4 * MP_LIMBS];
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) {
        a[2 * i] = (unsigned)x[i];
        a[2 * i + 1] = (unsigned)(x[i] >> 32);
        b[2 * i] = (unsigned)y[i];
        b[2 * i + 1] = (unsigned)(y[i] >> 32);
    }
    mp_mul32<2 * MP_LIMBS, 2 * MP_LIMBS, FROM>(a, b, q);
#pragma unroll
    for (int i = 0; i < 2 * MP_LIMBS; i++) p[i] = ((mp_u64)q[2 * i + 1] << 32) | q[2 * i];
}

// out = x + y + carry_in (0 or 1) on N limbs, returning the carry out: one carry chain of 32-bit
// adds (2 N instructions), where the 64-bit adds with compares for the carries are about 9 N.
// A difference is x + ~y + 1.
template <int N>
__device__ __forceinline__ bool mp_add_n(mp_u64 (&out)[N], const mp_u64 (&x)[N],
                                         const mp_u64 (&y)[N], unsigned carry_in) {
    unsigned scratch, carry_out;
    asm volatile("add.cc.u32 %0, %1, 0xffffffff;" : "=r"(scratch) : "r"(carry_in));  // CF = carry_in
#pragma unroll
    for (int i = 0; i < N; i++) {
        unsigned lo, hi;
        asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(lo) : "r"((unsigned)x[i]), "r"((unsigned)y[i]));
        asm volatile("addc.cc.u32 %0, %1, %2;"
                     : "=r"(hi)
                     : "r"((unsigned)(x[i] >> 32)), "r"((unsigned)(y[i] >> 32)));
        out[i] = ((mp_u64)hi << 32) | lo;
    }
    asm volatile("addc.u32 %0, 0, 0;" : "=r"(carry_out));
    return carry_out != 0;
}

#ifdef MP_WIDE_LOOPS
// The same product where the limb loops stay loops: unrolled, it is still far fewer instructions
// than the loops' 64-bit products (about 1,100 at 1,024 bits), so it is one function a module
// (MP_FN), compiled once rather than inlined at every product.
template <int FROM>
__device__ __forceinline__ void mp_mul_wide_from(const mp_u64* x, const mp_u64* y, mp_u64* p) {
    mp_u64 a[MP_LIMBS], b[MP_LIMBS], q[2 * MP_LIMBS];
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) {
        a[i] = x[i];
        b[i] = y[i];
    }
    mp_mul_n<FROM>(a, b, q);
#pragma unroll
    for (int i = 0; i < 2 * MP_LIMBS; i++) p[i] = q[i];
}
MP_FN void mp_mul_wide(const mp_u64* x, const mp_u64* y, mp_u64* p) { mp_mul_wide_from<0>(x, y, p); }

// The short product: the partial products from the guard limb's upper word up (32-bit column
// 2 L - 2: 559 of 1,024 at 16 limbs). Those left out sum to less than (2 L - 2) 2^32 units of
// the guard limb (each is below 2^64 units of its column, 2 L - 2 of them on the highest).
constexpr int MP_SHORT_FROM = 2 * MP_LIMBS - 2;
constexpr mp_u64 MP_SHORT_SPAN = (mp_u64)(2 * MP_LIMBS - 1) << 32;
MP_FN void mp_mul_wide_short(const mp_u64* x, const mp_u64* y, mp_u64* p) {
    mp_mul_wide_from<MP_SHORT_FROM>(x, y, p);
}
#endif

// ---- rounding, as src/precision/mpfloat/round.rs --------------------------------------------

__device__ __forceinline__ mp_t mp_special(int kind, int neg, int bits) {
    mp_t r;
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) r.s[i] = 0;
    r.exp = 0;
    r.bits = bits;
    r.neg = neg;
    r.kind = kind;
    return r;
}

// The exact value (-1)^neg 0.x[n-1]...x[0] 2^exp (x normalised, `sticky` for anything nonzero
// below it) below the exponent range, rounded to nearest: the smallest number when above half
// of it, else zero (MPFR's mpfr_underflow, decided on the exact value, not a rounded one).
__device__ __forceinline__ mp_t mp_underflow(const mp_u64* x, int n, bool sticky, long long exp,
                                             int neg, int bits) {
    bool half = x[n - 1] == (1ULL << 63) && !sticky;
    for (int i = 0; i < n - 1; i++) half = half && x[i] == 0;
    if (exp < MP_EMIN - 1 || half) return mp_special(MP_ZERO, neg, bits);
    mp_t r = mp_special(MP_NORMAL, neg, bits);
    r.s[MP_LIMBS - 1] = 1ULL << 63;
    r.exp = MP_EMIN;
    return r;
}

// x rounded in place to nearest (ties to even) at bit `cut` (its last kept bit), the bits below
// cleared; `sticky`: something nonzero lies below x. Returns whether rounding up carried out of
// the top (x is then zero: it was all ones).
template <int N>
__device__ __forceinline__ bool mp_round_at(mp_u64 (&x)[N], int cut, bool sticky) {
    bool round_bit = false, rest = sticky, odd = false;
#pragma unroll
    for (int j = 0; j < N; j++) {
        const int keep = cut - 64 * j;  // the last kept bit's place in this limb (if 0..63)
        const int half = keep - 1;      // the rounding bit's place in this limb (if 0..63)
        const mp_u64 limb = x[j];
        const mp_u64 below_half = half >= 64 ? limb : (half > 0 ? limb & ((1ULL << half) - 1) : 0);
        rest = rest || below_half != 0;
        round_bit = round_bit || (half >= 0 && half < 64 && ((limb >> half) & 1));
        odd = odd || (keep >= 0 && keep < 64 && ((limb >> keep) & 1));
        x[j] = keep >= 64 ? 0 : (keep > 0 ? limb & ~((1ULL << keep) - 1) : limb);
    }
    if (!(round_bit && (odd || rest))) return false;
    // add one at bit `cut` (the bits below are clear, so a carry leaves zeros)
    mp_u64 unit[N];
#pragma unroll
    for (int j = 0; j < N; j++) {
        const int keep = cut - 64 * j;
        unit[j] = (keep >= 0 && keep < 64) ? 1ULL << keep : 0;
    }
    return mp_add_n(x, x, unit, 0);
}

// (-1)^neg 0.x... 2^exp with x normalised (its top bit set) and exp >= MP_EMIN, rounded at
// `bits` bits; `sticky`: something nonzero lies below x. x is destroyed. The vector kernels'
// numbers all have the module's precision, whose cut is a constant that folds every mask.
template <int N>
__device__ __forceinline__ mp_t mp_round_normalised(mp_u64 (&x)[N], bool sticky, long long exp,
                                                    int neg, int bits) {
    bool carried;
#ifdef MP_BITS
    if (bits == MP_BITS)
        carried = mp_round_at(x, 64 * N - MP_BITS, sticky);
    else
#endif
        carried = mp_round_at(x, 64 * N - bits, sticky);
    if (carried) {
        x[N - 1] = 1ULL << 63;
        exp += 1;
    }
    if (exp > MP_EMAX) return mp_special(MP_INF, neg, bits);
    mp_t r;
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) r.s[i] = x[N - MP_LIMBS + i];
    r.exp = (int)exp;
    r.bits = bits;
    r.neg = neg;
    r.kind = MP_NORMAL;
    return r;
}

#ifdef MP_WIDE_LOOPS
__device__ __forceinline__ bool mp_add_bit(mp_u64* x, int n, int bit) {
    int i = bit / 64;
    mp_u64 add = 1ULL << (bit % 64);
    for (; i < n; i++) {
        mp_u64 s = x[i] + add;
        bool c = s < x[i];
        x[i] = s;
        if (!c) return false;
        add = 1;
    }
    return true;
}

__device__ __forceinline__ void mp_decrement(mp_u64* x, int n) {
    for (int i = 0; i < n; i++) {
        mp_u64 d = x[i] - 1;
        bool borrow = x[i] == 0;
        x[i] = d;
        if (!borrow) return;
    }
}

__device__ __forceinline__ bool mp_bit(const mp_u64* x, int i) { return (x[i / 64] >> (i % 64)) & 1; }

__device__ __forceinline__ bool mp_any_below(const mp_u64* x, int count) {
    const int limbs = count / 64, bits = count % 64;
    for (int i = 0; i < limbs; i++)
        if (x[i] != 0) return true;
    return bits > 0 && (x[limbs] & ((1ULL << bits) - 1)) != 0;
}

__device__ __forceinline__ void mp_clear_below(mp_u64* x, int count) {
    const int limbs = count / 64, bits = count % 64;
    for (int i = 0; i < limbs; i++) x[i] = 0;
    if (bits > 0) x[limbs] &= ~((1ULL << bits) - 1);
}

// (-1)^neg (int + f) 2^scale rounded at `bits` bits; int in x[0..n] (destroyed), f nonzero
// exactly when sticky (then int has at least bits + 1 significant bits).
MP_FN mp_t mp_round(mp_u64* x, int n, bool sticky, long long scale, int neg, int bits) {
    const int zeros = mp_leading_zeros(x, n);
    if (zeros == 64 * n) return mp_special(MP_ZERO, neg, bits);
    if (zeros > 0) mp_shl(x, n, zeros);
    long long exp = scale + 64LL * n - zeros;
    if (exp < MP_EMIN) return mp_underflow(x, n, sticky, exp, neg, bits);
    mp_t r = mp_special(MP_NORMAL, neg, bits);
    const int low = n > MP_LIMBS ? n - MP_LIMBS : 0;  // limbs below the significand's
    for (int i = 0; i < MP_LIMBS; i++) {
        const int k = i - (MP_LIMBS - n) ;  // n <= L: x sits at the top
        r.s[i] = n > MP_LIMBS ? x[low + i] : (k >= 0 ? x[k] : 0);
    }
    const int shift = 64 * MP_LIMBS - bits;
    bool round_bit, rest = sticky;
    if (shift > 0) {
        round_bit = mp_bit(r.s, shift - 1);
        rest = rest || mp_any_below(r.s, shift - 1);
        for (int i = 0; i < low; i++) rest = rest || x[i] != 0;
    } else {
        round_bit = low > 0 && (x[low - 1] >> 63);
        if (low > 0) rest = rest || (x[low - 1] << 1) != 0;
        for (int i = 0; i + 1 < low; i++) rest = rest || x[i] != 0;
    }
    const bool up = round_bit && (mp_bit(r.s, shift) || rest);
    mp_clear_below(r.s, shift);
    if (up && mp_add_bit(r.s, MP_LIMBS, shift)) {
        r.s[MP_LIMBS - 1] = 1ULL << 63;
        exp += 1;
    }
    if (exp > MP_EMAX) return mp_special(MP_INF, neg, bits);
    r.exp = (int)exp;
    return r;
}

#endif

// (-1)^neg (int + f) 2^scale rounded at `bits` bits (<= 64 MP_LIMBS); int in x (destroyed), N >=
// MP_LIMBS, f nonzero exactly when sticky (then int has at least bits + 1 significant bits).
template <int N>
__device__ __forceinline__ mp_t mp_round_n(mp_u64 (&x)[N], bool sticky, long long scale, int neg,
                                           int bits) {
    int zeros;
    if (x[N - 1] != 0) {  // a product by a double, most of all: no whole limb to shift
        zeros = __clzll(x[N - 1]);
        mp_shl_bits_n(x, zeros);
    } else {
#ifdef MP_WIDE_LOOPS
        // a whole limb to shift (a cancellation, a quotient): the general loops
        return mp_round(x, N, sticky, scale, neg, bits);
#else
        zeros = mp_clz_n(x);
        if (zeros == 64 * N) return mp_special(MP_ZERO, neg, bits);
        mp_shl_n(x, zeros);
#endif
    }
    long long exp = scale + 64LL * N - zeros;
    if (exp < MP_EMIN) return mp_underflow(x, N, sticky, exp, neg, bits);
    return mp_round_normalised(x, sticky, exp, neg, bits);
}
// ---- operations, as src/precision/mpfloat/{arith,convert}.rs ---------------------------------

__device__ __forceinline__ int mp_max_bits(const mp_t& a, const mp_t& b) {
    return a.bits > b.bits ? a.bits : b.bits;
}

// |a| < |b| for two normal numbers, without branches: equal exponents compare the significands
// by the borrow of a - b (a + ~b + 1 carries exactly when a >= b), one carry chain where a
// limb-by-limb comparison branches on the data
__device__ __forceinline__ bool mp_less_magnitude(const mp_t& a, const mp_t& b) {
    mp_u64 nb[MP_LIMBS], scratch[MP_LIMBS];
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) nb[i] = ~b.s[i];
    const bool less = !mp_add_n(scratch, a.s, nb, 1);
    return a.exp != b.exp ? a.exp < b.exp : less;
}

__device__ __forceinline__ mp_t mp_with_bits(mp_t a, int bits) {
    if (a.kind != MP_NORMAL) return mp_special(a.kind, a.neg, bits);
    if (a.bits <= bits) {
        a.bits = bits;  // exact: the value has at most a.bits significant bits
        return a;
    }
    mp_u64 w[MP_LIMBS];
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) w[i] = a.s[i];
    return mp_round_n(w, false, (long long)a.exp - 64LL * MP_LIMBS, a.neg, bits);
}

__device__ __forceinline__ mp_t mp_neg(mp_t a) {
    a.neg = !a.neg;
    return a;
}

// The sum's cases other than two normal numbers (b's sign already the one to add): true with
// the result in *r. Shared by both forms of mp_sum below.
__device__ __forceinline__ bool mp_sum_special(const mp_t& a, const mp_t& b, int bits, mp_t* r) {
    if (a.kind == MP_NAN || b.kind == MP_NAN) *r = mp_special(MP_NAN, 0, bits);
    else if (a.kind == MP_INF && b.kind == MP_INF && a.neg != b.neg) *r = mp_special(MP_NAN, 0, bits);
    else if (a.kind == MP_INF) *r = mp_special(MP_INF, a.neg, bits);
    else if (b.kind == MP_INF) *r = mp_special(MP_INF, b.neg, bits);
    else if (a.kind == MP_ZERO && b.kind == MP_ZERO) *r = mp_special(MP_ZERO, a.neg && b.neg, bits);
    else if (a.kind == MP_ZERO) *r = mp_with_bits(b, bits);
    else if (b.kind == MP_ZERO) *r = mp_with_bits(a, bits);
    else return false;
    return true;
}

// The product's cases other than two normal numbers: true with the result in *r.
__device__ __forceinline__ bool mp_mul_special(const mp_t& a, const mp_t& b, int bits, mp_t* r) {
    const int neg = a.neg != b.neg;
    if (a.kind == MP_NAN || b.kind == MP_NAN) *r = mp_special(MP_NAN, 0, bits);
    else if ((a.kind == MP_INF && b.kind == MP_ZERO) || (a.kind == MP_ZERO && b.kind == MP_INF))
        *r = mp_special(MP_NAN, 0, bits);
    else if (a.kind == MP_INF || b.kind == MP_INF) *r = mp_special(MP_INF, neg, bits);
    else if (a.kind == MP_ZERO || b.kind == MP_ZERO) *r = mp_special(MP_ZERO, neg, bits);
    else return false;
    return true;
}

// x + y for |x| >= |y| whose exponents differ by d < 64 (w: x's limbs over a zero guard limb,
// v: y's), as MpFloat::sum_near: most of a solve's sums, without the barrel shifts. y's limbs
// shifted right by d fit the window whole (no sticky bit), a difference is the sum of the two's
// complement, and the normalising shift is one bit right after a carry or less than a limb left
// after a cancellation. False (the general path then) where a whole limb cancelled.
__device__ __forceinline__ bool mp_sum_near(const mp_u64 (&w)[MP_LIMBS + 1],
                                            const mp_u64 (&v)[MP_LIMBS + 1], int d, bool subtract,
                                            int xexp, int xneg, int bits, mp_t* r) {
    const mp_u64 flip = subtract ? ~0ULL : 0ULL;
    mp_u64 h[MP_LIMBS + 1], y[MP_LIMBS + 1];
#pragma unroll
    for (int i = 0; i <= MP_LIMBS; i++) {
        // limb i of y >> d: v[i] >> d | v[i + 1] << (64 - d) (v[0], the guard, is zero)
        const mp_u64 next = i < MP_LIMBS ? v[i + 1] : 0;
        const mp_u64 shifted = d == 0 ? v[i] : (v[i] >> d) | (next << (64 - d));
        y[i] = shifted ^ flip;
    }
    const bool carry = mp_add_n(h, w, y, subtract ? 1 : 0);
    // a sum's carry out moves the window one bit right; a difference's carry means nothing
    const bool over = carry && !subtract;
    bool sticky = false;
    if (over) {
        sticky = h[0] & 1;
#pragma unroll
        for (int i = 0; i < MP_LIMBS; i++) h[i] = (h[i] >> 1) | (h[i + 1] << 63);
        h[MP_LIMBS] = (h[MP_LIMBS] >> 1) | (1ULL << 63);
    }
    if (h[MP_LIMBS] == 0) return false;
    const int z = __clzll(h[MP_LIMBS]);
    if (z > 0) {
#pragma unroll
        for (int i = MP_LIMBS; i > 0; i--) h[i] = (h[i] << z) | (h[i - 1] >> (64 - z));
        h[0] <<= z;
    }
    const long long exp = (long long)xexp + (over ? 1 : 0) - z;
    if (exp < MP_EMIN) return false;
    *r = mp_round_normalised(h, sticky, exp, xneg, bits);
    return true;
}

// a + (-1)^bneg |b|
MP_OP mp_t mp_sum(mp_t a, mp_t b, int bneg) {
    const int bits = mp_max_bits(a, b);
    b.neg = bneg;
    mp_t special;
    if (mp_sum_special(a, b, bits, &special)) return special;
    // x the larger magnitude, y the other, each with a guard limb below
    const bool swap = mp_less_magnitude(a, b);
    mp_u64 w[MP_LIMBS + 1], v[MP_LIMBS + 1];
    w[0] = 0;
    v[0] = 0;
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) {
        w[i + 1] = swap ? b.s[i] : a.s[i];
        v[i + 1] = swap ? a.s[i] : b.s[i];
    }
    const int xexp = swap ? b.exp : a.exp, yexp = swap ? a.exp : b.exp;
    const int xneg = swap ? b.neg : a.neg, yneg = swap ? a.neg : b.neg;
    const long long d = (long long)xexp - yexp;
    if (d < 64) {
        mp_t near;
        if (mp_sum_near(w, v, (int)d, xneg != yneg, xexp, xneg, bits, &near)) return near;
    }
#ifdef MP_WIDE_LOOPS
    // a limb or more apart, or a whole limb cancelled: the general loops
    bool sticky = mp_shr(v, MP_LIMBS + 1, d);
    long long scale = (long long)xexp - 64LL * (MP_LIMBS + 1);
    if (xneg == yneg) {
        if (mp_add_assign(w, v, MP_LIMBS + 1)) {
            sticky = mp_shr(w, MP_LIMBS + 1, 1) || sticky;
            w[MP_LIMBS] |= 1ULL << 63;
            scale += 1;
        }
    } else {
        mp_sub_assign(w, v, MP_LIMBS + 1);
        if (sticky) {
            mp_decrement(w, MP_LIMBS + 1);
        } else {
            bool zero = true;
            for (int i = 0; i <= MP_LIMBS; i++) zero = zero && w[i] == 0;
            if (zero) return mp_special(MP_ZERO, 0, bits);
        }
    }
    return mp_round(w, MP_LIMBS + 1, sticky, scale, xneg, bits);
#else
    bool sticky = mp_shr_n(v, d);
    long long scale = (long long)xexp - 64LL * (MP_LIMBS + 1);
    if (xneg == yneg) {
        if (mp_add_n(w, w, v, 0)) {
            // one bit more: shift it in from the top
            sticky = sticky || (w[0] & 1);
#pragma unroll
            for (int i = 0; i < MP_LIMBS; i++) w[i] = (w[i] >> 1) | (w[i + 1] << 63);
            w[MP_LIMBS] = (w[MP_LIMBS] >> 1) | (1ULL << 63);
            scale += 1;
        }
    } else {
        // w - v, less one unit of the guard limb when bits of y were shifted out (w - v - f
        // with 0 < f < 1 keeps its integer part's rounding and its sticky bit)
        mp_u64 any = 0;
#pragma unroll
        for (int i = 0; i <= MP_LIMBS; i++) v[i] = ~v[i];
        mp_add_n(w, w, v, sticky ? 0 : 1);
#pragma unroll
        for (int i = 0; i <= MP_LIMBS; i++) any |= w[i];
        if (!sticky && any == 0) return mp_special(MP_ZERO, 0, bits);
    }
    return mp_round_n(w, sticky, scale, xneg, bits);
#endif
}

__device__ __forceinline__ mp_t mp_add(mp_t a, mp_t b) { return mp_sum(a, b, b.neg); }
__device__ __forceinline__ mp_t mp_sub(mp_t a, mp_t b) { return mp_sum(a, b, !b.neg); }

// Two significands in [1/2, 1): the product p's top bit is one of its top two. w: the top L
// limbs and a guard limb, normalised by that one bit (returned); p's lower limbs make the
// sticky bit, as MpFloat::mul does, instead of normalising and masking all 2L limbs.
__device__ __forceinline__ int mp_product_window(const mp_u64 (&p)[2 * MP_LIMBS],
                                                 mp_u64 (&w)[MP_LIMBS + 1]) {
    const int z = (p[2 * MP_LIMBS - 1] >> 63) ? 0 : 1;
#pragma unroll
    for (int i = 0; i <= MP_LIMBS; i++) {
        const mp_u64 in = p[MP_LIMBS - 2 + i] >> 63;  // the bit a shift by one brings in
        w[i] = z ? (p[MP_LIMBS - 1 + i] << 1) | in : p[MP_LIMBS - 1 + i];
    }
    return z;
}

// The sticky bit of a whole product below its window (mp_product_window's z).
__device__ __forceinline__ bool mp_product_sticky(const mp_u64 (&p)[2 * MP_LIMBS], int z) {
    bool sticky = z ? (p[MP_LIMBS - 2] << 1) != 0 : p[MP_LIMBS - 2] != 0;
#pragma unroll
    for (int i = 0; i < MP_LIMBS - 2; i++) sticky = sticky || p[i] != 0;
    return sticky;
}

MP_OP mp_t mp_mul(mp_t a, mp_t b) {
    const int bits = mp_max_bits(a, b);
    const int neg = a.neg != b.neg;
    mp_t special;
    if (mp_mul_special(a, b, bits, &special)) return special;
    mp_u64 p[2 * MP_LIMBS], w[MP_LIMBS + 1];
#ifdef MP_WIDE_LOOPS
    // The short product decides the rounding unless the guard limb, plus what was left out,
    // could reach a half or carry into the significand (as MpFloat::mul_short); below the
    // exponent range only the whole product says whether it is exactly half the least.
    mp_mul_wide_short(a.s, b.s, p);
    int z = mp_product_window(p, w);
    long long exp = (long long)a.exp + b.exp - z;
    bool sticky = true;
    const mp_u64 g = w[0], span = (MP_SHORT_SPAN << z) + 1, half = 1ULL << 63;
    const bool decided =
        g <= ~span && (bits == 64 * MP_LIMBS ? (g + span < half || g > half) : g >= 1);
    if (!decided || exp < MP_EMIN) {
        mp_mul_wide(a.s, b.s, p);
        z = mp_product_window(p, w);
        exp = (long long)a.exp + b.exp - z;
        sticky = mp_product_sticky(p, z);
    }
#else
    mp_mul_n(a.s, b.s, p);
    const int z = mp_product_window(p, w);
    const long long exp = (long long)a.exp + b.exp - z;
    const bool sticky = mp_product_sticky(p, z);
#endif
    if (exp < MP_EMIN) {
        const long long scale = exp + z - 128LL * MP_LIMBS;
#ifdef MP_WIDE_LOOPS
        return mp_round(p, 2 * MP_LIMBS, false, scale, neg, bits);
#else
        return mp_round_n(p, false, scale, neg, bits);
#endif
    }
    return mp_round_normalised(w, sticky, exp, neg, bits);
}

MP_FN mp_t mp_div(mp_t a, mp_t b) {
    const int bits = mp_max_bits(a, b);
    const int neg = a.neg != b.neg;
    if (a.kind == MP_NAN || b.kind == MP_NAN) return mp_special(MP_NAN, 0, bits);
    if ((a.kind == MP_INF && b.kind == MP_INF) || (a.kind == MP_ZERO && b.kind == MP_ZERO))
        return mp_special(MP_NAN, 0, bits);
    if (a.kind == MP_INF || b.kind == MP_ZERO) return mp_special(MP_INF, neg, bits);
    if (a.kind == MP_ZERO || b.kind == MP_INF) return mp_special(MP_ZERO, neg, bits);
    mp_u64 u[2 * MP_LIMBS + 1], q[MP_LIMBS + 2];
    for (int i = 0; i <= MP_LIMBS; i++) u[i] = 0;
    for (int i = 0; i < MP_LIMBS; i++) u[MP_LIMBS + 1 + i] = a.s[i];
    mp_div_rem(u, 2 * MP_LIMBS + 1, b.s, MP_LIMBS, q);
    bool sticky = false;
    for (int i = 0; i < MP_LIMBS; i++) sticky = sticky || u[i] != 0;
    const long long scale = (long long)a.exp - b.exp - 64LL * (MP_LIMBS + 1);
    return mp_round_n(q, sticky, scale, neg, bits);
}

MP_FN mp_t mp_sqrt(mp_t a) {
    const int bits = a.bits;
    if (a.kind == MP_NAN) return mp_special(MP_NAN, 0, bits);
    if (a.kind == MP_ZERO) return a;
    if (a.neg) return mp_special(MP_NAN, 0, bits);
    if (a.kind == MP_INF) return a;
    const int odd = a.exp & 1;
    mp_u64 n[2 * MP_LIMBS + 3], r[MP_LIMBS + 2], sq[2 * MP_LIMBS + 4];
    for (int i = 0; i < 2 * MP_LIMBS + 3; i++) n[i] = 0;
    for (int i = 0; i < MP_LIMBS; i++) n[MP_LIMBS + 2 + i] = a.s[i];
    if (odd) mp_shl(n, 2 * MP_LIMBS + 3, 1);
    mp_isqrt(n, 2 * MP_LIMBS + 3, r, MP_LIMBS + 2);
    mp_mul_limbs(r, MP_LIMBS + 2, r, MP_LIMBS + 2, sq);
    bool sticky = false;
    for (int i = 0; i < 2 * MP_LIMBS + 3; i++) sticky = sticky || sq[i] != n[i];
    const long long shift = 64LL * (MP_LIMBS + 2) + odd;
    const long long scale = ((long long)a.exp - 64LL * MP_LIMBS - shift) / 2;
    return mp_round_n(r, sticky, scale, 0, bits);
}

// x = (-1)^neg m 2^e, m < 2^53
__device__ __forceinline__ void mp_decompose(double x, int* neg, mp_u64* m, long long* e) {
    const mp_u64 b = (mp_u64)__double_as_longlong(x);
    const long long biased = (long long)((b >> 52) & 0x7ff);
    const mp_u64 fraction = b & ((1ULL << 52) - 1);
    *neg = (int)(b >> 63);
    if (biased == 0) {
        *m = fraction;
        *e = -1074;
    } else {
        *m = fraction | (1ULL << 52);
        *e = biased - 1075;
    }
}

__device__ __forceinline__ mp_t mp_from_f64(double x, int bits) {
    if (isnan(x)) return mp_special(MP_NAN, 0, bits);
    if (isinf(x)) return mp_special(MP_INF, x < 0.0, bits);
    int neg;
    mp_u64 m;
    long long e;
    mp_decompose(x, &neg, &m, &e);
    if (m == 0) return mp_special(MP_ZERO, neg, bits);
    const int zeros = __clzll(m);
    mp_t r = mp_special(MP_NORMAL, neg, bits);
    r.s[MP_LIMBS - 1] = m << zeros;
    r.exp = (int)(e + 64 - zeros);
    return r;
}

// a * d correctly rounded at a's precision: L limb products
MP_OP mp_t mp_mul_f64(mp_t a, double d) {
    if (a.kind != MP_NORMAL || !isfinite(d) || d == 0.0) return mp_mul(a, mp_from_f64(d, a.bits));
    int neg;
    mp_u64 m;
    long long e;
    mp_decompose(d, &neg, &m, &e);
    if ((m & (m - 1)) == 0) {
        // d = +-2^k, as MpFloat::mul_f64: a's significand at another exponent, exact
        const long long exp = (long long)a.exp + e + (__ffsll((long long)m) - 1);
        if (exp >= MP_EMIN && exp <= MP_EMAX) {
            a.exp = (int)exp;
            a.neg = a.neg != neg;
            return a;
        }
    }
    // a's limbs times the double's 53-bit significand, as mp_mul's product: on 32-bit words
    unsigned aw[2 * MP_LIMBS], q[2 * MP_LIMBS + 2];
    const unsigned mw[2] = {(unsigned)m, (unsigned)(m >> 32)};
#pragma unroll
    for (int i = 0; i < MP_LIMBS; i++) {
        aw[2 * i] = (unsigned)a.s[i];
        aw[2 * i + 1] = (unsigned)(a.s[i] >> 32);
    }
    mp_mul32(aw, mw, q);
    mp_u64 p[MP_LIMBS + 1];
#pragma unroll
    for (int i = 0; i <= MP_LIMBS; i++) p[i] = ((mp_u64)q[2 * i + 1] << 32) | q[2 * i];
    const long long scale = (long long)a.exp - 64LL * MP_LIMBS + e;
    return mp_round_n(p, false, scale, a.neg != neg, a.bits);
}

// The nearest double (ties to even; subnormals on their grid; beyond the range an infinity).
MP_FN double mp_to_f64(const mp_t& a) {
    if (a.kind == MP_NAN) return __longlong_as_double(0x7ff8000000000000LL);
    const double sign = a.neg ? -1.0 : 1.0;
    if (a.kind == MP_INF) return sign * __longlong_as_double(0x7ff0000000000000LL);
    if (a.kind == MP_ZERO) return a.neg ? -0.0 : 0.0;
    const long long e = a.exp;
    if (e > 1024) return sign * __longlong_as_double(0x7ff0000000000000LL);
    const long long p = e >= -1021 ? 53 : e + 1074;
    const mp_u64 top = a.s[MP_LIMBS - 1];
    bool below = false;
    for (int i = 0; i < MP_LIMBS - 1; i++) below = below || a.s[i] != 0;
    if (p <= 0) {
        const bool above_half = p == 0 && (top != (1ULL << 63) || below);
        return above_half ? sign * __longlong_as_double(1LL) : sign * 0.0;
    }
    const int lsb = 64 - (int)p;
    const bool round_bit = (top >> (lsb - 1)) & 1;
    const bool sticky = below || (top & ((1ULL << (lsb - 1)) - 1)) != 0;
    mp_u64 m = top >> lsb;
    if (round_bit && (sticky || (m & 1))) m += 1;
    // m 2^(e - p), exact: in two steps where 2^(e - p) alone would leave the double range
    const long long k = e - p;
    double v = (double)m;
    if (k >= -1022 && k <= 1023) return sign * v * __longlong_as_double((k + 1023) << 52);
    const long long first = k < -1022 ? -1022 : 1023;
    long long rest = k - first;
    rest = rest < -1022 ? -1022 : (rest > 1023 ? 1023 : rest);
    return sign * (v * __longlong_as_double((first + 1023) << 52)) *
           __longlong_as_double((rest + 1023) << 52);
}

// ---- the packed form ----------------------------------------------------------------------

__device__ __forceinline__ mp_u64 mp_header(const mp_t& a) {
    return (mp_u64)(unsigned int)a.exp | ((mp_u64)(a.bits & 0xffff) << 32) |
           ((mp_u64)(a.neg & 1) << 48) | ((mp_u64)a.kind << 56);
}

__device__ __forceinline__ mp_t mp_unpack(const mp_u64* limbs, long long stride, mp_u64 header) {
    mp_t r;
    for (int i = 0; i < MP_LIMBS; i++) r.s[i] = limbs[i * stride];
    r.exp = (int)(unsigned int)(header & 0xffffffffULL);
    r.bits = (int)((header >> 32) & 0xffff);
    r.neg = (int)((header >> 48) & 1);
    r.kind = (int)(header >> 56);
    return r;
}

__device__ __forceinline__ void mp_pack(const mp_t& a, mp_u64* limbs, long long stride,
                                        mp_u64* header) {
    for (int i = 0; i < MP_LIMBS; i++) limbs[i * stride] = a.s[i];
    *header = mp_header(a);
}

// A check of the arithmetic against the CPU's (tests/gpu.rs): for each i, the operations of
// a[i] and b[i] (and the double d[i]) packed one after the other into out, element-major:
// add, sub, mul, div, sqrt |a|, mul_f64, from_f64(d) at a's bits; to_f64 into out_f64.
// Operands are element-major too: L limbs, then the header.
#define MP_CAT2(a, b) a##_l##b
#define MP_CAT(a, b) MP_CAT2(a, b)
#define MP_KERNEL(name) MP_CAT(name, MP_LIMBS)
extern "C" __global__ void MP_KERNEL(mp_ops_check)(long long n, const mp_u64* a, const mp_u64* b,
                                        const double* d, mp_u64* out, double* out_f64) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = MP_LIMBS + 1;
    const mp_t x = mp_unpack(a + i * W, 1, a[i * W + MP_LIMBS]);
    const mp_t y = mp_unpack(b + i * W, 1, b[i * W + MP_LIMBS]);
    mp_t abs_x = x;
    abs_x.neg = 0;
    const mp_t r[7] = {mp_add(x, y), mp_sub(x, y), mp_mul(x, y), mp_div(x, y),
                       mp_sqrt(abs_x), mp_mul_f64(x, d[i]), mp_from_f64(d[i], x.bits)};
    for (int k = 0; k < 7; k++) {
        mp_u64* o = out + (i * 7 + k) * W;
        mp_pack(r[k], o, 1, o + MP_LIMBS);
    }
    out_f64[i] = mp_to_f64(x);
}
#endif
