#!/usr/bin/env bash
# benches/results/gpu-study.md: the whole shared-matrix study (f64,dd x tol 1e-8,1e-12 x
# none,ilu0, the method chosen per matrix) on the GPU with N solves in flight and on the
# CPU backend (all the host's cores), wall time of each, and every GPU record's iterations and
# residual bits against the CPU's. Prepare as benches/gpu/resident.sh says (.gpu/solver,
# .gpu/matrices), cp benches/gpu/study.sh benches/gpu/compare_studies.py .gpu/; on the device:
#   bash .gpu/study.sh cpu 8 4 16     # the CPU study, then the GPU's with 8, 4 and 16 in flight
# (any of: cpu, in-flight counts, and base<N>: .gpu/solver-base, a build of another commit, with
# N in flight, so that two builds run in one lease), appending to $OUT/study.txt, each study's
# records in $OUT/runs-<what>.jsonl. And solves in flight on their own:
#   bash .gpu/study.sh copies gre_115 dw2048 Chebyshev1
# eight copies of each matrix, f64 BiCGStab with and without ILU(0), 3,000 iterations, one then
# eight in flight: wall time and each solve's time an iteration (median), to $OUT/copies.txt
# (SOLVER=./solver-base: another build's; COPIES=32, IN_FLIGHT="8 32", PRECONDS=ilu0,
# METHOD=cg, TRUE_EVERY=1000: others).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
GRID="--precision f64,dd --tol 1e-8,1e-12 --precond none,ilu0"
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $OUT/study.txt
if [ "$1" = copies ]; then
  shift
  for m in "$@"; do
    rm -rf /tmp/copies; mkdir -p /tmp/copies
    for i in $(seq ${COPIES:-8}); do cp matrices/$m.mtx /tmp/copies/c$i.mtx; done
    for pc in ${PRECONDS:-ilu0 none}; do
      for k in ${IN_FLIGHT:-1 8}; do
        rm -rf /tmp/copies-study; start=$(date +%s%N)
        ${SOLVER:-./solver} batch /tmp/copies --precision f64 --tol 1e-300 --max-iter 3000 --precond $pc \
          --method ${METHOD:-bicgstab} --backend cuda --in-flight $k ${TRUE_EVERY:+--true-residual-every $TRUE_EVERY} --out /tmp/copies-study -q > /dev/null 2>>$OUT/err.txt
        end=$(date +%s%N)
        python3 -c "
import json
rs = [json.loads(l)['result'] for l in open('/tmp/copies-study/runs.jsonl')]
it = sorted(r['iteration_time'] / r['iterations'] * 1e6 for r in rs)
pc = sorted(r['precond_time'] / r['iterations'] * 1e6 for r in rs)
print('${SOLVER:-./solver} $m ${METHOD:-bicgstab} ${COPIES:-8} copies $pc in flight $k: wall %.2f s, us an iteration %.0f (preconditioner %.0f)'
      % ($(( (end - start) / 1000000 )) / 1000, it[len(it) // 2], pc[len(pc) // 2]))" | tee -a $OUT/copies.txt
      done
    done
  done
  exit 0
fi
# The first GPU solve on a fresh machine compiles the kernels (NVRTC, then a disk cache): done
# here, before any clock starts, so that no study's wall time includes it (the first study of
# a fresh lease took about 20 s longer than the same study after it).
for bin in ./solver $([ -x solver-base ] && echo ./solver-base); do
  for method in cg bicgstab; do
    for pc in none ilu0; do
      $bin solve matrices/1138_bus.mtx --backend cuda --precision f64,dd --precond $pc \
        --method $method --max-iter 50 -q > /dev/null 2>>$OUT/err.txt
    done
  done
done
for what in "$@"; do
  bin=./solver
  case $what in
    cpu) args="--backend cpu"; dir=/tmp/study-cpu ;;
    base*) bin=./solver-base; args="--backend cuda --in-flight ${what#base}"; dir=/tmp/study-$what ;;
    *) args="--backend cuda --in-flight $what"; dir=/tmp/study-cuda-$what ;;
  esac
  rm -rf $dir
  start=$(date +%s%N)
  $bin batch matrices $GRID $args --out $dir -q > /dev/null 2>>$OUT/err.txt
  rc=$?
  end=$(date +%s%N)
  echo "$what: $(( (end - start) / 1000000 )) ms (exit $rc)" | tee -a $OUT/study.txt
  cp $dir/runs.jsonl $OUT/runs-$what.jsonl
  [ $what != cpu ] && [ -d /tmp/study-cpu ] && python3 compare_studies.py /tmp/study-cpu $dir | tee -a $OUT/study.txt
done
