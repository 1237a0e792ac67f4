#!/usr/bin/env bash
# Expects solver (this build), solver-dd8 (3836661's kernels), gpu-test and matrices/ in its
# folder (built as in benches/results/h200.md). The SpMV row sums through one helper per
# precision (spmv_{f64,dd}_lane) and prepare's cache check: the kernels' checks against the CPU
# (spmv, wide reads, cg_step with every fused variant, staged included), a whole-solve check,
# then solver bench poisson3d:200 of both builds, alternated, the new one with --sweep-lanes.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test spmv_and_residual cg_step whole_solves_match_cpu_on_poisson 2>&1 \
  | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
for round in 1 2; do
  timeout 100 ./solver-dd8 bench poisson3d:200 2>&1 | tee $OUT/bench-dd8-$round.txt | grep -E "^spmv  |cg iteration  .*(f64|dd)" | sed "s/^/dd8 r$round /"
  timeout 150 ./solver bench poisson3d:200 --sweep-lanes 2>&1 | tee $OUT/bench-$round.txt | grep -E "^spmv  |cg iteration  .*(f64|dd)|staged" | sed "s/^/new r$round /"
done
