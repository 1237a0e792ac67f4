#!/usr/bin/env bash
# SELL SpMV round: GPU-vs-CPU checks on the new build, then the plain bench (the preconditioned
# A/B ran from round_sell2.sh). Copied into .gpu/ with the binaries and run from there.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test spmv_and_residual wide_reads cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
timeout 100 ./solver-sell bench poisson3d:200 > $OUT/bench.txt 2>&1; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench.txt
