#!/usr/bin/env bash
# Expects solver, gpu-test and matrices/ in its folder (built as in benches/results/h200.md).
# cg_step without x: the checks of the CG kernels, whole and preconditioned solves, then the plain bench's iterations.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 150 ./gpu-test cg_step wide_reads whole_solves preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test.txt || { echo "correctness failed"; exit 1; }
echo "== solver bench poisson3d:200"
timeout 150 ./solver bench poisson3d:200 --json $OUT/bench.json 2>&1 | tee $OUT/bench.txt | grep -E "iteration|copy"
