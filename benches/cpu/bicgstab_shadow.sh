#!/usr/bin/env bash
# Feeds benches/results/bicgstab-shadow.md: BiCGStab on every matrix of a folder with each
# shadow residual (r0, random) and 0 or 5 restarts, f64 and dd, on the CPU; prints the tables.
#   bash benches/cpu/bicgstab_shadow.sh [DIR] [TOL] [MAX_ITER]   (about 2 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-../shared/matrices}
csv=$(mktemp)
cargo bench -q -p precsolve-benches --bench bicgstab_shadow -- "$dir" "${2:-1e-8}" "${3:-10000}" > "$csv"
python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
runs = defaultdict(dict)
for r in rows:
    runs[(r["precision"], r["shadow"], int(r["max_restarts"]))][r["matrix"]] = r
solved = lambda r: r["solved"] == "true"
print("| precision | shadow | restarts allowed | solved | ended in breakdown | restarts used |")
print("|---|---|---:|---:|---:|---:|")
for (p, s, m), d in sorted(runs.items(), key=lambda kv: (kv[0][0] != "f64", kv[0][1], kv[0][2])):
    print(f"| {p} | {s} | {m} | {sum(map(solved, d.values()))} of {len(d)} "
          f"| {sum('breakdown' in r['stop'] for r in d.values())} "
          f"| {sum(int(r['restarts']) for r in d.values())} |")
print()
for p in ("f64", "dd"):
    a, b = runs[(p, "r0", 5)], runs[(p, "random", 5)]
    both = [m for m in a if m in b and solved(a[m]) and solved(b[m])]
    ratio = statistics.median(int(b[m]["iterations"]) / int(a[m]["iterations"]) for m in both)
    print(f"- {p}, 5 restarts: {len(both)} matrices solved with both shadows; random/r0 "
          f"iterations, median {ratio:.3f}. Solved only with r0: "
          f"{', '.join(m for m in a if solved(a[m]) and not solved(b[m])) or 'none'}; only "
          f"with random: {', '.join(m for m in b if solved(b[m]) and not solved(a[m])) or 'none'}.")
    for s in ("r0", "random"):
        rescued = [m for m, r in runs[(p, s, 5)].items() if solved(r) and not solved(runs[(p, s, 0)][m])]
        print(f"- {p}, {s}: solved only with restarts: {', '.join(rescued) or 'none'}.")
PY
rm -f "$csv"
