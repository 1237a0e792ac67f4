#!/usr/bin/env bash
# Issue #31 on a machine of several GPUs: `solver solve --devices N` against one GPU and the CPU
# (the same iterations, residual bits and solution file), then DD CG on poisson3d:400 on 1 and N
# GPUs, then a solve too large for one GPU's memory on 2. N: each of $COUNTS (default 2).
# Prints the lines benches/results/multi-gpu.md quotes.
#
#   cargo build --release && mkdir -p .gpu && strip -o .gpu/solver target/release/solver &&
#   cp benches/gpu/devices.sh .gpu/ (and for `allreduce`: cargo build --release --example
#   nccl_allreduce_cost && strip -o .gpu/nccl_allreduce_cost target/release/examples/nccl_allreduce_cost)
#   (device) COUNTS="2 4" bash .gpu/devices.sh [checks|speed|overlap|allreduce|bjacobi|batch|big ...]
set -u
S=${SOLVER:-.gpu/solver}
# Reports and solutions go to $DIR; the lines printed are the results.
DIR=${DIR:-/tmp/devices}
mkdir -p "$DIR"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
STEPS=${*:-checks speed big}
COUNTS=${COUNTS:-2}

nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
nvidia-smi topo -m | head -4

# A convection-diffusion operator on a k x k grid (upwind: nonsymmetric), as tests/distributed.rs.
convdiff() {
    python3 - "$1" <<'EOF'
import sys
k = int(sys.argv[1]); n = k * k
rows = []
for i in range(k):
    for j in range(k):
        r = i * k + j + 1
        e = [(r, 4.6)]
        if i > 0: e.append((r - k, -1.4))
        if i + 1 < k: e.append((r + k, -0.6))
        if j > 0: e.append((r - 1, -1.3))
        if j + 1 < k: e.append((r + 1, -0.7))
        rows.append((r, e))
nnz = sum(len(e) for _, e in rows)
out = ["%%MatrixMarket matrix coordinate real general", f"{n} {n} {nnz}"]
out += [f"{r} {c} {v}" for r, e in rows for c, v in e]
print("\n".join(out))
EOF
}

# The numbers that must match, one line a precision (shortest round-trip text of each double).
fingerprint() {
    python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print(r["precision"], r["iterations"], json.dumps(r["stop_reason"]), repr(r["recurrence_residual"]), repr(r["true_residual"]), "devices", r["devices"])
' "$1"
}

# `check ARGS`: one GPU, each count of $COUNTS and the CPU; the residual lines (less the device
# count) and the --write-x files must be equal.
check() {
    local tag=$1; shift
    local runs=("cuda 1" "cpu 1")
    for c in $COUNTS; do runs+=("cuda $c"); done
    for run in "${runs[@]}"; do
        read -r backend devices <<<"$run"
        local name=$DIR/$tag.$backend$devices
        timeout 300 "$S" solve "$@" --backend "$backend" --devices "$devices" --format json --quiet \
            --write-x "$name.x.mtx" >"$name.json" 2>"$name.err"
        local rc=$?
        # 3: not converged (the tolerance is out of reach on purpose)
        if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
            echo "FAIL $tag $backend x$devices: $(tail -3 "$name.err")"
            return
        fi
        fingerprint "$name.json" | sed 's/ devices [0-9]*$//' >"$name.fp"
    done
    local base=$DIR/$tag.cuda1 same=1 other
    for other in cpu1 $(printf 'cuda%s ' $COUNTS); do
        if ! cmp -s "$base.fp" "$DIR/$tag.$other.fp" || ! cmp -s "$base.x.mtx" "$DIR/$tag.$other.x.mtx"; then
            same=0
            echo "DIFF $tag cuda1 / $other"
            diff "$base.fp" "$DIR/$tag.$other.fp"
        fi
    done
    [ $same = 1 ] && echo "SAME $tag (cuda 1, cpu, cuda $COUNTS): $(tr '\n' ';' <"$base.fp")"
}

for step in $STEPS; do
    case $step in
    checks)
        convdiff 300 >"$DIR/convdiff300.mtx"
        tight=(--tol 1e-300)
        check cg-p60 poisson3d:60 --method cg --precision f64,td,dd,qd "${tight[@]}" --max-iter 100
        # converges: the GPUs' device steps stop mid-batch at the iteration the CPU stops at
        check cg-p60-converged poisson3d:60 --method cg --precision f64,dd --tol 1e-12 --max-iter 1000
        # 500,000 rows a GPU: the sliced layout (poisson3d:60's blocks are CSR)
        check cg-p100-sell poisson3d:100 --method cg --precision f64,dd "${tight[@]}" --max-iter 50
        check cg-p60-ilu poisson3d:60 --method cg --precision f64,dd --precond ilu0 "${tight[@]}" --max-iter 40
        check cg-p60-mp poisson3d:60 --method cg --precision mp:256 "${tight[@]}" --max-iter 15
        check bicgstab-cd300 "$DIR/convdiff300.mtx" --method bicgstab --precision f64,td,dd,qd "${tight[@]}" --max-iter 100
        check bicgstab-cd300-ilu "$DIR/convdiff300.mtx" --method bicgstab --precision f64,dd --precond ilu0 "${tight[@]}" --max-iter 30
        ;;
    speed)
        for d in 1 $COUNTS 1 $COUNTS; do
            timeout 300 "$S" solve poisson3d:400 --backend cuda --devices $d --method cg --precision f64,dd \
                --tol 1e-300 --max-iter 300 --format json --quiet >"$DIR/speed.$d.json" 2>"$DIR/speed.$d.err" ||
                tail -3 "$DIR/speed.$d.err"
            python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print("poisson3d:400", r["precision"], "devices", r["devices"], "iterations", r["iterations"],
          "ms/it %.3f" % (1e3 * r["time_per_iteration"]), "comm s %.3f" % r["communication_time"],
          "setup s %.2f" % r["setup_time"], "true res", r["true_residual"])
' "$DIR/speed.$d.json"
        done
        ;;
    allreduce)
        # the fixed order's price: a dot's partials broadcast to every GPU against ncclAllReduce
        # (`strip -o .gpu/nccl_allreduce_cost target/release/examples/nccl_allreduce_cost`)
        for c in $COUNTS; do timeout 300 .gpu/nccl_allreduce_cost "$c"; done
        ;;
    bjacobi)
        # block Jacobi: one GPU is one block (ILU(0) itself); on 2 GPUs the same bits run after
        # run; time against the whole ILU(0) gathered through the host
        j() { python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print(sys.argv[2], r["precision"], r["iterations"], json.dumps(r["stop_reason"]), repr(r["recurrence_residual"]), repr(r["true_residual"]),
          "ms/it %.3f" % (1e3 * r["time_per_iteration"]), "precond share %.2f" % r["precond_share"], "setup s %.2f" % r["setup_time"])
' "$1" "$2"; }
        for run in "1 ilu0" "1 bjacobi" "2 bjacobi" "2 bjacobi" "2 ilu0"; do
            read -r d p <<<"$run"
            timeout 300 "$S" solve poisson3d:100 --backend cuda --devices $d --method cg --precision f64,dd \
                --precond $p --tol 1e-300 --max-iter 60 --format json --quiet --write-x "$DIR/bj.$d.$p.x" >"$DIR/bj.json" 2>"$DIR/bj.err" ||
                tail -3 "$DIR/bj.err"
            j "$DIR/bj.json" "poisson3d:100 devices $d $p"
        done
        cmp -s "$DIR/bj.1.ilu0.x" "$DIR/bj.1.bjacobi.x" && echo "x: 1 GPU bjacobi = ilu0"
        ;;
    overlap)
        # the halo beside the interior rows' SpMV (PRECSOLVE_HALO_OVERLAP=1) against before it (default)
        for o in 0 1 0 1; do
            PRECSOLVE_HALO_OVERLAP=$o timeout 300 "$S" solve poisson3d:400 --backend cuda --devices 2 --method cg \
                --precision f64,dd --tol 1e-300 --max-iter 300 --format json --quiet >"$DIR/overlap.json" 2>"$DIR/overlap.err" ||
                tail -3 "$DIR/overlap.err"
            python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print("poisson3d:400 2 GPUs overlap", sys.argv[2], r["precision"], "ms/it %.3f" % (1e3 * r["time_per_iteration"]),
          "comm s %.3f" % r["communication_time"], "true res", r["true_residual"])
' "$DIR/overlap.json" $o
        done
        ;;
    batch)
        # `solver batch --devices 2`: the study's records have one GPU's bits, with the count and
        # the communication time; a time limit stops both GPUs (they agree on it) and the study
        common=(poisson3d:60 --precision f64,dd --precond none,ilu0 --tol 1e-10 --backend cuda --quiet)
        rm -rf "$DIR/study.1" "$DIR/study.2" "$DIR/study.limit"
        timeout 120 "$S" batch "${common[@]}" --out "$DIR/study.1" >/dev/null
        timeout 120 "$S" batch "${common[@]}" --devices 2 --out "$DIR/study.2" >/dev/null
        timeout 60 "$S" batch poisson3d:100 --precision dd --method cg --tol 1e-300 --max-iter 1000000 \
            --time-limit 200ms --backend cuda --devices 2 --quiet --out "$DIR/study.limit" >/dev/null
        echo "time-limited study on 2 GPUs: exit $?"
        python3 - "$DIR" <<'EOF'
import json, sys
def load(d):
    out = {}
    for line in open(f"{sys.argv[1]}/{d}/runs.jsonl"):
        r = json.loads(line); x = r.get("result") or {}; k = r["key"]
        out[(k["precision"], k["precond"])] = ((r["status"], x.get("iterations"), x.get("recurrence_residual"),
            x.get("true_residual")), x.get("devices", 1), x.get("communication_time", 0), x.get("total_time"))
    return out
one, two = load("study.1"), load("study.2")
for k in sorted(one):
    print("batch poisson3d:60", *k, "SAME" if one[k][0] == two[k][0] else "DIFFERENT", one[k][0],
          "devices", two[k][1], "comm s %.4f of %.4f" % (two[k][2], two[k][3]))
for r in load("study.limit").values():
    print("batch poisson3d:100 dd 2 GPUs --time-limit 200ms:", r[0][0], r[0][1], "iterations")
EOF
        ;;
    big)
        # mp:1024 CG holds x, r, p, q (136 bytes an element), b (8) and the CSR (12 a nonzero,
        # 4 a row): about 640 bytes a row of a 7-point Poisson matrix. Sized to exceed one GPU's
        # memory by 10%.
        mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0)
        k=$(python3 -c "print(int(($mib * 2**20 * 1.10 / 640) ** (1 / 3)) + 1)")
        echo "big: poisson3d:$k, $((k * k * k)) rows, about $((k * k * k * 640 / 1000000000)) GB against $((mib / 1024)) GiB a GPU"
        for d in 1 2; do
            RUST_LOG=info timeout "${BIG_TIMEOUT:-900}" "$S" solve poisson3d:"$k" --backend cuda --devices $d --method cg --precision mp:1024 \
                --tol 1e-300 --max-iter 5 --format json --quiet >"$DIR/big.$d.json" 2>"$DIR/big.$d.err"
            echo "devices $d: exit $?; $(grep -iE 'error|read |solving over'  "$DIR/big.$d.err" | head -3 | tr '\n' ' ')"
            [ -s "$DIR/big.$d.json" ] && python3 -c '
import json, sys
for r in json.load(open(sys.argv[1]))["runs"]:
    print("  ", r["precision"], "devices", r["devices"], "iterations", r["iterations"], "ms/it %.1f" % (1e3 * r["time_per_iteration"]),
          "setup s %.1f" % r["setup_time"], "true res", r["true_residual"])
' "$DIR/big.$d.json"
        done
        ;;
    esac
done
