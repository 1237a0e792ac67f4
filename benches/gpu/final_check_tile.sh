#!/usr/bin/env bash
# Final build of CG's tiled <p, q> fused into the SpMV: the GPU-vs-CPU checks that touch it, the
# plain and the ILU(0) bench on the previous build (solver-base) and this one (solver-tile), and
# the `solver solve` A/B of preconditioned CG. Copied into .gpu/ with both binaries and gpu-test.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test cg_step whole_solves preconditioned 2>&1 | tee $OUT/gpu-test-final.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-final.txt || { echo "correctness failed: no timings"; exit 1; }
for b in solver-base solver-tile; do
  timeout 100 ./$b bench poisson3d:200 --json $OUT/bench-$b.json > $OUT/bench-$b.txt 2>&1
  echo "== $b"; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench-$b.txt
  timeout 150 ./$b bench poisson3d:200 --precond ilu0 --json $OUT/bench-ilu0-$b.json > $OUT/bench-ilu0-$b.txt 2>&1
  grep -E "^pcg|^pbicgstab" $OUT/bench-ilu0-$b.txt
done
METHODS=cg timeout 200 bash ab_pcg_solve.sh solver-base solver-tile
