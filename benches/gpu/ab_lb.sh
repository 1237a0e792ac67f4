#!/usr/bin/env bash
# DD SpMV register cap: __launch_bounds__(256, 4) (solver-lb4) and (256, 5) (solver-lb5) against HEAD.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for round in 1 2; do
  for b in solver solver-lb4 solver-lb5; do
    timeout 100 ./$b bench poisson3d:200 > $OUT/bench-$b-$round.txt 2>&1
    echo "== $b round $round"; grep -E "^spmv  |cg iteration  |bicgstab iteration  " $OUT/bench-$b-$round.txt | grep -E " f64 | dd "
  done
done
