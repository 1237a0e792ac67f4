#!/usr/bin/env bash
# Where does the sliced layout start to pay? solver bench's SpMV rows (sliced, then CSR NT=1 in
# the same run) on poisson3d of growing size, and on a few small shared matrices twice.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for m in poisson3d:8 poisson3d:12 poisson3d:16 poisson3d:24 poisson3d:32 poisson3d:40 poisson3d:50 poisson3d:64 poisson3d:80 poisson3d:100 poisson3d:130 shared/rdb200l.mtx shared/rdb1250.mtx shared/dw2048.mtx shared/rdb200l.mtx shared/rdb1250.mtx shared/dw2048.mtx; do
  timeout 60 ./solver-sell bench "$m" --reps 20 --iterations 5 --json /tmp/b.json >/dev/null 2>/tmp/err || { echo "$m failed: $(tail -1 /tmp/err)"; continue; }
  python3 - "$m" <<'PY'
import json, sys
r = json.load(open("/tmp/b.json"))
row = {x["kernel"] + "/" + x["precision"]: x["median_ms"] for x in r["rows"]}
csr = [k[:-4] for k in row if k.startswith("spmv, CSR with NT=") and k.endswith("/f64")]
c = csr[0] if csr else None
print("%-22s rows %8d  f64 sliced %.5f csr %s  dd sliced %.5f csr %s" % (sys.argv[1], r["matrix"]["rows"],
  row["spmv/f64"], "%.5f" % row[c + "/f64"] if c else "-", row["spmv/dd"], "%.5f" % row[c + "/dd"] if c else "-"))
PY
done | tee $OUT/sell-sizes.txt
