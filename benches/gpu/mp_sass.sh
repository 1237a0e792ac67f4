#!/usr/bin/env bash
# The machine code of the mp kernels, counted without a GPU (the counts `benches/results/mp-gpu.md`
# quotes before a lease): NVRTC 13 (the pip wheel `.ci/run` installs), then ptxas and cuobjdump
# (with nvdisasm) from NVIDIA's pip wheels, for sm_90 (ARCH to change it). From the repository root:
#   bash benches/gpu/mp_sass.sh ops [LIMBS BITS]   SASS instructions of one mp_mul, mp_mul_f64 and
#                                                 mp_add a kernel (default 4 limbs, 256 bits)
#   bash benches/gpu/mp_sass.sh module BITS PIECE  registers, stack frame and spill bytes of every
#                                                 kernel of mp{BITS}'s module PIECE (0: dots and
#                                                 CG's steps, 1: BiCGStab's, 2: the SpMVs)
# A static count: loops the compiler keeps are counted once, rare paths as often as hot ones.
set -euo pipefail
root=$PWD
tools=$root/target/sass-tools
arch=${ARCH:-sm_90}
fetch() { # wheel-name directory
  if [ ! -d "$2/nvidia" ]; then
    mkdir -p "$2"
    python3 -m pip download --quiet --no-deps --dest "$2" "$1==13.*"
    python3 -m zipfile -e "$2"/*.whl "$2"
  fi
}
fetch nvidia-cuda-nvrtc "$root/target/nvrtc-wheel"
fetch nvidia-cuda-nvcc "$tools/nvcc"
fetch nvidia-cuda-cuobjdump "$tools/cuobjdump"
fetch nvidia-cuda-nvdisasm "$tools/nvdisasm"
chmod +x "$tools"/*/nvidia/cu13/bin/* 2>/dev/null || true
ptxas=$tools/nvcc/nvidia/cu13/bin/ptxas
cuobjdump=$tools/cuobjdump/nvidia/cu13/bin/cuobjdump
export PATH=$tools/nvdisasm/nvidia/cu13/bin:$PATH  # cuobjdump -sass runs nvdisasm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# source.cu -> out.ptx with the options src/backend/cuda/device.rs gives NVRTC
nvrtc() {
  python3 - "$1" "$2" "$root/target/nvrtc-wheel" "compute_${arch#sm_}" <<'EOF'
import ctypes, glob, sys
lib = ctypes.CDLL(glob.glob(sys.argv[3] + "/nvidia/cu13/lib/libnvrtc.so*")[0])
prog = ctypes.c_void_p()
assert lib.nvrtcCreateProgram(ctypes.byref(prog), open(sys.argv[1], "rb").read(), b"mp.cu", 0, None, None) == 0
opts = [f"--gpu-architecture={sys.argv[4]}".encode(), b"--fmad=false", b"--ftz=false", b"--prec-div=true", b"--prec-sqrt=true"]
rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
n = ctypes.c_size_t()
if rc:
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n)); log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log); sys.exit(log.value.decode())
lib.nvrtcGetPTXSize(prog, ctypes.byref(n)); ptx = ctypes.create_string_buffer(n.value)
lib.nvrtcGetPTX(prog, ptx); open(sys.argv[2], "wb").write(ptx.value)
EOF
}

case "${1:-}" in
ops)
  limbs=${2:-4} bits=${3:-256}
  { printf '#define MP_LIMBS %s\n#define MP_BITS %s\n' "$limbs" "$bits"
    cat kernels/common/mp.cuh
    for op in "mul mp_mul(x, y)" "mul_f64 mp_mul_f64(x, __longlong_as_double(b[i]))" "add mp_add(x, y)"; do
      printf 'extern "C" __global__ void k_%s(const mp_u64* a, const mp_u64* b, mp_u64* o, int n) {\n' "${op%% *}"
      printf '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n'
      printf '  mp_t x = mp_unpack(a + i, n, a[MP_LIMBS * n + i]), y = mp_unpack(b + i, n, b[MP_LIMBS * n + i]);\n'
      printf '  mp_pack(%s, o + i, n, o + MP_LIMBS * n + i);\n}\n' "${op#* }"
    done; } > "$work/ops.cu"
  nvrtc "$work/ops.cu" "$work/ops.ptx"
  "$ptxas" -arch="$arch" -o "$work/ops.cubin" "$work/ops.ptx"
  "$cuobjdump" -sass "$work/ops.cubin" |
    awk '/Function :/ {k = $3} /^ +\/\*[0-9a-f]+\*\// && k ~ /^k_/ {n[k]++} END {for (k in n) print k, n[k]}' | sort
  ;;
module)
  bits=$2 piece=$3
  # the limb counts and the source's parts read from the code that defines them
  # (precision/mpfloat's LIMB_COUNTS; device.rs's COMMON, then MP_SOURCE, then the vector sources)
  counts=$(sed -n 's/^pub const LIMB_COUNTS: \[usize; [0-9]*\] = \[\(.*\)\];/\1/p' src/precision/mpfloat/mod.rs)
  limbs=$(python3 -c "print(next(l for l in ($counts,) if 64 * l >= $bits))")
  common=$(sed -n '/^const COMMON/,/^];/p' src/backend/cuda/device.rs | grep -o 'kernels/common/[a-z_]*\.cuh')
  { for f in $common; do cat "$f"; echo; done
    printf '#define MP_LIMBS %s\n#define MP_BITS %s\n#define MP_SUFFIX mp%s\n#define MP_PIECE %s\n' \
      "$limbs" "$bits" "$bits" "$piece"
    cat kernels/common/mp.cuh; echo; cat kernels/xprec.cu; echo; cat kernels/xprec_mp.cu; } > "$work/module.cu"
  nvrtc "$work/module.cu" "$work/module.ptx"
  "$ptxas" -arch="$arch" -v -o "$work/module.cubin" "$work/module.ptx" 2>&1 |
    python3 -c '
import re, sys
kernel = props = None
for line in sys.stdin:
    m = re.search(r"Compiling entry function .(\w+).", line)
    if m: kernel = m.group(1)
    m = re.search(r"Function properties for (\w+)", line)
    if m: props = m.group(1)
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and kernel and props == kernel: frame = m.groups()
    m = re.search(r"Used (\d+) registers", line)
    if m and kernel:
        print(f"{kernel}: {m.group(1)} registers, stack frame {frame[0]} B, spills {frame[1]}/{frame[2]} B")
        kernel = None'
  ;;
*)
  sed -n '2,10p' "$0"
  exit 2
  ;;
esac
