#!/usr/bin/env bash
# CG's <p, q> fused into the SpMV in the tiled order. Run 1: every GPU-vs-CPU check (cg_step
# with the fused kernels and the tiled dot, whole and preconditioned solves in both layouts
# among them), then `solver bench poisson3d:200` on the previous build (solver-base) and this one
# (solver-tile), alternated. Run 2 (`2`): the ILU(0) bench and the `solver solve` A/B of the
# preconditioned iterations. Copied into .gpu/ with solver-base, solver-tile and gpu-test.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [ "${1:-1}" = 1 ]; then
  PRECSOLVE_MATRICES=$PWD/matrices timeout 420 ./gpu-test 2>&1 | tee $OUT/gpu-test-tile.txt | grep -E "^test |passed|failed|differ"
  grep -q " 0 failed" $OUT/gpu-test-tile.txt || { echo "correctness failed: no timings"; exit 1; }
  for round in 1 2; do
    for b in solver-base solver-tile; do
      timeout 100 ./$b bench poisson3d:200 --json $OUT/bench-$b-$round.json > $OUT/bench-$b-$round.txt 2>&1
      echo "== $b round $round"; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-$b-$round.txt
    done
  done
else
  for b in solver-base solver-tile; do
    timeout 150 ./$b bench poisson3d:200 --precond ilu0 --json $OUT/bench-ilu0-$b.json > $OUT/bench-ilu0-$b.txt 2>&1
    echo "== $b"; grep -E "^pcg|^pbicgstab|dd/f64" $OUT/bench-ilu0-$b.txt | head -8
  done
  METHODS=cg timeout 300 bash ab_pcg_solve.sh solver-base solver-tile
fi
