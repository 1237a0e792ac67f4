#!/usr/bin/env bash
# Feeds benches/results/methods.md: BiCGStab, BiCGStab(2) and GMRES(30) (modified Gram-Schmidt,
# then classical Gram-Schmidt twice) on every matrix of a folder, f64 and dd, on the CPU; prints
# the tables.
#   bash benches/cpu/methods.sh [DIR] [TOL] [STUDY_DIR]   (about 9 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-../shared/matrices}
tol=${2:-1e-8}
out=${3:-target/methods-study}
cargo build -q --release
common=(--precision f64,dd --tol "$tol" --max-iter 10000 --time-limit 60s --backend cpu -q)
./target/release/solver batch "$dir" --method bicgstab,gmres,bicgstab-l --out "$out/mgs" "${common[@]}" > /dev/null
./target/release/solver batch "$dir" --method gmres --gmres-orthogonalization cgs2 \
    --out "$out/cgs2" "${common[@]}" > /dev/null
python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for study, label in (("mgs", None), ("cgs2", "gmres-cgs2")):
    for line in open(f"{sys.argv[1]}/{study}/runs.jsonl"):
        r = json.loads(line)
        method = label or ("gmres-mgs" if r["key"]["method"] == "gmres" else r["key"]["method"])
        runs.setdefault((method, r["key"]["precision"]), {})[r["name"]] = r
methods = ("bicgstab", "bicgstab-l", "gmres-mgs", "gmres-cgs2")
solved = lambda m, p, name: runs[(m, p)].get(name, {}).get("solved", False)
names = sorted({n for d in runs.values() for n in d}, key=str.lower)
print("| method | f64 solved | dd solved |")
print("|---|---:|---:|")
for m in methods:
    print(f"| {m} | {sum(solved(m, 'f64', n) for n in names)} of {len(names)} "
          f"| {sum(solved(m, 'dd', n) for n in names)} of {len(names)} |")
print()
for p in ("f64", "dd"):
    only = [n for n in names if solved("bicgstab-l", p, n) and not solved("bicgstab", p, n)]
    rev = [n for n in names if solved("bicgstab", p, n) and not solved("bicgstab-l", p, n)]
    print(f"- {p}: BiCGStab(2) solves {len(only)} that BiCGStab does not: {', '.join(only) or '-'}; "
          f"BiCGStab solves {len(rev)} that BiCGStab(2) does not: {', '.join(rev) or '-'}")
for p in ("f64", "dd"):
    only = [n for n in names if solved("gmres-mgs", p, n) and not solved("bicgstab", p, n)]
    rev = [n for n in names if solved("bicgstab", p, n) and not solved("gmres-mgs", p, n)]
    print(f"- {p}: GMRES(30) solves {len(only)} that BiCGStab does not: {', '.join(only) or '-'}; "
          f"BiCGStab solves {len(rev)} that GMRES(30) does not: {', '.join(rev) or '-'}")
for p in ("f64", "dd"):
    both = [n for n in names if solved("gmres-mgs", p, n) and solved("gmres-cgs2", p, n)]
    it = lambda m, n: runs[(m, p)][n]["result"]["iterations"]
    t = lambda m, n: runs[(m, p)][n]["result"]["iteration_time"]
    diff = [n for n in both if it("gmres-mgs", n) != it("gmres-cgs2", n)]
    only_m = [n for n in names if solved("gmres-mgs", p, n) and not solved("gmres-cgs2", p, n)]
    only_c = [n for n in names if solved("gmres-cgs2", p, n) and not solved("gmres-mgs", p, n)]
    ratio = statistics.median(t("gmres-cgs2", n) / t("gmres-mgs", n) for n in both)
    counts = ", ".join(f"{n} {it('gmres-mgs', n)}/{it('gmres-cgs2', n)}" for n in diff)
    print(f"- {p}, MGS against CGS2: {len(both)} solved by both, iterations (MGS/CGS2) differ on "
          f"{len(diff)}: {counts or '-'}; solved only with MGS: {', '.join(only_m) or '-'}; "
          f"only with CGS2: {', '.join(only_c) or '-'}; median CGS2/MGS loop time {ratio:.2f}")
PY
