#!/usr/bin/env bash
# BiCGStab's <r~, v>, <t, t> and <t, s> summed inside its SpMVs (tiled order): the GPU-vs-CPU
# checks that touch it, then the plain bench on the previous build (solver-base, 57d1bf3) and
# this one (solver-bicg). Copied into .gpu/ with both binaries and gpu-test; carry .gpu.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test dot cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test-bicg.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-bicg.txt || { echo "correctness failed: no timings"; exit 1; }
for b in solver-base solver-bicg; do
  timeout 100 ./$b bench poisson3d:200 --json $OUT/bench-$b.json > $OUT/bench-$b.txt 2>&1
  echo "== $b"; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-$b.txt
done
