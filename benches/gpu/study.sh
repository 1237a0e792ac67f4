#!/usr/bin/env bash
# benches/results/gpu-study.md: the whole shared-matrix study (f64,dd x tol 1e-8,1e-12 x
# none,ilu0, the method chosen per matrix) on the GPU with N solves in flight and on the
# CPU backend (all the host's cores), wall time of each, and every GPU record's iterations and
# residual bits against the CPU's. Prepare as benches/gpu/resident.sh says (.gpu/solver,
# .gpu/matrices), cp benches/gpu/study.sh benches/gpu/compare_studies.py .gpu/; on the device:
#   bash .gpu/study.sh cpu 8 4 16     # the CPU study, then the GPU's with 8, 4 and 16 in flight
# (any of: cpu, and in-flight counts), appending to $OUT/study.txt.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
GRID="--precision f64,dd --tol 1e-8,1e-12 --precond none,ilu0"
nvidia-smi --query-gpu=name --format=csv,noheader | tee -a $OUT/study.txt
for what in "$@"; do
  case $what in
    cpu) args="--backend cpu"; dir=/tmp/study-cpu ;;
    *) args="--backend cuda --in-flight $what"; dir=/tmp/study-cuda-$what ;;
  esac
  rm -rf $dir
  start=$(date +%s%N)
  ./solver batch matrices $GRID $args --out $dir -q > /dev/null 2>>$OUT/err.txt
  rc=$?
  end=$(date +%s%N)
  echo "$what: $(( (end - start) / 1000000 )) ms (exit $rc)" | tee -a $OUT/study.txt
  [ $what != cpu ] && [ -d /tmp/study-cpu ] && python3 compare_studies.py /tmp/study-cpu $dir | tee -a $OUT/study.txt
done
