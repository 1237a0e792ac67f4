#!/usr/bin/env bash
# benches/results/ilu0-remedies.md: ILU(0) with the growing shift alone (`--ilu-shift shift`, the
# default) on every matrix of a folder: which ones need it (ILU(0) of A itself fails), the shift
# it ends at, and whether the solves with that ILU(0) then converge, in f64 and dd.
#
#   bash benches/cpu/ilu0_remedies.sh [DIR] > benches/results/ilu0-remedies.md
#
# DIR defaults to ../shared/matrices. Pass 1 factors each square matrix with `--ilu-shift none`
# (one iteration, f64) to find those ILU(0) of A fails on; pass 2 runs them as a study with the
# automatic shift (`solver batch`, CPU, tol 1e-8, 30000 iterations, 20 s a run); the table is
# drawn from its runs.jsonl; pass 3 solves them again (f64) with each of a list of fixed shifts,
# the measurement behind the automatic shift's first s. About 3 minutes on 2 cores for the 100
# shared matrices.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-../shared/matrices}
solver=target/release/solver
work=$(mktemp -d /tmp/ilu0-remedies.XXXXXX)
trap 'rm -rf "$work"' EXIT

total=0
: >"$work/list"
for f in "$dir"/*.mtx "$dir"/*.mtx.gz; do
  [ -e "$f" ] || continue
  total=$((total + 1))
  if ! "$solver" solve "$f" --precond ilu0 --ilu-shift none --precision f64 --max-iter 1 \
    --backend cpu --quiet >/dev/null 2>"$work/err"; then
    if grep -q "ILU(0): " "$work/err"; then
      echo "$f" >>"$work/list"
    fi
  fi
done
mapfile -t failing <"$work/list"
if [ ${#failing[@]} -gt 0 ]; then
  "$solver" batch "${failing[@]}" --precond ilu0 --ilu-shift shift --precision f64,dd \
    --tol 1e-8 --backend cpu \
    --max-iter 30000 --time-limit 20s --out "$work/study" --quiet >/dev/null
fi

# pass 3: the same matrices with fixed shifts, f64 only: which s solves most
shifts=(1e-14 1e-12 1e-10 1e-8 1e-6 1e-4 1e-2)
if [ ${#failing[@]} -gt 0 ]; then
  for s in "${shifts[@]}"; do
    "$solver" batch "${failing[@]}" --precond ilu0 --ilu-shift "$s" --precision f64 --tol 1e-8 \
      --backend cpu --max-iter 30000 --time-limit 20s --out "$work/sweep" --quiet >/dev/null
  done
fi

python3 - "$work/study/runs.jsonl" "$total" "${#failing[@]}" "$(git rev-parse --short HEAD)" \
  "$work/sweep/runs.jsonl" <<'EOF'
import json, os, sys

path, total, failing, commit, sweep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
runs = {}
if os.path.exists(path):
    for line in open(path):
        r = json.loads(line)
        runs.setdefault(r["name"], {})[r["key"]["precision"]] = r

def outcome(r):
    if r is None:
        return "-"
    if r["solved"]:
        return "yes (%d it.)" % r["result"]["iterations"]
    return r["status"]

rows = []
for name in sorted(runs, key=str.lower):
    f, d = runs[name].get("f64"), runs[name].get("dd")
    any_run = f or d
    res = next((x["result"] for x in (f, d) if x and x.get("result")), None)
    remedy = res.get("ilu_remedy") if res else None
    rows.append((name, any_run, res, remedy, f, d))

factored = sum(1 for r in rows if r[3])
solved = sum(1 for r in rows if (r[4] and r[4]["solved"]) or (r[5] and r[5]["solved"]))
print("# ILU(0) with the automatic shift on the shared matrices")
print()
print("`bash benches/cpu/ilu0_remedies.sh` at %s (CPU, 2 cores): `--ilu-shift shift` factors A," % commit)
print("and where that fails `A + s max|a_ij| I` for s = 1e-10, 1e-9, ... up to 100 until the")
print("factors and one solve with them are finite. Solves: `solver batch --precond ilu0")
print("--precision f64,dd --tol 1e-8 --max-iter 30000 --time-limit 20s --backend cpu`, method auto")
print("(CG where the file is symmetric, else BiCGStab); solved = converged with true residual <= 1e-8.")
print()
print("%d matrices; ILU(0) of A fails on %d; the automatic shift factors %d of them; with that" % (total, failing, factored))
print("ILU(0), %d are solved in f64 or dd." % solved)
print()
print("| matrix | rows | ILU(0) of A | s | sigma | factorizations | method | f64 solved | dd solved |")
print("|---|---|---|---|---|---|---|---|---|")
for name, r, res, remedy, f, d in rows:
    rows_n = r["matrix"]["rows"] if r.get("matrix") else "-"
    if remedy:
        cells = [remedy["cause"], "%.0e" % remedy["s"], "%.3e" % res["ilu_shift"], str(remedy["attempts"])]
    else:
        cells = [(r.get("error") or "-").replace("|", "/"), "-", "-", "-"]
    method = res["method"] if res else "-"
    print("| %s | %s | %s | %s | %s | %s |" % (name, rows_n, " | ".join(cells), method, outcome(f), outcome(d)))

if os.path.exists(sweep):
    by_shift = {}
    for line in open(sweep):
        r = json.loads(line)
        by_shift.setdefault(r["key"]["ilu_shift"], []).append(r)
    print()
    print("The same %d matrices with a fixed `--ilu-shift s` (f64 only, same limits): matrices solved," % failing)
    print("and the median iterations of those solved.")
    print()
    print("| s | solved | median iterations |")
    print("|---|---|---|")
    for s in sorted(by_shift):
        its = sorted(r["result"]["iterations"] for r in by_shift[s] if r["solved"])
        med = its[len(its) // 2] if its else "-"
        print("| %.0e | %d | %s |" % (s, len(its), med))
EOF
