#!/usr/bin/env bash
# The forward ILU(0) solve reading r at its rows (solver-row, no gather pass) against HEAD (solver).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test-row ilu_apply preconditioned whole_solves_match_cpu_on_poisson 2>&1 | tee $OUT/gpu-test-row.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-row.txt || { echo "correctness failed: no timings"; exit 1; }
for round in 1 2; do
  for b in solver-row solver; do
    timeout 150 ./$b bench poisson3d:200 --precond ilu0 --reps 20 --iterations 100 --json $OUT/bench-$b-$round.json > $OUT/bench-$b-$round.txt 2>&1
    echo "== $b round $round"; grep -E "L\+U|CG|BiCG|DIFFERS" $OUT/bench-$b-$round.txt
  done
done
