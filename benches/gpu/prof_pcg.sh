#!/usr/bin/env bash
# Per-kernel time and DRAM bytes of preconditioned CG iterations (Nsight Compute), f64 and dd.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
for prec in f64 dd; do
timeout 250 ncu --cache-control none --clock-control none --launch-skip 40 --launch-count 50 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  ./solver solve poisson3d:200 --precond ilu0 --method cg --max-iter 12 --tol 1e-300 --precision $prec --backend cuda --quiet > $OUT/ncu-$prec.txt 2>&1
grep -v "^==PROF==" $OUT/ncu-$prec.txt | grep -E "^  [a-z_0-9]+|dram__|gpu__time" | sed -E 's/\(int.*//; s/ +/ /g' | head -60
done
