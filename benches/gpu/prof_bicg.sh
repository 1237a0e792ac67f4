#!/usr/bin/env bash
# Per-kernel times of the preconditioned and plain BiCGStab iteration (poisson3d:200, dd and f64)
# under Nsight Compute, previous build (solver-base) against the dots inside the SpMVs
# (solver-bicg). Triangular-solve kernels are left out (regex).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
for pc in ilu0 none; do
for b in solver-base solver-bicg; do
for prec in dd f64; do
timeout 100 ncu --cache-control none --clock-control none --kernel-name regex:'^(spmv|bicg|dot|bicgstab|ilu0p_gather)' --launch-skip 60 --launch-count 16 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  ./$b solve poisson3d:200 --method bicgstab --precond $pc --max-iter 12 --tol 1e-300 --precision $prec --backend cuda --quiet > $OUT/prof-$pc-$b-$prec.txt 2>&1
echo "== $pc $b $prec"
grep -v "^==PROF==" $OUT/prof-$pc-$b-$prec.txt | grep -E "^  [a-z_0-9]+|dram__|gpu__time" | sed -E 's/\(int.*//; s/\(long.*//; s/\([0-9]+, 1, 1\)x.*//; s/ +/ /g' | paste - - - - | awk '{printf "%s", $1; for (i=2;i<=NF;i++) if ($i ~ /^[0-9.,]+$/) printf " %s", $i; print ""}' | head -16
done; done; done
