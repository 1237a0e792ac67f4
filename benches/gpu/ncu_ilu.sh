#!/usr/bin/env bash
# Nsight Compute stall reasons of the two partitioned ILU(0) kernels on one solve (expects solver).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
which ncu || ls /usr/local/cuda/bin | head -50
timeout 400 ncu --kernel-name regex:'ilu0p_(lower|upper_f64)' --launch-skip 2 --launch-count 2 \
  --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,gpu__time_duration.sum,launch__registers_per_thread,smsp__average_warp_latency_per_inst_issued.ratio,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,smsp__sass_inst_executed_op_global_ld.sum' \
  ./solver solve poisson3d:200 --precond ilu0 --max-iter 2 --tol 1e-300 --precision f64 --backend cuda > $OUT/ncu.txt 2>&1
grep -v "^==PROF==" $OUT/ncu.txt | grep -E "ilu0p|stalled|inst_executed|duration|registers|latency|sectors|sass" | awk '$NF!="0" && $NF!="0.00"' | head -80
