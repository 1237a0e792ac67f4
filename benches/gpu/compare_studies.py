#!/usr/bin/env python3
"""Compare two studies' records run by run: iterations, stop reason and residual bits (the JSON
numbers are written shortest round-trip, so equal text is equal bits). Used by
benches/gpu/study.sh (benches/results/gpu-study.md)."""
import json
import sys


def records(d):
    out = {}
    with open(f"{d}/runs.jsonl") as f:
        for line in f:
            r = json.loads(line)
            k = r["key"]
            out[json.dumps(k, sort_keys=True)] = r
    return out


a, b = records(sys.argv[1]), records(sys.argv[2])
same, differ, unsolved = 0, [], 0
for key, ra in a.items():
    rb = b.get(key)
    if rb is None or ra.get("result") is None or rb.get("result") is None:
        unsolved += 1
        continue
    fields = ["iterations", "stop_reason", "recurrence_residual", "true_residual"]
    if all(ra["result"][f] == rb["result"][f] for f in fields):
        same += 1
    else:
        differ.append(f'{ra["name"]} {ra["key"]["precision"]} {ra["key"]["tol"]} {ra["key"]["precond"]}')
print(f"  records: {len(a)} / {len(b)}; equal iterations and residual bits: {same}; "
      f"different: {len(differ)}; without a result on one side: {unsolved}")
for d in differ[:20]:
    print("   differs:", d)


def size_class(rows):
    for bound in (200, 1000, 2000, 20000):
        if rows < bound:
            return f"< {bound:,} rows"
    return "larger"


# Where each study's time went: the runs' own times summed (with solves in flight they overlap,
# and each includes the others' share of the device), by size, preconditioner and method.
for name, study in (("first", a), ("second", b)):
    kinds = {}
    for r in study.values():
        res = r.get("result")
        if res is None:
            continue
        kind = (size_class(r["matrix"]["rows"]), r["key"]["precond"], res["method"])
        seconds, iterations = kinds.get(kind, (0.0, 0))
        kinds[kind] = (seconds + res["total_time"], iterations + res["iterations"])
    total = sum(s for s, _ in kinds.values())
    print(f"  {name} study: runs' times summed {total:.1f} s")
    for kind, (seconds, iterations) in sorted(kinds.items(), key=lambda kv: -kv[1][0]):
        print(f"    {' '.join(kind):<32} {seconds:8.1f} s  {iterations:>9,} iterations")


# What bounds the second study's wall time: its longest runs (with solves in flight the study
# lasts about as long as they do), each beside the same run in the first study.
def per_iteration(res, field):
    return (res.get(field) or 0.0) / max(1, res["iterations"]) * 1e6


longest = sorted((r for r in b.values() if r.get("result")), key=lambda r: -r["result"]["total_time"])
print("  second study's longest runs (us an iteration: all / of it the preconditioner; first study's):")
for r in longest[:8]:
    res, k = r["result"], r["key"]
    first = a.get(json.dumps(k, sort_keys=True), {}).get("result")
    theirs = f"{per_iteration(first, 'iteration_time'):.0f}" if first else "-"
    print(f"    {r['name']:<14} {k['precision']:<4} {k['tol']:g} {k['precond']:<5} {res['method']:<8} "
          f"{res['total_time']:6.1f} s {res['iterations']:>6} it "
          f"{per_iteration(res, 'iteration_time'):7.0f} / {per_iteration(res, 'precond_time'):5.0f} us; "
          f"{theirs} us")
