#!/usr/bin/env bash
# Kernel times (ncu gpu__time_duration) of 24 launches of the dd ILU(0)-CG iteration, solver-base
# (206e304) against solver-sell (617d5f7), then 5 alternated rounds of ab_pcg_solve.sh (CG, 300 iterations).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
for b in solver-base solver-sell; do
timeout 200 ncu --cache-control none --clock-control none --launch-skip 40 --launch-count 24 \
  --metrics gpu__time_duration.sum \
  ./$b solve poisson3d:200 --precond ilu0 --method cg --max-iter 12 --tol 1e-300 --precision dd --backend cuda --quiet > $OUT/prof-$b.txt 2>&1
echo "== $b"
grep -v "^==PROF==" $OUT/prof-$b.txt | grep -E "^  [a-z_0-9]+|gpu__time" | sed -E 's/\(int.*//; s/\([0-9]+, 1, 1\)x.*//; s/ +/ /g' | paste - - | awk '{print $1, $(NF)}' | head -24
done
sed -i 's/for round in 1 2 3; do/for round in 1 2 3 4 5; do/' ab_pcg_solve.sh
METHODS=cg ITERS=300 timeout 300 bash ab_pcg_solve.sh solver-base solver-sell
