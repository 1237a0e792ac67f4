#!/usr/bin/env bash
# One device round for issue #6 (td and qd on the GPU): the correctness suite (GPU vs CPU bit
# for bit, now with td and qd), a four-precision solve comparison, then solver bench
# poisson3d:200 with the td and qd rows. Run from the repository root with the carried folder
# named by D (default .gpu-tdq): D/solver, D/gpu-test, D/matrices/*.mtx.
set -u
D=${D:-.gpu-tdq}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
echo "== correctness (tests/gpu.rs)"
PRECSOLVE_MATRICES=$D/matrices timeout "${TEST_TIMEOUT:-300}" "$D/gpu-test" 2>&1 | tee "$OUT/gpu-test.log"
echo "gpu-test exit ${PIPESTATUS[0]}"
echo "== solve comparison"
for m in nos1 1138_bus; do
  timeout 60 "$D/solver" solve "$D/matrices/$m.mtx" --precision f64,td,dd,qd --backend cuda 2>&1 | tee -a "$OUT/solve.txt"
done
echo "== bench"
timeout "${BENCH_TIMEOUT:-200}" "$D/solver" bench poisson3d:200 --reps 20 --iterations 100 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
echo "bench exit ${PIPESTATUS[0]}"
