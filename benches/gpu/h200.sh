#!/usr/bin/env bash
# benches/results/h200.md: `solver bench poisson3d:200` (8 M rows: our SpMV against cuSPARSE, the
# vector kernels against a device copy, whole CG and BiCGStab iterations in f64, dd, td and qd),
# CuPy's double CG on the same matrix (benches/gpu/cupy_peer.py), then our SpMV against cuSPARSE
# on each shared matrix. Prepare on the team machine:
#   cargo build --release
#   mkdir -p .gpu/matrices && cp ../shared/matrices/*.mtx .gpu/matrices/
#   strip -o .gpu/solver target/release/solver
#   cp benches/gpu/h200.sh benches/gpu/cupy_peer.py .gpu/
# On the device (carry .gpu): bash .gpu/h200.sh. Writes to $OUT: bench-poisson3d-200.{txt,json},
# cupy-peer.json, shared-spmv.txt (name rows nnz cusparse_f64 ours_f64 ours_dd speedup, ms; the
# last line the median speedup). The GPU checks are benches/gpu/correctness.sh.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
echo "== solver bench poisson3d:200"
./solver bench poisson3d:200 --reps 20 --iterations 100 --json $OUT/bench-poisson3d-200.json 2>&1 | tee $OUT/bench-poisson3d-200.txt
echo "== CuPy peer"
python3 cupy_peer.py 200 2>&1 | tee $OUT/cupy-peer.json
echo "== SpMV on the shared matrices"
echo "name rows nnz cusparse_f64 ours_f64 ours_dd speedup" > $OUT/shared-spmv.txt
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
tail -n +2 $OUT/shared-spmv.txt | sort -k7 -g | awk '{a[NR]=$7} END {print "shared matrices:", NR, "median speedup of our f64 SpMV over cuSPARSE:", a[int((NR+1)/2)]}' | tee -a $OUT/shared-spmv.txt
