#!/usr/bin/env bash
# benches/results/mp-gpu.md: CG's time per iteration in mp:<bits> on the GPU against dd on the
# GPU and mp:<bits> on the CPU backend of the same host (all its cores), poisson3d:N, a fixed
# number of iterations (tol 1e-300). Prepare as benches/gpu/correctness.sh says (.gpu/solver),
# cp benches/gpu/mp.sh .gpu/; on the device (carry .gpu): bash .gpu/mp.sh [N] > $OUT/mp-gpu.md
# `bash .gpu/mp.sh profile`: instead, Nsight Compute's per-kernel counts (instructions, integer
# instructions, DRAM bytes, local-memory loads) for 6 CG iterations of poisson3d:100 in dd and
# mp:256 (the table "Where an iteration's time goes"). `bash .gpu/mp.sh range [N]`: the table
# across 106 to 1,696 bits, after `bash .gpu/mp.sh warm 106 128 212 ...` has compiled them.
# `bash .gpu/mp.sh mpfr [N [BITS...]]`: GPU mp against MPFR and the own type on all the host's
# cores (the solver built with `--features mpfr`; the table "Against MPFR on the same host").
# `bash .gpu/mp.sh firstuse [N [BITS...]]`: the first solve's wait (compiling) and the
# iteration of three ways to build the wide kernels (the table "First use").
# `bash .gpu/mp.sh general [N [BITS]]`: the same on poisson3d:N's pattern with entries that are
# not powers of two (a matrix written to /tmp).
# `bash .gpu/mp.sh compare [N [BITS...]]`: ./solver against a build of the commit before it,
# .gpu/solver-base, alternated (the tables "The product's rounding and the near sum" and
# "Products and sums on the carry flag"); BUILDS="solver-base solver-a solver" compares more.
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
cd "$(dirname "$0")"
# One solve (CG unless a method is given) by ./solver (or ./$SOLVER):
# matrix backend precision iterations [method] -> "s/it iterations true_residual"
solve_matrix() {
  "./${SOLVER:-solver}" solve "$1" --backend "$2" --precision "$3" --tol 1e-300 \
    --max-iter "$4" --method "${5:-cg}" --format json 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["runs"][0]; print(r["time_per_iteration"], r["iterations"], repr(r["true_residual"]))'
}
# The same on poisson3d:N: N backend precision iterations [method]
solve_poisson() { local n=$1; shift; solve_matrix "poisson3d:$n" "$@"; }
# Builds (BUILDS, default solver-base solver) on the GPU, each compiled in an untimed solve,
# then alternated twice: matrix bits method iterations -> two lines of every build's solve
alternate_builds() {
  local builds=${BUILDS:-solver-base solver} bin k line
  for bin in $builds; do SOLVER=$bin solve_matrix "$1" cuda "mp:$2" 2 "$3" > /dev/null; done
  for k in 1 2; do
    line="$1 mp:$2 $3"
    for bin in $builds; do line="$line | $bin: $(SOLVER=$bin solve_matrix "$1" cuda "mp:$2" "$4" "$3")"; done
    echo "$line"
  done
}
if [ "${1:-}" = profile ]; then
  for p in dd mp256; do
    /usr/local/cuda/bin/ncu -k regex:"_$p" --launch-skip 20 --launch-count 12 --csv \
      --metrics gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_thread_inst_executed.sum,smsp__sass_thread_inst_executed_op_integer_pred_on.sum,dram__bytes.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum \
      ./solver solve poisson3d:100 --backend cuda --precision "${p/mp/mp:}" --tol 1e-300 --max-iter 6 -q |
      python3 -c '
import csv, sys, collections
m = collections.defaultdict(lambda: collections.defaultdict(list))
for r in csv.DictReader(l for l in sys.stdin if l.startswith(chr(34))):
    try: m[r["Kernel Name"]][r["Metric Name"]].append(float(r["Metric Value"].replace(",", "")))
    except ValueError: pass
for k, v in m.items(): print(k, {n: "%.3g" % (sum(x) / len(x)) for n, x in v.items()})'
  done
  exit
fi
if [ "${1:-}" = warm ]; then
  # Compile the modules of the precisions given, in parallel, into the kernel cache: the
  # compile time of each, and no compile inside a later timed run.
  shift
  t0=$(date +%s)
  for p in "$@"; do
    ( timeout 450 ./solver solve poisson3d:4 --backend cuda --precision "mp:$p" --tol 1e-300 \
        --max-iter 2 -q > /dev/null 2>&1
      echo "mp:$p compiled and ran (rc $?, 3: not converged, as asked) at $(( $(date +%s) - t0 )) s" ) &
  done
  wait
  exit
fi
if [ "${1:-}" = firstuse ]; then
  # What a user's first solve in a wide precision waits for, per variant of the wide kernels:
  # "product" (the sum and the products inlined, the rounding and the rest one function a
  # module), MP_WIDE_NOINLINE (every operation one function) and MP_WIDE_INLINE (all left to
  # the compiler to inline). Each variant's first mp:<bits> solve (poisson3d:12, 2 iterations)
  # with an empty kernel cache and an empty driver cache, all variants at once, each in its own
  # process (cut at LIMIT s, default 400); then, compiled, CG's time per iteration on
  # poisson3d:N (default 100, 5 iterations) of each, one after the other. VARIANTS: others
  # ("split": MP_WIDE_NOINLINE with NVRTC's --split-compile=0, optimising on all cores).
  # `bash .gpu/mp.sh firstuse [N [BITS...]]`.
  n=${2:-100}
  shift 2 || shift $#
  variants=${VARIANTS:-product MP_WIDE_NOINLINE MP_WIDE_INLINE}
  use() { # variant bits: the environment of that variant's caches
    export PRECSOLVE_KERNEL_CACHE=/tmp/precsolve-firstuse-$1-$2 CUDA_CACHE_PATH=/tmp/cuda-firstuse-$1-$2
    unset PRECSOLVE_KERNEL_DEFINES PRECSOLVE_NVRTC_OPTIONS
    case $1 in
      product) ;;
      split) export PRECSOLVE_KERNEL_DEFINES=MP_WIDE_NOINLINE PRECSOLVE_NVRTC_OPTIONS=--split-compile=0 ;;
      *) export PRECSOLVE_KERNEL_DEFINES=$1 ;;
    esac
  }
  t0=$(date +%s.%N)
  for variant in $variants; do
    for bits in "${@:-1024 2048}"; do
      ( use "$variant" "$bits"; rm -rf "$PRECSOLVE_KERNEL_CACHE" "$CUDA_CACHE_PATH"
        log=$(timeout "${LIMIT:-400}" ./solver solve poisson3d:12 --backend cuda --precision "mp:$bits" \
          --tol 1e-300 --max-iter 2 -v 2>&1)
        rc=$?
        [ $rc = 124 ] && touch "$PRECSOLVE_KERNEL_CACHE.cut"
        echo "$variant mp:$bits: first solve done at $(python3 -c "import time; print('%.1f' % (time.time() - $t0))") s (rc $rc; 124: cut at ${LIMIT:-400} s); $(grep -o "compiled kernels/mp[^ ]* .*" <<< "$log" | tr '\n' ' ')" ) &
    done
  done
  wait
  echo "dd: poisson3d:$n CG $(solve_poisson "$n" cuda dd 50) (s/it, iterations, true residual)"
  for variant in $variants; do
    for bits in "${@:-1024 2048}"; do
      use "$variant" "$bits"
      [ -e "$PRECSOLVE_KERNEL_CACHE.cut" ] && continue
      echo "$variant mp:$bits: poisson3d:$n CG $(solve_poisson "$n" cuda "mp:$bits" 5) (s/it, iterations, true residual)"
    done
  done
  exit
fi
if [ "${1:-}" = range ]; then
  # The 106-1,696-bit table: CG on poisson3d:N (default 100) at each precision of MPRES-BLAS's
  # GEMV study (seed 000, Table 5: GTX 1080, ms for a 1000 x 1000 GEMV), beside our own
  # expansions at 106 and 212 bits (dd, qd: CAMPARY's 2- and 4-term format). Every mp module is
  # compiled in the first solve that uses it, outside the timed iterations.
  n=${2:-100}
  it() { solve_poisson "$n" cuda "$@" | cut -d' ' -f1; } # precision iterations -> s/it
  echo "| bits | ours, mp GPU s/it | / 106 bits | ours, expansion s/it | MPRES-BLAS GEMV ms (/ 106 bits) | CAMPARY GEMV ms (/ 106 bits) |"
  echo "|---:|---:|---:|---:|---:|---:|"
  base=""
  for row in "106 dd 3.1 0.7" "212 qd 5.6 6.0" "424 - 8.5 26.3" "848 - 12.9 124.4" "1696 - 24.6 2499.9"; do
    set -- $row
    g=$(it "mp:$1" 10)
    e=""; [ "$2" != - ] && e=$(it "$2" 100)
    base=${base:-$g}
    python3 -c "
g,b=$g,$base; e='$e'; m,c=$3,$4
print(f'| $1 | {g:.3e} | {g/b:.1f} | {(\"%.3e (%s)\" % (float(e), \"$2\")) if e else \"\"} | {m} ({m/3.1:.1f}) | {c} ({c/0.7:.0f}) |')"
  done
  exit
fi
if [ "${1:-}" = compare ]; then
  # A change to the arithmetic against the build before it (.gpu/solver-base; BUILDS: any
  # list of builds in .gpu): CG and BiCGStab at each BITS (default 256 128) on poisson3d:N
  # (default 200), 10 iterations, the builds alternated twice, with a dd CG for the ratio. Each
  # build compiles its modules in an untimed solve.
  n=${2:-200}
  shift 2 || shift $#
  for bits in "${@:-256 128}"; do
    for method in cg bicgstab; do alternate_builds "poisson3d:$n" "$bits" $method 10; done
  done
  echo "dd cg: $(solve_poisson "$n" cuda dd 50)"
  exit
fi
if [ "${1:-}" = general ]; then
  # The compare above on poisson3d:N's pattern with entries that are not powers of two (6.1 on
  # the diagonal, -0.97 off it), which mul_f64's exact shortcut for +-2^k never takes: what
  # the shortcut costs where it does not apply. CG at BITS (default 256), 20 iterations, the
  # builds alternated twice, and dd's CG for the ratio. `bash .gpu/mp.sh general [N [BITS]]`.
  n=${2:-100}
  bits=${3:-256}
  file=/tmp/general$n.mtx
  python3 - "$n" "$file" <<'PY'
import sys
n, path = int(sys.argv[1]), sys.argv[2]
at = lambda i, j, k: (k * n + j) * n + i + 1
entries = []
for k in range(n):
    for j in range(n):
        for i in range(n):
            r = at(i, j, k)
            entries.append(f"{r} {r} 6.1")
            entries += [f"{r} {c} -0.97" for c, inside in
                        ((at(i - 1, j, k), i > 0), (at(i, j - 1, k), j > 0), (at(i, j, k - 1), k > 0)) if inside]
with open(path, "w") as f:
    f.write(f"%%MatrixMarket matrix coordinate real symmetric\n{n**3} {n**3} {len(entries)}\n")
    f.write("\n".join(entries) + "\n")
PY
  alternate_builds "$file" "$bits" cg 20
  echo "dd cg: $(solve_matrix "$file" cuda dd 50)"
  exit
fi
if [ "${1:-}" = mpfr ]; then
  # GPU mp:<bits> against MPFR (mp-mpfr:<bits>, a build with `--features mpfr`) and the own
  # MpFloat on all the host's cores, CG on poisson3d:N (default 200), one lease; every solve's
  # iterations and true residual printed, to show the three give the same bits.
  n=${2:-200}
  shift 2 || shift $#
  run() { solve_poisson "$n" "$@"; }
  echo "Card: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); host: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
  echo
  echo "| bits | GPU mp s/it | CPU own mp s/it | CPU MPFR s/it | MPFR / GPU | MPFR / own CPU | iterations, true residual (GPU; own CPU; MPFR) |"
  echo "|---:|---:|---:|---:|---:|---:|---|"
  for bits in "${@:-256}"; do
    read -r g _ _ <<< "$(run cuda "mp:$bits" 10)"
    read -r _ gi gr <<< "$(run cuda "mp:$bits" 3)"
    read -r c ci cr <<< "$(run cpu "mp:$bits" 3)"
    read -r m mi mr <<< "$(run cpu "mp-mpfr:$bits" 3)"
    python3 -c "g,c,m=$g,$c,$m; print(f'| $bits | {g:.3e} | {c:.3e} | {m:.3e} | {m/g:.0f} | {m/c:.2f} | $gi $gr; $ci $cr; $mi $mr |')"
  done
  exit
fi
n=${1:-200}
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
per_iteration() { solve_poisson "$n" "$@" | cut -d' ' -f1; }
echo "# mp:<bits> on the GPU: CG on poisson3d:$n"
echo
echo "- **Card**: $card; CPU backend: the same host's $(nproc) cores"
echo "- **Command**: \`bash .gpu/mp.sh $n\` (benches/gpu/mp.sh), tol 1e-300, a fixed number of iterations"
echo
echo "| precision | GPU s/it | GPU / GPU dd | CPU s/it | CPU / GPU |"
echo "|---|---:|---:|---:|---:|"
dd=$(per_iteration cuda dd 50)
echo "| dd | $dd | 1.00 | | |"
for bits in 128 256 512 1024; do
  g=$(per_iteration cuda "mp:$bits" 10)
  c=$(per_iteration cpu "mp:$bits" 2)
  python3 -c "g,c,d=$g,$c,$dd; print(f'| mp:$bits | {g:.3e} | {g/d:.1f} | {c:.3e} | {c/g:.1f} |')"
done
