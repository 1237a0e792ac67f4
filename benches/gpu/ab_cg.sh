#!/usr/bin/env bash
# A/B of the CG iteration: solver-old (18e2038) against solver (deferred x update), alternated.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for round in 1 2; do
  for b in solver-old solver; do
    echo "== $b round $round"
    timeout 100 ./$b bench poisson3d:200 2>&1 | tee $OUT/ab-$b-$round.txt | grep -E "^copy|^spmv  .*f64|cg iteration|bicgstab iteration|dd/f64 time of cg"
  done
done
