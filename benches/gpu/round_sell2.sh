#!/usr/bin/env bash
# After fixing the tests (sliced layout only where CSR gives a row one thread): the two checks
# that had failed, then the preconditioned CG and BiCGStab A/B (raw/sell-ab.txt, lease 1).
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
PRECSOLVE_MATRICES=$PWD/matrices timeout 200 ./gpu-test spmv_and_residual cg_step 2>&1 | tee $OUT/gpu-test.txt | grep -E "^test |passed|failed|differ"
METHODS="cg bicgstab" timeout 350 bash ab_pcg_solve.sh solver-base solver-sell
