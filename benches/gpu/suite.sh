#!/usr/bin/env bash
# benches/results/gpu-suite.json, gpu-suite-ilu0.json (and gpu-suite.md's tables, drawn by
# benches/gpu/suite_table.py): `solver bench --suite` over the shared matrices, without a
# preconditioner (200 iterations a solve) and with ILU(0) (100), GPU against the host's CPU
# backend and CuPy where present (benches/gpu/cupy_suite.py, embedded in the binary). Prepare as
# benches/gpu/resident.sh says (.gpu/solver, .gpu/matrices), cp benches/gpu/suite.sh
# benches/gpu/suite_table.py .gpu/; on the device (carry .gpu): bash .gpu/suite.sh (writes the
# JSON, the printed tables and gpu-suite.md's tables, gpu-suite-tables.md, to $OUT).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
timeout 280 ./solver bench --suite matrices --iterations 200 --json $OUT/gpu-suite.json > $OUT/gpu-suite.txt 2> $OUT/suite.err
echo "rc $?"; tail -3 $OUT/suite.err
timeout 250 ./solver bench --suite matrices --iterations 100 --precond ilu0 --json $OUT/gpu-suite-ilu0.json > $OUT/gpu-suite-ilu0.txt 2> $OUT/suite-ilu0.err
echo "rc $?"; tail -3 $OUT/suite-ilu0.err
python3 suite_table.py $OUT/gpu-suite.json $OUT/gpu-suite-ilu0.json | tee $OUT/gpu-suite-tables.md
