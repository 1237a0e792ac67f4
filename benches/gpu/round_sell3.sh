#!/usr/bin/env bash
# Build with the row threshold: the SpMV-related checks (both layouts), and the layout the
# solver logs for poisson3d:40 (CSR) and poisson3d:100 (sliced).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test spmv_and_residual wide_reads cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ|Sell"
for m in poisson3d:40 poisson3d:100; do RUST_LOG=debug timeout 60 ./solver-sell solve $m --backend cuda --precision dd --max-iter 5 --quiet 2>&1 | grep -i "layout"; done
