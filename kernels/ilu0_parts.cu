// ILU(0) triangular solves over a partitioned order (the default GPU schedule): the same
// per-row arithmetic as kernels/ilu0.cu and src/backend/cpu/trisolve.rs (acc = acc - val * w[dep],
// unfused, entries in order; U: acc / u_ii), so the same bits; only the schedule differs.
//
// Why: in level order every level is a hop between SMs (a row's result goes to L2, the next
// level's rows on other SMs poll it), microseconds each on the H200, and a 3D grid has
// hundreds of levels. Here each triangle is cut into parts of consecutive rows (in the order of
// the solve), one part per block, and a block solves its part level by level with
// __syncthreads between levels: a dependency inside the part is read after a barrier from
// shared memory (the last ILU_WINDOW positions) or L2; only a dependency in an earlier part is
// polled, as a {value, generation} pair (kernels/common/ilu.cuh). A part's levels are ordered
// by arrival (src/precond/ilu0.rs, `Ilu0Factors::lower_partitioned`): a row that needs another
// part's result is placed `hop` levels after it, so the rows that need nothing from outside go
// first.
//
// Latency, level by level: a row's record (its first ILU_CHUNK dependencies and values, by
// position: hdep/hval) and right-hand side (by position: rp, filled by ilu0p_gather_*, or yu,
// filled by the forward solve) are loaded one level ahead; its pairs from other parts are polled
// just before the barrier that opens its level, and polled again after it only if they were
// not ready; the block's last warp prefetches to L2 the records of the level after next
// (ilu_prefetch_level), so that the load a level ahead is an L2 hit, not an HBM round trip.
// Each of these choices was measured against its alternatives on poisson3d:200 (loads through
// ptr and by row, polls a level earlier, in-part dependencies loaded early, a prefetch from
// every thread were all slower): benches/results/ilu0-h200.md.
//
// Layout (src/backend/cuda/ilu.rs uploads it): positions ordered by part, then by level; part q
// is the levels part_seg[q]..part_seg[q + 1], level s the positions seg_ptr[s]..seg_ptr[s + 1];
// ptr/dep/val as in ilu0.cu (dep = a position, always smaller than the reader's); hdep/hval 4
// per position (dependency -1 past the row's end); up[p] = the backward position of forward
// position p's row.
//
// Blocks take parts in order from the ticket counter, so a part only polls rows of parts taken
// earlier, by blocks that are running or done: no deadlock whatever the grid.
//
// Kernels: ilu0p_gather_{f64,dd,td,qd}(int n, const int* row, const T* r, double* rp)
//          ilu0p_lower(int nparts, const int* part_seg, const int* seg_ptr, const int* ptr,
//              const int* dep, const double* val, const int4* hdep, const double2* hval,
//              const double* rp, double* y, double* yu, const int* up,
//              unsigned long long gen, unsigned long long* ticket,
//              unsigned long long ticket_base)
//          ilu0p_upper_{f64,dd,td,qd}(nparts, part_seg, seg_ptr, ptr, dep, val, hdep, hval,
//              const int* row, const double* diag, const double* yu, double* x, T* z, gen,
//              ticket, ticket_base)
//          y and x are 2 n doubles (pairs). A launch of G blocks takes nparts + G tickets.

// The pairs are read and written with relaxed GPU-scope accesses (ilu_load_pair's sync == 3).
#define ILU_SCOPE 3

// Doubles of shared memory holding the part's most recent results (a power of two).
#define ILU_WINDOW 4096

// A row's first ILU_CHUNK entries are stored by position (hdep[4 p + c], hval[4 p + c], dep -1
// past the row's end), so a row needs no ptr load first; rows with more entries read the rest
// from ptr/dep/val.
struct IluRow {
    int dest;  // where the result goes besides the pairs: U: z[row[p]]; L: next[up[p]]
    int d[ILU_CHUNK];
    double v[ILU_CHUNK];
    double x[ILU_CHUNK];              // a dependency's value, when polled early
    unsigned long long g[ILU_CHUNK];  // and its generation
    double acc;                       // the right-hand side
    double pivot;                     // U: u_ii
};

// Loads of what no other row's result decides: one round trip, issued a level ahead (the
// destination too: a store waits for its address; benches/results/ilu0-h200.md).
template <bool UPPER>
__device__ __forceinline__ void ilu_fetch(IluRow& m, int p, const int* __restrict__ dest,
                                          const int4* __restrict__ hdep,
                                          const double2* __restrict__ hval, const double* rhs,
                                          const double* __restrict__ diag) {
    const int4 d = hdep[p];
    const double2 v01 = hval[2 * (long long)p], v23 = hval[2 * (long long)p + 1];
    m.d[0] = d.x;
    m.d[1] = d.y;
    m.d[2] = d.z;
    m.d[3] = d.w;
    m.v[0] = v01.x;
    m.v[1] = v01.y;
    m.v[2] = v23.x;
    m.v[3] = v23.y;
    m.acc = __ldcg(rhs + p);  // written by the launch before
    m.dest = dest[p];
    if (UPPER) m.pivot = diag[p];
}

// The level whose records the last warp prefetches to L2, counted from the level whose records
// are being loaded into registers (the one after the level being solved).
#define ILU_PREFETCH_LEVELS 2

// Prefetch to L2 the 128-byte lines of elements [lo, hi) of an array of `size`-byte elements,
// one line per lane of the calling warp.
__device__ __forceinline__ void ilu_prefetch(const void* base, int size, int lo, int hi, int lane) {
    const char* b = static_cast<const char*>(base);
    const long long first = ((long long)lo * size) >> 7, last = ((long long)hi * size - 1) >> 7;
    for (long long line = first + lane; line <= last; line += 32)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(b + (line << 7)));
}

// The records of level `s` (positions seg_ptr[s]..seg_ptr[s + 1]), prefetched by the block's
// last warp, which has rows only in levels wider than the block less a warp: they are then an
// L2 hit, not an HBM round trip, when they are loaded a level ahead, and the warps with rows
// issue no extra instructions (benches/results/ilu0-h200.md).
template <bool UPPER>
__device__ __forceinline__ void ilu_prefetch_level(int s, int s_end, const int* seg_ptr,
                                                   const int* dest, const int4* hdep,
                                                   const double2* hval, const double* rhs,
                                                   const double* diag) {
    const int lane = (int)threadIdx.x - ((int)blockDim.x - 32);
    if (lane < 0 || s >= s_end) return;
    const int lo = seg_ptr[s], hi = seg_ptr[s + 1];
    if (hi <= lo) return;
    ilu_prefetch(hdep, 16, lo, hi, lane);
    ilu_prefetch(hval, 32, lo, hi, lane);
    ilu_prefetch(rhs, 8, lo, hi, lane);
    ilu_prefetch(dest, 4, lo, hi, lane);
    if (UPPER) ilu_prefetch(diag, 8, lo, hi, lane);
}

// Before the barrier that opens the row's level: load the pairs of dependencies in earlier
// parts (their values do not come from this block, so they may already be there).
__device__ __forceinline__ void ilu_probe(IluRow& m, const double* w, int part_first,
                                          unsigned long long gen) {
#pragma unroll
    for (int c = 0; c < ILU_CHUNK; ++c) {
        m.g[c] = gen;
        if (m.d[c] >= 0 && m.d[c] < part_first) ilu_load_pair(w, m.d[c], m.x[c], m.g[c], ILU_SCOPE);
    }
}

// One dependency's value: the shared window, w (this block's, before a barrier), or the
// pair of another block's row, polled until it carries gen.
__device__ __forceinline__ double ilu_dep(const double* w, const double* window, int d,
                                          int part_first, int window_first,
                                          unsigned long long gen) {
    if (d >= window_first) return window[d & (ILU_WINDOW - 1)];
    if (d >= part_first) return __ldcg(w + 2 * (long long)d);
    double x;
    unsigned long long g;
    do {
        ilu_load_pair(w, d, x, g, ILU_SCOPE);
    } while (g != gen);
    return x;
}

// The row's sum, entries in order: the first ILU_CHUNK from the row's record (polled ones
// from the probe, re-polled while not ready), the rest through ptr.
__device__ __forceinline__ double ilu_part_sum(IluRow& m, int p, const int* __restrict__ ptr,
                                               const int* __restrict__ dep,
                                               const double* __restrict__ val, const double* w,
                                               const double* window, int part_first,
                                               int window_first, unsigned long long gen) {
    double acc = m.acc;
#pragma unroll
    for (int c = 0; c < ILU_CHUNK; ++c) {
        const int d = m.d[c];
        if (d < 0) return acc;
        double x;
        if (d >= part_first) {
            x = ilu_dep(w, window, d, part_first, window_first, gen);
        } else {
            while (m.g[c] != gen) ilu_load_pair(w, d, m.x[c], m.g[c], ILU_SCOPE);
            x = m.x[c];
        }
        acc = __dsub_rn(acc, __dmul_rn(m.v[c], x));
    }
    const int k_end = ptr[p + 1];
    for (int k = ptr[p] + ILU_CHUNK; k < k_end; ++k) {
        acc = __dsub_rn(acc, __dmul_rn(val[k], ilu_dep(w, window, dep[k], part_first,
                                                         window_first, gen)));
    }
    return acc;
}

// UPPER = false: rhs = fl64(r) by forward position; results to out (pairs) and, for the
// backward solve, to next[dest[p]] (dest = up: its right-hand side by backward position).
// UPPER = true: rhs = y by backward position; results to out (pairs) and z[dest[p]] (dest =
// row).
template <bool UPPER, typename ZT>
__device__ __forceinline__ void ilu_parts_body(
    int nparts, const int* __restrict__ part_seg, const int* __restrict__ seg_ptr,
    const int* __restrict__ dest, const int* __restrict__ ptr, const int* __restrict__ dep,
    const double* __restrict__ val, const int4* __restrict__ hdep,
    const double2* __restrict__ hval, const double* __restrict__ diag, const double* rhs,
    double* out, double* next, ZT z, unsigned long long gen, unsigned long long* ticket,
    unsigned long long ticket_base) {
    __shared__ double window[ILU_WINDOW];
    __shared__ long long part;
    const int t = threadIdx.x;
    for (;;) {
        __syncthreads();  // every thread is done with the last part (and its window)
        if (t == 0) part = (long long)(atomicAdd(ticket, 1ULL) - ticket_base);
        __syncthreads();
        const long long q = part;
        if (q >= nparts) return;
        const int s_end = part_seg[q + 1];
        int s = part_seg[q];
        if (s == s_end) continue;
        const int first = seg_ptr[s];
        int b = first, e = seg_ptr[s + 1];
        // This thread's first row of the level being solved (m) and of the next (ahead): a
        // row's record is loaded a level before it is solved, and its pairs from other blocks
        // are polled just before the barrier that opens its level (polled earlier, they are
        // more often not ready yet, and the second poll costs a round trip: measured slower).
        IluRow m, ahead;
        if (b + t < e) {
            ilu_fetch<UPPER>(m, b + t, dest, hdep, hval, rhs, diag);
            ilu_probe(m, out, first, gen);
        }
        int e_next = s + 1 < s_end ? seg_ptr[s + 2] : e;
        if (e + t < e_next) ilu_fetch<UPPER>(ahead, e + t, dest, hdep, hval, rhs, diag);
        for (int k = 1; k <= ILU_PREFETCH_LEVELS; ++k)
            ilu_prefetch_level<UPPER>(s + 1 + k, s_end, seg_ptr, dest, hdep, hval, rhs, diag);
        for (;;) {
            // the slots of [b, e) are those of [b - W, e - W): reads stay at or after e - W
            const int window_first = max(first, e - ILU_WINDOW);
            for (int p = b + t; p < e; p += blockDim.x) {
                if (p != b + t) {
                    ilu_fetch<UPPER>(m, p, dest, hdep, hval, rhs, diag);
                    ilu_probe(m, out, first, gen);
                }
                double acc =
                    ilu_part_sum(m, p, ptr, dep, val, out, window, first, window_first, gen);
                if (UPPER) acc = __ddiv_rn(acc, m.pivot);
                window[p & (ILU_WINDOW - 1)] = acc;
                ilu_store_pair(out, p, acc, gen, ILU_SCOPE);
                if (UPPER) {
                    ilu_out(z, m.dest, acc);
                } else {
                    next[m.dest] = acc;
                }
            }
            if (++s == s_end) break;
            b = e;
            e = e_next;
            m = ahead;
            if (b + t < e) ilu_probe(m, out, first, gen);
            e_next = s + 1 < s_end ? seg_ptr[s + 2] : e;
            if (e + t < e_next) ilu_fetch<UPPER>(ahead, e + t, dest, hdep, hval, rhs, diag);
            ilu_prefetch_level<UPPER>(s + 1 + ILU_PREFETCH_LEVELS, s_end, seg_ptr, dest, hdep,
                                      hval, rhs, diag);
            __syncthreads();  // this level's results are visible to the block
        }
    }
}

// The forward solve's right-hand side in its order: rp[p] = fl64(r[row[p]]).
template <typename RT>
__device__ __forceinline__ void ilu_gather_body(int n, const int* __restrict__ row, RT r,
                                                double* rp) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p < n) rp[p] = ilu_in(r, row[p]);
}

// __launch_bounds__(512): blocks of up to 512 threads (at most 128 registers a thread: two
// rows' records live in registers).
extern "C" __global__ void __launch_bounds__(512)
    ilu0p_lower(int nparts, const int* part_seg, const int* seg_ptr, const int* ptr, const int* dep,
                const double* val, const int4* hdep, const double2* hval, const double* rp,
                double* y, double* yu, const int* up, unsigned long long gen,
                unsigned long long* ticket, unsigned long long ticket_base) {
    ilu_parts_body<false, double*>(nparts, part_seg, seg_ptr, up, ptr, dep, val, hdep, hval,
                                   nullptr, rp, y, yu, nullptr, gen, ticket, ticket_base);
}

#define ILU0_PARTS_KERNELS(P, RT, ZT)                                                             \
    extern "C" __global__ void ilu0p_gather_##P(int n, const int* row, RT r, double* rp) {        \
        ilu_gather_body<RT>(n, row, r, rp);                                                       \
    }                                                                                             \
    extern "C" __global__ void __launch_bounds__(512) ilu0p_upper_##P(                            \
        int nparts, const int* part_seg, const int* seg_ptr, const int* ptr, const int* dep,      \
        const double* val, const int4* hdep, const double2* hval, const int* row,                 \
        const double* diag, const double* yu, double* x, ZT z, unsigned long long gen,            \
        unsigned long long* ticket, unsigned long long ticket_base) {                   \
        ilu_parts_body<true, ZT>(nparts, part_seg, seg_ptr, row, ptr, dep, val, hdep, hval, diag, \
                                 yu, x, nullptr, z, gen, ticket, ticket_base);                    \
    }

ILU0_PARTS_KERNELS(f64, const double*, double*)
ILU0_PARTS_KERNELS(dd, const double2*, double2*)
ILU0_PARTS_KERNELS(td, td_ptr, td_ptr)
ILU0_PARTS_KERNELS(qd, const qd_elem*, qd_elem*)
