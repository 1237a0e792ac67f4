#!/usr/bin/env bash
# w[row] loaded before the row sum in the fused kernels (solver-hoist) against after it (solver-bicg):
# Nsight Compute per kernel, the plain bench, preconditioned BiCGStab A/B. Copied into .gpu/.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
for pc in ilu0 none; do
for b in solver-bicg solver-hoist; do
for prec in dd; do
timeout 100 ncu --cache-control none --clock-control none --kernel-name regex:'^(spmv)' --launch-skip 20 --launch-count 4 \
  --metrics gpu__time_duration.sum \
  ./$b solve poisson3d:200 --method bicgstab --precond $pc --max-iter 12 --tol 1e-300 --precision $prec --backend cuda --quiet > $OUT/prof-$pc-$b-$prec.txt 2>&1
echo "== $pc $b $prec"; grep -E "^  [a-z_0-9]+|gpu__time" $OUT/prof-$pc-$b-$prec.txt | sed -E 's/\(int.*//; s/ +/ /g' | paste - - 
done; done; done
for b in solver-base solver-bicg solver-hoist; do
  timeout 100 ./$b bench poisson3d:200 > $OUT/bench-$b.txt 2>&1
  echo "== $b"; grep -E "cg iteration  |bicgstab iteration  " $OUT/bench-$b.txt
done
METHODS=bicgstab ITERS=150 timeout 250 bash ab_pcg_solve.sh solver-base solver-hoist > $OUT/ab-hoist.txt 2>&1
cat $OUT/ab-hoist.txt
