#!/usr/bin/env bash
# Survey every shared matrix: method auto, double and DD, at a tolerance; one JSON report per
# matrix under $OUT_DIR and a one-line summary each on stdout. Used to choose (by measurement)
# the matrices the tests pin. Usage: scripts/survey_shared.sh [tol] [out_dir] [solve flags...]
# e.g. scripts/survey_shared.sh 1e-8 target/survey-ilu0 --precond ilu0
set -uo pipefail
tol=${1:-1e-8}
out=${2:-target/survey-$tol}
shift 2 2>/dev/null || shift $#
mkdir -p "$out"
bin=target/release/solver
[ -x "$bin" ] || cargo build --release --quiet
for f in ../shared/matrices/*.mtx; do
  name=$(basename "$f" .mtx)
  timeout 300 "$bin" solve "$f" --tol "$tol" --format json --quiet --threads 1 "$@" >"$out/$name.json" 2>"$out/$name.err"
  code=$?
  python3 - "$out/$name.json" "$name" "$code" <<'PY'
import json, sys
path, name, code = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception:
    print(f"{name:24s} exit={code} (no report)"); sys.exit()
cells = []
for run in r["runs"]:
    cells.append(f'{run["precision"]}:{run["iterations"]:>6} {run["stop_reason"]["kind"][:14]:14s} rec={run["recurrence_residual"] or 0:.1e} true={run["true_residual"] or 0:.1e} t={run["total_time"]:.2f}s')
print(f'{name:24s} {r["runs"][0]["method"]:8s} exit={code} ' + " | ".join(cells))
PY
done
