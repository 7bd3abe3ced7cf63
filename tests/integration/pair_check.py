#!/usr/bin/env python3
"""Random reads of two files in turn, each compared with its local copy:
COUNT random READ-byte slots of each file, each read once, a slot of one
file then a slot of the other. Two files read at random at once: no file
is read alone.

usage: pair_check.py MOUNTED_A LOCAL_A MOUNTED_B LOCAL_B SEED COUNT [READ]
Exits 1 on the first mismatch, naming the seed, the file and the offset.
"""
import os
import random
import sys

pairs = [(sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])]
seed, count = int(sys.argv[5]), int(sys.argv[6])
rs = int(sys.argv[7]) if len(sys.argv) > 7 else 256 << 10
rng = random.Random(seed)
files = []
for path, ref in pairs:
    size = os.path.getsize(ref)
    slots = list(range((size + rs - 1) // rs))
    rng.shuffle(slots)
    slots = slots[:count]
    files.append((path, os.open(path, os.O_RDONLY), os.open(ref, os.O_RDONLY), slots))
n = 0
for i in range(max(len(f[3]) for f in files)):
    for path, fd, rfd, slots in files:
        if i < len(slots):
            off = slots[i] * rs
            if os.pread(fd, rs, off) != os.pread(rfd, rs, off):
                sys.exit(f"mismatch seed={seed} {path} at {off}")
            n += 1
print(f"{n} random reads of {rs} bytes of two files in turn ok (seed {seed})")
