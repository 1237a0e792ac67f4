/* What plain C reaches on this machine for the shapes of CG's vector passes, with arrays of
 * the size of poisson3d(100)'s double vectors (1M doubles, 8 MB) and of its double-double
 * vectors (16 MB): a yardstick for the `r` update (3 arrays) and the direction update (5
 * arrays) of the CPU's CG in both precisions, each round after a 96 MB read (CG's SpMV streams
 * its matrix between them), for benches/results/cpu.md ("C yardsticks"). `bash benches/cpu/cpu.sh c`
 * builds and runs it, as:
 *
 *     gcc -O3 -march=native -fopenmp -o /tmp/pass_bandwidth benches/cpu/pass_bandwidth.c
 *     OMP_NUM_THREADS=2 /tmp/pass_bandwidth
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

/* Read between the rounds, as CG's SpMV streams its ~90 MB matrix between the direction update
 * and the next `r` update. */
static double *matrix;
static const size_t matrix_len = (size_t)12 << 20; /* 96 MB */

static double stream_matrix(void) {
    double sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (size_t i = 0; i < matrix_len; i++) sum += matrix[i];
    return sum;
}

static void run(size_t n, const char *label) {
    double *x = malloc(n * 8), *y = malloc(n * 8), *z = malloc(n * 8);
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) {
        x[i] = 1;
        y[i] = 2;
        z[i] = 3;
    }
    double sink = 0;
    for (int rep = 0; rep < 8; rep++) {
        sink += stream_matrix();
        double t = omp_get_wtime();
        /* the r update's shape: read two arrays, write one of them */
#pragma omp parallel for
        for (size_t i = 0; i < n; i++) y[i] += 1e-9 * x[i];
        double t1 = omp_get_wtime() - t;
        t = omp_get_wtime();
        /* the direction update's shape: read r, p, x; write p and x */
#pragma omp parallel for
        for (size_t i = 0; i < n; i++) {
            double p = y[i];
            z[i] += 1e-9 * p;
            y[i] = x[i] + 1e-9 * p;
        }
        double t2 = omp_get_wtime() - t;
        printf("%s: update (3 arrays) %.1f GB/s, direction (5 arrays) %.1f GB/s\n", label,
               3.0 * n * 8 / t1 / 1e9, 5.0 * n * 8 / t2 / 1e9);
    }
    free(x);
    free(y);
    free(z);
    if (sink == 42) printf("\n");
}

int main(void) {
    matrix = malloc(matrix_len * 8);
#pragma omp parallel for
    for (size_t i = 0; i < matrix_len; i++) matrix[i] = 1e-3;
    run((size_t)1 << 20, "8 MB arrays (double vectors)");
    run((size_t)2 << 20, "16 MB arrays (DD vectors)");
    return 0;
}
