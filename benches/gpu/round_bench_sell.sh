#!/usr/bin/env bash
# SpMV on every shared matrix with the SELL build: our f64/dd SpMV in the layout the solvers use,
# cuSPARSE, and (where the matrix is sliced) our CSR one-thread-per-row kernel in the same run.
# `bash round_bench_sell.sh FIRST LAST` benches matrices FIRST..LAST (1-based, sorted by name);
# `bash round_bench_sell.sh summary FILE...` prints the medians. Copied into .gpu/ with solver-sell.
if [ "$1" = summary ]; then
  shift
  cat "$@" | awk '{print $7}' | sort -g | awk '{a[NR]=$1} END {print "matrices:", NR, "median speedup of our f64 SpMV over cuSPARSE:", a[int((NR+1)/2)]}'
  cat "$@" | awk '$8 != "-" {print $8/$5, $9/$6}' | sort -g | awk '{a[NR]=$1; b[NR]=$2} END {print "sliced matrices:", NR, "median CSR/SELL time f64:", a[int((NR+1)/2)]}'
  cat "$@" | awk '$8 != "-" {print $9/$6}' | sort -g | awk '{a[NR]=$1} END {print "sliced matrices:", NR, "median CSR/SELL time dd:", a[int((NR+1)/2)], "min", a[1], "max", a[NR]}'
  cat "$@" | awk '$8 != "-" {print $8/$5}' | sort -g | awk '{a[NR]=$1} END {print "sliced matrices:", NR, "f64 CSR/SELL min", a[1], "max", a[NR]}'
  exit 0
fi
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
ls ${MATRICES:-matrices}/*.mtx | sed -n "$1,$2p" | while read m; do
  timeout 60 ./solver-sell bench "$m" --reps 20 --iterations 5 --json /tmp/b.json >/dev/null 2>/tmp/err || { echo "$m failed: $(tail -1 /tmp/err)"; continue; }
  python3 - "$m" <<'PY'
import json, sys
r = json.load(open("/tmp/b.json"))
row = {x["kernel"] + "/" + x["precision"]: x for x in r["rows"]}
csr = [k for k in row if k.startswith("spmv, CSR with NT=") and k.endswith("/f64")]
c64 = "%.5f" % row[csr[0]]["median_ms"] if csr else "-"
cdd = "%.5f" % row[csr[0][:-4] + "/dd"]["median_ms"] if csr else "-"
print(sys.argv[1].split("/")[-1][:-4], r["matrix"]["rows"], r["matrix"]["nnz"],
      "%.5f" % row["spmv (cuSPARSE)/f64"]["median_ms"], "%.5f" % row["spmv/f64"]["median_ms"],
      "%.5f" % row["spmv/dd"]["median_ms"], "%.3f" % row["spmv/f64"]["speedup_vs_peer"], c64, cdd)
PY
done | tee $OUT/shared-spmv-$1.txt
