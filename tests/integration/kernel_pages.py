#!/usr/bin/env python3
"""The kernel's page cache and this mount's own writes (test_fs_write.sh).

  kernel_pages.py FILE STATS

A reader caches FILE whole; a second later a second descriptor writes
one block of it; the reader reads it whole again, past the end (which makes
the kernel ask getattr). The bytes must be the new ones, and the kernel
must not drop the file's pages: fewer than half of its 1 MiB reads may
reach the daemon (the folios around the written block may be read again:
1 to 3 reads were seen on Linux 6.18 with the daemon under ASan; a drop
reads it all again). The write moved the file's mtime (stored in whole
seconds: hence the second), and a kernel that drops its pages when a
getattr shows another mtime (FUSE's auto_inval_data) drops them while
writes are on their way to the daemon too, and a read then caches the old
bytes for good. After the writer's close (the upload), a new open keeps
the pages as well: they are what was written. Exit 0, or 1 with a
reason.
"""
import os
import sys
import time

path, stats = sys.argv[1:3]
BLK = 4096


def daemon_reads():
    """fs.reads, by one read of the stats file (itself one read)."""
    fd = os.open(stats, os.O_RDONLY)
    try:
        text = os.read(fd, 1 << 20).decode()
    finally:
        os.close(fd)
    for line in text.splitlines():
        k, v = line.split()[:2]
        if k == 'fs.reads':
            return int(v)
    sys.exit('no fs.reads in ' + stats)


def whole(fd):
    out, off = [], 0
    while True:
        b = os.pread(fd, 1 << 20, off)
        if not b:
            return b''.join(out)
        out.append(b)
        off += len(b)


def reads_during(fn):
    """fn's reads that reached the daemon."""
    a = daemon_reads()
    fn()
    return daemon_reads() - a - 1


r = os.open(path, os.O_RDONLY)
firsts = []
n0 = reads_during(lambda: firsts.append(whole(r)))
first = firsts[0]
want = first[:2 * BLK] + b'k' * BLK + first[3 * BLK:]
time.sleep(1.1)  # the daemon's mtime moves on with the write
w = os.open(path, os.O_RDWR)
os.pwrite(w, b'k' * BLK, 2 * BLK)
got = []
n = reads_during(lambda: got.append(whole(r)))
if got[0] != want:
    sys.exit('the reader did not read the block just written')
full = (len(first) + (1 << 20) - 1) >> 20  # reads of a whole re-read
if n >= full / 2:
    sys.exit('%d reads of %d reached the daemon after our write: the kernel '
             'dropped its pages (the first pass: %d)' % (n, full, n0))
os.close(w)  # the upload
os.close(r)
r = os.open(path, os.O_RDONLY)
got = []
n = reads_during(lambda: got.append(whole(r)))
os.close(r)
if got[0] != want:
    sys.exit('after the upload: not the bytes written')
if n >= full / 2:
    sys.exit('after the upload: %d reads of %d reached the daemon: the kernel '
             'dropped its pages' % (n, full))
