#!/usr/bin/env python3
"""Dense random reads of a file compared with a local copy: every
READ-byte slot of the file read once, in a random order (fio's random map),
each compared; then the whole file once more in order (what the kernel was
handed must be the file's bytes too).

usage: dense_check.py MOUNTED_FILE LOCAL_COPY SEED [READ]
Exits 1 on the first mismatch, naming the seed and the offset.
"""
import os
import random
import sys

path, ref, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rs = int(sys.argv[4]) if len(sys.argv) > 4 else 256 << 10
size = os.path.getsize(ref)
slots = list(range((size + rs - 1) // rs))
random.Random(seed).shuffle(slots)
fd, rfd = os.open(path, os.O_RDONLY), os.open(ref, os.O_RDONLY)
for i, s in enumerate(slots):
    got, want = os.pread(fd, rs, s * rs), os.pread(rfd, rs, s * rs)
    if got != want:
        sys.exit(f"mismatch seed={seed} read {i} at {s * rs}: got {len(got)} bytes, "
                 f"want {len(want)}")
off = 0
while off < size:
    got, want = os.pread(fd, 1 << 20, off), os.pread(rfd, 1 << 20, off)
    if got != want:
        sys.exit(f"mismatch seed={seed} in the pass in order at {off}")
    off += len(want)
print(f"{len(slots)} random reads of {rs} bytes and one pass in order ok (seed {seed})")
