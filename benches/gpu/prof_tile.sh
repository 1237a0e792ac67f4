#!/usr/bin/env bash
# Per-kernel times of the plain CG iteration (poisson3d:200) under Nsight Compute, previous build
# (solver-base: spmv, dot, cg_alpha, cg_update) against the tiled fused <p, q> (solver-tile).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
for b in solver-base solver-tile; do
for prec in f64 dd; do
timeout 120 ncu --cache-control none --clock-control none --launch-skip 40 --launch-count 12 \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  ./$b solve poisson3d:200 --method cg --max-iter 20 --tol 1e-300 --precision $prec --backend cuda --quiet > $OUT/prof-$b-$prec.txt 2>&1
echo "== $b $prec"
grep -v "^==PROF==" $OUT/prof-$b-$prec.txt | grep -E "^  [a-z_0-9]+|dram__|gpu__time|launch__reg|warps_active|pipe_fp64|sm__throughput" | sed -E 's/\(int.*//; s/\(long.*//; s/\([0-9]+, 1, 1\)x.*//; s/ +/ /g' | paste - - - - - - - - | awk '{printf "%s", $1; for (i=2;i<=NF;i++) if ($i ~ /^[0-9.,]+$/) printf " %s", $i; print ""}' | head -12
done; done
