#!/usr/bin/env bash
# Bench round: poisson3d:200 (8 M rows) with the CuPy peer, then SpMV on every shared matrix.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
echo "== solver bench poisson3d:200"
./solver bench poisson3d:200 --reps 20 --iterations 100 --json $OUT/bench-poisson3d-200.json 2>&1 | tee $OUT/bench-poisson3d-200.txt
echo "== CuPy peer"
python3 cupy_peer.py 200 2>&1 | tee $OUT/cupy-peer.json
echo "== SpMV on the shared matrices"
for m in matrices/*.mtx; do
  ./solver bench "$m" --reps 20 --iterations 5 --json /tmp/b.json >/dev/null 2>/tmp/err || { echo "$m failed: $(cat /tmp/err)"; continue; }
  python3 - "$m" <<'PY' >> $OUT/shared-spmv.txt
import json, sys
r = json.load(open("/tmp/b.json"))
row = {x["kernel"] + "/" + x["precision"]: x for x in r["rows"]}
print(sys.argv[1].split("/")[-1][:-4], r["matrix"]["rows"], r["matrix"]["nnz"],
      "%.5f" % row["spmv (cuSPARSE)/f64"]["median_ms"], "%.5f" % row["spmv/f64"]["median_ms"],
      "%.5f" % row["spmv/dd"]["median_ms"], "%.3f" % row["spmv/f64"]["speedup_vs_peer"])
PY
done
sort -k7 -g $OUT/shared-spmv.txt | awk '{a[NR]=$7} END {print "shared matrices:", NR, "median speedup of our f64 SpMV over cuSPARSE:", a[int((NR+1)/2)]}' | tee -a $OUT/shared-spmv.txt
