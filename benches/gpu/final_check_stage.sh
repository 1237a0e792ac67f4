#!/usr/bin/env bash
# CG's r update staging fl64(r) for the ILU(0) forward solve (Backend::cg_step_staged): the
# GPU-vs-CPU checks that touch it, then the ILU(0) bench on the previous build (solver-base)
# and this one (solver-stage), and the `solver solve` A/B of preconditioned CG. Copied into
# .gpu/ with both binaries and gpu-test. `CHECKS_ONLY=1`: the checks alone.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if [ -z "${TIMINGS_ONLY:-}" ]; then
  PRECSOLVE_MATRICES=$PWD/matrices timeout 400 ./gpu-test staged preconditioned cg_step 2>&1 | tee $OUT/gpu-test-stage.txt | grep -E "^test |passed|failed|differ|identical"
  grep -q " 0 failed" $OUT/gpu-test-stage.txt || { echo "correctness failed: no timings"; exit 1; }
fi
[ -n "${CHECKS_ONLY:-}" ] && exit 0
for b in solver-base solver-stage; do
  timeout 150 ./$b bench poisson3d:200 --precond ilu0 --json $OUT/bench-ilu0-$b.json > $OUT/bench-ilu0-$b.txt 2>&1
  echo "== $b"; grep -E "^pcg|^pbicgstab|precond" $OUT/bench-ilu0-$b.txt
done
METHODS=cg timeout 250 bash ab_pcg_solve.sh solver-base solver-stage
