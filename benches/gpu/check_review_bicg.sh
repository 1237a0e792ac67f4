#!/usr/bin/env bash
# After the review (cg_alpha and bicg_alpha_tiles through one alpha_from_tiles_* template): the
# GPU checks of the reductions and solves, then the plain bench. Copied into .gpu/; carry .gpu.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test cg_step whole_solves preconditioned vector_updates 2>&1 | tee $OUT/gpu-test-review-bicg.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-review-bicg.txt || exit 1
timeout 100 ./solver-bicg bench poisson3d:200 > $OUT/bench-review-bicg.txt 2>&1
grep -E "cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-review-bicg.txt
