#!/usr/bin/env bash
# Checks touched by CG's double z and deferred x update, then the ILU(0) bench and the plain bench.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test wide_reads cg_step vector_updates whole_solves preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test.txt || { echo "correctness failed or timed out: no timings"; exit 1; }
echo "== solver bench poisson3d:200 --precond ilu0"
timeout 240 ./solver bench poisson3d:200 --precond ilu0 --reps 20 --iterations 100 \
  --json $OUT/bench-ilu0.json 2>&1 | tee $OUT/bench-ilu0.txt | grep -E "^ours|^pcg|^pbicg|parts b384 t384 h8"
echo "== solver bench poisson3d:200"
timeout 150 ./solver bench poisson3d:200 --json $OUT/bench.json 2>&1 | tee $OUT/bench.txt | tail -22
