#!/usr/bin/env bash
# Expects solver, gpu-test and matrices/ in its folder (built as in benches/results/ilu0-h200.md).
# Final round: GPU-vs-CPU checks touched by the ILU prefetch and BiCGStab's double p^/s^, then
# solver bench poisson3d:200 --precond ilu0.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
PRECSOLVE_MATRICES=$PWD/matrices timeout ${TEST_TIMEOUT:-330} ./gpu-test ${CHECKS:-spmv_and_residual wide_reads whole_solves preconditioned ilu_apply} 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test.txt || { echo "correctness failed or timed out: no timings"; exit 1; }
echo "== solver bench poisson3d:200 --precond ilu0"
timeout 200 ./solver bench poisson3d:200 --precond ilu0 --reps 20 --iterations 100 \
  --json $OUT/bench-ilu0.json 2>&1 | tee $OUT/bench-ilu0.txt | grep -v "^ilu0 sync\|^ilu0 levels"
