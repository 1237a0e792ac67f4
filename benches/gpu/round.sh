#!/usr/bin/env bash
# One device round: correctness first, then timings. Expects the files listed in benches/results/h200.md in its folder.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices ./gpu-test 2>&1 | tee $OUT/gpu-test.txt
grep -q "0 failed" $OUT/gpu-test.txt || { echo "correctness failed: no timings"; exit 1; }
bash round_bench.sh
