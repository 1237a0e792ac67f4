#!/usr/bin/env bash
# Batched loads in dot_wide_dd_partial: the wide-read checks, ncu of the kernel, then the
# ILU(0)-CG A/B against the previous build (solver-base2).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 120 ./gpu-test wide_reads preconditioned 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
for b in solver-base2 solver-dotb; do
timeout 100 ncu --cache-control none --clock-control none -k regex:dot_wide --launch-skip 5 --launch-count 4 --metrics gpu__time_duration.sum,dram__bytes_read.sum \
  ./$b solve poisson3d:200 --precond ilu0 --method cg --max-iter 12 --tol 1e-300 --precision dd --backend cuda --quiet 2>&1 | grep -E "^  [a-z_]|gpu__time|dram__" | sed -E 's/\(int.*//; s/\([0-9]+, 1, 1\)x.*//; s/ +/ /g' | paste - - - | sed "s/^/$b /"
done
METHODS=cg ITERS=300 timeout 300 bash ab_pcg_solve.sh solver-base2 solver-dotb   # 3 rounds (the script as committed)
