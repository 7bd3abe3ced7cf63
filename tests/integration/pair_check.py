#!/usr/bin/env python3
"""Random reads of two files in turn, each compared with its local copy:
one READ-byte read at a random place in each BLOCK-byte block of each
file, the blocks in a random order, a read of one file then one of the
other. No block is read twice, so no read is served by the kernel's
cache: every one reaches the daemon, the two files' in turn.

usage: pair_check.py MOUNTED_A LOCAL_A MOUNTED_B LOCAL_B SEED [BLOCK [READ]]
Exits 1 on the first mismatch, naming the seed, the file and the offset.
"""
import os
import random
import sys

pairs = [(sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])]
seed = int(sys.argv[5])
bs = int(sys.argv[6]) if len(sys.argv) > 6 else 2 << 20
rs = int(sys.argv[7]) if len(sys.argv) > 7 else 256 << 10
rng = random.Random(seed)
files = []
for path, ref in pairs:
    size = os.path.getsize(ref)
    offs = [b * bs + rng.randrange(0, bs - rs + 1, 4096) for b in range(size // bs)]
    rng.shuffle(offs)
    files.append((path, os.open(path, os.O_RDONLY), os.open(ref, os.O_RDONLY), offs))
n = 0
for i in range(max(len(f[3]) for f in files)):
    for path, fd, rfd, offs in files:
        if i < len(offs):
            if os.pread(fd, rs, offs[i]) != os.pread(rfd, rs, offs[i]):
                sys.exit(f"mismatch seed={seed} {path} at {offs[i]}")
            n += 1
print(f"{n} random reads of {rs} bytes of two files in turn ok (seed {seed})")
