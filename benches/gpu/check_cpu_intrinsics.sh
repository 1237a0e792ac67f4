#!/usr/bin/env bash
# After the CPU kernels moved to intrinsics (ninth session): on the device's host, the CPU kernel
# unit tests (another x86 CPU than the team machine's), then every GPU check, which compares the
# CUDA kernels and solves bit for bit with that CPU backend. Copied into .gpu/; carry .gpu.
# Build: cargo test --release --lib --no-run; cargo test --release --test gpu --no-run;
#        strip -o .gpu/lib-test target/release/deps/precsolve-<hash>;
#        strip -o .gpu/gpu-test target/release/deps/gpu-<hash>
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
{ lscpu | grep -E "Model name|^CPU\(s\)|L3"; grep -o -m1 -E "avx512f|avx2" /proc/cpuinfo | head -1; } | tee $OUT/host-cpu.txt
timeout 120 ./lib-test backend::cpu td_lanes 2>&1 | tee $OUT/lib-test-cpu-intrinsics.txt | grep -E "test result|FAILED|panicked"
PRECSOLVE_MATRICES=$PWD/matrices timeout 450 ./gpu-test 2>&1 | tee $OUT/gpu-test-cpu-intrinsics.txt | grep -E "^test |passed|failed|differ"
grep -q " 0 failed" $OUT/gpu-test-cpu-intrinsics.txt || exit 1
