#!/usr/bin/env python3
"""Dense random readers and a writer of one file on one mount (test_fs_write):
the readers' whole blocks go to the kernel's page cache on the daemon's
store thread while the writer writes, so a store of older bytes may meet
the writer's pages; after the writer's last close, a new open must read
exactly what was written. A stress check: in three 8 s runs it did not
fail with fsx_inode_kernel_store's rules taken out (the window is narrow);
the rules themselves are test_fsx_inode's.

usage: dense_write_race.py FILE MODEL SECONDS SEED
FILE on the mount and MODEL (a local copy) start equal; MODEL gets every
write too. Exits 1 naming the first block that differs.
"""
import multiprocessing as mp
import os
import random
import sys
import time

path, model, secs, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
RS, BLK = 256 << 10, 4096
size = os.path.getsize(model)


def reader(stop, k):
    rng = random.Random(seed * 31 + k)
    while not stop.value:
        fd = os.open(path, os.O_RDONLY)
        slots = list(range(size // RS))
        rng.shuffle(slots)
        for s in slots:
            if stop.value:
                break
            os.pread(fd, RS, s * RS)
        os.close(fd)


stop = mp.Value('i', 0, lock=False)
ps = [mp.Process(target=reader, args=(stop, k)) for k in range(2)]
for p in ps:
    p.start()
rng = random.Random(seed)
end = time.monotonic() + secs
mfd = os.open(model, os.O_RDWR)
writes = 0
while time.monotonic() < end:
    fd = os.open(path, os.O_RDWR)
    for _ in range(rng.randint(1, 8)):
        off = rng.randrange(size // BLK) * BLK
        data = rng.randbytes(BLK)
        os.pwrite(fd, data, off)
        os.pwrite(mfd, data, off)
        writes += 1
    os.close(fd)
    time.sleep(rng.random() * 0.3)
stop.value = 1
for p in ps:
    p.join()
with open(path, 'rb') as f:
    got = f.read()
with open(model, 'rb') as f:
    want = f.read()
if got != want:
    bad = next(i for i in range(0, size, BLK) if got[i:i + BLK] != want[i:i + BLK])
    sys.exit(f"seed {seed}: block at {bad} differs after {writes} writes")
print(f"{writes} writes among dense readers, the file as written (seed {seed})")
