#!/usr/bin/env bash
# benches/results/precisions-h200.md: td and qd beside f64 and dd on the GPU: the GPU suite
# (tests/gpu.rs, GPU against CPU bit for bit in f64, dd, td and qd), a four-precision solve of
# nos1 and 1138_bus, then `solver bench poisson3d:200` with its td and qd rows. Prepare on the
# team machine:
#   cargo build --release && cargo test --release --test gpu --no-run
#   mkdir -p .gpu-tdq/matrices && cp ../shared/matrices/*.mtx .gpu-tdq/matrices/
#   strip -o .gpu-tdq/solver target/release/solver; strip -o .gpu-tdq/gpu-test target/release/deps/gpu-<hash>
# On the device (carry .gpu-tdq), from the repository root:
#   TEST_TIMEOUT=300 BENCH_TIMEOUT=170 bash benches/gpu/precisions-h200.sh
# (D names the carried folder, default .gpu-tdq). Writes to $OUT: env.txt, gpu-test.log,
# solve.txt, bench.txt and bench.json.
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
