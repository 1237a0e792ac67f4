#!/usr/bin/env bash
# Second review of the tiled <p, q> change: tree_reduce_* end in the shared warp_tree_*, the
# tiled partials launch through launch_dot_partial_op, one final-stage launcher. Every check
# that reduces (dot, wide reads, cg_step, whole and preconditioned solves), then the bench.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test dot wide_reads cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test-review2-tile.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-review2-tile.txt || { echo "correctness failed: no timings"; exit 1; }
timeout 100 ./solver-tile bench poisson3d:200 > $OUT/bench-review2-tile.txt 2>&1
grep -E "fused|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-review2-tile.txt
