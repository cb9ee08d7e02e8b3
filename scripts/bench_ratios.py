#!/usr/bin/env python3
"""Reads ec_bench JSON and prints GB/s (data in) with engine/raw and 2-worker/1-worker ratios."""
import json
import sys

runs = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]}


def gbps(name):
    b = runs.get(name + "/real_time")
    return b["bytes_per_second"] / 1e9 if b else None


print("| shape | block | raw ISA-L create GB/s | codec, same thread | engine 1 worker | engine/raw | engine 2 workers | 2w/1w | kept busy: 1 worker | busy/raw | kept busy: 2 workers | busy 2w/1w |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for m, k in [(4, 2), (8, 3), (10, 4), (12, 4)]:
    for length in [65536, 1048576]:
        raw = gbps(f"BM_CreateRawIsal/{m}/{k}/{length}")
        one = gbps(f"BM_CreateEngine/{m}/{k}/{length}/1")
        two = gbps(f"BM_CreateEngine/{m}/{k}/{length}/2")
        codec = gbps(f"BM_CreateCodec/{m}/{k}/{length}")
        s1 = gbps(f"BM_CreateEngineStreaming/{m}/{k}/{length}/1")
        s2 = gbps(f"BM_CreateEngineStreaming/{m}/{k}/{length}/2")
        if None in (raw, one, two, codec, s1, s2):
            continue
        print(f"| {m}+{k} | {length // 1024} KiB | {raw:.2f} | {codec:.2f} | {one:.2f} | {one / raw:.2f} | "
              f"{two:.2f} | {two / one:.2f} | {s1:.2f} | {s1 / raw:.2f} | {s2:.2f} | {s2 / s1:.2f} |")
print()
print("| shape | block | erasures | raw ISA-L recover GB/s | engine 1 worker | ratio | kept busy: 1 worker | busy/raw |")
print("|---|---|---|---|---|---|---|---|")
for m, k in [(4, 2), (8, 3), (10, 4), (12, 4)]:
    for length in [65536, 1048576]:
        for e in range(1, k + 1):
            raw = gbps(f"BM_RecoverRawIsal/{m}/{k}/{length}/{e}")
            eng = gbps(f"BM_RecoverEngine/{m}/{k}/{length}/{e}")
            busy = gbps(f"BM_RecoverEngineStreaming/{m}/{k}/{length}/{e}")
            if None in (raw, eng, busy):
                continue
            print(f"| {m}+{k} | {length // 1024} KiB | {e} | {raw:.2f} | {eng:.2f} | {eng / raw:.2f} | "
                  f"{busy:.2f} | {busy / raw:.2f} |")
print()
print("| shape | block | update of one block, GB/s of the changed block |")
print("|---|---|---|")
for m, k in [(4, 2), (8, 3), (10, 4), (12, 4)]:
    for length in [65536, 1048576]:
        u = gbps(f"BM_UpdateOneBlockEngine/{m}/{k}/{length}")
        if u is not None:
            print(f"| {m}+{k} | {length // 1024} KiB | {u:.2f} |")
