#!/usr/bin/env bash
# Expects solver, gpu-test and matrices/ in its folder (built as in benches/results/h200.md).
# BiCGStab's x update through one launch helper: whole and preconditioned solves against the CPU.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 120 ./gpu-test whole_solves preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
