#!/usr/bin/env bash
# benches/results/ilu0-h200.md and ilu0-h200-poisson3d-200.json: the GPU checks of ILU(0) (the
# apply for every schedule, and preconditioned solves, bit for bit against the CPU), then
# `solver bench poisson3d:200 --precond ilu0` (our triangular solves for every schedule and
# setting against cuSPARSE's csrilu02 + SpSV, then preconditioned CG and BiCGStab iterations in
# f64 and dd); then the small factors (every schedule of one application beside the host).
# Prepare on the team machine:
#   cargo build --release && cargo test --release --test gpu --no-run
#   mkdir -p .gpu/matrices && cp ../shared/matrices/*.mtx .gpu/matrices/
#   strip -o .gpu/solver target/release/solver; strip -o .gpu/gpu-test target/release/deps/gpu-<hash>
#   cp benches/gpu/ilu0-h200.sh .gpu/
# On the device (carry .gpu): bash .gpu/ilu0-h200.sh. Writes to $OUT: gpu.txt, gpu-test.txt,
# bench-ilu0.txt and bench-ilu0.json (the JSON beside the results file). MATRIX, TEST_TIMEOUT and
# BENCH_TIMEOUT (seconds) override poisson3d:200, 240 and 300; MATRICES the small factors' list.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee $OUT/gpu.txt
small_factors() {
  # ilu0-h200.md, "Small factors": the schedules of one application (f64, L and U) and the
  # host's solve on small shared matrices and poisson3d:20-40.
  echo "== small factors"
  for m in ${MATRICES:-gre_115 fs_183_4 e05r0100 Chebyshev1 cavity02 nos3 1138_bus nnc1374 dw2048 \
      rdb2048l cryg2500 sherman5 bcsstk13 bcsstk16 Pd poisson3d:20 poisson3d:30 poisson3d:40}; do
    f=matrices/$m.mtx; [[ -f $f ]] || f=$m
    echo "== $m"
    timeout 100 ./solver bench $f --precond ilu0 --reps 10 --iterations 50 2>&1 \
      | grep -E "levels|parts b384 t384 h2 |sync-free b128 t384 s0 |one block|on the host|DIFFERS"
  done | tee $OUT/bench-ilu0-small.txt
}
# bash .gpu/ilu0-h200.sh small: only the small factors
if [ "${1:-}" = small ]; then small_factors; exit 0; fi
PRECSOLVE_MATRICES=$PWD/matrices timeout ${TEST_TIMEOUT:-240} ./gpu-test ilu_apply preconditioned 2>&1 | tee $OUT/gpu-test.txt
grep -q " 0 failed" $OUT/gpu-test.txt || { echo "correctness failed or timed out: no timings"; exit 1; }
echo "== solver bench ${MATRIX:-poisson3d:200} --precond ilu0"
timeout ${BENCH_TIMEOUT:-300} ./solver bench ${MATRIX:-poisson3d:200} --precond ilu0 --reps 20 --iterations 100 \
  --json $OUT/bench-ilu0.json 2>&1 | tee $OUT/bench-ilu0.txt
small_factors
