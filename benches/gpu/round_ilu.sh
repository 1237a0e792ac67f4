#!/usr/bin/env bash
# ILU(0) device round: the correctness suite (GPU vs CPU bit for bit, ILU checks included), then
# `solver bench poisson3d:200 --precond ilu0` (our triangular solves against cuSPARSE's).
# Expects solver, gpu-test and matrices/ in its folder (benches/results/ilu0-h200.md).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
PRECSOLVE_MATRICES=$PWD/matrices timeout ${TEST_TIMEOUT:-240} ./gpu-test 2>&1 | tee $OUT/gpu-test.txt
grep -q " 0 failed" $OUT/gpu-test.txt || { echo "correctness failed or timed out: no timings"; exit 1; }
echo "== solver bench ${MATRIX:-poisson3d:200} --precond ilu0"
timeout ${BENCH_TIMEOUT:-300} ./solver bench ${MATRIX:-poisson3d:200} --precond ilu0 --reps 20 --iterations 100 \
  --json $OUT/bench-ilu0.json 2>&1 | tee $OUT/bench-ilu0.txt
