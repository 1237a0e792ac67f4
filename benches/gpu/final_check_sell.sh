#!/usr/bin/env bash
# Final build of the SELL SpMV change: every GPU-vs-CPU check (run 1), then the plain and the
# ILU(0) bench and the preconditioned BiCGStab A/B against the previous build (run 2: `2`).
# Copied into .gpu/ with solver-base (previous build), solver-sell and gpu-test.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [ "${1:-1}" = 1 ]; then
  PRECSOLVE_MATRICES=$PWD/matrices timeout 560 ./gpu-test 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
else
  timeout 100 ./solver-sell bench poisson3d:200 --json $OUT/bench.json > $OUT/bench.txt 2>&1; grep -E "^spmv|cg iteration  |bicgstab iteration  |dd/f64" $OUT/bench.txt
  timeout 150 ./solver-sell bench poisson3d:200 --precond ilu0 --json $OUT/bench-ilu0.json > $OUT/bench-ilu0.txt 2>&1; grep -E "^pcg|^pbicgstab|trisolve|cuSPARSE|dd/f64" $OUT/bench-ilu0.txt | head -20
  METHODS=bicgstab timeout 300 bash ab_pcg_solve.sh solver-base solver-sell
fi
