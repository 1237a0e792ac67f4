#!/usr/bin/env bash
# A/B of the ILU(0) triangular solves in one lease: solver (new) and solver-base, alternated.
# Expects the binaries named in ORDER (default: solver solver-base) in its folder.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
for b in ${ORDER:-solver solver-base}; do
  echo "== $b: solver bench ${MATRIX:-poisson3d:200} --precond ilu0"
  s=$(date +%s)
  timeout ${BENCH_TIMEOUT:-240} ./$b bench ${MATRIX:-poisson3d:200} --precond ilu0 --reps 20 --iterations 100 \
    --json $OUT/bench-$b.json 2>&1 | tee $OUT/bench-$b.txt | grep -E "fastest|ours|parts|L\+U|CG|BiCG|DIFFERS"
  echo "took $(( $(date +%s) - s )) s"
done
