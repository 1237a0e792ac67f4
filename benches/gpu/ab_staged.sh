#!/usr/bin/env bash
# Warp-staged NT=1 SpMV (solver-st) against HEAD's (solver): checks, then the bench alternated.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
timeout 200 ./gpu-test-st --test-threads 1 spmv_and_residual wide_reads cg_step whole_solves 2>&1 | grep -E "^test |test result" > $OUT/gpu-test-st.txt
cat $OUT/gpu-test-st.txt
for round in 1 2; do
  for b in solver solver-st; do
    timeout 120 ./$b bench poisson3d:200 > $OUT/bench-$b-$round.txt 2>&1
    echo "== $b round $round"; grep -E "^spmv |cg iteration|bicgstab iteration|copy" $OUT/bench-$b-$round.txt
  done
done
