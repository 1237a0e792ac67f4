// Probe: does a sliced-ELLPACK layout (SELL-32: slices of 32 rows stored column by column, so a
// warp's k-th loads of values and column indices are one contiguous 256/128-byte segment) beat
// the one-thread-per-row CSR SpMV (spmv_{f64,dd}_nt1) on poisson3d:200? Same per-row order, so
// the same bits: checked here. Standalone (nvcc), not part of the crate.
//   nvcc -O3 -arch=sm_90 -fmad=false -o sell_probe sell_probe.cu && ./sell_probe 200
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "../../kernels/common/dd.cuh"

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

__global__ void csr_f64(int n, const int* __restrict__ rp, const int* __restrict__ ci,
                        const double* __restrict__ v, const double* __restrict__ x, double* __restrict__ y) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    double s = 0.0;
    int end = rp[row + 1];
    for (int k = rp[row]; k < end; k++) s = __dadd_rn(s, __dmul_rn(v[k], x[ci[k]]));
    y[row] = s;
}

// SELL-C, slice s of rows [C s, C s + C): entry k of row C s + l at sp[s] + k C + l.
template <int C>
__global__ void sell_f64(int n, const int* __restrict__ sp, const int* __restrict__ len,
                         const int* __restrict__ ci, const double* __restrict__ v,
                         const double* __restrict__ x, double* __restrict__ y) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    long long base = sp[row / C] + row % C;
    int l = len[row];
    double s = 0.0;
    for (int k = 0; k < l; k++) {
        long long j = base + (long long)k * C;
        s = __dadd_rn(s, __dmul_rn(v[j], x[ci[j]]));
    }
    y[row] = s;
}

#define B 8
__global__ void csr_dd(int n, const int* __restrict__ rp, const int* __restrict__ ci,
                       const double* __restrict__ v, const double2* __restrict__ x, double2* __restrict__ y) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    dd_t s = dd_from_f64(0.0);
    int end = rp[row + 1];
    for (int k = rp[row]; k < end; k += B) {
        dd_t xk[B]; double ak[B];
#pragma unroll
        for (int u = 0; u < B; u++) if (k + u < end) { ak[u] = v[k + u]; xk[u] = dd_load(x, ci[k + u]); }
#pragma unroll
        for (int u = 0; u < B; u++) if (k + u < end) s = dd_add(s, dd_mul_f64(xk[u], ak[u]));
    }
    dd_store(y, row, s);
}

template <int C, int BB>
__global__ void sell_dd(int n, const int* __restrict__ sp, const int* __restrict__ len,
                        const int* __restrict__ ci, const double* __restrict__ v,
                        const double2* __restrict__ x, double2* __restrict__ y) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= n) return;
    const int* cp = ci + sp[row / C] + row % C;
    const double* vp = v + sp[row / C] + row % C;
    int l = len[row];
    dd_t s = dd_from_f64(0.0);
    for (int k = 0; k < l; k += BB) {
        dd_t xk[BB]; double ak[BB];
#pragma unroll
        for (int u = 0; u < BB; u++) if (k + u < l) { ak[u] = vp[(k + u) * C]; xk[u] = dd_load(x, cp[(k + u) * C]); }
#pragma unroll
        for (int u = 0; u < BB; u++) if (k + u < l) s = dd_add(s, dd_mul_f64(xk[u], ak[u]));
    }
    dd_store(y, row, s);
}

__global__ void copy_f64(long long n, const double* __restrict__ a, double* __restrict__ b) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}

template <typename F>
float median_ms(F launch, int reps = 40) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 5; i++) launch();
    std::vector<float> t;
    for (int i = 0; i < reps; i++) {
        cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <int C, int BB = 8>
void run_sell(int n, const std::vector<int>& rp, const std::vector<int>& ci, const std::vector<double>& v,
              const double* dx, double* dy, const double2* dxx, double2* dyy,
              const std::vector<double>& ref64, const std::vector<double2>& refdd, int T) {
    int ns = (n + C - 1) / C;
    std::vector<int> sp(ns + 1), len(n);
    sp[0] = 0;
    for (int s = 0; s < ns; s++) {
        int w = 0;
        for (int r = s * C; r < std::min(n, s * C + C); r++) { len[r] = rp[r + 1] - rp[r]; w = std::max(w, len[r]); }
        sp[s + 1] = sp[s] + w * C;
    }
    long long tot = sp[ns];
    std::vector<int> sci(tot, 0); std::vector<double> sv(tot, 0.0);
    for (int r = 0; r < n; r++) {
        int s = r / C, l = r % C;
        for (int k = 0; k < len[r]; k++) { sci[sp[s] + k * C + l] = ci[rp[r] + k]; sv[sp[s] + k * C + l] = v[rp[r] + k]; }
        for (int k = len[r]; k < (sp[s + 1] - sp[s]) / C; k++) sci[sp[s] + k * C + l] = r;  // pad: own row
    }
    int *dsp, *dlen, *dci; double* dv;
    CK(cudaMalloc(&dsp, sp.size() * 4)); CK(cudaMalloc(&dlen, n * 4)); CK(cudaMalloc(&dci, tot * 4)); CK(cudaMalloc(&dv, tot * 8));
    cudaMemcpy(dsp, sp.data(), sp.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dlen, len.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dci, sci.data(), tot * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, sv.data(), tot * 8, cudaMemcpyHostToDevice);
    int g = (n + T - 1) / T;
    cudaMemset(dy, 0, n * 8); cudaMemset(dyy, 0, n * 16);
    float tf = median_ms([&] { sell_f64<C><<<g, T>>>(n, dsp, dlen, dci, dv, dx, dy); });
    float td = median_ms([&] { sell_dd<C, BB><<<g, T>>>(n, dsp, dlen, dci, dv, dxx, dyy); });
    CK(cudaDeviceSynchronize());
    std::vector<double> y64(n); std::vector<double2> ydd(n);
    cudaMemcpy(y64.data(), dy, n * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(ydd.data(), dyy, n * 16, cudaMemcpyDeviceToHost);
    bool same = memcmp(y64.data(), ref64.data(), n * 8) == 0 && memcmp(ydd.data(), refdd.data(), n * 16) == 0;
    cudaFuncAttributes at; cudaFuncGetAttributes(&at, sell_dd<C, BB>);
    printf("[dd batch %d, %d regs] ", BB, at.numRegs);
    printf("sell C=%-3d T=%-4d f64 %.4f ms  dd %.4f ms  padding %.3f%%  same bits as csr: %s\n", C, T, tf, td,
           100.0 * (tot - rp[n]) / rp[n], same ? "yes" : "NO");
    cudaFree(dsp); cudaFree(dlen); cudaFree(dci); cudaFree(dv);
}

int main(int argc, char** argv) {
    int N = argc > 1 ? atoi(argv[1]) : 200;
    int n = N * N * N;
    std::vector<int> rp(n + 1), ci; std::vector<double> v;
    ci.reserve(7LL * n); v.reserve(7LL * n);
    rp[0] = 0;
    for (int k = 0; k < N; k++) for (int j = 0; j < N; j++) for (int i = 0; i < N; i++) {
        int r = i + N * (j + N * k);
        if (k > 0) { ci.push_back(r - N * N); v.push_back(-1.0); }
        if (j > 0) { ci.push_back(r - N); v.push_back(-1.0); }
        if (i > 0) { ci.push_back(r - 1); v.push_back(-1.0); }
        ci.push_back(r); v.push_back(6.0);
        if (i < N - 1) { ci.push_back(r + 1); v.push_back(-1.0); }
        if (j < N - 1) { ci.push_back(r + N); v.push_back(-1.0); }
        if (k < N - 1) { ci.push_back(r + N * N); v.push_back(-1.0); }
        rp[r + 1] = ci.size();
    }
    long long nnz = rp[n];
    std::vector<double> x(n); std::vector<double2> xx(n);
    srand(7);
    for (int i = 0; i < n; i++) { double a = rand() / (double)RAND_MAX + 0.5; x[i] = a; xx[i] = make_double2(a, a * 1e-17 * (rand() / (double)RAND_MAX)); }
    int *drp, *dci; double *dv, *dx, *dy; double2 *dxx, *dyy;
    CK(cudaMalloc(&drp, (n + 1) * 4)); CK(cudaMalloc(&dci, nnz * 4)); CK(cudaMalloc(&dv, nnz * 8));
    CK(cudaMalloc(&dx, n * 8)); CK(cudaMalloc(&dy, n * 8)); CK(cudaMalloc(&dxx, n * 16)); CK(cudaMalloc(&dyy, n * 16));
    cudaMemcpy(drp, rp.data(), (n + 1) * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dci, ci.data(), nnz * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, v.data(), nnz * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, x.data(), n * 8, cudaMemcpyHostToDevice);
    cudaMemcpy(dxx, xx.data(), n * 16, cudaMemcpyHostToDevice);
    printf("poisson3d:%d n %d nnz %lld\n", N, n, nnz);
    const int T = 256;
    int g = (n + T - 1) / T;
    double* big; CK(cudaMalloc(&big, 2LL * n * 16));
    float tc = median_ms([&] { copy_f64<<<(2LL * n + T - 1) / T, T>>>(2LL * n, big, big + 2LL * n); });
    printf("copy %.1f MB read+write: %.4f ms = %.0f GB/s\n", 32.0 * n / 1e6, tc, 32.0 * n / tc / 1e6);
    float tf = median_ms([&] { csr_f64<<<g, T>>>(n, drp, dci, dv, dx, dy); });
    float td = median_ms([&] { csr_dd<<<g, T>>>(n, drp, dci, dv, dxx, dyy); });
    CK(cudaDeviceSynchronize());
    std::vector<double> ref64(n); std::vector<double2> refdd(n);
    cudaMemcpy(ref64.data(), dy, n * 8, cudaMemcpyDeviceToHost);
    cudaMemcpy(refdd.data(), dyy, n * 16, cudaMemcpyDeviceToHost);
    double minb64 = nnz * 12.0 + 4.0 * n + 16.0 * n, minbdd = nnz * 12.0 + 4.0 * n + 32.0 * n;
    { cudaFuncAttributes a1, a2; cudaFuncGetAttributes(&a1, csr_f64); cudaFuncGetAttributes(&a2, csr_dd);
      printf("[csr regs f64 %d dd %d] ", a1.numRegs, a2.numRegs); }
    printf("csr nt1       f64 %.4f ms  dd %.4f ms  (min bytes %.0f / %.0f MB)\n", tf, td, minb64 / 1e6, minbdd / 1e6);
    run_sell<32>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 256);
    run_sell<32, 1>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 256);
    run_sell<32, 2>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 256);
    run_sell<32, 4>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 256);
    run_sell<32, 7>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 256);
    run_sell<32, 4>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 128);
    run_sell<32, 7>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 128);
    // again, to see the spread
    tf = median_ms([&] { csr_f64<<<g, T>>>(n, drp, dci, dv, dx, dy); });
    td = median_ms([&] { csr_dd<<<g, T>>>(n, drp, dci, dv, dxx, dyy); });
    printf("csr nt1 again f64 %.4f ms  dd %.4f ms\n", tf, td);
    run_sell<32>(n, rp, ci, v, dx, dy, dxx, dyy, ref64, refdd, 256);
    return 0;
}
