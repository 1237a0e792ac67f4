#!/usr/bin/env bash
# The tilings of CG's fused <p, q> as perf probes (solver-A: shuffle tree per warp, solver-B: the
# block's halving tree; solver-A failed to compile in this run), against solver-base; raw/tile-variants.txt.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
for round in 1 2; do
  for b in solver-base solver-A solver-B; do
    timeout 100 ./$b bench poisson3d:200 > $OUT/bench-$b-$round.txt 2>&1
    echo "== $b round $round"; grep -E "spmv then|fused|cg iteration  |dd/f64 time of cg" $OUT/bench-$b-$round.txt | grep -vE " td | qd "
  done
done
for b in solver-A solver-B; do for prec in f64 dd; do
timeout 120 ncu --cache-control none --clock-control none -k regex:"spmv_dot|cg_alpha" --launch-skip 10 --launch-count 4 \
  --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  ./$b solve poisson3d:200 --method cg --max-iter 20 --tol 1e-300 --precision $prec --backend cuda --quiet > $OUT/ncu-$b-$prec.txt 2>&1
echo "== ncu $b $prec"; grep -v "^==PROF==" $OUT/ncu-$b-$prec.txt | grep -E "^  [a-z_0-9]+|gpu__time|launch__reg|warps_active" | sed -E 's/\(int.*//; s/ +/ /g' | paste - - - - | head -4
done; done
