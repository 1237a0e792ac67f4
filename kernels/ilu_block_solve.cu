// What the solver kernels of one block that apply ILU(0) themselves share
// (bicgstab_ilu_block.cu, cg_ilu_block.cu; compiled after ilu0_block.cu, whose ilu_block_body
// they call): the factors as one argument, and an application timed by the block's clock.

__device__ __forceinline__ unsigned long long block_clock_ns() {
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    return ns;
}

// The factors of ilu_block_body, as one argument (the solver kernel's arguments after the
// matrix: lrow ... sleep_ns, as src/backend/cuda/ilu.rs's push_ilu_in_block pushes them).
struct block_ilu {
    const int *lrow, *lptr, *ldep;
    const double* lval;
    const int *urow, *uptr, *udep;
    const double* uval;
    const double* diag;
    const int* src;
    double* yg;
    int sleep_ns;
};

// z = M^-1 w in double (ilu0b_{p}_f64), timed by thread 0 into `spent`; the block's threads
// all see z afterwards.
template <typename WT>
__device__ __forceinline__ void block_ilu_apply(int n, const block_ilu& f, const WT* w,
                                                 double* z, unsigned long long& spent) {
    const unsigned long long start = block_clock_ns();
    ilu_block_body<const WT*, double*>(n, f.lrow, f.lptr, f.ldep, f.lval, f.urow, f.uptr, f.udep,
                                       f.uval, f.diag, f.src, w, f.yg, z, f.sleep_ns);
    __syncthreads();
    if (threadIdx.x == 0) spent += block_clock_ns() - start;
}
