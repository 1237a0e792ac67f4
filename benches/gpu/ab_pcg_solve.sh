#!/usr/bin/env bash
# A/B of preconditioned iterations through the solver loop (solver solve, 200 iterations; td runs
# first so that its first-use kernel compilation is not charged to f64), binaries as arguments.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
METHODS="${METHODS:-cg}"
for round in 1 2 3; do
  for b in "$@"; do
    for m in $METHODS; do
    timeout 120 ./$b solve poisson3d:200 --backend cuda --precond ilu0 --method $m --max-iter ${ITERS:-200} --precision td,f64,dd --tol 1e-300 --format json --quiet 2>$OUT/err-$b.txt > $OUT/pcg-$b-$m-$round.json
    python3 -c "
import json; d=json.load(open('$OUT/pcg-$b-$m-$round.json')); rs=d['runs']
rs=[r for r in rs if r['precision']!='td']; t={r['precision']: r['time_per_iteration'] for r in rs}
print('$b $m r$round', ' '.join('%s %.4f ms it %d res %r' % (r['precision'], 1e3*r['time_per_iteration'], r['iterations'], r['recurrence_residual']) for r in rs), 'dd/f64 %.3f' % (t['dd']/t['f64']))" || tail -3 $OUT/err-$b.txt
    done
  done
done
