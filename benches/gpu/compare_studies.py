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
