#!/usr/bin/env bash
# After the review's refactors (one device-attribute reader for ILU(0) and the SpMV layout
# choice; the CPU SELL copy's width derived; one poisson both-layouts test helper): the checks
# they touch, and the layout the solver logs for poisson3d:100.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 400 ./gpu-test spmv_and_residual whole_solves ilu_apply preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
RUST_LOG=debug timeout 60 ./solver solve poisson3d:100 --backend cuda --precision dd --max-iter 5 --quiet 2>&1 | grep -i layout
