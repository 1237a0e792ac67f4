#!/usr/bin/env bash
# Our CPU ILU(0) triangular solves against SciPy's spsolve_triangular, same factors, same run.
# Usage: benches/cpu/ilu_peer.sh [matrix] (default poisson3d:100)
set -euo pipefail
cd "$(dirname "$0")/../.."
matrix=${1:-poisson3d:100}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ours=$(cargo bench --quiet --bench ilu0_peer -- "$matrix" "$dir")
echo "$ours" | grep -v '^ours_ms'
ms=$(echo "$ours" | awk '/^ours_ms/ {print $2}')
python3 benches/cpu/scipy_trisolve.py "$dir" "$ms"
