#!/usr/bin/env bash
# Review of the tiled <p, q> change: xprec.cu's row sums shared by the td/qd SpMVs and the fused
# kernels, Backend::dot_tiled in the trait. The checks that touch them, and the bench once.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test spmv_and_residual wide_reads cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test-review-tile.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-review-tile.txt || { echo "correctness failed: no timings"; exit 1; }
timeout 100 ./solver-tile bench poisson3d:200 > $OUT/bench-review-tile.txt 2>&1
grep -E "^spmv  |cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-review-tile.txt
