#!/usr/bin/env bash
# benches/results/gpu-resident.md: per-iteration time of CG and BiCGStab on the GPU (this build
# with and without CUDA graphs, and BASE, a build of an earlier commit) against the CPU backend on
# the same host, median of 3 alternated solves of 1000 iterations (--tol 1e-300); the persistent
# kernel against the step kernels; BiCGStab on the mid-sized matrices; then the GPU suite's
# checks of device-resident solves. Prepare on the team machine:
#   cargo build --release && cargo test --release --test gpu --no-run
#   mkdir -p .gpu/matrices && cp ../shared/matrices/*.mtx .gpu/matrices/
#   strip -o .gpu/solver target/release/solver; strip -o .gpu/gpu-test target/release/deps/gpu-<hash>
#   (a build of the base commit as .gpu/solver-base); cp benches/gpu/resident.sh .gpu/
# On the device: bash .gpu/resident.sh (writes $OUT/resident.txt and $OUT/gpu-test.txt);
# bash .gpu/resident.sh bicgstab-persistent: only BiCGStab's persistent kernel against its step
# kernels (PRECSOLVE_PERSISTENT=0, unset, all), one solve of 2,000 iterations each, f64 and dd;
# bash .gpu/resident.sh bicgstab-ilu: ILU(0)-BiCGStab as one block against its step kernels;
# bash .gpu/resident.sh host-ilu: ILU(0) applied on the host, this build against BASE;
# bash .gpu/resident.sh floor: the default schedule, this build against BASE and the CPU
# (SMALL_ONLY=1: without poisson3d:200);
# bash .gpu/resident.sh phases: where a persistent kernel's iteration goes (PHASE_TIMES);
# bash .gpu/resident.sh owned: CG's rows kept in registers against BASE, and the gathers' batch;
# bash .gpu/resident.sh chunk-batch: CG's default against BASE, persist_chunked_sum's batches;
# bash .gpu/resident.sh bicgstab-owned: BiCGStab's rows kept in registers against BASE.
# bash .gpu/resident.sh bicgstab-dd-registers: BiCGStab dd in memory, in registers, by default.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
OUT=${OUT:-.}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/resident.txt
echo "host: $(nproc) cores" | tee -a $OUT/resident.txt
one() { # binary matrix precision method backend [env]
  env $6 timeout 120 ./$1 solve $2 --backend $5 --precision $3 --method $4 --tol 1e-300 \
      --max-iter 1000 --format json -q 2>>$OUT/err.txt |
    python3 -c "import json,sys; r=json.load(sys.stdin)['runs'][0]; print('%.2f' % (r['time_per_iteration']*1e6))" 2>/dev/null || echo nan
}
med() { python3 -c "import sys,statistics; v=[float(x) for x in sys.argv[1:] if x!='nan']; print('%.1f' % statistics.median(v) if v else 'nan')" "$@"; }
if [ "$1" = bicgstab-ilu ]; then
  # ILU(0)-BiCGStab as one block (kernels/bicgstab_ilu_block.cu, PRECSOLVE_PERSISTENT=all)
  # against the step kernels (=0: ILU(0) on the device or the host, as placed), what the
  # default chooses (the cost model, one solve) and the CPU backend: us an iteration, median of
  # 3 alternated solves of 1,000 iterations.
  printf "| %s | %s | %s | %s | %s | %s | %s |\n|---|---:|---|---:|---:|---:|---:|\n" matrix rows precision "one block (us)" "steps (us)" "default (us)" "CPU, all cores (us)" | tee -a $OUT/resident.txt
  for m in gre_115 fs_183_4 rdb200l e05r0100 Chebyshev1 cavity02 nnc1374 adder_dcop_05 dw2048 sherman5; do
    for p in f64 dd; do
      a=(); b=()
      for r in 1 2 3; do
        a+=($(one solver matrices/$m.mtx $p "bicgstab --precond ilu0" cuda PRECSOLVE_PERSISTENT=all))
        b+=($(one solver matrices/$m.mtx $p "bicgstab --precond ilu0" cuda PRECSOLVE_PERSISTENT=0))
      done
      rows=$(grep -v '^%' matrices/$m.mtx | head -1 | cut -d' ' -f1)
      printf "| %s | %s | %s | %s | %s | %s | %s |\n" $m $rows $p $(med ${a[@]}) $(med ${b[@]}) \
        $(one solver matrices/$m.mtx $p "bicgstab --precond ilu0" cuda) \
        $(one solver matrices/$m.mtx $p "bicgstab --precond ilu0" cpu) | tee -a $OUT/resident.txt
    done
  done
  exit 0
fi
if [ "$1" = host-ilu ]; then
  # ILU(0) applied on the host by the step kernels' BiCGStab (PRECSOLVE_PERSISTENT=0; the cost
  # model places these factors on the host): this build against .gpu/solver-base, us an
  # iteration, median of 3 alternated solves of 1,000 iterations.
  printf "| %s | %s | %s | %s | %s |\n|---|---:|---|---:|---:|\n" matrix rows precision "base (us)" "this build (us)" | tee -a $OUT/resident.txt
  for m in gre_115 Chebyshev1 e05r0100 cavity02 nnc1374 dw2048 sherman5 bcsstk13 1138_bus; do
    for p in f64 dd; do
      a=(); b=()
      for r in 1 2 3; do
        a+=($(one solver-base matrices/$m.mtx $p "bicgstab --precond ilu0" cuda PRECSOLVE_PERSISTENT=0))
        b+=($(one solver matrices/$m.mtx $p "bicgstab --precond ilu0" cuda PRECSOLVE_PERSISTENT=0))
      done
      rows=$(grep -v '^%' matrices/$m.mtx | head -1 | cut -d' ' -f1)
      printf "| %s | %s | %s | %s | %s |\n" $m $rows $p $(med ${a[@]}) $(med ${b[@]}) | tee -a $OUT/resident.txt
    done
  done
  exit 0
fi
if [ "$1" = owned ]; then
  # CG's persistent kernel with each thread's row kept in registers (this build) against BASE's,
  # where the persistent kernel runs (PRECSOLVE_PERSISTENT=all), the SpMV's gathers in batches
  # of 4 entries (BASE's), 8 and 16 (PRECSOLVE_KERNEL_DEFINES=PERSIST_BATCH=B), BiCGStab too
  # (only the batch differs): us an iteration, median of 3 alternated solves of 1,000
  # iterations; then cycles an iteration by mark, one solve each. (Run when the batch of
  # persist_chunked_sum was PERSIST_BATCH; `chunk-batch` below measures it apart.)
  printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n|---|---:|---|---|---:|---:|---:|---:|\n" matrix rows method precision "base (us)" "this build (us)" "batch 8 (us)" "batch 16 (us)" | tee -a $OUT/resident.txt
  for mm in "bcsstk01 cg bicgstab" "1138_bus cg bicgstab" "dw2048 bicgstab" "cryg2500 bicgstab" \
            "poisson3d:16 cg" "poisson3d:20 cg" "poisson3d:25 cg"; do
    set -- $mm; m=$1; shift
    f=matrices/$m.mtx; [ -e $f ] || f=$m
    rows=$( [ -e $f ] && grep -v '^%' $f | head -1 | cut -d' ' -f1 || echo -)
    for meth in "$@"; do
      for p in f64 dd; do
        a=(); b=(); c=(); d=()
        for r in 1 2 3; do
          a+=($(one solver-base $f $p $meth cuda PRECSOLVE_PERSISTENT=all))
          b+=($(one solver $f $p $meth cuda "PRECSOLVE_PERSISTENT=all PRECSOLVE_KERNEL_DEFINES=PERSIST_BATCH=4"))
          c+=($(one solver $f $p $meth cuda "PRECSOLVE_PERSISTENT=all PRECSOLVE_KERNEL_DEFINES=PERSIST_BATCH=8"))
          d+=($(one solver $f $p $meth cuda "PRECSOLVE_PERSISTENT=all PRECSOLVE_KERNEL_DEFINES=PERSIST_BATCH=16"))
        done
        printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n" $m $rows $meth $p $(med ${a[@]}) $(med ${b[@]}) \
          $(med ${c[@]}) $(med ${d[@]}) | tee -a $OUT/resident.txt
      done
    done
  done
  for m in bcsstk01 1138_bus; do
    for p in f64 dd; do
      for b in solver-base solver; do
        echo "$m cg $p $b: $(PRECSOLVE_KERNEL_DEFINES=PHASE_TIMES timeout 60 ./$b solve matrices/$m.mtx \
          --backend cuda --precision $p --tol 1e-300 --max-iter 1000 -q 2>>$OUT/err.txt |
          grep PHASES | tail -1)" | tee -a $OUT/resident.txt
      done
    done
  done
  exit 0
fi
if [ "$1" = chunk-batch ]; then
  # CG's default schedule, BASE against this build with persist_chunked_sum's batches as
  # committed (f64 8, dd 32) and swapped (f64 32, dd 8): us an iteration, median of 3
  # alternated solves of 1,000 iterations.
  printf "| %s | %s | %s | %s | %s | %s |\n|---|---:|---|---:|---:|---:|\n" matrix rows precision "base (us)" "this build (us)" "swapped (us)" | tee -a $OUT/resident.txt
  for m in bcsstk01 1138_bus poisson3d:16 poisson3d:20 poisson3d:25; do
    f=matrices/$m.mtx; [ -e $f ] || f=$m
    rows=$( [ -e $f ] && grep -v '^%' $f | head -1 | cut -d' ' -f1 || echo -)
    for p in f64 dd; do
      a=(); b=(); c=()
      for r in 1 2 3; do
        a+=($(one solver-base $f $p cg cuda))
        b+=($(one solver $f $p cg cuda))
        c+=($(one solver $f $p cg cuda "PRECSOLVE_KERNEL_DEFINES=CHUNK_BATCH_F64=32 CHUNK_BATCH_DD=8"))
      done
      printf "| %s | %s | %s | %s | %s | %s |\n" $m $rows $p $(med ${a[@]}) $(med ${b[@]}) \
        $(med ${c[@]}) | tee -a $OUT/resident.txt
    done
  done
  exit 0
fi
if [ "$1" = bicgstab-dd-registers ]; then
  # BiCGStab dd with its rows in memory (PRECSOLVE_KERNEL_DEFINES=BGP_REGISTERS_DD_MAX_TILES=0),
  # in registers on every grid of one block a tile (MIN_TILES=1, MAX_TILES=64) and as the
  # default chooses (from 5 to 48 tiles), this build alone: us an iteration, median of 3
  # alternated solves of 1,000 iterations; then cycles by mark in memory and in registers.
  printf "| %s | %s | %s | %s | %s | %s |\n|---|---:|---:|---:|---:|---:|\n" matrix rows tiles \
    "in memory (us)" "in registers (us)" "default (us)" | tee -a $OUT/resident.txt
  memory="BGP_REGISTERS_DD_MAX_TILES=0"
  registers="BGP_REGISTERS_DD_MIN_TILES=1 BGP_REGISTERS_DD_MAX_TILES=64"
  # the edges of the default's reach first
  for m in bcsstk01 494_bus nos3 1138_bus poisson3d:23 poisson3d:24 poisson3d:25 fs_183_4 \
    poisson3d:12 dw2048 cryg2500 sherman5 poisson3d:16 poisson3d:18 Pd poisson3d:21; do
    f=matrices/$m.mtx; [ -e $f ] || f=$m
    rows=$( [ -e $f ] && grep -v '^%' $f | head -1 | cut -d' ' -f1 || echo $(( ${m#*:} ** 3 )))
    a=(); b=(); c=()
    for r in 1 2 3; do
      a+=($(PRECSOLVE_KERNEL_DEFINES="$memory" one solver $f dd bicgstab cuda))
      b+=($(PRECSOLVE_KERNEL_DEFINES="$registers" one solver $f dd bicgstab cuda))
      c+=($(one solver $f dd bicgstab cuda))
    done
    printf "| %s | %s | %s | %s | %s | %s |\n" $m $rows $(( (rows + 255) / 256 )) \
      $(med ${a[@]}) $(med ${b[@]}) $(med ${c[@]}) | tee -a $OUT/resident.txt
  done
  for m in bcsstk01 1138_bus; do
    for d in "PHASE_TIMES $memory" "PHASE_TIMES $registers"; do
      echo "$m bicgstab dd $d: $(PRECSOLVE_KERNEL_DEFINES="$d" timeout 60 ./solver solve \
        matrices/$m.mtx --backend cuda --precision dd --method bicgstab --tol 1e-300 \
        --max-iter 1000 -q 2>>$OUT/err.txt | grep PHASES | tail -1)" | tee -a $OUT/resident.txt
    done
  done
  exit 0
fi
if [ "$1" = bicgstab-owned ]; then
  # BiCGStab's persistent kernel with each thread's row kept in registers (this build) against
  # BASE's (main before it), where the persistent kernel runs (PRECSOLVE_PERSISTENT=all) and
  # by default: us an iteration, median of 3 alternated solves of 1,000 iterations; then
  # cycles an iteration by mark, one solve each.
  printf "| %s | %s | %s | %s | %s | %s | %s |\n|---|---:|---|---:|---:|---:|---:|\n" matrix rows precision "base, all (us)" "this build, all (us)" "base (us)" "this build (us)" | tee -a $OUT/resident.txt
  for m in bcsstk01 fs_183_4 1138_bus dw2048 cryg2500 sherman5 Pd bcsstk16 poisson3d:20 poisson3d:25; do
    f=matrices/$m.mtx; [ -e $f ] || f=$m
    rows=$( [ -e $f ] && grep -v '^%' $f | head -1 | cut -d' ' -f1 || echo -)
    for p in f64 dd; do
      a=(); b=(); c=(); d=()
      for r in 1 2 3; do
        a+=($(one solver-base $f $p bicgstab cuda PRECSOLVE_PERSISTENT=all))
        b+=($(one solver $f $p bicgstab cuda PRECSOLVE_PERSISTENT=all))
        c+=($(one solver-base $f $p bicgstab cuda))
        d+=($(one solver $f $p bicgstab cuda))
      done
      printf "| %s | %s | %s | %s | %s | %s | %s |\n" $m $rows $p $(med ${a[@]}) $(med ${b[@]}) \
        $(med ${c[@]}) $(med ${d[@]}) | tee -a $OUT/resident.txt
    done
  done
  for m in bcsstk01 1138_bus dw2048; do
    for p in f64 dd; do
      for b in solver-base solver; do
        echo "$m bicgstab $p $b: $(PRECSOLVE_KERNEL_DEFINES=PHASE_TIMES timeout 60 ./$b solve \
          matrices/$m.mtx --backend cuda --precision $p --method bicgstab --tol 1e-300 \
          --max-iter 1000 -q 2>>$OUT/err.txt | grep PHASES | tail -1)" | tee -a $OUT/resident.txt
      done
    done
  done
  exit 0
fi
if [ "$1" = floor ]; then
  # The default schedule of this build against BASE's and the CPU backend (all cores): us an
  # iteration, median of 3 alternated solves of 1,000 iterations (2 on poisson3d:200).
  printf "| %s | %s | %s | %s | %s | %s | %s |\n|---|---:|---|---|---:|---:|---:|\n" matrix rows method precision "base (us)" "this build (us)" "CPU (us)" | tee -a $OUT/resident.txt
  for mm in "bcsstk01 cg bicgstab" "fs_183_4 bicgstab" "1138_bus cg bicgstab" "dw2048 bicgstab" \
            "rdb2048l bicgstab" "cryg2500 bicgstab" "sherman5 bicgstab" "Pd bicgstab" "bcsstk16 cg" \
            "poisson3d:16 cg" "poisson3d:20 cg bicgstab" "poisson3d:25 cg bicgstab" "poisson3d:200 cg bicgstab"; do
    set -- $mm; m=$1; shift
    [ -n "$SMALL_ONLY" ] && [ $m = poisson3d:200 ] && continue
    f=matrices/$m.mtx; [ -e $f ] || f=$m
    rows=$( [ -e $f ] && grep -v '^%' $f | head -1 | cut -d' ' -f1 || echo -)
    reps="1 2 3"; [ $m = poisson3d:200 ] && reps="1 2"
    for meth in "$@"; do
      for p in f64 dd; do
        a=(); b=()
        for r in $reps; do
          a+=($(one solver-base $f $p $meth cuda)); b+=($(one solver $f $p $meth cuda))
        done
        printf "| %s | %s | %s | %s | %s | %s | %s |\n" $m $rows $meth $p $(med ${a[@]}) $(med ${b[@]}) \
          $(one solver $f $p $meth cpu) | tee -a $OUT/resident.txt
      done
    done
  done
  exit 0
fi
if [ "$1" = phases ]; then
  # Where a persistent kernel's iteration goes (PRECSOLVE_KERNEL_DEFINES=PHASE_TIMES: SM cycles
  # between the marks in kernels/{cg,bicgstab}_persistent.cu, thread 0 of block 0), one solve of
  # 1,000 iterations each, cycles an iteration by mark.
  for mm in "bcsstk01 cg bicgstab" "1138_bus cg bicgstab" "dw2048 bicgstab"; do
    set -- $mm; m=$1; shift
    for meth in "$@"; do
      for p in f64 dd; do
        echo "== $m $meth $p" >> $OUT/phases-raw.txt
        PRECSOLVE_KERNEL_DEFINES=PHASE_TIMES timeout 60 ./solver solve matrices/$m.mtx --backend cuda \
          --precision $p --method $meth --tol 1e-300 --max-iter 1000 -q 2>>$OUT/err.txt |
          grep PHASES >> $OUT/phases-raw.txt
      done
    done
  done
  python3 - "$OUT/phases-raw.txt" <<'P' | tee -a $OUT/resident.txt
import sys
acc = {}
for line in open(sys.argv[1]):
    if line.startswith('=='):
        cur = line[3:].strip()
        continue
    w = line.split()  # PHASES name n= grid= iterations= cycles c0 c1 ...
    it, c = int(w[4].split('=')[1]), [int(x) for x in w[6:]]
    a = acc.setdefault(cur, [w[3], 0, [0] * len(c)])
    a[1] += it
    a[2] = [x + y for x, y in zip(a[2], c)]
print("| solve | grid | cycles an iteration | by mark 0, 1, ... |\n|---|---|---:|---|")
for k, (grid, it, c) in acc.items():
    if it:
        print(f"| {k} | {grid} | {sum(c) / it:.0f} | " + " ".join(f"{x / it:.0f}" for x in c if x) + " |")
P
  exit 0
fi
if [ "$1" = bicgstab-persistent ]; then
  for m in fs_183_4 cavity02 sherman2 nnc1374 adder_dcop_05 dw2048 1138_bus; do
    for mode in 0 measured all; do
      PRECSOLVE_PERSISTENT=$mode timeout 60 ./solver solve matrices/$m.mtx --backend cuda --precision f64,dd \
        --method bicgstab --tol 1e-300 --max-iter 2000 --format json -q 2>>$OUT/err.txt |
        python3 -c "
import json, sys
for r in json.load(sys.stdin)['runs']:
    print('$m', '$mode', r['precision'], r['iterations'], '%.1f us' % (1e6 * r['time_per_iteration']))" | tee -a $OUT/resident.txt
    done
  done
  exit 0
fi
printf "| %s | %s | %s | %s | %s | %s | %s |\n|---|---|---|---:|---:|---:|---:|\n" matrix precision method "base GPU (us)" "GPU, no graphs (us)" "GPU (us)" "CPU, all cores (us)" | tee -a $OUT/resident.txt
for m in matrices/bcsstk01.mtx matrices/fs_183_4.mtx matrices/cavity02.mtx matrices/1138_bus.mtx \
         matrices/bcsstk16.mtx poisson3d:30 poisson3d:60 poisson3d:200; do
  for meth in cg bicgstab; do
    [ $meth = cg ] && [ $m = matrices/fs_183_4.mtx -o $m = matrices/cavity02.mtx ] && continue
    for p in f64 dd; do
      a=(); b=(); c=()
      for r in 1 2 3; do
        a+=($(one solver-base $m $p $meth cuda))
        b+=($(one solver $m $p $meth cuda PRECSOLVE_CUDA_GRAPHS=0))
        c+=($(one solver $m $p $meth cuda))
      done
      printf "| %s | %s | %s | %s | %s | %s | %s |\n" $(basename $m .mtx) $p $meth $(med ${a[@]}) \
        $(med ${b[@]}) $(med ${c[@]}) $(one solver $m $p $meth cpu) | tee -a $OUT/resident.txt
    done
  done
done
# The persistent kernel (kernels/cg_persistent.cu) against the step kernels replayed as graphs,
# CG, where it can run (PRECSOLVE_PERSISTENT=all) and never (=0): medians of 2 alternated solves.
printf "\n| %s | %s | %s | %s | %s |\n|---|---|---:|---:|---:|\n" matrix precision "persistent (us)" "steps, graphs (us)" "CPU (us)" | tee -a $OUT/resident.txt
for m in matrices/bcsstk01.mtx matrices/1138_bus.mtx poisson3d:12 poisson3d:16 poisson3d:20 \
         poisson3d:25 poisson3d:30 matrices/bcsstk16.mtx; do
  for p in f64 dd; do
    a=(); b=()
    for r in 1 2; do
      a+=($(one solver $m $p cg cuda PRECSOLVE_PERSISTENT=all))
      b+=($(one solver $m $p cg cuda PRECSOLVE_PERSISTENT=0))
    done
    printf "| %s | %s | %s | %s | %s |\n" $(basename $m .mtx) $p $(med ${a[@]}) $(med ${b[@]}) \
      $(one solver $m $p cg cpu) | tee -a $OUT/resident.txt
  done
done
# BiCGStab on the matrices of 2,000-8,000 rows and two Poisson sizes, f64 and dd: the GPU three
# times (each figure printed) and the CPU once, us per iteration.
printf "\n| %s | %s | %s | %s |\n|---|---|---|---:|\n" matrix precision "GPU (us, 3 solves)" "CPU (us)" | tee -a $OUT/resident.txt
for m in matrices/dw2048.mtx matrices/cryg2500.mtx matrices/rdb2048l.mtx matrices/sherman5.mtx \
         matrices/fs_183_4.mtx poisson3d:30 poisson3d:200; do
  for p in f64 dd; do
    printf "| %s | %s | %s %s %s | %s |\n" $(basename $m .mtx) $p $(one solver $m $p bicgstab cuda) \
      $(one solver $m $p bicgstab cuda) $(one solver $m $p bicgstab cuda) $(one solver $m $p bicgstab cpu) | tee -a $OUT/resident.txt
  done
done
PRECSOLVE_MATRICES=$PWD/matrices timeout 300 ./gpu-test device_resident whole_solves preconditioned_solves \
  2>&1 | tee $OUT/gpu-test.txt | grep -E "^test|^gpu:"
