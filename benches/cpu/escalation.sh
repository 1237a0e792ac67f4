#!/usr/bin/env bash
# Feeds benches/results/escalation.md: every matrix of a folder in f64, dd and `auto` (f64, then
# dd, then qd where the one before stagnates) at one tolerance on the CPU, then the tables.
#   bash benches/cpu/escalation.sh [DIR] [TOL] [STUDY_DIR]   (about 25 minutes on 2 cores)
# A study already in STUDY_DIR is resumed (its recorded runs are kept).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-../shared/matrices}
tol=${2:-1e-12}
out=${3:-target/escalation-study}
cargo build -q --release
./target/release/solver batch "$dir" --precision f64,dd,auto --tol "$tol" --time-limit 60s \
    --backend cpu --out "$out" -q > /dev/null
python3 - "$out/runs.jsonl" "$tol" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["name"], {})[r["key"]["precision"]] = r
tol = sys.argv[2]
total = lambda r: r["result"]["total_time"]
def path(r):
    phases = (r.get("result") or {}).get("phases") or []
    return " > ".join(f'{p["precision"]} {p["iterations"]}' for p in phases)
names = sorted(runs, key=str.lower)
dd_solved = [m for m in names if runs[m].get("dd", {}).get("solved")]
both = [m for m in dd_solved if runs[m].get("auto", {}).get("solved")]
missed = [m for m in dd_solved if m not in both]
only_auto = [m for m in names if runs[m].get("auto", {}).get("solved")
             and not runs[m].get("dd", {}).get("solved")]
ratios = [total(runs[m]["auto"]) / total(runs[m]["dd"]) for m in both]
for p in ("f64", "dd", "auto"):
    print(f"- {p}: solved {sum(1 for m in names if runs[m].get(p, {}).get('solved'))} of {len(names)}")
print(f"- dd solves {len(dd_solved)}; `auto` solves {len(both)} of them"
      + (f" (not: {', '.join(missed)})" if missed else ""))
print(f"- `auto` solves {len(only_auto)} that dd alone does not: {', '.join(only_auto) or '-'}")
if both:
    print(f"- over the matrices dd solves: median total time dd "
          f"{statistics.median(total(runs[m]['dd']) for m in both):.3e} s, `auto` "
          f"{statistics.median(total(runs[m]['auto']) for m in both):.3e} s; median of "
          f"`auto`/dd per matrix {statistics.median(ratios):.2f}; `auto` faster on "
          f"{sum(x < 1 for x in ratios)} of {len(ratios)}")
print()
print(f"| matrix | rows | method | f64 solved | dd iterations | dd time [s] | auto: precisions (iterations) "
      f"| auto time [s] | auto/dd time |")
print("|---|---:|---|---|---:|---:|---|---:|---:|")
for m in dd_solved + only_auto:
    d, a, f = runs[m].get("dd"), runs[m].get("auto"), runs[m].get("f64")
    shape = (d or a)["matrix"]
    cell = lambda r: f"{total(r):.2e}" if r and r.get("result") else "-"
    solved = lambda r: "yes" if r and r.get("solved") else "no"
    ratio = f"{total(a) / total(d):.2f}" if m in both else "-"
    a_path = path(a) + ("" if a.get("solved") else " (not solved)")
    print(f"| {m} | {shape['rows']} | {a['result']['method']} | {solved(f)} "
          f"| {d['result']['iterations'] if d.get('result') else '-'} | {cell(d)} "
          f"| {a_path} | {cell(a)} | {ratio} |")
PY
