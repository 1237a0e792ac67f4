"""SciPy's sparse triangular solves on our ILU(0) factors: the CPU peer of our L+U solve.

For benches/results/cpu.md; `bash benches/cpu/cpu.sh peer` runs it after
`cargo bench --bench ilu0_peer`. Reads OUT_DIR/{L,U,r,z}.mtx written by that bench, times
scipy.sparse.linalg.spsolve_triangular for L (unit diagonal) then U (median of 5 after one
warm-up), and checks SciPy's answer against ours (relative max difference).
Usage: python3 benches/cpu/scipy_trisolve.py OUT_DIR [ours_ms]
"""
import sys
import time

import numpy as np
import scipy
import scipy.io
import scipy.sparse
from scipy.sparse.linalg import spsolve_triangular

out = sys.argv[1]
L = scipy.sparse.csr_matrix(scipy.io.mmread(f"{out}/L.mtx"))
U = scipy.sparse.csr_matrix(scipy.io.mmread(f"{out}/U.mtx"))
r = np.asarray(scipy.io.mmread(f"{out}/r.mtx")).ravel()
ours = np.asarray(scipy.io.mmread(f"{out}/z.mtx")).ravel()


def apply():
    y = spsolve_triangular(L, r, lower=True, unit_diagonal=True)
    return spsolve_triangular(U, y, lower=False)


z = apply()
times = []
for _ in range(5):
    t0 = time.perf_counter()
    apply()
    times.append(time.perf_counter() - t0)
ms = 1e3 * float(np.median(times))
diff = float(np.max(np.abs(z - ours)) / np.max(np.abs(ours)))
print(f"scipy {scipy.__version__} spsolve_triangular L+U: {ms:.3f} ms "
      f"(max relative difference from ours {diff:.1e})")
if len(sys.argv) > 2:
    print(f"ours / scipy speedup: {ms / float(sys.argv[2]):.1f}x")
