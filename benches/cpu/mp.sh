#!/usr/bin/env bash
# benches/results/mp-cpu.md: CG's time per iteration in the own `mp:<bits>` (MpFloat) against
# MPFR (`mp-mpfr:<bits>`, the same bits), with f64 and dd beside them, on the CPU, one thread
# (the per-operation cost, not the threading). Median of 3 alternated runs of a fixed number of
# iterations (tol 1e-300).
#
#   cargo build --release --features mpfr
#   bash benches/cpu/mp.sh > benches/results/mp-cpu.md
set -euo pipefail
cd "$(dirname "$0")/../.."
solver=target/release/solver
per_iteration() { # matrix precision iterations (exit code 3: not converged, as intended)
  { "$solver" solve "$1" --precision "$2" --tol 1e-300 --max-iter "$3" --backend cpu --threads 1 \
    --format json 2>/dev/null || [ $? -eq 3 ]; } |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["time_per_iteration"])'
}
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

echo "# mp:<bits> on the CPU: the own MpFloat against MPFR"
echo
echo "- **Command**: \`bash benches/cpu/mp.sh\` > benches/results/mp-cpu.md, after \`cargo build --release --features mpfr\`"
echo "- **Commit**: $(git rev-parse --short HEAD); **machine**: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), one thread"
echo "- CG, no preconditioner, a fixed number of iterations (tol 1e-300); median of 3 alternated runs."
echo "  Both mp columns give the same iterations, residuals and solution bits (tests/mp.rs)."
echo
echo "| matrix | bits | mp (own) us/it | mp-mpfr us/it | MPFR / own | dd us/it | f64 us/it |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for matrix in matrices/graded_spd_400.mtx poisson3d:20; do
  f64=() dd=()
  for _ in 1 2 3; do
    f64+=("$(per_iteration "$matrix" f64 200)")
    dd+=("$(per_iteration "$matrix" dd 200)")
  done
  for bits in 106 128 256 1024 2048; do
    iters=$((bits >= 1024 ? 20 : 100))
    own=() mpfr=()
    for _ in 1 2 3; do
      own+=("$(per_iteration "$matrix" "mp:$bits" "$iters")")
      mpfr+=("$(per_iteration "$matrix" "mp-mpfr:$bits" "$iters")")
    done
    python3 - "$matrix" "$bits" "$(median "${own[@]}")" "$(median "${mpfr[@]}")" \
      "$(median "${dd[@]}")" "$(median "${f64[@]}")" <<'PY'
import sys
m, bits, own, mpfr, dd, f = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
print(f"| {m.split('/')[-1]} | {bits} | {own*1e6:.0f} | {mpfr*1e6:.0f} | {mpfr/own:.2f} | {dd*1e6:.1f} | {f*1e6:.1f} |")
PY
  done
done
