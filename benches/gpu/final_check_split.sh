#!/usr/bin/env bash
# After moving the CUDA backend's launch and vector helpers out of mod.rs (no code change):
# the whole GPU-vs-CPU suite, then the plain bench's SpMV and iteration rows.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
PRECSOLVE_MATRICES=$PWD/matrices timeout 480 ./gpu-test 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
timeout 100 ./solver bench poisson3d:200 > $OUT/bench.txt 2>&1; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench.txt
