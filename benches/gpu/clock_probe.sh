#!/usr/bin/env bash
# SM clock and power while preconditioned DD solves run, previous build against SELL build.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
for round in 1 2; do
for b in solver-base solver-sell; do
for m in bicgstab cg; do
  nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active --format=csv,noheader,nounits -lms 50 > $OUT/clk-$b-$m-$round.csv &
  smi=$!
  timeout 120 ./$b solve poisson3d:200 --backend cuda --precond ilu0 --method $m --max-iter 400 --precision dd --tol 1e-300 --format json --quiet > $OUT/s-$b-$m-$round.json 2>/dev/null
  kill $smi; wait $smi 2>/dev/null
  python3 - <<PY
import json, statistics as st
d = json.load(open("$OUT/s-$b-$m-$round.json"))["runs"][0]
rows = [l.split(", ") for l in open("$OUT/clk-$b-$m-$round.csv") if l.strip()]
busy = [r for r in rows if float(r[2]) > 200]
sm = [float(r[0]) for r in busy]; pw = [float(r[2]) for r in busy]
reasons = sorted(set(r[3].strip() for r in busy))
print("$b $m r$round dd %.4f ms/it | samples %d, SM clock mean %.0f min %.0f MHz, power mean %.0f max %.0f W, reasons %s" % (
  1e3 * d["time_per_iteration"], len(busy), st.mean(sm) if sm else 0, min(sm) if sm else 0, st.mean(pw) if pw else 0, max(pw) if pw else 0, reasons))
PY
done; done; done
