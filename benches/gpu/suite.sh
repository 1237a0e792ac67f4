#!/usr/bin/env bash
# benches/results/gpu-suite.json, gpu-suite-ilu0.json (and gpu-suite.md's tables, drawn by
# benches/gpu/suite_table.py): `solver bench --suite` over the shared matrices, without a
# preconditioner (200 iterations a solve) and with ILU(0) (100), GPU against the host's CPU
# backend and CuPy where present (benches/gpu/cupy_suite.py, embedded in the binary), each
# solve timed REPS times on each backend, alternated (the medians are recorded). Prepare as
# benches/gpu/resident.sh says (.gpu/solver, .gpu/matrices), cp benches/gpu/suite.sh
# benches/gpu/suite_table.py .gpu/; on the device (carry .gpu): bash .gpu/suite.sh [none|ilu0|tables]
# (no argument: all three; `tables` draws gpu-suite.md's tables, gpu-suite-tables.md, from the
# JSON files in $OUT or beside the script).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
REPS=${REPS:-3}
step=${1:-all}
if [[ $step == none || $step == all ]]; then
  timeout 500 ./solver bench --suite matrices --iterations 200 --reps "$REPS" --json $OUT/gpu-suite.json > $OUT/gpu-suite.txt 2> $OUT/suite.err
  echo "rc $?"; tail -3 $OUT/suite.err
fi
if [[ $step == ilu0 || $step == all ]]; then
  timeout 500 ./solver bench --suite matrices --iterations 100 --reps "$REPS" --precond ilu0 --json $OUT/gpu-suite-ilu0.json > $OUT/gpu-suite-ilu0.txt 2> $OUT/suite-ilu0.err
  echo "rc $?"; tail -3 $OUT/suite-ilu0.err
fi
if [[ $step == tables || $step == all ]]; then
  json() { [[ -f $OUT/$1 ]] && echo "$OUT/$1" || echo "$1"; }
  python3 suite_table.py "$(json gpu-suite.json)" "$(json gpu-suite-ilu0.json)" | tee $OUT/gpu-suite-tables.md
fi
