#!/usr/bin/env bash
# After the second review (the fused templates without their unused x types): the
# GPU checks of the reductions and solves, then the plain bench. Copied into .gpu/; carry .gpu.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test cg_step whole_solves preconditioned vector_updates 2>&1 | tee $OUT/gpu-test-review2-bicg.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-review2-bicg.txt || exit 1
timeout 100 ./solver-bicg bench poisson3d:200 > $OUT/bench-review2-bicg.txt 2>&1
grep -E "cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-review2-bicg.txt
