#!/usr/bin/env python3
"""Independent parity check for ecd objects: recomputes every parity block of an object from its
data blocks with a scalar GF(2^8) implementation (polynomial 0x11d) and the DOCA Cauchy matrix
a[j][i] = 1 / (i XOR (M + j)), or Vandermonde a[j][i] = (i + 1)^j, and compares it with the
stored parity exported by `ecctl block get`. Exits 1 and names the first mismatch.

Usage: parity_check.py ECTL ADDR NAME [NAME...]
"""
import json
import os
import subprocess
import sys
import tempfile

EXP = [0] * 512
LOG = [0] * 256
x = 1
for i in range(255):
    EXP[i] = x
    LOG[x] = i
    x <<= 1
    if x & 0x100:
        x ^= 0x11D
for i in range(255, 512):
    EXP[i] = EXP[i - 255]


def mul(a, b):
    if a == 0 or b == 0:
        return 0
    return EXP[LOG[a] + LOG[b]]


def inv(a):
    return EXP[255 - LOG[a]]


def power(a, n):
    r = 1
    for _ in range(n):
        r = mul(r, a)
    return r


def coefficient(matrix, m, i, j):
    if matrix == "MATRIX_TYPE_VANDERMONDE":
        return power(i + 1, j)
    return inv(i ^ (m + j))


def ecctl(ectl, addr, *args):
    return subprocess.run([ectl, "--addr", addr, *args], check=True, capture_output=True).stdout


def main():
    ectl, addr, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    tables = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            info = json.loads(ecctl(ectl, addr, "--json", "stat", name))["object"]
            m, k = int(info["data_blocks"]), int(info["parity_blocks"])
            matrix = info.get("matrix", "MATRIX_TYPE_CAUCHY")
            for stripe in range(int(info.get("stripe_count", 0))):
                blocks = []
                for index in range(m + k):
                    path = os.path.join(tmp, f"b{index}")
                    ecctl(ectl, addr, "block", "get", name, "--stripe", str(stripe), "--index",
                          str(index), "-o", path)
                    with open(path, "rb") as f:
                        blocks.append(f.read())
                for j in range(k):
                    want = bytearray(len(blocks[0]))
                    for i in range(m):
                        c = coefficient(matrix, m, i, j)
                        key = c
                        if key not in tables:
                            tables[key] = bytes(mul(c, v) for v in range(256))
                        t = tables[key]
                        data = blocks[i]
                        for p in range(len(want)):
                            want[p] ^= t[data[p]]
                    if bytes(want) != blocks[m + j]:
                        print(f"parity mismatch: {name} stripe {stripe} parity {j}")
                        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
