#!/usr/bin/env bash
# BiCGStab's dots inside its SpMVs, preconditioned: the ILU(0) bench on the previous build
# (solver-base, 57d1bf3) and this one (solver-bicg), then preconditioned BiCGStab through
# `solver solve`, builds alternated (ab_pcg_solve.sh). Copied into .gpu/; carry .gpu.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for b in solver-base solver-bicg; do
  timeout 150 ./$b bench poisson3d:200 --precond ilu0 --json $OUT/bench-ilu0-$b.json > $OUT/bench-ilu0-$b.txt 2>&1
  echo "== $b"; grep -E "^pcg|^pbicgstab" $OUT/bench-ilu0-$b.txt
done
METHODS=bicgstab ITERS=150 timeout 250 bash ab_pcg_solve.sh solver-base solver-bicg > $OUT/ab-bicg.txt 2>&1
cat $OUT/ab-bicg.txt
