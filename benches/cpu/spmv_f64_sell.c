/* The double SpMV of poisson3d(100) in plain C, two ways, with the row order of the project's
 * double path (each product rounded, then added; one lane per row): CSR one row at a time (what
 * the CPU backend runs for double) and SELL-8 with AVX-512 hardware gathers (eight rows per
 * register). A yardstick for how fast double's SpMV could be on this machine, and so for the
 * DD/double ratio of issue #2 (benches/results/cpu.md, "C yardsticks"). `bash benches/cpu/cpu.sh c`
 * builds and runs it, as:
 *
 *     gcc -O3 -march=native -ffp-contract=off -fopenmp -o /tmp/spmv_f64_sell benches/cpu/spmv_f64_sell.c
 *     OMP_NUM_THREADS=2 /tmp/spmv_f64_sell
 *
 * Both give the same bits (checked). Best of 30 each, so run it several times on a busy machine.
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#define G 100
int main(void) {
  size_t n = (size_t)G * G * G;
  size_t *rp = malloc((n + 1) * sizeof(size_t));
  int *ci = malloc(7 * n * sizeof(int));
  double *va = malloc(7 * n * sizeof(double));
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    rp[i] = k;
    size_t z = i / (G * G), y = (i / G) % G, x = i % G;
    if (z > 0) { ci[k] = i - G * G; va[k++] = -1; }
    if (y > 0) { ci[k] = i - G; va[k++] = -1; }
    if (x > 0) { ci[k] = i - 1; va[k++] = -1; }
    ci[k] = i; va[k++] = 6;
    if (x < G - 1) { ci[k] = i + 1; va[k++] = -1; }
    if (y < G - 1) { ci[k] = i + G; va[k++] = -1; }
    if (z < G - 1) { ci[k] = i + G * G; va[k++] = -1; }
  }
  rp[n] = k;
  size_t nnz = k;
  /* SELL-8: slices of 8 rows, width = max len, column-major within slice, padding col=row, val 0 */
  size_t ns = n / 8;
  size_t *sp = malloc((ns + 1) * sizeof(size_t));
  size_t tot = 0;
  for (size_t s = 0; s < ns; s++) {
    sp[s] = tot;
    size_t w = 0;
    for (int r = 0; r < 8; r++) { size_t l = rp[s * 8 + r + 1] - rp[s * 8 + r]; if (l > w) w = l; }
    tot += w * 8;
  }
  sp[ns] = tot;
  int *sc = malloc(tot * sizeof(int));
  double *sv = malloc(tot * sizeof(double));
#pragma omp parallel for
  for (size_t s = 0; s < ns; s++) {
    size_t w = (sp[s + 1] - sp[s]) / 8;
    for (size_t j = 0; j < w; j++)
      for (int r = 0; r < 8; r++) {
        size_t row = s * 8 + r, l = rp[row + 1] - rp[row];
        sc[sp[s] + j * 8 + r] = j < l ? ci[rp[row] + j] : (int)row;
        sv[sp[s] + j * 8 + r] = j < l ? va[rp[row] + j] : 0.0;
      }
  }
  double *xv = malloc(n * 8), *y1 = malloc(n * 8), *y2 = malloc(n * 8);
#pragma omp parallel for
  for (size_t i = 0; i < n; i++) { xv[i] = 1.0 + 1e-3 * (i % 17); y1[i] = 0; y2[i] = 0; }
  double best1 = 1e9, best2 = 1e9;
  for (int rep = 0; rep < 30; rep++) {
    double t = omp_get_wtime();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
      double s = 0;
      for (size_t q = rp[i]; q < rp[i + 1]; q++) s = s + va[q] * xv[ci[q]];
      y1[i] = s;
    }
    double t1 = omp_get_wtime() - t;
    t = omp_get_wtime();
#pragma omp parallel for schedule(static)
    for (size_t s = 0; s < ns; s++) {
      __m512d acc = _mm512_setzero_pd();
      size_t w = (sp[s + 1] - sp[s]) / 8;
      const int *c = sc + sp[s];
      const double *v = sv + sp[s];
      for (size_t j = 0; j < w; j++) {
        __m256i idx = _mm256_loadu_si256((const __m256i *)(c + 8 * j));
        __m512d xx = _mm512_i32gather_pd(idx, xv, 8);
        acc = _mm512_add_pd(acc, _mm512_mul_pd(_mm512_loadu_pd(v + 8 * j), xx));
      }
      _mm512_storeu_pd(y2 + 8 * s, acc);
    }
    double t2 = omp_get_wtime() - t;
    if (t1 < best1) best1 = t1;
    if (t2 < best2) best2 = t2;
  }
  int bad = 0;
  for (size_t i = 0; i < n; i++) if (y1[i] != y2[i]) bad++;
  double bytes = 12.0 * nnz + 8.0 * (n + 1) + 16.0 * n;
  printf("nnz %zu, mismatches %d\n", nnz, bad);
  printf("csr scalar: best %.3f ms  %.1f GB/s\n", best1 * 1e3, bytes / best1 / 1e9);
  printf("sell8 avx512: best %.3f ms  %.1f GB/s\n", best2 * 1e3, (12.0 * tot + 16.0 * n) / best2 / 1e9);
  return 0;
}
