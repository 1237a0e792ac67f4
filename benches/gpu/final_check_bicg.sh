#!/usr/bin/env bash
# Final build of BiCGStab's dots inside its SpMVs (no preconditioner; dot's order with one):
# check_bicg_tile.sh (the GPU-vs-CPU checks, the plain bench on both builds), then
# check_bicg_tile_ilu.sh (the ILU(0) bench, preconditioned BiCGStab alternated through
# `solver solve`). Copied into .gpu/ with the two scripts, solver-base (57d1bf3), solver-bicg
# and gpu-test; carry .gpu.
cd "$(dirname "$0")"
bash check_bicg_tile.sh || exit 1
bash check_bicg_tile_ilu.sh
