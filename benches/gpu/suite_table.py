#!/usr/bin/env python3
"""The README's and benches/results/gpu-suite.md's tables, drawn from `solver bench --suite`'s
JSON: python3 benches/gpu/suite_table.py benches/results/gpu-suite.json [gpu-suite-ilu0.json]"""
import json
import statistics
import sys


def us(t):
    return "-" if t is None else f"{t * 1e6:.1f}"


def main():
    rows = [r for path in sys.argv[1:] for r in json.load(open(path))]
    card = rows[0]["card"] if rows else "?"
    print(f"Card: {card}; CPU: the host's {rows[0]['cpu_threads']} threads.\n")
    print("| matrix | rows | nnz | precision | method | precond | GPU (us/it) | CPU (us/it) | CuPy (us/it) | auto |")
    print("|---|---:|---:|---|---|---|---:|---:|---:|---|")
    for r in rows:
        if r["rows"] >= 2000:
            print(f"| {r['matrix']} | {r['rows']} | {r['nnz']} | {r['precision']} | {r['method']} | "
                  f"{r['precond']} | {us(r['gpu_time_per_iteration'])} | "
                  f"{us(r['cpu_time_per_iteration'])} | {us(r['cupy_time_per_iteration'])} | {r['auto']} |")
    print()
    for precond in ("none", "ilu0"):
        part = [r for r in rows if r["precond"] == precond
                and r["gpu_time_per_iteration"] and r["cpu_time_per_iteration"]]
        if not part:
            continue
        timed = [r for r in part if r["iterations"] >= (100 if precond == "none" else 50)]
        gpu_wins = [r for r in timed if r["gpu_time_per_iteration"] <= r["cpu_time_per_iteration"]]
        large = [r for r in timed if r["rows"] >= 2000]
        large_gpu = [r for r in large if r["gpu_time_per_iteration"] <= r["cpu_time_per_iteration"]]

        def picked(r):
            return r["gpu_time_per_iteration"] if r["auto"] == "cuda" else r["cpu_time_per_iteration"]

        misses = [r for r in timed if picked(r) > 1.1 * min(r["gpu_time_per_iteration"], r["cpu_time_per_iteration"])]
        large_misses = [r for r in misses if r["rows"] >= 2000]
        cupy = [r["cupy_time_per_iteration"] / r["gpu_time_per_iteration"] for r in timed
                if r.get("cupy_time_per_iteration")]
        print(f"- precond {precond}: {len(timed)} solves of at least "
              f"{100 if precond == 'none' else 50} iterations; the GPU at least as fast as the CPU in "
              f"{len(gpu_wins)}, and in {len(large_gpu)} of the {len(large)} with 2,000 rows or more; "
              f"auto more than 10% slower than the faster backend in {len(misses)} "
              f"({len(large_misses)} with 2,000 rows or more)"
              + (f"; CuPy's iteration / ours: median {statistics.median(cupy):.1f}x over {len(cupy)} f64 solves"
                 if cupy else "") + ".")


if __name__ == "__main__":
    main()
