#!/usr/bin/env bash
# benches/results/mpi-cpu.md: one process with 2 threads against `mpirun -np 2` (one thread a
# rank) on the same machine, CG on poisson3d:100 (10^6 rows), f64 and dd, 100 iterations,
# runs alternated, median of 5 per-iteration times; then the fixed reduction order against a
# plain MPI_Allreduce (examples/allreduce_cost.rs); then every rank reading the Matrix Market
# file against rank 0 reading and sending it (examples/mpi_read_cost.rs) at 2 and 3 ranks, on
# bcsstk16 and on poisson3d:100 written once as a 115 MB general file into $TMPDIR (numpy).
# Needs the `mpi` build:
#   cargo build --release --features mpi --bin solver --example allreduce_cost --example mpi_read_cost
#   bash benches/cpu/mpi.sh
# No pipefail: the solver exits 3 here (not converged at tol 1e-300), by design.
set -eu
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
solver=target/release/solver
matrix=${MATRIX:-poisson3d:100}
args=(solve "$matrix" --method cg --precision f64,dd --tol 1e-300 --max-iter 100 --format json --quiet)
per_iter() {
    python3 -c '
import json, sys
runs = json.load(sys.stdin)["runs"]
print(" ".join("%r %r" % (r["time_per_iteration"], r["communication_time"] / max(r["iterations"], 1)) for r in runs))'
}
one=() two=()
for rep in 1 2 3 4 5; do
    one+=("$("$solver" "${args[@]}" --backend cpu --threads 2 | per_iter)")
    two+=("$(mpirun --oversubscribe -np 2 "$solver" "${args[@]}" | per_iter)")
done
python3 - "$matrix" "${one[@]}" -- "${two[@]}" <<'PY'
import statistics, sys
matrix, rest = sys.argv[1], sys.argv[2:]
cut = rest.index("--")
one = [list(map(float, r.split())) for r in rest[:cut]]
two = [list(map(float, r.split())) for r in rest[cut + 1:]]
med = lambda rows, k: statistics.median(r[k] for r in rows)
print(f"| {matrix} CG | 1 process, 2 threads [ms/it] | mpirun -np 2 [ms/it] | of which communication [ms/it] | ratio |")
print("|---|---:|---:|---:|---:|")
for name, k in (("f64", 0), ("dd", 2)):
    a, b, c = med(one, k), med(two, k), med(two, k + 1)
    print(f"| {name} | {a*1e3:.2f} | {b*1e3:.2f} | {c*1e3:.3f} | {b/a:.2f} |")
PY
echo
mpirun --oversubscribe -np 2 target/release/examples/allreduce_cost
echo
big=${TMPDIR:-/tmp}/p3d100.mtx
[[ -s $big ]] || python3 - "$big" <<'PY'
import sys, numpy as np
k = 100; n = k**3
idx = np.arange(n).reshape(k, k, k)
rows, cols, vals = [idx.ravel()], [idx.ravel()], [np.full(n, 6.0)]
for ax in range(3):
    for d in (1, -1):
        keep = np.ones_like(idx, dtype=bool)
        edge = [slice(None)] * 3
        edge[ax] = slice(k - 1, k) if d == 1 else slice(0, 1)
        keep[tuple(edge)] = False
        rows.append(idx[keep]); cols.append(np.roll(idx, -d, axis=ax)[keep]); vals.append(np.full(keep.sum(), -1.0))
r, c, v = (np.concatenate(x) for x in (rows, cols, vals))
order = np.lexsort((c, r))
with open(sys.argv[1], "w") as f:
    f.write("%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n" % (n, n, len(r)))
    np.savetxt(f, np.column_stack([r[order] + 1, c[order] + 1, v[order]]), fmt="%d %d %.17g")
PY
for np_ in 2 3; do
    for m in ../shared/matrices/bcsstk16.mtx "$big"; do
        mpirun --oversubscribe -np $np_ target/release/examples/mpi_read_cost "$m"
    done
done
