#!/usr/bin/env bash
# td and qd CG through their fused SpMV + <p, q> kernels: the checks, then the bench.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test-xtile.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-xtile.txt || { echo "correctness failed: no timings"; exit 1; }
for b in solver-base solver-tile; do
  timeout 100 ./$b bench poisson3d:200 --json $OUT/bench-$b.json > $OUT/bench-$b.txt 2>&1
  echo "== $b"; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-$b.txt
done
