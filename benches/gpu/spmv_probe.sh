#!/usr/bin/env bash
# DD vs f64 SpMV: lane-count sweep and an Nsight Compute look at the NT=1 kernels.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
timeout 150 ./solver bench poisson3d:200 --sweep-lanes > $OUT/sweep.txt 2>&1
grep -E "spmv|copy|cg iter" $OUT/sweep.txt
timeout 200 ncu --clock-control none -k regex:'spmv_(dd|f64)_nt1' --launch-skip 2 --launch-count 2 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
  --section WarpStateStats --section MemoryWorkloadAnalysis \
  ./solver solve poisson3d:200 --method cg --max-iter 4 --tol 1e-300 --precision f64,dd --backend cuda --quiet > $OUT/ncu-spmv.txt 2>&1
grep -v "^==PROF==" $OUT/ncu-spmv.txt | grep -E "spmv_|Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Compute \(SM\)|Issue Slots|Executed Ipc|Warp Cycles Per Issued|Stall|L1/TEX Hit|L2 Hit|Block Limit|Pipe" | head -120
