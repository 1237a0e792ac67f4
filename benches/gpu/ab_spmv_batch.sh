#!/usr/bin/env bash
# A/B of the SpMV load batching (benches/results/h200.md): solver (b6cd45b) against builds with
# SPMV_DD_BATCH 8 (solver-dd8), 4 (solver-dd4), and 8 with the f64 loop batched as well (solver-both8).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for b in solver solver-dd8 solver-dd4 solver-both8; do
  timeout 60 ./$b solve poisson3d:100 --backend cuda --method cg --tol 1e-12 --format json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('$b', [(r['precision'], r['backend'], r['iterations'], repr(r['true_residual']), repr(r['recurrence_residual'])) for r in d['runs']])" 2>&1 | head -3
done
for round in 1 2; do
  for b in solver solver-dd8 solver-dd4 solver-both8; do
    echo "== $b round $round"
    timeout 100 ./$b bench poisson3d:200 2>&1 | tee $OUT/ab-$b-$round.txt | grep -E "^copy|^spmv |cg iteration|bicgstab iteration"
  done
done
