#!/usr/bin/env python3
"""The failover suite's workloads (test_fs_failover.sh): one kind of
application work on a mount, run until a stop file appears, every byte
checked, every error counted. Prints one JSON line: ops, errors, bad
(bytes not what was written), the first error, and (write) the files
whose close() succeeded.

  failover_work.py prep DIR N SIZE      N files DIR/fNNN of SIZE bytes
  failover_work.py seqread STOP DIR     read the files whole, in turn
  failover_work.py randread STOP DIR    64 KiB at random places
  failover_work.py write STOP DIR SIZE  new files DIR/wNNN of SIZE, closed
  failover_work.py list STOP DIR        list DIR, compare with its start
  failover_work.py rename STOP DIR      rename DIR's files to and fro
  failover_work.py check NAME SIZE      stdin holds file NAME's bytes
  failover_work.py read1 PATH           read PATH whole, check its bytes

File fNNN (or wNNN) holds blocks of 4 KiB: its name and the block's
number, then a fixed filler, so any range can be checked without a copy.
Each mode stops by itself after 300 s (a stop file never made).
"""
import json
import os
import random
import struct
import sys
import time

BLOCK = 4096
FILLER = bytes((i * 7 + 3) & 0xFF for i in range(BLOCK - 24))
LIMIT_S = 300


def block(name, j):
    return struct.pack("<16sQ", name.encode()[:16], j) + FILLER


def expected(name, off, length):
    """The bytes of file name at [off, off + length)."""
    first, last = off // BLOCK, (off + length - 1) // BLOCK
    data = b"".join(block(name, j) for j in range(first, last + 1))
    start = off - first * BLOCK
    return data[start:start + length]


def differ(got, want):
    """How got differs from want, in words."""
    if len(got) != len(want):
        return "%d bytes, not %d" % (len(got), len(want))
    i = next(i for i in range(len(got)) if got[i] != want[i])
    return "bytes differ from +%d" % i


class Tally:
    def __init__(self):
        self.ops = self.errors = self.bad = 0
        self.first = None
        self.closed = []
        self.wrongs = []

    def error(self, what):
        self.errors += 1
        self.first = self.first or what

    def wrong(self, what):
        self.bad += 1
        self.first = self.first or what
        if len(self.wrongs) < 5:
            self.wrongs.append(what)

    def report(self):
        print(json.dumps({"ops": self.ops, "errors": self.errors,
                          "bad": self.bad, "first": self.first,
                          "closed": self.closed, "wrongs": self.wrongs}))
        return 0


def running(stop, t0):
    return not os.path.exists(stop) and time.monotonic() - t0 < LIMIT_S


def data_files(d):
    return sorted(n for n in os.listdir(d) if n.startswith("f"))


def prep(d, n, size):
    for i in range(n):
        name = "f%03d" % i
        with open(os.path.join(d, name), "wb") as f:
            for off in range(0, size, 1 << 20):
                f.write(expected(name, off, min(1 << 20, size - off)))
    return 0


def read_whole(path, name, t):
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        off = 0
        while True:
            got = f.read(1 << 20)
            if not got:
                break
            want = expected(name, off, len(got))
            if got != want:
                t.wrong("%s: at %d: %s" % (name, off, differ(got, want)))
                return
            off += len(got)
    t.ops += 1


def seqread(d, stop):
    t, t0, names = Tally(), time.monotonic(), data_files(d)
    while running(stop, t0):
        for name in names:
            try:
                read_whole(os.path.join(d, name), name, t)
            except OSError as e:
                t.error("read %s: %s" % (name, e))
            if not running(stop, t0):
                break
    return t.report()


def randread(d, stop):
    t, t0, rng = Tally(), time.monotonic(), random.Random(7)
    names = data_files(d)
    fds = {n: os.open(os.path.join(d, n), os.O_RDONLY) for n in names}
    sizes = {n: os.fstat(fd).st_size for n, fd in fds.items()}
    while running(stop, t0):
        name = rng.choice(names)
        off = rng.randrange(0, sizes[name] - 65536)
        try:
            # whole pages: DONTNEED keeps the partial ones at the ends
            first = off & ~(BLOCK - 1)
            os.posix_fadvise(fds[name], first, off + 65536 - first + BLOCK,
                             os.POSIX_FADV_DONTNEED)
            got = os.pread(fds[name], 65536, off)
            t.ops += 1
            want = expected(name, off, 65536)
            if len(got) < len(want) and got == want[:len(got)]:
                # the kernel's answer to a read that failed after the pages
                # it had: the bytes it had (read(2) allows it), not an EIO
                t.error("pread %s at %d: %d bytes of 65536 (a read failed "
                        "after cached pages)" % (name, off, len(got)))
            elif got != want:
                t.wrong("%s: at %d: %s" % (name, off, differ(got, want)))
        except OSError as e:
            t.error("pread %s at %d: %s" % (name, off, e))
    return t.report()


def write(d, stop, size):
    t, t0, i = Tally(), time.monotonic(), 0
    while running(stop, t0):
        name = "w%03d" % i
        i += 1
        try:
            with open(os.path.join(d, name), "wb") as f:
                for off in range(0, size, 1 << 20):
                    f.write(expected(name, off, min(1 << 20, size - off)))
            t.ops += 1
            t.closed.append(name)
        except OSError as e:
            t.error("write %s: %s" % (name, e))
    return t.report()


def listing(d, stop):
    t, t0 = Tally(), time.monotonic()
    want = sorted(os.listdir(d))
    while running(stop, t0):
        try:
            got = sorted(os.listdir(d))
            t.ops += 1
            if got != want:
                t.wrong("listing: %d names, want %d" % (len(got), len(want)))
        except OSError as e:
            t.error("listdir: %s" % e)
    return t.report()


def rename(d, stop):
    """Each file fNNN goes to gNNN and back; a file found in neither place,
    or with other bytes, is bad."""
    t, t0 = Tally(), time.monotonic()
    names = data_files(d)
    where = {n: n for n in names}
    while running(stop, t0):
        for n in names:
            src = where[n]
            dst = ("g" if src[0] == "f" else "f") + n[1:]
            try:
                os.rename(os.path.join(d, src), os.path.join(d, dst))
                where[n] = dst
                t.ops += 1
            except OSError as e:
                t.error("rename %s: %s" % (src, e))
            if not running(stop, t0):
                break
    for n in names:
        try:
            with open(os.path.join(d, where[n]), "rb") as f:
                got = f.read()
            if got != expected(n, 0, len(got)) or not got:
                t.wrong("%s (as %s): wrong bytes" % (n, where[n]))
        except OSError as e:
            t.wrong("%s (as %s): %s" % (n, where[n], e))
    return t.report()


def check(name, size):
    got = sys.stdin.buffer.read()
    if len(got) != size or got != expected(name, 0, size):
        print("%s: %d bytes, not the %d written" % (name, len(got), size))
        return 1
    return 0


def main(argv):
    mode, args = argv[1], argv[2:]
    if mode == "prep":
        return prep(args[0], int(args[1]), int(args[2]))
    if mode == "check":
        return check(args[0], int(args[1]))
    if mode == "read1":
        t = Tally()
        read_whole(args[0], os.path.basename(args[0]), t)
        return 0 if t.ops == 1 and not t.bad else 1
    if mode == "write":
        return write(args[1], args[0], int(args[2]))
    fn = {"seqread": seqread, "randread": randread, "list": listing,
          "rename": rename}[mode]
    return fn(args[1], args[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
