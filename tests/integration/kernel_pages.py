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

The reader's pages are locked in memory (a shared mapping, mlock) from its
first pass to the end: this machine's kernel reclaims cold pages on its own
(DAMON's pageout scheme, kdamond), with no memory pressure, and evicted
the file between the passes now and then; a lock keeps reclaim off them,
while a drop (invalidate_inode_pages2, which an open without keep_cache
makes) still removes them.
"""
import ctypes
import os
import sys
import time

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                       ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def lock_pages(fd, size):
    """The file's pages mapped and locked (reclaim keeps off); the map."""
    addr = _libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
    if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit('mmap: ' + os.strerror(ctypes.get_errno()))
    if _libc.mlock(addr, size):
        sys.exit('mlock: ' + os.strerror(ctypes.get_errno()))
    return addr

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
locked = lock_pages(r, len(first))
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
os.close(r)  # (the mapping keeps the file open, and its pages locked)
r = os.open(path, os.O_RDONLY)
got = []
n = reads_during(lambda: got.append(whole(r)))
os.close(r)
if got[0] != want:
    sys.exit('after the upload: not the bytes written')
if n >= full / 2:
    sys.exit('after the upload: %d reads of %d reached the daemon: the kernel '
             'dropped its pages' % (n, full))
_libc.munmap(locked, len(first))
