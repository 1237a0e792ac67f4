#!/usr/bin/env bash
# benches/results/gpu-correctness.md: the GPU suite (tests/gpu.rs: every kernel family and whole
# solves on the GPU against the CPU backend, bit for bit), then solves on the GPU whose iteration
# counts the CPU tests pin (graded_spd_400 from the repository's matrices/, nos1 from the shared
# matrices). Prepare on the team machine:
#   cargo build --release && cargo test --release --test gpu --no-run
#   mkdir -p .gpu/matrices && cp ../shared/matrices/*.mtx .gpu/matrices/
#   strip -o .gpu/solver target/release/solver; strip -o .gpu/gpu-test target/release/deps/gpu-<hash>
#   cp benches/gpu/correctness.sh .gpu/
# On the device (carry .gpu): bash .gpu/correctness.sh [CHECK...] (CHECK: a part of a check's
# name, as `gpu-test` takes; all checks by default). Writes $OUT/gpu-test.txt; the whole suite
# takes about 6 minutes on the H200 (TEST_TIMEOUT, seconds, default 540).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PRECSOLVE_MATRICES=$PWD/matrices timeout "${TEST_TIMEOUT:-540}" ./gpu-test "$@" 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |^device|^gpu:"
graded=../matrices/graded_spd_400.mtx   # .gpu/ sits at the repository's root
for args in "$graded --tol 1e-12 --precision f64,td,dd,qd" \
            "$graded --tol 1e-12 --precond ilu0 --precision f64,td,dd,qd" \
            "matrices/nos1.mtx --precond ilu0 --precision f64,dd"; do
  echo "== solver solve $args --backend cuda"
  timeout 60 ./solver solve $args --backend cuda -q --format json > $OUT/solve.json 2>$OUT/solve.err
  python3 -c "
import json; r=json.load(open('$OUT/solve.json'))
for x in r['runs']: print(x['precision'], x['backend'], x['iterations'], x['stop_reason']['kind'], '%.3e'%(x['true_residual'] or 0))
" || cat $OUT/solve.err
done
