"""Peer timings on the GPU with CuPy: cuSPARSE CSR SpMV and CuPy's double CG iteration on the
same 7-point Poisson matrix as `solver bench poisson3d:N` (6 on the diagonal, -1 for the six
neighbours, x fastest), for benches/results/h200.md. benches/gpu/h200.sh runs it on the device
in the same session as the bench:

    python3 cupy_peer.py 200 > cupy.json
"""
import json
import sys

import cupy as cp
import cupyx.scipy.sparse as csp
import cupyx.scipy.sparse.linalg as cla
import scipy.sparse as sp


def poisson3d(n):
    one = sp.identity(n, format="csr")
    lap = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n), format="csr")
    a = sp.kron(sp.kron(one, one), lap) + sp.kron(sp.kron(one, lap), one) + sp.kron(sp.kron(lap, one), one)
    a = a.tocsr()
    a.sort_indices()
    return a


def median_ms(f, reps=20, warmup=3):
    for _ in range(warmup):
        f()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        f()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    times.sort()
    return times[len(times) // 2]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    a = csp.csr_matrix(poisson3d(n))
    rows = a.shape[0]
    x = cp.random.default_rng(2).random(rows) - 0.5
    spmv_ms = median_ms(lambda: a @ x)
    b = cp.ones(rows)

    def cg_ms(iterations):
        # rtol far below reach: exactly `iterations` steps every time.
        return median_ms(lambda: cla.cg(a, b, rtol=1e-300, atol=0.0, maxiter=iterations), reps=5, warmup=1)

    short, long = cg_ms(50), cg_ms(150)
    print(json.dumps({
        "matrix": f"poisson3d:{n}",
        "rows": rows,
        "nnz": int(a.nnz),
        "cupy": cp.__version__,
        "cusparse_spmv_f64_ms": spmv_ms,
        "cupy_cg_f64_ms_per_iteration": (long - short) / 100.0,
    }, indent=2))


if __name__ == "__main__":
    main()
