#!/usr/bin/env bash
# Expects solver and gpu-test in its folder (built as in benches/results/h200.md).
# The staged spmv+dot experiment: its bits (cg_step check, spmv_dot with rows 8), then the sweep bench.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
timeout 100 ./gpu-test cg_step 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test.txt || { echo "correctness failed"; exit 1; }
echo "== solver bench poisson3d:200 --sweep-lanes"
timeout 200 ./solver bench poisson3d:200 --sweep-lanes --json $OUT/bench.json 2>&1 | tee $OUT/bench.txt | grep -E "spmv then dot|fused|iteration|copy"
