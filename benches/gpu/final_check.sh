#!/usr/bin/env bash
# Final check of main: the GPU suite, then side-by-side solves on the GPU.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test 2>&1 | tee $OUT/gpu-test.txt | tail -60
for args in "graded_spd_400.mtx --tol 1e-12 --precision f64,td,dd,qd" \
            "graded_spd_400.mtx --tol 1e-12 --precond ilu0 --precision f64,td,dd,qd" \
            "matrices/nos1.mtx --precond ilu0 --precision f64,dd"; do
  echo "== solver solve $args --backend cuda"
  timeout 60 ./solver solve $args --backend cuda -q --format json > $OUT/solve.json 2>$OUT/solve.err
  python3 -c "
import json; r=json.load(open('$OUT/solve.json'))
for x in r['runs']: print(x['precision'], x['backend'], x['iterations'], x['stop_reason']['kind'], '%.3e'%(x['true_residual'] or 0))
" || cat $OUT/solve.err
done
