#!/usr/bin/env bash
# benches/results/gpu-suite.md ("sherman5's late iterations"); prepare .gpu/ as suite.sh says,
# cp benches/gpu/late.sh .gpu/; on the device (carry .gpu): bash .gpu/late.sh
# sherman5's GPU iteration against the iteration count (issue #27: 217 us at 100, 604 at 225)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"; OUT=${OUT:-.}
M=matrices/sherman5.mtx
for pre in ilu0 none; do for p in dd f64; do for be in cuda cpu; do
  line="$pre $p $be"
  for n in 50 100 150 200 250 300 400; do
    t=$(./solver solve $M --precision $p --precond $pre --tol 1e-300 --max-iter $n --backend $be --format json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)['runs'][0]; print('%d:%.1f:%.1e' % (r['iterations'], r['time_per_iteration']*1e6, r['recurrence_residual']))")
    line="$line $t"
  done; echo "$line"
done; done; done
./solver solve $M --precision dd --precond ilu0 --tol 1e-300 --max-iter 400 --backend cuda --history $OUT/h-cuda.csv > /dev/null 2>&1
./solver solve $M --precision dd --precond ilu0 --tol 1e-300 --max-iter 400 --backend cpu --history $OUT/h-cpu.csv > /dev/null 2>&1
