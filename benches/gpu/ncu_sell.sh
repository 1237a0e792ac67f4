#!/usr/bin/env bash
# SpMV kernels inside preconditioned CG and BiCGStab (dd), CSR build against SELL build.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
for b in solver-base solver-sell; do
for m in cg bicgstab; do
for prec in f64 dd; do
timeout 120 ncu --cache-control none --clock-control none -k regex:spmv --launch-skip 10 --launch-count 4 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  ./$b solve poisson3d:200 --precond ilu0 --method $m --max-iter 12 --tol 1e-300 --precision $prec --backend cuda --quiet > $OUT/ncu-$b-$m-$prec.txt 2>&1
echo "== $b $m $prec"
grep -v "^==PROF==" $OUT/ncu-$b-$m-$prec.txt | grep -E "^  [a-z_0-9]+|dram__|gpu__time|lts__|launch__reg|warps_active" | sed -E 's/\(int.*//; s/ +/ /g' | paste - - - - - - | head -4
done; done; done
