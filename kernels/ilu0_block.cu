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
//              int sleep_ns)
//          for (P, Z) in (f64, f64), (dd, dd), (dd, f64), (td, td), (td, f64), (qd, qd),
//          (qd, f64). One block of at most 1024 threads; 9 n bytes of dynamic shared memory
//          (n doubles, then n flag bytes); yg holds n doubles.

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

template <typename RT, typename ZT>
__device__ __forceinline__ void ilu_block_body(int n, const int* __restrict__ lrow,
                                               const int* __restrict__ lptr,
                                               const int* __restrict__ ldep,
                                               const double* __restrict__ lval,
                                               const int* __restrict__ urow,
                                               const int* __restrict__ uptr,
                                               const int* __restrict__ udep,
                                               const double* __restrict__ uval,
                                               const double* __restrict__ diag,
                                               const int* __restrict__ src, RT r, double* yg,
                                               ZT z, int sleep_ns) {
    extern __shared__ double ilub_shared[];
    volatile double* sv = ilub_shared;
    volatile unsigned char* sf = reinterpret_cast<volatile unsigned char*>(ilub_shared + n);
    const int step = blockDim.x;
    ilub_head h = ilub_load_head(threadIdx.x, n, lptr, lrow, nullptr);
    for (int i = threadIdx.x; i < n; i += step) sf[i] = 0;
    __syncthreads();
    for (int p = threadIdx.x; p - threadIdx.x < n; p += step) {
        double acc = p < n ? ilu_in(r, h.row) : 0.0;
        const ilub_head here = h;
        h = ilub_load_head(p + step, n, lptr, lrow, nullptr);
        ilub_row(p, n, here, false, ldep, lval, sv, sf, 1, sleep_ns, acc);
        if (p < n) yg[p] = acc;
    }
    // the backward heads read src into `row`; the matrix row is loaded with them
    h = ilub_load_head(threadIdx.x, n, uptr, src, diag);
    int out = threadIdx.x < n ? urow[threadIdx.x] : 0;
    __syncthreads();
    for (int p = threadIdx.x; p - threadIdx.x < n; p += step) {
        double acc = p < n ? yg[h.row] : 0.0;
        const ilub_head here = h;
        const int here_out = out;
        h = ilub_load_head(p + step, n, uptr, src, diag);
        out = p + step < n ? urow[p + step] : 0;
        ilub_row(p, n, here, true, udep, uval, sv, sf, 2, sleep_ns, acc);
        if (p < n) ilu_out(z, here_out, acc);
    }
}

#define ILU0_BLOCK_KERNEL(P, Z, RT, ZT)                                                           \
    extern "C" __global__ void __launch_bounds__(1024) ilu0b_##P##_##Z(                           \
        int n, const int* lrow, const int* lptr, const int* ldep, const double* lval,             \
        const int* urow, const int* uptr, const int* udep, const double* uval,                    \
        const double* diag, const int* src, RT r, double* yg, ZT z, int sleep_ns) {               \
        ilu_block_body<RT, ZT>(n, lrow, lptr, ldep, lval, urow, uptr, udep, uval, diag, src, r,   \
                               yg, z, sleep_ns);                                                  \
    }

ILU0_BLOCK_KERNEL(f64, f64, const double*, double*)
ILU0_BLOCK_KERNEL(dd, dd, const double2*, double2*)
ILU0_BLOCK_KERNEL(dd, f64, const double2*, double*)
ILU0_BLOCK_KERNEL(td, td, td_ptr, td_ptr)
ILU0_BLOCK_KERNEL(td, f64, td_ptr, double*)
ILU0_BLOCK_KERNEL(qd, qd, const qd_elem*, qd_elem*)
ILU0_BLOCK_KERNEL(qd, f64, const qd_elem*, double*)
