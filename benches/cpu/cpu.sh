#!/usr/bin/env bash
# benches/results/cpu.md: the CPU backend's kernels, iterations and ILU(0) solves on
# poisson3d(100), double against double-double (and td), on this machine's threads.
#
#   bash benches/cpu/cpu.sh [SECTION...]      # from anywhere; all sections by default
#
# Sections (each prints what cpu.md's table of the same name holds):
#   kernels  cargo bench --bench cpu_kernels            criterion: copy, SpMV, dot, axpy, CG iteration
#   ilu      cargo bench --bench cpu_ilu                criterion: ILU(0) schedules, ILU(0)-CG/-BiCGStab
#   phases   cargo bench --bench cg_phase_timing -- 100 30   CG pass by pass, f64 and dd interleaved
#   spmv     cargo bench --bench dd_spmv_timing         best of 30: DD SpMV and cg_step (A/B of builds)
#   load     cargo bench --bench mm_load                Matrix Market load throughput
#   solve    target/release/solver solve poisson3d:100  CG, BiCGStab and their ILU(0) forms, all precisions
#   peer     cargo bench --bench ilu0_peer, then benches/cpu/scipy_trisolve.py: our L+U against SciPy
#   c        the C yardsticks benches/cpu/spmv_f64_sell.c and pass_bandwidth.c (gcc, OpenMP)
# The machine is shared: run a section several times, or two builds alternately, before
# comparing (cpu.md says how each figure was taken).
set -euo pipefail
cd "$(dirname "$0")/../.."
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(kernels ilu phases spmv load solve peer c)
threads=${THREADS:-$(nproc)}

for section in "${sections[@]}"; do
  echo "== $section"
  case $section in
    kernels) cargo bench --bench cpu_kernels ;;
    ilu) cargo bench --bench cpu_ilu ;;
    phases) cargo bench --bench cg_phase_timing -- 100 30 ;;
    spmv) cargo bench --bench dd_spmv_timing ;;
    load) cargo bench --bench mm_load ;;
    solve)
      cargo build --release --quiet
      solve() { target/release/solver solve poisson3d:100 --backend cpu --threads "$threads" --tol 1e-300 -q "$@"; }
      solve --method cg --precision f64,td,dd --max-iter 200
      solve --method bicgstab --precision f64,td,dd --max-iter 200
      solve --method cg --precond ilu0 --precision f64,dd --max-iter 40
      solve --method bicgstab --precond ilu0 --precision f64,dd --max-iter 30
      ;;
    peer)
      dir=$(mktemp -d)
      ours=$(cargo bench --quiet --bench ilu0_peer -- poisson3d:100 "$dir")
      echo "$ours" | grep -v '^ours_ms'
      python3 benches/cpu/scipy_trisolve.py "$dir" "$(echo "$ours" | awk '/^ours_ms/ {print $2}')"
      rm -rf "$dir"
      ;;
    c)
      dir=$(mktemp -d)
      gcc -O3 -march=native -ffp-contract=off -fopenmp -o "$dir/spmv_f64_sell" benches/cpu/spmv_f64_sell.c
      gcc -O3 -march=native -fopenmp -o "$dir/pass_bandwidth" benches/cpu/pass_bandwidth.c
      OMP_NUM_THREADS=$threads "$dir/spmv_f64_sell"
      OMP_NUM_THREADS=$threads "$dir/pass_bandwidth"
      rm -rf "$dir"
      ;;
    *) echo "unknown section $section (kernels ilu phases spmv load solve peer c)" >&2; exit 2 ;;
  esac
done
