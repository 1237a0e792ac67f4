#!/usr/bin/env bash
# benches/results/gpu-suite.json, gpu-suite-ilu0.json (and gpu-suite.md's tables, drawn by
# benches/gpu/suite_table.py): `solver bench --suite` over the shared matrices, without a
# preconditioner (200 iterations a solve) and with ILU(0) (100), GPU against the host's CPU
# backend and CuPy where present. Prepare as benches/gpu/resident.sh says (.gpu/solver,
# .gpu/matrices), cp benches/gpu/suite.sh .gpu/; on the device: bash .gpu/suite.sh (writes the
# JSON and the printed tables to $OUT).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
timeout 280 ./solver bench --suite matrices --iterations 200 --json $OUT/gpu-suite.json > $OUT/gpu-suite.txt 2> $OUT/suite.err
echo "rc $?"; tail -3 $OUT/suite.err
timeout 250 ./solver bench --suite matrices --iterations 100 --precond ilu0 --json $OUT/gpu-suite-ilu0.json > $OUT/gpu-suite-ilu0.txt 2> $OUT/suite-ilu0.err
echo "rc $?"; tail -3 $OUT/suite-ilu0.err
