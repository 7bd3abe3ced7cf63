#!/usr/bin/env python3
"""Random preads of a file compared with a local copy.

usage: pread_check.py MOUNTED_FILE LOCAL_COPY COUNT SEED
Prints the seed so a failure can be replayed; exits 1 on the first mismatch.
"""
import os
import random
import sys

path, ref, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
size = os.path.getsize(ref)
fd, rfd = os.open(path, os.O_RDONLY), os.open(ref, os.O_RDONLY)
for i in range(count):
    off = rng.randrange(0, size + 4096)
    n = rng.choice([1, 17, 4096, 65536, 131072, 1 << 20, 3 << 20])
    got, want = os.pread(fd, n, off), os.pread(rfd, n, off)
    if got != want:
        print(f"mismatch seed={seed} i={i} off={off} len={n}: "
              f"got {len(got)} bytes, want {len(want)}")
        sys.exit(1)
print(f"{count} preads ok (seed {seed})")
