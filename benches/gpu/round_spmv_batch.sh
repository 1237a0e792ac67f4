#!/usr/bin/env bash
# Expects solver (this build), solver-prev (b6cd45b), gpu-test and matrices/ in its folder (built as
# in benches/results/h200.md). The SpMV lanes that load a batch of entries before summing them:
# the checks against the CPU that cover them, both binaries' bench alternated, then the ILU bench.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test spmv_and_residual wide_reads whole_solves preconditioned 2>&1 \
  | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
for b in solver-prev solver; do
  echo "== $b"
  timeout 100 ./$b bench poisson3d:200 2>&1 | tee $OUT/bench-$b.txt | grep -E "^copy|^spmv |cg iteration|bicgstab iteration|dd/f64"
done
timeout 150 ./solver bench poisson3d:200 --precond ilu0 --json $OUT/ilu0.json 2>&1 | tee $OUT/bench-ilu0.txt | grep -E "ours|copy|ilu0 parts|iteration|second"
