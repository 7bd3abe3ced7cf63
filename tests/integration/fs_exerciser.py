#!/usr/bin/env python3
"""Data-integrity exerciser: random file operations checked against a model.

  fs_exerciser.py DIR [--seed N] [--ops N] [--files N] [--max-size BYTES] ...
  fs_exerciser.py --check-md5 FILE DIR

Runs a random sequence of operations on a few files directly inside DIR
(named PREFIX0.dat, "PREFIX1 x+ü.dat", ...; every second name has a space,
a plus sign and a non-ASCII letter in it) and checks every result against an
in-memory model (one bytearray per file): open with and without O_CREAT,
O_EXCL, O_TRUNC, O_APPEND, O_RDONLY/O_WRONLY/O_RDWR; write at the file
position; pwrite inside, at the end and past the end (the hole must read as
zeros); sequential streams of a whole file (the way cp writes); lseek;
ftruncate and truncate by path (shrink and grow); read and pread, also past
EOF; fstat and stat sizes; fsync and fdatasync; close; a full read-back of a
closed file; unlink and re-create; rename (over an existing file too, and onto
itself); directory listings; and errors the model expects (EEXIST, ENOENT).
With --fds-per-file N a name has up to N fds open at once (sharing its
content); with --unlink-open open files are unlinked and renamed too, and
their fds go on reading and writing the removed file, as POSIX has it.
Offsets and sizes favour the multipart part boundaries (--part-size, the
mount's write.part_size), so files span several parts. At the end every file
is closed and read back completely (size and md5), and the listing compared.

All randomness comes from random.Random(seed): the same command line replays
the same sequence. The seed and the replay command are printed first. On the
first mismatch, or an error from the filesystem the model does not expect,
it prints the seed, the operation's index and description, expected against
actual (lengths, offset of the first differing byte, bytes around it, where
the actual bytes occur in the model), the last operations and the replay
command, and exits 1. An operation that does not finish in --op-timeout
seconds is reported the same way (exit 1).

--dump-md5 FILE writes the final model, one line per name: "MD5 SIZE NAME"
for a file, "- - NAME" for a name that must not exist. --check-md5 FILE DIR
checks DIR against such a file (after a remount, say): exit 0 when every line
holds, else 1, listing every difference.

Standard library only (python3 >= 3.9).
"""
import argparse
import collections
import errno
import hashlib
import os
import random
import re
import shlex
import stat
import sys
import threading
import time

KiB = 1 << 10
MiB = 1 << 20

# operation: default weight (--weights NAME=W,... changes them; 0 disables)
WEIGHTS = {
    "open": 9, "close": 5, "closecheck": 4, "write": 14, "pwrite": 14,
    "stream": 2, "read": 7, "pread": 10, "lseek": 3, "ftruncate": 4,
    "truncate": 2, "fstat": 4, "stat": 3, "fsync": 3, "unlink": 2,
    "rename": 3, "listdir": 1,
}


def parse_size(text):
    """'123', '64K', '5M', '1G' (powers of 1024) -> bytes"""
    t = text.strip().upper().rstrip("B").rstrip("I")
    mult = 1
    if t and t[-1] in "KMG":
        mult = {"K": KiB, "M": MiB, "G": 1 << 30}[t[-1]]
        t = t[:-1]
    try:
        v = int(float(t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"negative size {text!r}")
    return v


def parse_weights(text):
    w = {}
    for item in filter(None, text.split(",")):
        name, _, val = item.partition("=")
        if name not in WEIGHTS or not val.isdigit():
            raise argparse.ArgumentTypeError(
                f"bad weight {item!r} (NAME=INT, NAME one of "
                f"{', '.join(WEIGHTS)})")
        w[name] = int(val)
    return w


def errname(e):
    return errno.errorcode.get(e, str(e))


class Failure(Exception):
    """a mismatch or an unexpected error: the message says what"""


class Inode:
    """a file of the model: its content, its open fds, its name (None once
    unlinked or replaced by a rename while open)"""
    count = 0

    def __init__(self, name):
        Inode.count += 1
        self.id, self.name, self.was = Inode.count, name, name
        self.data = bytearray()
        self.fds = []

    def __str__(self):
        if self.name is not None:
            return repr(self.name)
        return f"(removed file #{self.id}, was {self.was!r})"


class Fd:
    def __init__(self, fd, flags, ino):
        self.fd, self.flags, self.ino, self.pos = fd, flags, ino, 0
        acc = flags & os.O_ACCMODE
        self.readable = acc in (os.O_RDONLY, os.O_RDWR)
        self.writable = acc in (os.O_WRONLY, os.O_RDWR)
        self.append = bool(flags & os.O_APPEND)

    def __str__(self):
        return f"{self.ino} fd{self.fd}[{flagstr(self.flags)}]"


def flagstr(flags):
    acc = {os.O_RDONLY: "RDONLY", os.O_WRONLY: "WRONLY",
           os.O_RDWR: "RDWR"}[flags & os.O_ACCMODE]
    names = [acc] + [n for n, f in (("CREAT", os.O_CREAT), ("EXCL", os.O_EXCL),
                                    ("TRUNC", os.O_TRUNC),
                                    ("APPEND", os.O_APPEND)) if flags & f]
    return "|".join(names)


class Exerciser:
    def __init__(self, args):
        self.a = args
        self.dir = args.dir
        self.rng = random.Random(args.seed)
        self.part = args.part_size
        self.maxsize = args.max_size
        self.maxwrite = max(1, min(args.max_write, args.max_size))
        self.names = []
        for i in range(args.files):
            self.names.append(f"{args.prefix}{i}.dat" if i % 2 == 0
                              else f"{args.prefix}{i} x+\u00fc.dat")
        self.model = {n: None for n in self.names}   # None: does not exist
        self.orphans = []   # unlinked or replaced files still open
        self.weights = dict(WEIGHTS)
        self.weights.update(args.weights or {})
        self.kinds = [k for k in WEIGHTS if self.weights[k] > 0]
        self.cum = []
        total = 0
        for k in self.kinds:
            total += self.weights[k]
            self.cum.append(total)
        self.history = collections.deque(maxlen=args.history)
        self.index = -1
        self.cur = "(starting)"
        self.op_started = None
        self.counts = collections.Counter()
        self.expected_errors = collections.Counter()
        self.bytes_written = self.bytes_read = 0
        self.big_closes = 0     # closes of files larger than one part
        self.orphan_ops = 0     # operations on fds of removed files
        self.max_seen = 0

    # ---------------------------------------------------------------- helpers
    def path(self, name):
        return os.path.join(self.dir, name)

    def note(self, text):
        """describe the running operation (and what it found out so far)"""
        self.cur = text

    def size(self, name):
        return len(self.model[name].data)

    def rint(self, a, b):
        """randint that takes its bounds either way round"""
        return self.rng.randint(min(a, b), max(a, b))

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))] if seq else None

    def inodes(self):
        return [self.model[n] for n in self.names
                if self.model[n] is not None] + self.orphans

    def open_fds(self, pred=lambda f: True):
        return [f for ino in self.inodes() for f in ino.fds if pred(f)]

    def nfds(self, name):
        return len(self.model[name].fds) if self.model[name] else 0

    def existing(self):
        return [n for n in self.names if self.model[n] is not None]

    def closed(self):
        """names without open fds (absent ones too)"""
        return [n for n in self.names if not self.nfds(n)]

    def removable(self):
        """names unlink and rename may act on (--unlink-open: all, while
        fewer than half as many removed files as names are still open)"""
        if self.a.unlink_open and len(self.orphans) <= len(self.names) // 2:
            return list(self.names)
        return self.closed()

    def detach(self, name):
        """the file at name is unlinked or replaced: open fds keep it"""
        ino = self.model[name]
        if ino is not None:
            ino.name = None
            if ino.fds:
                self.orphans.append(ino)
        self.model[name] = None

    def length(self, limit=None):
        """a write or read length: mostly small, sometimes a few MiB"""
        r = self.rng.random()
        part = self.part
        if r < 0.05:
            n = 1
        elif r < 0.35:
            n = self.rint(1, 512)
        elif r < 0.60:
            n = self.rint(513, 64 * KiB)
        elif r < 0.70:
            n = self.rng.choice([4 * KiB, 8 * KiB, 64 * KiB, 128 * KiB,
                                 1 * MiB, part, part - 1, part + 1])
        elif r < 0.88:
            n = self.rint(64 * KiB, 1 * MiB)
        elif r < 0.97:
            n = self.rint(1 * MiB, 3 * MiB)
        else:
            n = self.rint(3 * MiB, self.maxwrite)
        n = max(1, min(n, self.maxwrite))
        return n if limit is None else max(1, min(n, limit))

    def offset(self, size, past=True):
        """an offset for pwrite/pread/lseek: inside, at or near the end,
        past the end (a hole), or around a part boundary"""
        r = self.rng.random()
        if r < 0.30 and size > 0:
            return self.rng.randrange(size)
        if r < 0.40:
            return size
        if r < 0.50 and size > 0:
            return max(0, size - self.rint(1, 4 * KiB))
        if r < 0.60:
            return 0
        if r < 0.80:   # around a part boundary at or below the end (+1 part)
            k = self.rint(1, max(1, (size + self.part) // self.part))
            return max(0, k * self.part + self.rint(-8, 8))
        if past:
            hole = (self.rint(1, 4 * KiB) if self.rng.random() < 0.6
                    else self.rint(4 * KiB, 2 * self.part))
            return size + hole
        return self.rng.randrange(size + 1)

    def new_size(self, size):
        """a size for (f)truncate: shrink, grow, zero, a part boundary"""
        r = self.rng.random()
        if r < 0.10:
            s = 0
        elif r < 0.45:
            s = self.rint(0, size) if size else 0
        elif r < 0.60 and size:
            s = max(0, size - self.rint(1, 16))
        elif r < 0.75:
            s = size + self.rint(1, 64 * KiB)
        elif r < 0.90:
            k = self.rint(1, max(1, (size + self.part) // self.part))
            s = max(0, k * self.part + self.rint(-2, 2))
        else:
            s = size + self.rint(64 * KiB, 2 * self.part)
        return min(s, self.maxsize)

    def data(self, n):
        return self.rng.randbytes(n)

    @staticmethod
    def model_write(buf, off, data):
        if off > len(buf):
            buf.extend(bytes(off - len(buf)))
        buf[off:off + len(data)] = data

    @staticmethod
    def model_truncate(buf, size):
        if size < len(buf):
            del buf[size:]
        else:
            buf.extend(bytes(size - len(buf)))

    def track(self, ino):
        self.max_seen = max(self.max_seen, len(ino.data))
        if ino.name is None:
            self.orphan_ops += 1

    # ------------------------------------------------------------- checking
    def compare(self, want, got, what, base, ino):
        """raise Failure unless got == want; base: file offset of want[0]"""
        if got == want:
            return
        n = min(len(want), len(got))
        i = 0
        step = 64 * KiB
        while i < n and want[i:i + step] == got[i:i + step]:
            i += step
        while i < n and want[i] == got[i]:
            i += 1
        lines = [f"{what}: content differs",
                 f"  expected {len(want)} bytes, got {len(got)} bytes "
                 f"(file offsets {base}..{base + len(want)} expected)"]
        if i == n:
            lines.append(f"  the first {n} bytes match; the "
                         f"{'actual' if len(got) < len(want) else 'expected'}"
                         " data is shorter")
        else:
            j = i
            while j < n and want[j] != got[j]:
                j += 1
            k = i
            diff = 0
            while k < n and diff < 1 << 24:
                if want[k] != got[k]:
                    diff += 1
                k += 1
            zeros = " (zeros in the actual data)" \
                if not got[i:j].strip(b"\0") else ""
            lines.append(f"  first differing byte at file offset {base + i} "
                         f"(+{i} into the read); differing run of {j - i} "
                         f"bytes{zeros}; {diff} differing bytes in all")
            lo = max(0, i - 16)
            lines.append(f"  expected @{base + lo}: "
                         f"{want[lo:i + 16].hex(' ')}")
            lines.append(f"  actual   @{base + lo}: "
                         f"{got[lo:i + 16].hex(' ')}")
            probe = bytes(got[i:i + 32])
            if len(probe) >= 8 and probe.strip(b"\0"):
                for other in self.inodes():
                    at = bytes(other.data).find(probe)
                    if at >= 0:
                        lines.append(
                            f"  the actual bytes at {base + i} occur in the "
                            f"model of {other} at offset {at}"
                            + (f" (shift {at - base - i:+d})"
                               if other is ino else ""))
                        break
                else:
                    lines.append("  the actual bytes at the first difference "
                                 "occur in no file's model")
        if ino is not None:
            lines.append(f"  model of {ino}: size {len(ino.data)}, md5 "
                         f"{hashlib.md5(ino.data).hexdigest()}")
        raise Failure("\n".join(lines))

    def expect_error(self, code, fn, *args):
        """run fn(*args); it must fail with errno code"""
        try:
            r = fn(*args)
        except OSError as e:
            if e.errno != code:
                raise Failure(f"expected {errname(code)}, got "
                              f"{errname(e.errno)} ({e.strerror})") from None
            self.expected_errors[errname(code)] += 1
            return
        if fn is os.open and isinstance(r, int):
            os.close(r)
        raise Failure(f"expected {errname(code)}, but it succeeded"
                      + (f" (returned {r!r})" if r is not None else ""))

    def check_size(self, ino, st, how):
        if not stat.S_ISREG(st.st_mode):
            raise Failure(f"{how}: not a regular file (mode {st.st_mode:o})")
        if st.st_size != len(ino.data):
            raise Failure(f"{how}: size {st.st_size}, expected "
                          f"{len(ino.data)}")

    def verify(self, name, drop_cache=False):
        """open read-only, read everything back, compare with the model"""
        ino = self.model[name]
        want = ino.data
        fd = os.open(self.path(name), os.O_RDONLY)
        try:
            self.check_size(ino, os.fstat(fd), "fstat of a fresh fd")
            if drop_cache:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            chunk = self.rng.choice([128 * KiB, 1 * MiB, 1 * MiB, 4 * MiB])
            parts = []
            while True:
                b = os.read(fd, chunk)
                if not b:
                    break
                parts.append(b)
            got = b"".join(parts)
        finally:
            os.close(fd)
        self.bytes_read += len(got)
        if len(got) != len(want) or got != want:
            self.compare(bytes(want), got,
                         f"full read-back of {name!r} (md5 expected "
                         f"{hashlib.md5(want).hexdigest()}, got "
                         f"{hashlib.md5(got).hexdigest()})", 0, ino)
        if len(want) > self.part:
            self.big_closes += 1

    def close_fd(self, f):
        ino = f.ino
        ino.fds.remove(f)
        if not ino.fds and ino in self.orphans:
            self.orphans.remove(ino)
        os.close(f.fd)

    def close_all(self, ino):
        for f in list(ino.fds):
            self.close_fd(f)

    # ---------------------------------------------------------- operations
    # each returns False when it has nothing to work on (another is drawn)
    def op_open(self):
        name = self.pick([n for n in self.names
                          if self.nfds(n) < self.a.fds_per_file])
        if name is None:
            return False
        p = self.path(name)
        r = self.rng.random()
        if self.model[name] is None:
            if r < 0.08:
                fl = self.rng.choice([os.O_RDWR, os.O_RDONLY, os.O_WRONLY])
                self.note(f"open {name!r} {flagstr(fl)} (absent: ENOENT)")
                self.expect_error(errno.ENOENT, os.open, p, fl)
                return True
            fl = os.O_CREAT | self.rng.choice([
                os.O_RDWR, os.O_RDWR | os.O_EXCL, os.O_WRONLY | os.O_TRUNC,
                os.O_RDWR | os.O_TRUNC, os.O_WRONLY | os.O_EXCL,
                os.O_RDWR | os.O_APPEND, os.O_WRONLY])
        else:
            if r < 0.06:
                fl = os.O_CREAT | os.O_EXCL | self.rng.choice(
                    [os.O_RDWR, os.O_WRONLY])
                self.note(f"open {name!r} {flagstr(fl)} (exists: EEXIST)")
                self.expect_error(errno.EEXIST, os.open, p, fl, 0o644)
                return True
            fl = self.rng.choice([
                os.O_RDWR, os.O_RDWR, os.O_RDONLY, os.O_RDONLY, os.O_WRONLY,
                os.O_RDWR | os.O_TRUNC, os.O_WRONLY | os.O_TRUNC,
                os.O_RDWR | os.O_APPEND, os.O_WRONLY | os.O_APPEND,
                os.O_RDWR | os.O_CREAT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC])
        self.note(f"open {name!r} {flagstr(fl)}")
        fd = os.open(p, fl, 0o644)
        if self.model[name] is None:
            self.model[name] = Inode(name)
        ino = self.model[name]
        f = Fd(fd, fl, ino)
        ino.fds.append(f)
        if fl & os.O_TRUNC:
            del ino.data[:]
        self.note(f"open {name!r} {flagstr(fl)} -> fd{fd}")
        self.check_size(ino, os.fstat(fd), "fstat after open")
        return True

    def op_close(self):
        f = self.pick(self.open_fds())
        if f is None:
            return False
        self.note(f"close {f}")
        self.close_fd(f)
        if not f.ino.fds and len(f.ino.data) > self.part:
            self.big_closes += 1
        return True

    def op_closecheck(self):
        name = self.pick(self.existing())
        if name is None:
            return False
        ino = self.model[name]
        drop = self.rng.random() < 0.5
        fds = " ".join(f"fd{f.fd}" for f in ino.fds)
        self.note(f"closecheck {name!r}: close {fds or 'nothing'}, read back "
                  f"{len(ino.data)} bytes"
                  + (" after fadvise(DONTNEED)" if drop else ""))
        self.close_all(ino)
        self.verify(name, drop)
        return True

    def op_write(self):
        f = self.pick(self.open_fds(lambda f: f.writable))
        if f is None:
            return False
        buf = f.ino.data
        pos = len(buf) if f.append else f.pos
        if pos >= self.maxsize:
            return False
        n = self.length(self.maxsize - pos)
        data = self.data(n)
        self.note(f"write {f} pos={pos} len={n}")
        got = os.write(f.fd, data)
        if got != n:
            raise Failure(f"short write: {got} of {n} bytes")
        self.model_write(buf, pos, data)
        f.pos = pos + n
        self.bytes_written += n
        self.track(f.ino)
        return True

    def op_pwrite(self):
        # (pwrite on an O_APPEND fd appends on Linux: not drawn)
        f = self.pick(self.open_fds(lambda f: f.writable and not f.append))
        if f is None:
            return False
        buf = f.ino.data
        off = min(self.offset(len(buf)), self.maxsize - 1)
        n = self.length(self.maxsize - off)
        data = self.data(n)
        where = ("inside" if off + n <= len(buf) else
                 "over the end" if off < len(buf) else
                 "at the end" if off == len(buf) else
                 f"past the end, hole of {off - len(buf)}")
        self.note(f"pwrite {f} off={off} len={n} ({where}, size {len(buf)})")
        got = os.pwrite(f.fd, data, off)
        if got != n:
            raise Failure(f"short pwrite: {got} of {n} bytes")
        self.model_write(buf, off, data)
        self.bytes_written += n
        self.track(f.ino)
        return True

    def op_stream(self):
        """a whole file written sequentially by a fresh fd, as cp does"""
        name = self.pick(self.closed())
        if name is None:
            return False
        r = self.rng.random()
        part = self.part
        if r < 0.25:
            total = self.rint(0, 64 * KiB)
        elif r < 0.45:
            total = self.rint(1, 3) * part + self.rng.choice([-1, 0, 1])
        elif r < 0.75:
            total = self.rint(64 * KiB, 2 * part + part // 2)
        else:
            total = self.rint(0, self.maxsize)
        total = max(0, min(total, self.maxsize))
        chunk = self.rng.choice([4 * KiB, 64 * KiB, 128 * KiB, 1 * MiB,
                                 self.rint(1, 300 * KiB)])
        excl = self.model[name] is None and self.rng.random() < 0.5
        fl = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if excl else os.O_TRUNC)
        sync = self.rng.random() < 0.3
        check = self.rng.random() < 0.5
        desc = (f"stream {name!r} {flagstr(fl)} {total} bytes in "
                f"{chunk}-byte writes" + (", fsync" if sync else "")
                + ", close" + (", read back" if check else ""))
        self.note(desc)
        fd = os.open(self.path(name), fl, 0o644)
        if self.model[name] is None:
            self.model[name] = Inode(name)
        ino = self.model[name]
        del ino.data[:]
        try:
            done = 0
            while done < total:
                n = min(chunk, total - done)
                data = self.data(n)
                self.note(f"{desc}: write at {done} len={n}")
                got = os.write(fd, data)
                if got != n:
                    raise Failure(f"short write: {got} of {n} bytes")
                ino.data += data
                done += n
            self.bytes_written += total
            self.track(ino)
            if sync:
                self.note(f"{desc}: fsync")
                os.fsync(fd)
        finally:
            self.note(f"{desc}: close")
            os.close(fd)
        if total > part:
            self.big_closes += 1
        if check:
            self.note(f"{desc}: read back")
            self.verify(name, self.rng.random() < 0.5)
        return True

    def op_read(self):
        f = self.pick(self.open_fds(lambda f: f.readable))
        if f is None:
            return False
        buf = f.ino.data
        n = self.length()
        self.note(f"read {f} pos={f.pos} len={n} (size {len(buf)})")
        got = os.read(f.fd, n)
        want = bytes(buf[f.pos:f.pos + n])
        self.compare(want, got, f"read at {f.pos} len={n}", f.pos, f.ino)
        f.pos += len(want)
        self.bytes_read += len(got)
        self.track(f.ino)
        return True

    def op_pread(self):
        f = self.pick(self.open_fds(lambda f: f.readable))
        if f is None:
            return False
        buf = f.ino.data
        off = self.offset(len(buf))
        n = self.length()
        self.note(f"pread {f} off={off} len={n} (size {len(buf)})")
        got = os.pread(f.fd, n, off)
        self.compare(bytes(buf[off:off + n]), got, f"pread at {off} len={n}",
                     off, f.ino)
        self.bytes_read += len(got)
        self.track(f.ino)
        return True

    def op_lseek(self):
        f = self.pick(self.open_fds())
        if f is None:
            return False
        size = len(f.ino.data)
        target = min(self.offset(size), self.maxsize)
        how = self.rng.choice([os.SEEK_SET, os.SEEK_CUR, os.SEEK_END])
        arg = target - {os.SEEK_SET: 0, os.SEEK_CUR: f.pos,
                        os.SEEK_END: size}[how]
        wh = {os.SEEK_SET: "SET", os.SEEK_CUR: "CUR", os.SEEK_END: "END"}[how]
        self.note(f"lseek {f} {arg:+d} SEEK_{wh} (pos {f.pos}, size {size}) "
                  f"-> {target}")
        got = os.lseek(f.fd, arg, how)
        if got != target:
            raise Failure(f"lseek returned {got}, expected {target}")
        f.pos = target
        return True

    def op_ftruncate(self):
        f = self.pick(self.open_fds(lambda f: f.writable))
        if f is None:
            return False
        size = len(f.ino.data)
        s = self.new_size(size)
        self.note(f"ftruncate {f} {size} -> {s}")
        os.ftruncate(f.fd, s)
        self.model_truncate(f.ino.data, s)
        self.track(f.ino)
        return True

    def op_truncate(self):
        absent = [n for n in self.names if self.model[n] is None]
        if absent and self.rng.random() < 0.08:
            name = self.pick(absent)
            self.note(f"truncate {name!r} (absent: ENOENT)")
            self.expect_error(errno.ENOENT, os.truncate, self.path(name), 0)
            return True
        name = self.pick(self.existing())
        if name is None:
            return False
        ino = self.model[name]
        size = len(ino.data)
        s = self.new_size(size)
        self.note(f"truncate {name!r} by path {size} -> {s}"
                  + (f" (open: {' '.join(f'fd{f.fd}' for f in ino.fds)})"
                     if ino.fds else ""))
        os.truncate(self.path(name), s)
        self.model_truncate(ino.data, s)
        self.track(ino)
        return True

    def op_fstat(self):
        f = self.pick(self.open_fds())
        if f is None:
            return False
        self.note(f"fstat {f} (size {len(f.ino.data)})")
        self.check_size(f.ino, os.fstat(f.fd), "fstat")
        return True

    def op_stat(self):
        name = self.pick(self.names)
        p = self.path(name)
        if self.model[name] is None:
            self.note(f"stat {name!r} (absent: ENOENT)")
            self.expect_error(errno.ENOENT, os.stat, p)
        else:
            self.note(f"stat {name!r} (size {self.size(name)})")
            self.check_size(self.model[name], os.stat(p), "stat")
        return True

    def op_fsync(self):
        f = self.pick(self.open_fds())
        if f is None:
            return False
        data_only = self.rng.random() < 0.3
        self.note(f"{'fdatasync' if data_only else 'fsync'} {f} "
                  f"(size {len(f.ino.data)})")
        (os.fdatasync if data_only else os.fsync)(f.fd)
        return True

    def op_unlink(self):
        names = self.removable()
        absent = [n for n in names if self.model[n] is None]
        if absent and self.rng.random() < 0.1:
            name = self.pick(absent)
            self.note(f"unlink {name!r} (absent: ENOENT)")
            self.expect_error(errno.ENOENT, os.unlink, self.path(name))
            return True
        name = self.pick([n for n in names if self.model[n] is not None])
        if name is None:
            return False
        ino = self.model[name]
        self.note(f"unlink {name!r} (size {len(ino.data)}"
                  + (f", open: {' '.join(f'fd{f.fd}' for f in ino.fds)}"
                     if ino.fds else "") + ")")
        os.unlink(self.path(name))
        self.detach(name)
        return True

    def op_rename(self):
        names = self.removable()
        absent = [n for n in names if self.model[n] is None]
        if absent and self.rng.random() < 0.06:
            src, dst = self.pick(absent), self.pick(names)
            if src != dst:
                self.note(f"rename {src!r} -> {dst!r} (absent: ENOENT)")
                self.expect_error(errno.ENOENT, os.rename, self.path(src),
                                  self.path(dst))
                return True
        src = self.pick([n for n in names if self.model[n] is not None])
        if src is None:
            return False
        dst = src if self.rng.random() < 0.05 else self.pick(names)
        if self.rng.random() < 0.4:   # prefer replacing an existing file
            over = [n for n in names if n != src and self.model[n] is not None]
            dst = self.pick(over) or dst

        def desc(n):
            ino = self.model[n]
            return (f"{len(ino.data)} bytes"
                    + (f", open: {' '.join(f'fd{f.fd}' for f in ino.fds)}"
                       if ino.fds else ""))
        state = ("onto itself" if dst == src else
                 f"replacing {desc(dst)}" if self.model[dst] is not None
                 else "new name")
        self.note(f"rename {src!r} ({desc(src)}) -> {dst!r} ({state})")
        os.rename(self.path(src), self.path(dst))
        if dst != src:
            ino = self.model[src]
            self.model[src] = None
            self.detach(dst)
            self.model[dst] = ino
            ino.name = dst
        return True

    def op_listdir(self):
        self.note("listdir")
        self.check_listing()
        return True

    def check_listing(self):
        got = sorted(n for n in os.listdir(self.dir)
                     if n.startswith(self.a.prefix))
        want = sorted(n for n in self.names if self.model[n] is not None)
        if got != want:
            raise Failure("directory listing differs (names starting with "
                          f"{self.a.prefix!r}):\n  expected {want}\n"
                          f"  got      {got}")

    # ------------------------------------------------------------- driving
    def draw(self):
        x = self.rng.randrange(self.cum[-1])
        for k, c in zip(self.kinds, self.cum):
            if x < c:
                return k
        return self.kinds[-1]

    def step(self):
        for _ in range(100):
            kind = self.draw()
            if getattr(self, "op_" + kind)():
                self.counts[kind] += 1
                return
        # nothing drawn could run (e.g. weights leave only writes and no fd
        # is open): open something
        if not self.op_open():
            raise Failure("no operation can run (check --weights)")
        self.counts["open"] += 1

    def final(self):
        self.note("final: close every fd")
        for ino in self.inodes():
            self.close_all(ino)
        self.note("final: listing")
        self.check_listing()
        for n in self.names:
            p = self.path(n)
            if self.model[n] is None:
                self.note(f"final: {n!r} must not exist")
                self.expect_error(errno.ENOENT, os.stat, p)
            else:
                self.note(f"final: read back {n!r} ({self.size(n)} bytes)")
                self.check_size(self.model[n], os.stat(p), "stat")
                self.verify(n, drop_cache=True)

    def cleanup_stale(self):
        """remove names of this prefix (any index) an earlier run left"""
        pat = re.compile(re.escape(self.a.prefix)
                         + r"[0-9]+(\.dat| x\+\u00fc\.dat)")
        for n in sorted(os.listdir(self.dir)):
            if pat.fullmatch(n):
                os.unlink(self.path(n))
                print(f"# removed {n!r} left from an earlier run")

    def dump_md5(self, fname):
        with open(fname, "w", encoding="utf-8") as out:
            for n in self.names:
                m = self.model[n] and self.model[n].data
                if m is None:
                    out.write(f"- - {n}\n")
                else:
                    out.write(f"{hashlib.md5(m).hexdigest()} {len(m)} {n}\n")

    def replay_cmd(self):
        a = self.a
        argv = [sys.argv[0], a.dir, "--seed", str(a.seed), "--ops", str(a.ops),
                "--files", str(a.files), "--max-size", str(a.max_size),
                "--max-write", str(a.max_write), "--part-size",
                str(a.part_size), "--fds-per-file", str(a.fds_per_file),
                "--prefix", a.prefix]
        if a.unlink_open:
            argv.append("--unlink-open")
        if a.weights:
            argv += ["--weights",
                     ",".join(f"{k}={v}" for k, v in a.weights.items())]
        return " ".join(shlex.quote(x) for x in argv)

    def report(self, msg):
        out = sys.stdout
        print(f"FAIL seed {self.a.seed}, operation #{self.index} of "
              f"{self.a.ops}: {self.cur}", file=out)
        for line in msg.splitlines():
            print(f"  {line}", file=out)
        print(f"  the last {len(self.history)} operations before it:",
              file=out)
        for h in list(self.history):
            print(f"    {h}", file=out)
        print("  the model:", file=out)
        for n in self.names:
            ino = self.model[n]
            print(f"    {n!r}: " + ("absent" if ino is None else
                                    f"{len(ino.data)} bytes")
                  + "".join(f", fd{f.fd}[{flagstr(f.flags)}] at {f.pos}"
                            for f in (ino.fds if ino else [])), file=out)
        for ino in self.orphans:
            print(f"    {ino}: {len(ino.data)} bytes"
                  + "".join(f", fd{f.fd}[{flagstr(f.flags)}] at {f.pos}"
                            for f in ino.fds), file=out)
        print(f"  replay: {self.replay_cmd()}", file=out)
        out.flush()

    def watchdog(self):
        limit = self.a.op_timeout
        while True:
            time.sleep(1)
            t0 = self.op_started
            if t0 is not None and time.monotonic() - t0 > limit:
                self.report(f"the operation did not finish in {limit} s "
                            "(hung filesystem?)")
                os._exit(1)

    def run(self):
        a = self.a
        print(f"seed {a.seed} (replay: {self.replay_cmd()})", flush=True)
        self.cleanup_stale()
        if a.op_timeout > 0:
            threading.Thread(target=self.watchdog, daemon=True).start()
        t0 = time.monotonic()
        try:
            for self.index in range(a.ops):
                self.cur = "(drawing an operation)"
                self.op_started = time.monotonic()
                self.step()
                self.history.append(f"#{self.index} {self.cur}")
                if a.verbose:
                    print(f"#{self.index} {self.cur}", flush=True)
            self.index = a.ops
            self.final()
        except Failure as e:
            self.report(str(e))
            return 1
        except OSError as e:
            self.report(f"unexpected error {errname(e.errno)} ({e.strerror})"
                        + (f" on {e.filename!r}" if e.filename else ""))
            return 1
        self.op_started = None
        if a.dump_md5:
            self.dump_md5(a.dump_md5)
        dt = time.monotonic() - t0
        ops = ", ".join(f"{k} {self.counts[k]}" for k in WEIGHTS
                        if self.counts[k])
        errs = ", ".join(f"{k} {v}" for k, v in
                         sorted(self.expected_errors.items())) or "none"
        left = [n for n in self.names if self.model[n] is not None]
        print(f"ok seed {a.seed}: {a.ops} operations in {dt:.1f} s; "
              f"{self.bytes_written / MiB:.1f} MiB written, "
              f"{self.bytes_read / MiB:.1f} MiB read; largest file "
              f"{self.max_seen} bytes; {self.big_closes} closes/read-backs "
              f"of files over one part ({self.part} bytes); "
              f"{self.orphan_ops} writes/reads of removed open files; "
              f"{len(left)} files left", flush=True)
        print(f"#   {ops}; expected errors: {errs}", flush=True)
        return 0


def check_md5(listing, d):
    """check DIR against a --dump-md5 file; print every difference"""
    bad = good = 0
    with open(listing, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            md5, size, name = line.split(" ", 2)
            p = os.path.join(d, name)
            try:
                st = os.stat(p)
            except FileNotFoundError:
                if md5 == "-":
                    good += 1
                else:
                    bad += 1
                    print(f"not ok - {name!r}: missing (expected {size} "
                          f"bytes, md5 {md5})")
                continue
            except OSError as e:
                bad += 1
                print(f"not ok - {name!r}: stat: {e}")
                continue
            if md5 == "-":
                bad += 1
                print(f"not ok - {name!r}: exists ({st.st_size} bytes), "
                      "expected no such file")
                continue
            h = hashlib.md5()
            n = 0
            try:
                with open(p, "rb") as fh:
                    while True:
                        b = fh.read(1 * MiB)
                        if not b:
                            break
                        h.update(b)
                        n += len(b)
            except OSError as e:
                bad += 1
                print(f"not ok - {name!r}: read: {e}")
                continue
            if st.st_size != int(size) or n != int(size) or \
                    h.hexdigest() != md5:
                bad += 1
                print(f"not ok - {name!r}: stat size {st.st_size}, read "
                      f"{n} bytes, md5 {h.hexdigest()}; expected {size} "
                      f"bytes, md5 {md5}")
            else:
                good += 1
    print(f"{good} names as expected, {bad} not")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(
        description="Random file operations in DIR checked against a model.",
        epilog="Every second name has a space, '+' and a non-ASCII letter.")
    ap.add_argument("dir", metavar="DIR", help="directory to work in")
    ap.add_argument("--seed", type=int,
                    help="random seed (default: a random one, printed)")
    ap.add_argument("--ops", type=int, default=2000,
                    help="number of operations (default 2000)")
    ap.add_argument("--files", type=int, default=6,
                    help="number of file names (default 6)")
    ap.add_argument("--max-size", type=parse_size, default=24 * MiB,
                    help="largest size of a file (default 24M)")
    ap.add_argument("--max-write", type=parse_size, default=6 * MiB,
                    help="largest single write or read (default 6M)")
    ap.add_argument("--part-size", type=parse_size, default=5 * MiB,
                    help="the mount's write.part_size: offsets and sizes "
                         "cluster around its multiples (default 5M)")
    ap.add_argument("--fds-per-file", type=int, default=1,
                    help="open file descriptors per name at once (default 1)")
    ap.add_argument("--unlink-open", action="store_true",
                    help="unlink and rename files that are open too (POSIX: "
                         "the fds keep the file; without it, only closed "
                         "files are unlinked or renamed)")
    ap.add_argument("--prefix", default="fx",
                    help="file name prefix (default fx); runs can share DIR "
                         "when no run's prefix begins another's; names of "
                         "this prefix left in DIR are removed first")
    ap.add_argument("--weights", type=parse_weights,
                    help="NAME=W,... operation weights (0: never); names: "
                         + ", ".join(f"{k}={v}" for k, v in WEIGHTS.items()))
    ap.add_argument("--history", type=int, default=20,
                    help="operations shown before a failure (default 20)")
    ap.add_argument("--op-timeout", type=float, default=180,
                    help="seconds one operation may take (0: no limit; "
                         "default 180)")
    ap.add_argument("--dump-md5", metavar="FILE",
                    help="on success write 'MD5 SIZE NAME' per file, "
                         "'- - NAME' per name that must not exist")
    ap.add_argument("--check-md5", metavar="FILE",
                    help="only check DIR against a --dump-md5 FILE")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every operation")
    a = ap.parse_args()
    if a.check_md5:
        return check_md5(a.check_md5, a.dir)
    if a.seed is None:
        a.seed = int.from_bytes(os.urandom(4), "little")
    if a.files < 1 or a.ops < 0 or a.fds_per_file < 1 or a.part_size < 1 \
            or a.max_size < 1 or not a.prefix or "/" in a.prefix:
        ap.error("--files, --fds-per-file, --part-size, --max-size must be "
                 "positive, --prefix non-empty without '/'")
    if not os.path.isdir(a.dir):
        ap.error(f"{a.dir}: not a directory")
    return Exerciser(a).run()


if __name__ == "__main__":
    sys.exit(main())
