#!/usr/bin/env python3
"""Reads ec_bench JSON and prints GB/s (data in) with engine/raw and 2-worker/1-worker ratios.

Usage: bench_ratios.py OUT.json [--median]

With --benchmark_repetitions, each cell is the best (highest GB/s) of the repetitions: on a
shared machine interference only ever slows a run down, so the best of N interleaved runs is
the closest to what the code costs, and a row and its raw ISA-L twin are treated alike.
--median prints medians instead.

The paired rows (BM_CreatePaired, BM_RecoverPaired) measure raw ISA-L and the engine interleaved
in time inside one benchmark (create: raw ISA-L on one and two threads, the engine on one and two
workers waiting for each batch, and on one and two kept busy) and report their GB/s and ratios
as counters; their tables show the
median of each counter across repetitions, whatever the flag."""
import json
import statistics
import sys

pick = statistics.median if "--median" in sys.argv[2:] else max
samples = {}
entries = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("run_type") == "aggregate":
        continue
    samples.setdefault(b["run_name"], []).append(b["bytes_per_second"] / 1e9)
    entries.setdefault(b["run_name"], []).append(b)


def gbps(name):
    values = samples.get(name + "/real_time")
    return pick(values) if values else None


def counters(name, keys):
    """The median across repetitions of each of a paired row's counters `keys`, or None."""
    runs = entries.get(name + "/real_time")
    if not runs or any(key not in run for run in runs for key in keys):
        return None
    return [statistics.median(run[key] for run in runs) for key in keys]


def table(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


SHAPES = [(4, 2), (8, 3), (10, 4), (12, 4)]
LENGTHS = [65536, 1048576]

rows = []
for m, k in SHAPES:
    for length in LENGTHS:
        p = f"{m}/{k}/{length}"
        raw = gbps(f"BM_CreateRawIsal/{p}")
        raw2 = gbps(f"BM_CreateRawIsal2Threads/{p}")
        run = gbps(f"BM_CreateEngineRun/{p}")
        one = gbps(f"BM_CreateEngine/{p}/1/0")
        two = gbps(f"BM_CreateEngine/{p}/2/0")
        helped = gbps(f"BM_CreateEngine/{p}/1/1")
        s1 = gbps(f"BM_CreateEngineStreaming/{p}/1/0")
        s2 = gbps(f"BM_CreateEngineStreaming/{p}/2/0")
        if None in (raw, raw2, run, one, two, helped, s1, s2):
            continue
        rows.append([f"{m}+{k}", f"{length // 1024} KiB", f"{raw:.2f}", f"{raw2 / raw:.2f}",
                     f"{run:.2f}", f"{run / raw:.2f}", f"{one:.2f}", f"{one / raw:.2f}",
                     f"{two:.2f}", f"{two / one:.2f}", f"{helped / one:.2f}",
                     f"{s1 / raw:.2f}", f"{s2 / s1:.2f}"])
table(["shape", "block", "raw ISA-L create GB/s", "raw 2 threads / raw", "engine Run (caller)",
       "Run/raw", "engine 1 worker", "1w/raw", "engine 2 workers", "2w/1w",
       "1 worker + caller / 1w", "kept busy 1w/raw", "kept busy 2w/1w"], rows)

rows = []
for m, k in SHAPES:
    for length in LENGTHS:
        for e in range(1, k + 1):
            p = f"{m}/{k}/{length}/{e}"
            raw = gbps(f"BM_RecoverRawIsal/{p}")
            run = gbps(f"BM_RecoverEngineRun/{p}")
            eng = gbps(f"BM_RecoverEngine/{p}")
            busy = gbps(f"BM_RecoverEngineStreaming/{p}")
            if None in (raw, run, eng, busy):
                continue
            rows.append([f"{m}+{k}", f"{length // 1024} KiB", str(e), f"{raw:.2f}", f"{run:.2f}",
                         f"{run / raw:.2f}", f"{eng:.2f}", f"{eng / raw:.2f}", f"{busy / raw:.2f}"])
table(["shape", "block", "erasures", "raw ISA-L recover GB/s", "engine Run (caller)", "Run/raw",
       "engine 1 worker", "1w/raw", "kept busy 1w/raw"], rows)

rows = []
for m, k in SHAPES:
    for length in LENGTHS:
        raw = gbps(f"BM_UpdateOneBlockRawIsal/{m}/{k}/{length}")
        run = gbps(f"BM_UpdateOneBlockEngineRun/{m}/{k}/{length}")
        if None in (raw, run):
            continue
        rows.append([f"{m}+{k}", f"{length // 1024} KiB", f"{raw:.2f}", f"{run:.2f}",
                     f"{run / raw:.2f}"])
table(["shape", "block", "raw ISA-L update of one block, GB/s of the changed block",
       "engine Run (caller)", "Run/raw"], rows)

rows = []
for m, k in SHAPES:
    for length in LENGTHS:
        c = counters(f"BM_CreatePaired/{m}/{k}/{length}",
                     ["raw_GBps", "raw2_over_raw", "w1_GBps", "w1_over_raw", "w2_GBps",
                      "w2_over_w1", "w1s_over_raw", "w2s_over_w1s"])
        if c is None:
            continue
        rows.append([f"{m}+{k}", f"{length // 1024} KiB"] + [f"{v:.2f}" for v in c])
table(["shape", "block", "paired: raw ISA-L create GB/s", "raw on 2 threads / raw",
       "engine 1 worker", "1w/raw", "engine 2 workers", "2w/1w", "kept busy: 1w/raw",
       "kept busy: 2w/1w"], rows)

rows = []
for m, k in SHAPES:
    for length in LENGTHS:
        for e in range(1, k + 1):
            c = counters(f"BM_RecoverPaired/{m}/{k}/{length}/{e}",
                         ["raw_GBps", "w1_GBps", "w1_over_raw"])
            if c is None:
                continue
            rows.append([f"{m}+{k}", f"{length // 1024} KiB", str(e)] + [f"{v:.2f}" for v in c])
table(["shape", "block", "erasures", "paired: raw ISA-L recover GB/s", "engine 1 worker",
       "1w/raw"], rows)
