#!/usr/bin/env bash
# Build and run sell_probe.cu (SELL-C against CSR one-thread-per-row SpMV) on the device.
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv
nvcc -O3 -arch=sm_90 -fmad=false -o /tmp/sell_probe sell_probe.cu || exit 1
/tmp/sell_probe 200
