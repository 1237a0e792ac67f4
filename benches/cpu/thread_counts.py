#!/usr/bin/env python3
"""Time per iteration at every thread count from 1 to the core count, for one or more builds.

    python3 benches/cpu/thread_counts.py MATRIX_DIR BUILD... > table.md

Each case (below) is solved in f64 and dd with `--tol 1e-300` for its iteration count, at 1, 2,
4, ... threads up to the host's cores, REPS times, builds and thread counts alternated; the
table gives the median of each, and the ratio of the best count's time to one thread's. A
build is NAME=PATH (a `solver` binary). Issue #27 item 4: more cores never slower.
"""
import json
import os
import statistics
import subprocess
import sys

REPS = 3
CASES = [("fs_183_4.mtx", 2000), ("1138_bus.mtx", 2000), ("bcsstk13.mtx", 1000),
         ("bcsstk16.mtx", 1000), ("poisson3d:30", 300), ("poisson3d:100", 60)]


def solve(binary, matrix, precision, iters, threads):
    out = subprocess.run(
        [binary, "solve", matrix, "--tol", "1e-300", "--max-iter", str(iters), "--precision",
         precision, "--backend", "cpu", "--threads", str(threads), "--format", "json", "-q"],
        capture_output=True, text=True)
    run = json.loads(out.stdout)["runs"][0]
    return run["time_per_iteration"], (run["iterations"], run["true_residual"])


def main():
    folder, builds = sys.argv[1], [b.split("=", 1) for b in sys.argv[2:]]
    cores = os.cpu_count()
    counts = [1]
    while counts[-1] * 2 <= cores:
        counts.append(counts[-1] * 2)
    if counts[-1] != cores:
        counts.append(cores)
    head = " | ".join(f"{name} {t}" for name, _ in builds for t in counts)
    print(f"{cores} cores. Median us an iteration of {REPS} runs; 'best/1': the fastest count "
          "against one thread.\n")
    print(f"| case | precision | {head} | " + " | ".join(f"{n} best/1" for n, _ in builds) +
          " | same bits |")
    print("|---|---|" + "---:|" * (len(builds) * (len(counts) + 1)) + "---|")
    for name, iters in CASES:
        matrix = name if ":" in name else os.path.join(folder, name)
        for precision in ("f64", "dd"):
            times = {(b, t): [] for b, _ in builds for t in counts}
            bits = set()
            for _ in range(REPS):
                for b, path in builds:
                    for t in counts:
                        seconds, result = solve(path, matrix, precision, iters, t)
                        times[(b, t)].append(seconds * 1e6)
                        bits.add(result)
            med = {k: statistics.median(v) for k, v in times.items()}
            cells = " | ".join(f"{med[(b, t)]:.1f}" for b, _ in builds for t in counts)
            best = " | ".join(f"{min(med[(b, t)] for t in counts) / med[(b, 1)]:.2f}"
                              for b, _ in builds)
            same = "yes" if len(bits) == 1 else "**no**"
            print(f"| {name.removesuffix('.mtx')} | {precision} | {cells} | {best} | {same} |",
                  flush=True)


if __name__ == "__main__":
    main()
