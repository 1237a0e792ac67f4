"""CuPy's peer timings for `solver bench --suite` (embedded in the binary, run as `python3 -c`):
reads `path<TAB>method<TAB>iterations` lines on stdin, prints `path<TAB>seconds an iteration`
for each matrix CuPy's `cg` or `bicgstab` (cupyx.scipy.sparse.linalg) ran, b = ones, the
tolerance out of reach so that every solve does `iterations` steps; median of 3 after a warm-up.
Its figures are the CuPy column of benches/results/gpu-suite.md (benches/gpu/suite.sh).
"""
import sys
import time

import cupy as cp
import cupyx.scipy.sparse as csp
import cupyx.scipy.sparse.linalg as cla
import scipy.io


def main():
    for line in sys.stdin:
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 3:
            continue
        path, method, iterations = parts[0], parts[1], int(parts[2])
        solver = getattr(cla, method, None)
        if solver is None or iterations < 1:
            continue
        try:
            a = csp.csr_matrix(scipy.io.mmread(path).tocsr().astype("float64"))
            b = cp.ones(a.shape[0])

            def run():
                solver(a, b, rtol=1e-300, atol=0.0, maxiter=iterations)
                cp.cuda.Device().synchronize()

            run()
            times = []
            for _ in range(3):
                start = time.perf_counter()
                run()
                times.append(time.perf_counter() - start)
            times.sort()
            print(f"{path}\t{times[1] / iterations:.9e}", flush=True)
        except Exception as e:  # one matrix CuPy cannot take does not end the others
            print(f"{path}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
