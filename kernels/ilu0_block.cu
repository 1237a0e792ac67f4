// ILU(0) application by one block: both triangular solves of a factor whose results fit in
// shared memory, in one launch. The per-row arithmetic of kernels/ilu0.cu and
// src/backend/cpu/trisolve.rs (acc = acc - val * w[dep], unfused, entries in order; U:
// acc / u_ii), so the same bits; only the schedule differs.
//
// Why: on small matrices (thousands of rows, tens to hundreds of levels) the multi-block
// schedules pay a hop between SMs through L2 at every level, microseconds each, and the host's
// solve pays two copies that wait for the stream. Here every result is published in shared
// memory and only the block's warps poll: a level costs 0.55-1.3 us on the small factors of
// benches/results/ilu0-h200.md ("Small factors"), against 2-10 us for the partitioned kernels.
//
// Schedule: level order (ilu0.cu's layout: positions ordered by level, dep = a position, always
// smaller than the reader's). Thread t solves positions t, t + B, t + 2B, ... in turn. A result
// is published as its value in sv[p], a block-scope fence, then its flag sf[p] (1 forward,
// 2 backward); a reader checks the flags of its next ILU_BLOCK_WINDOW entries, fences, and
// consumes the ready prefix. No lane spins alone: each lane consumes what is ready, then the
// warp votes and goes round again, so a lane waiting on a lane of its own warp never starves
// it. No deadlock: the smallest unfinished position's warp is at that position's turn (its
// earlier positions are smaller, hence finished), and its dependencies are smaller still.
//
// Between the triangles: the forward results go to yg (global, by forward position); after
// __syncthreads (which makes the block's global writes visible to the block) the backward
// solve reads its right-hand side yg[src[p]] and reuses sv for its own results.
//
// Kernels: ilu0b_{P}_{Z}(int n, const int* lrow, const int* lptr, const int* ldep,
//              const double* lval, const int* urow, const int* uptr, const int* udep,
//              const double* uval, const double* diag, const int* src, RT r, double* yg, ZT z,
//              int sleep_ns, const int* lseg, int lnlev, const int* useg, int unlev, int narrow)
//          for (P, Z) in (f64, f64), (dd, dd), (dd, f64), (td, td), (td, f64), (qd, qd),
//          (qd, f64). One block of at most 1024 threads; 9 n + 8 bytes of dynamic shared memory
//          (n doubles, then n flag bytes, or the level schedule's next level); yg holds n
//          doubles. lseg/useg: each triangle's level boundaries in positions (lnlev + 1,
//          unlev + 1 entries); narrow: 0 for the polls,
//          k > 0 for the level schedule (below).

#define ILU_BLOCK_WINDOW 4

// Orders a value before its flag (writer) or a flag before the value (reader) within the block:
// fence.acq_rel, not __threadfence_block's fence.sc.
__device__ __forceinline__ void ilub_fence() { asm volatile("fence.acq_rel.cta;" ::: "memory"); }

// Latency: every global load a row needs is issued before the row can be on the critical path.
// A thread's next row (its position, entries' range, matrix row, and in U its diagonal) is
// loaded while it solves the current one; a row's entries are read in windows of
// ILU_BLOCK_WINDOW with the next window already in flight.

// What a thread knows of its row before solving it.
struct ilub_head {
    int k, k_end, row;
    double diag;
};

__device__ __forceinline__ ilub_head ilub_load_head(int p, int n, const int* __restrict__ ptr,
                                                    const int* __restrict__ rows,
                                                    const double* __restrict__ diag) {
    ilub_head h = {0, 0, 0, 1.0};
    if (p < n) {
        h.k = ptr[p];
        h.k_end = ptr[p + 1];
        h.row = rows[p];
        if (diag != nullptr) h.diag = diag[p];
    }
    return h;
}

__device__ __forceinline__ int ilub_load_window(int& k, int k_end, const int* __restrict__ dep,
                                                const double* __restrict__ val,
                                                int (&d)[ILU_BLOCK_WINDOW],
                                                double (&a)[ILU_BLOCK_WINDOW]) {
    const int count = min(k_end - k, ILU_BLOCK_WINDOW);
#pragma unroll
    for (int c = 0; c < ILU_BLOCK_WINDOW; ++c) {
        if (c < count) {
            d[c] = dep[k + c];
            a[c] = val[k + c];
        }
    }
    k += count;
    return count;
}

// Solve the row at position p (p >= n: only vote): acc = acc - val * sv[dep], then
// acc = acc / h.diag when `divide`, published with `flag`. The result stays in acc.
__device__ __forceinline__ void ilub_row(int p, int n, ilub_head h, bool divide,
                                         const int* __restrict__ dep,
                                         const double* __restrict__ val, volatile double* sv,
                                         volatile unsigned char* sf, unsigned char flag,
                                         int sleep_ns, double& acc) {
    bool done = p >= n;
    int k = h.k;
    int d[ILU_BLOCK_WINDOW], dn[ILU_BLOCK_WINDOW];
    double a[ILU_BLOCK_WINDOW], an[ILU_BLOCK_WINDOW];
    // the window holds `loaded` entries, `next` the first unused; the one in flight `coming`
    int loaded = 0, next = 0, coming = 0;
    if (!done) {
        loaded = ilub_load_window(k, h.k_end, dep, val, d, a);
        coming = ilub_load_window(k, h.k_end, dep, val, dn, an);
    }
    for (;;) {
        bool progressed = false;
        while (!done) {
            if (next == loaded) {
                if (coming == 0) {
                    if (divide) acc = __ddiv_rn(acc, h.diag);
                    sv[p] = acc;
                    ilub_fence();
                    sf[p] = flag;
                    done = true;
                    progressed = true;
                    break;
                }
#pragma unroll
                for (int c = 0; c < ILU_BLOCK_WINDOW; ++c) {
                    d[c] = dn[c];
                    a[c] = an[c];
                }
                loaded = coming;
                next = 0;
                coming = ilub_load_window(k, h.k_end, dep, val, dn, an);
            }
            bool ready[ILU_BLOCK_WINDOW];
#pragma unroll
            for (int c = 0; c < ILU_BLOCK_WINDOW; ++c) {
                ready[c] = c >= next && c < loaded && sf[d[c]] == flag;
            }
            ilub_fence();  // the values below are read after their flags
            bool blocked = false;
#pragma unroll
            for (int c = 0; c < ILU_BLOCK_WINDOW; ++c) {
                if (!blocked && c >= next && c < loaded) {
                    if (ready[c]) {
                        acc = __dsub_rn(acc, __dmul_rn(a[c], sv[d[c]]));
                        ++next;
                        progressed = true;
                    } else {
                        blocked = true;
                    }
                }
            }
            if (blocked) break;
        }
        if (__all_sync(0xffffffffu, done)) break;
        // a warp that waits gives its issue slots to the warps that can go on
        if (sleep_ns > 0 && !__any_sync(0xffffffffu, progressed)) __nanosleep(sleep_ns);
    }
}

// The factors as one argument (ilu0b_*'s arguments after z, and the solver kernels' after the
// matrix, as src/backend/cuda/ilu.rs pushes them). `narrow` picks the schedule: 0 polls (above),
// k > 0 the level schedule below, one warp taking the runs of levels of at most k rows.
struct block_ilu {
    const int *lrow, *lptr, *ldep;
    const double* lval;
    const int *urow, *uptr, *udep;
    const double* uval;
    const double* diag;
    const int* src;
    double* yg;
    int sleep_ns;
    const int *lseg, *useg;  // level boundaries in positions, nlev + 1 each
    int lnlev, unlev, narrow;
};

// The polling schedule (narrow == 0).
template <typename RT, typename ZT>
__device__ __forceinline__ void ilu_block_polls(int n, const block_ilu& f, RT r, ZT z) {
    extern __shared__ double ilub_shared[];
    volatile double* sv = ilub_shared;
    volatile unsigned char* sf = reinterpret_cast<volatile unsigned char*>(ilub_shared + n);
    const int step = blockDim.x;
    ilub_head h = ilub_load_head(threadIdx.x, n, f.lptr, f.lrow, nullptr);
    for (int i = threadIdx.x; i < n; i += step) sf[i] = 0;
    __syncthreads();
    for (int p = threadIdx.x; p - threadIdx.x < n; p += step) {
        double acc = p < n ? ilu_in(r, h.row) : 0.0;
        const ilub_head here = h;
        h = ilub_load_head(p + step, n, f.lptr, f.lrow, nullptr);
        ilub_row(p, n, here, false, f.ldep, f.lval, sv, sf, 1, f.sleep_ns, acc);
        if (p < n) f.yg[p] = acc;
    }
    // the backward heads read src into `row`; the matrix row is loaded with them
    h = ilub_load_head(threadIdx.x, n, f.uptr, f.src, f.diag);
    int out = threadIdx.x < n ? f.urow[threadIdx.x] : 0;
    __syncthreads();
    for (int p = threadIdx.x; p - threadIdx.x < n; p += step) {
        double acc = p < n ? f.yg[h.row] : 0.0;
        const ilub_head here = h;
        const int here_out = out;
        h = ilub_load_head(p + step, n, f.uptr, f.src, f.diag);
        out = p + step < n ? f.urow[p + step] : 0;
        ilub_row(p, n, here, true, f.udep, f.uval, sv, sf, 2, f.sleep_ns, acc);
        if (p < n) ilu_out(z, here_out, acc);
    }
}

// The level schedule (narrow > 0): levels in turn, no flags. Why: a poll's round through the
// block's warps costs most of a level (0.55-1.3 us) where a level is a row or two; one warp
// alone between __syncwarp barriers pays only the row's own chain. A run of consecutive levels
// of at most `narrow` rows is solved by warp 0 (lane j the level's rows j, j + 32, ...) while
// the other warps wait at the run's __syncthreads; a wider level by the whole block, a
// __syncthreads after it. A lane loads its next row (range, right-hand side, U's diagonal and
// matrix row, and the first ILU_LEVEL_WINDOW entries) before it solves the current one, into
// the next level when the current one has no more of its rows: none of it depends on results.
// The same per-row arithmetic as ilub_row, so the same bits.

#define ILU_LEVEL_WINDOW 8

struct ilul_row {
    int p, k, k_end, out;  // p < 0: none
    double rhs, diag;
    int d[ILU_LEVEL_WINDOW];
    double a[ILU_LEVEL_WINDOW];
};

template <bool UPPER, typename RT>
__device__ __forceinline__ void ilul_load(ilul_row& x, int p, const block_ilu& f, RT r) {
    x.p = p;
    if (p < 0) return;
    const int* ptr = UPPER ? f.uptr : f.lptr;
    const int* dep = UPPER ? f.udep : f.ldep;
    const double* val = UPPER ? f.uval : f.lval;
    x.k = ptr[p];
    x.k_end = ptr[p + 1];
    if (UPPER) {
        x.rhs = f.yg[f.src[p]];
        x.diag = f.diag[p];
        x.out = f.urow[p];
    } else {
        x.rhs = ilu_in(r, f.lrow[p]);
    }
#pragma unroll
    for (int c = 0; c < ILU_LEVEL_WINDOW; ++c) {
        if (x.k + c < x.k_end) {
            x.d[c] = dep[x.k + c];
            x.a[c] = val[x.k + c];
        }
    }
}

template <bool UPPER, typename ZT>
__device__ __forceinline__ void ilul_solve(const ilul_row& x, const block_ilu& f, double* sv,
                                           ZT z) {
    const int* dep = UPPER ? f.udep : f.ldep;
    const double* val = UPPER ? f.uval : f.lval;
    double acc = x.rhs;
#pragma unroll
    for (int c = 0; c < ILU_LEVEL_WINDOW; ++c) {
        if (x.k + c < x.k_end) acc = __dsub_rn(acc, __dmul_rn(x.a[c], sv[x.d[c]]));
    }
    for (int k = x.k + ILU_LEVEL_WINDOW; k < x.k_end; k += ILU_LEVEL_WINDOW) {
        int d[ILU_LEVEL_WINDOW];
        double a[ILU_LEVEL_WINDOW];
#pragma unroll
        for (int c = 0; c < ILU_LEVEL_WINDOW; ++c) {
            if (k + c < x.k_end) {
                d[c] = dep[k + c];
                a[c] = val[k + c];
            }
        }
#pragma unroll
        for (int c = 0; c < ILU_LEVEL_WINDOW; ++c) {
            if (k + c < x.k_end) acc = __dsub_rn(acc, __dmul_rn(a[c], sv[d[c]]));
        }
    }
    if (UPPER) {
        acc = __ddiv_rn(acc, x.diag);
        sv[x.p] = acc;
        ilu_out(z, x.out, acc);
    } else {
        sv[x.p] = acc;
        f.yg[x.p] = acc;
    }
}

// Warp 0's run of narrow levels from `lev`; returns the first level after it.
template <bool UPPER, typename RT, typename ZT>
__device__ __forceinline__ int ilul_narrow_run(int lev, int nlev, const int* __restrict__ lp,
                                               int narrow, const block_ilu& f, RT r, double* sv,
                                               ZT z) {
    const int lane = threadIdx.x & 31;
    int begin = lp[lev], end = lp[lev + 1];
    ilul_row cur, next;
    ilul_load<UPPER>(cur, begin + lane < end ? begin + lane : -1, f, r);
    for (;;) {
        const int nb = end, ne = lev + 1 < nlev ? lp[lev + 2] : end;
        const bool more = lev + 1 < nlev && ne - nb <= narrow;
        while (cur.p >= begin && cur.p < end) {
            int np = cur.p + 32;
            if (np >= end) np = more && nb + lane < ne ? nb + lane : -1;
            ilul_load<UPPER>(next, np, f, r);
            ilul_solve<UPPER>(cur, f, sv, z);
            cur = next;
        }
        // a lane without a row in this level loads its first of the next
        if (cur.p < 0 && more && nb + lane < ne) ilul_load<UPPER>(cur, nb + lane, f, r);
        __syncwarp();
        ++lev;
        if (!more) return lev;
        begin = nb;
        end = ne;
    }
}

// next_level: where warp 0 tells the block the level after its run (a static __shared__ would
// add to the opt-in maximum the launch asks for).
template <bool UPPER, typename RT, typename ZT>
__device__ __forceinline__ void ilul_triangle(int nlev, const int* __restrict__ lp,
                                              const block_ilu& f, RT r, double* sv, ZT z,
                                              volatile int* next_level) {
    int lev = 0;
    while (lev < nlev) {
        const int begin = lp[lev], end = lp[lev + 1];
        if (end - begin <= f.narrow) {
            if (threadIdx.x < 32) {
                const int after = ilul_narrow_run<UPPER>(lev, nlev, lp, f.narrow, f, r, sv, z);
                if (threadIdx.x == 0) *next_level = after;
            }
            __syncthreads();
            // written again only after a wide level's barrier, which every thread passes after
            // reading it
            lev = *next_level;
        } else {
            ilul_row cur, next;
            const int first = begin + (int)threadIdx.x;
            ilul_load<UPPER>(cur, first < end ? first : -1, f, r);
            while (cur.p >= 0) {
                const int np = cur.p + (int)blockDim.x;
                ilul_load<UPPER>(next, np < end ? np : -1, f, r);
                ilul_solve<UPPER>(cur, f, sv, z);
                cur = next;
            }
            __syncthreads();
            ++lev;
        }
    }
}

template <typename RT, typename ZT>
__device__ __forceinline__ void ilu_block_levels(int n, const block_ilu& f, RT r, ZT z) {
    extern __shared__ double ilub_shared[];
    // in the polls' flag bytes, unused here
    volatile int* next_level = reinterpret_cast<volatile int*>(ilub_shared + n);
    ilul_triangle<false>(f.lnlev, f.lseg, f, r, ilub_shared, z, next_level);
    __syncthreads();  // the forward results in yg, and sv free again
    ilul_triangle<true>(f.unlev, f.useg, f, r, ilub_shared, z, next_level);
}

template <typename RT, typename ZT>
__device__ __forceinline__ void ilu_block_body(int n, const block_ilu& f, RT r, ZT z) {
    if (f.narrow > 0) {
        ilu_block_levels(n, f, r, z);
    } else {
        ilu_block_polls(n, f, r, z);
    }
}

#define ILU0_BLOCK_KERNEL(P, Z, RT, ZT)                                                           \
    extern "C" __global__ void __launch_bounds__(1024) ilu0b_##P##_##Z(                           \
        int n, const int* lrow, const int* lptr, const int* ldep, const double* lval,             \
        const int* urow, const int* uptr, const int* udep, const double* uval,                    \
        const double* diag, const int* src, RT r, double* yg, ZT z, int sleep_ns,                 \
        const int* lseg, int lnlev, const int* useg, int unlev, int narrow) {                     \
        const block_ilu f = {lrow, lptr, ldep, lval, urow, uptr, udep, uval, diag, src,           \
                             yg, sleep_ns, lseg, useg, lnlev, unlev, narrow};                     \
        ilu_block_body<RT, ZT>(n, f, r, z);                                                       \
    }

ILU0_BLOCK_KERNEL(f64, f64, const double*, double*)
ILU0_BLOCK_KERNEL(dd, dd, const double2*, double2*)
ILU0_BLOCK_KERNEL(dd, f64, const double2*, double*)
ILU0_BLOCK_KERNEL(td, td, td_ptr, td_ptr)
ILU0_BLOCK_KERNEL(td, f64, td_ptr, double*)
ILU0_BLOCK_KERNEL(qd, qd, const qd_elem*, qd_elem*)
ILU0_BLOCK_KERNEL(qd, f64, const qd_elem*, double*)
