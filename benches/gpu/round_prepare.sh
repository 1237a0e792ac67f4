#!/usr/bin/env bash
# Expects solver (this build), solver-prev (b6cd45b's host code), gpu-test and matrices/ in its
# folder. Kernels compiled before a solve's clock (Backend::prepare): `solver solve` as a user
# runs it (f64 first), old and new binary, each twice; a td and qd solve (the extended kernels);
# then GPU-vs-CPU solves.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for b in solver solver-prev solver; do
  RUST_LOG=info timeout 120 ./$b solve poisson3d:200 --backend cuda --precond ilu0 --method cg --max-iter 200 --tol 1e-300 --format json --quiet 2>$OUT/log-$b.txt > $OUT/prep-$b.json
  python3 -c "
import json; d=json.load(open('$OUT/prep-$b.json')); rs=d['runs']; t={r['precision']: r['time_per_iteration'] for r in rs}
print('$b', ' '.join('%s %.4f ms/it setup %.3f s it %d res %r' % (r['precision'], 1e3*r['time_per_iteration'], r['setup_time'], r['iterations'], r['recurrence_residual']) for r in rs), 'dd/f64 %.3f' % (t['dd']/t['f64']))"
  grep -h "compiled kernels" $OUT/log-$b.txt | sed 's/^.*compiled/compiled/' | tr '\n' ';'; echo
done
RUST_LOG=info timeout 120 ./solver solve poisson3d:40 --backend cuda --precision td,qd --tol 1e-10 2>&1 | grep -E "compiled|iterations|time \/ iteration|backend" | sed 's/^.*compiled/compiled/'
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test whole_solves preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
