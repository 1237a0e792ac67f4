#!/usr/bin/env bash
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
timeout 200 ncu --clock-control none -k regex:'spmv_dd_nt1' --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
  --section WarpStateStats --section MemoryWorkloadAnalysis --section InstructionStats --section SourceCounters \
  ./solver solve poisson3d:200 --method cg --max-iter 4 --tol 1e-300 --precision dd --backend cuda --quiet > $OUT/ncu-spmv-dd.txt 2>&1
grep -v "^==PROF==" $OUT/ncu-spmv-dd.txt | grep -vE "^ +-+|^$" | head -150
