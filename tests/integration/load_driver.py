#!/usr/bin/env python3
"""Load on a mount: many reader and writer processes for a bounded time,
every byte read checked, every hang caught, throughput and the daemon's RSS
sampled (test_fs_load.sh runs it).

  load_driver.py gen FID NBLOCKS              a read-only file's bytes, stdout
  load_driver.py run MNT DIR --seed N --duration S --daemon-pid P [...]
  load_driver.py verify DIR MNT               the final content again (after
                                              a remount: from the server)

The content says where it belongs: every 8-byte word of a file is
(magic, file id, block, version) of the 4 KiB block holding it, so any read
can be checked against a model without a copy of the data, and a block of
the wrong file, offset or version, or zeros, or garbage, is seen.

Files (under MNT/PREFIX, made by the parent before the workers start):
  r*  read-only, uploaded beforehand under MNT/R_PREFIX (gen): checked
      byte for byte
  s*  one writer each (separate files), which rewrites it (O_TRUNC,
      streamed; single PUT or multipart) or patches a block range in place
      (O_RDWR: fetch + UploadPartCopy), publishing its per-block version
      map after close(), then rests a moment. A reader that saw no writer
      between before its open and after its close must read exactly the
      published map (close-to-open on one mount); otherwise each block must
      be one of the versions begun so far, or zeros: a reader racing an
      O_TRUNC rewrite may be handed zero-filled pages by the kernel's FUSE
      page cache (seen with libfuse's own passthrough_ll -o cache=always
      as well, never on a local file system; likely a read answered short
      just after the truncation, whose zero-filled pages the reader copies
      once the file has grown again). Those zero blocks are counted and
      reported, not failed; with no writer overlapping they fail.
  o*  several writer processes overwrite block ranges of one file in place
      (stamps: writer, sequence). Finally every block holds the stamp of a
      write that covered it, not one a later write of the same process
      covered, and not one whose write ended before another write covering
      it began (by CLOCK_MONOTONIC, which all processes share).
  a*  several writer processes append records of 1..8 blocks (O_APPEND, one
      write() each). Finally the file is exactly the records written, each
      once, whole, each writer's in its own order.
Readers: of the r files (separate and shared), of the s files while their
writer works, of the o and a files while several processes write them.
A read racing a write of the same page may copy it half written (Linux
gives no read/write atomicity; a local file system shows it too): such a
torn block is counted and passes when each of its 8-byte words does.

Every system call is an operation: its start is in shared memory, where the
parent sees any that has waited --hang-s seconds (a hang: the stuck
operations, their kernel stacks and the daemon's threads are printed, exit
3); so is --stall-s seconds with none completed while some were pending.
The parent also counts completed operations per --window seconds (reported,
not judged), and samples the daemon's VmRSS every second. Results: a JSON report (--report)
and a summary on stdout. Exit 0 when all is well, 1 on a wrong byte, an
error or a bad final content, 3 on a hang.
"""
import argparse
import errno
import json
import multiprocessing as mp
import os
import random
import struct
import sys
import time

BLK = 4096
MAGIC = 0xA5
WORDS = BLK // 8
MAXV = (1 << 20) - 1


def word(fid, blk, ver):
    return struct.pack('<Q', (MAGIC << 56) | ((fid & 0xFFF) << 44)
                       | ((blk & 0xFFFFFF) << 20) | (ver & MAXV))


def unword(w):
    (x,) = struct.unpack('<Q', w)
    return x >> 56, (x >> 44) & 0xFFF, (x >> 20) & 0xFFFFFF, x & MAXV


ZERO_WORD = bytes(8)


def block(fid, blk, ver):
    return word(fid, blk, ver) * WORDS


def stamp(w, seq):  # a writer's version field: writer (4 bits), sequence
    return (w << 16) | (seq & 0xFFFF)


# ---- layout --------------------------------------------------------------

class Layout:
    """Which files, which workers; the same in every process."""

    def __init__(self, a):
        self.rbase = os.path.join(a.mnt, a.r_prefix)
        self.nr, self.rblocks = a.r_files, a.r_blocks
        self.ns, self.smax = a.s_files, a.s_max_blocks
        self.no, self.oblocks, self.owriters = a.o_files, a.o_blocks, a.o_writers
        self.na, self.awriters = a.a_files, a.a_writers
        self.fid_r = lambda i: 1 + i
        self.fid_s = lambda i: 100 + i
        self.fid_o = lambda i: 200 + i
        self.fid_a = lambda i: 300 + i
        w = []  # (kind, index, role): role is file index (and writer slot)
        for i in range(self.ns):
            w.append(('ws', i, 0))
        for i in range(self.no):
            for k in range(self.owriters):
                w.append(('wo', i, k))
        for i in range(self.na):
            for k in range(self.awriters):
                w.append(('wa', i, k))
        self.writers = w
        r = []
        for i in range(a.readers):
            r.append(('r', i, 0))
        self.readers = r
        self.workers = w + r


def rname(i):
    return 'r%02d' % i


# ---- shared state ------------------------------------------------------------

class Shared:
    def __init__(self, ctx, lay, nworkers):
        self.stop = ctx.Value('i', 0, lock=False)
        self.start = ctx.Array('d', nworkers, lock=False)  # op start, 0 idle
        self.kind = ctx.Array('i', nworkers, lock=False)   # op code
        self.done = ctx.Array('q', nworkers, lock=False)   # ops completed
        self.bytes = ctx.Array('q', nworkers, lock=False)
        # s files: generation (odd while written), published size and map,
        # highest version begun
        self.sgen = ctx.Array('q', lay.ns, lock=False)
        self.ssize = ctx.Array('q', lay.ns, lock=False)
        self.smap = ctx.Array('i', lay.ns * lay.smax, lock=False)
        self.svmax = ctx.Array('q', lay.ns, lock=False)
        # o and a files: highest sequence begun per writer slot
        self.oseq = ctx.Array('q', max(1, lay.no * lay.owriters), lock=False)
        self.aseq = ctx.Array('q', max(1, lay.na * lay.awriters), lock=False)


OPS = ['open', 'read', 'write', 'close', 'fsync', 'stat']


class Worker:
    def __init__(self, wid, spec, lay, sh, base, seed):
        self.wid, self.spec, self.lay, self.sh, self.base = wid, spec, lay, sh, base
        self.rng = random.Random(seed * 1000003 + wid)
        self.errors, self.nerr = [], 0
        self.bad, self.nbad = [], 0
        self.maxlat = {}
        self.journal = []
        self.checked = {'strict': 0, 'weak': 0, 'exact': 0,
                        'zero_blocks_overlapping_o_trunc': 0,
                        'torn_blocks_overlapping_writes': 0}

    # one system call, watched
    def op(self, name, fn, *args):
        sh, i = self.sh, self.wid
        sh.kind[i] = OPS.index(name)
        t0 = time.monotonic()
        sh.start[i] = t0
        try:
            return fn(*args)
        finally:
            t1 = time.monotonic()
            sh.start[i] = 0.0
            sh.done[i] += 1
            if t1 - t0 > self.maxlat.get(name, 0.0):
                self.maxlat[name] = t1 - t0

    def error(self, what, e):
        self.nerr += 1
        if len(self.errors) < 10:
            self.errors.append('%s: %s' % (what, e))

    def wrong(self, what):
        self.nbad += 1
        if len(self.bad) < 10:
            self.bad.append(what)

    def path(self, name):
        return os.path.join(self.base, name)

    def stopping(self):
        return self.sh.stop.value != 0

    def read_at(self, fd, off, n):
        data = self.op('read', os.pread, fd, n, off)
        self.sh.bytes[self.wid] += len(data)
        return data

    def write_all(self, fd, data, off=None):
        mv = memoryview(data)
        while mv:
            if off is None:
                n = self.op('write', os.write, fd, mv)
            else:
                n = self.op('write', os.pwrite, fd, mv, off)
                off += n
            self.sh.bytes[self.wid] += n
            mv = mv[n:]

    # ---- checks ----
    def describe(self, chunk):
        """What a block that is not one word repeated holds."""
        ws = memoryview(chunk).cast('Q')
        first = next((j for j in range(len(ws)) if ws[j] != ws[0]), len(ws))
        kinds = sorted(set(ws))
        return 'differs from its first word at byte %d; %d kinds of word, e.g. %s' % (
            first * 8, len(kinds), [unword(struct.pack('<Q', x)) for x in kinds[:4]])

    def check_blocks(self, name, off, data, fid, valid, zeros=None, torn=None):
        """Weak check of DATA read at OFF (8-byte aligned): each block (or
        part of one) is one word repeated, of file FID, of its own block,
        with valid(blk, ver) true. With ZEROS (a list), zero blocks are
        appended there instead; with TORN (a list), a block whose words are
        each valid (or zero, with ZEROS) but not all the same is appended
        there (a read racing a write of the same page may see a mix).
        Returns the (blk, ver) list (ver None for a torn block) or None."""
        seen = []
        pos = 0
        while pos < len(data):
            b = (off + pos) // BLK
            end = min(len(data), (b + 1) * BLK - off)
            chunk = data[pos:end]
            w = chunk[:8]
            pos = end
            if chunk == w * (len(chunk) // 8):
                words = [w]
            elif torn is not None:
                words = [struct.pack('<Q', x) for x in set(memoryview(chunk).cast('Q'))]
                torn.append(b)
            else:
                self.wrong('%s block %d: not one word repeated: %s' % (name, b, self.describe(chunk)))
                return None
            vers = []
            for w in words:
                if zeros is not None and w == ZERO_WORD:
                    if len(words) == 1:
                        zeros.append(b)
                    continue
                mg, f, blk, ver = unword(w)
                if mg != MAGIC or f != fid or blk != (b & 0xFFFFFF):
                    self.wrong('%s block %d: holds magic %#x file %d block %d version %d%s'
                               % (name, b, mg, f, blk, ver,
                                  '' if len(words) == 1 else ' (' + self.describe(chunk) + ')'))
                    return None
                if not valid(b, ver):
                    self.wrong('%s block %d: version %#x never written' % (name, b, ver))
                    return None
                vers.append(ver)
            if vers:
                seen.append((b, vers[0] if len(words) == 1 else None))
        return seen

    # ---- readers ----
    def reader(self):
        lay, rng = self.lay, self.rng
        kinds = (['r'] * 2 + ['s', 'o', 'a'])
        while not self.stopping():
            k = rng.choice(kinds)
            try:
                if k == 'r':
                    self.read_r()
                elif k == 's':
                    self.read_s(rng.randrange(lay.ns))
                elif k == 'o' and lay.no:
                    self.read_o(rng.randrange(lay.no))
                elif k == 'a' and lay.na:
                    self.read_a(rng.randrange(lay.na))
            except OSError as e:
                self.error('read %s' % k, e)

    def read_r(self):
        lay, rng = self.lay, self.rng
        i = rng.randrange(lay.nr)
        fid, size = lay.fid_r(i), lay.rblocks * BLK
        fd = self.op('open', os.open, os.path.join(lay.rbase, rname(i)), os.O_RDONLY)
        try:
            seq = rng.random() < 0.3
            off = rng.randrange(size)
            for _ in range(rng.randint(1, 16)):
                if self.stopping():
                    break
                n = rng.choice([1, 100, 4096, 8192, 65536, 131072, 1 << 20])
                if not seq:
                    off = rng.randrange(size)
                data = self.read_at(fd, off, n)
                want = min(n, size - off)
                if len(data) != want:
                    self.wrong('%s: read of %d at %d: %d bytes, want %d'
                               % (rname(i), n, off, len(data), want))
                    return
                b0, b1 = off // BLK, (off + len(data) + BLK - 1) // BLK
                exp = b''.join(block(fid, b, 0) for b in range(b0, b1))
                exp = exp[off - b0 * BLK: off - b0 * BLK + len(data)]
                if data != exp:
                    bad = next(j for j in range(len(data)) if data[j] != exp[j])
                    self.wrong('%s: byte %d differs (read of %d at %d)'
                               % (rname(i), off + bad, n, off))
                    return
                self.checked['exact'] += 1
                off = (off + len(data)) % size
        finally:
            self.op('close', os.close, fd)

    def read_whole(self, fd, name, fid, valid, limit, zeros=None, torn=None):
        """Read FD from 0 to EOF (at most LIMIT blocks) in pieces, each
        weakly checked; the (blk, ver) list, or None after a wrong byte."""
        off, seen = 0, []
        while off < limit * BLK:
            n = self.rng.choice([4096, 65536, 1 << 20])
            data = self.read_at(fd, off, n)
            if not data:
                break
            if len(data) % 8:
                self.wrong('%s: read at %d returned %d bytes (not whole words)'
                           % (name, off, len(data)))
                return None
            got = self.check_blocks(name, off, data, fid, valid, zeros, torn)
            if got is None:
                return None
            seen.extend(got)
            off += len(data)
        return seen, off

    def read_s(self, i):
        lay, sh = self.lay, self.sh
        fid, name = lay.fid_s(i), 's%02d' % i
        # what is published, read as a seqlock: generation, data, generation
        g1 = sh.sgen[i]
        n = sh.ssize[i]
        pub = sh.smap[i * lay.smax:i * lay.smax + max(n, 0)]
        if sh.sgen[i] != g1:
            g1 = -1  # changed meanwhile: no strict check
        try:
            fd = self.op('open', os.open, self.path(name), os.O_RDONLY)
        except FileNotFoundError:
            if 0 <= g1 <= 1:
                return  # not written yet
            raise
        zeros, torn = [], []
        try:
            r = self.read_whole(fd, name, fid, lambda b, v: 1 <= v <= sh.svmax[i],
                                lay.smax + 64, zeros, torn)
        finally:
            self.op('close', os.close, fd)
        g2 = sh.sgen[i]
        if r is None:
            return
        seen, size = r
        self.checked['weak'] += 1
        if g1 != g2 or g1 % 2 or n < 0:
            # overlapped a writer: zero blocks are the kernel's (see the top)
            self.checked['zero_blocks_overlapping_o_trunc'] += len(zeros)
            self.checked['torn_blocks_overlapping_writes'] += len(torn)
            return
        if zeros or torn:
            self.wrong('%s block %d: %d zero and %d torn blocks, with no writer meanwhile (gen %d)'
                       % (name, (zeros + torn)[0], len(zeros), len(torn), g1))
            return
        # no writer from before the open to after the close: exactly the
        # version published
        if size != n * BLK:
            self.wrong('%s: %d bytes read, %d published (no writer meanwhile, gen %d)'
                       % (name, size, n * BLK, g1))
            return
        for b, v in seen:
            if v != pub[b]:
                self.wrong('%s block %d: version %d, published %d (no writer meanwhile, gen %d)'
                           % (name, b, v, pub[b], g1))
                return
        self.checked['strict'] += 1

    def stamp_ok(self, seqs, nw, base):
        def ok(b, v):
            w, s = v >> 16, v & 0xFFFF
            return v == 0 or (w < nw and 1 <= s <= seqs[base + w])
        return ok

    def read_o(self, i):
        lay, rng = self.lay, self.rng
        fid, name = lay.fid_o(i), 'o%02d' % i
        fd = self.op('open', os.open, self.path(name), os.O_RDONLY)
        try:
            for _ in range(rng.randint(1, 8)):
                off = rng.randrange(lay.oblocks * BLK // 8) * 8
                n = rng.choice([8, 4096, 65536, 1 << 20])
                data = self.read_at(fd, off, n)
                want = min(n, lay.oblocks * BLK - off)
                if len(data) != want:
                    self.wrong('%s: read of %d at %d: %d bytes, want %d'
                               % (name, n, off, len(data), want))
                    return
                torn = []
                if self.check_blocks(name, off, data, fid, self.stamp_ok(
                        self.sh.oseq, lay.owriters, i * lay.owriters), None, torn) is None:
                    return
                self.checked['torn_blocks_overlapping_writes'] += len(torn)
                self.checked['weak'] += 1
        finally:
            self.op('close', os.close, fd)

    def read_a(self, i):
        lay = self.lay
        fid, name = lay.fid_a(i), 'a%02d' % i
        seqs, base = self.sh.aseq, i * lay.awriters

        def ok(b, v):
            w, s = v >> 16, v & 0xFFFF
            return w < lay.awriters and 1 <= s <= seqs[base + w]

        fd = self.op('open', os.open, self.path(name), os.O_RDONLY)
        try:
            # (a's block field is the record's shape, not the offset)
            off = 0
            while off < (64 << 20):
                data = self.read_at(fd, off, self.rng.choice([4096, 65536, 1 << 20]))
                if not data:
                    break
                if len(data) % BLK:
                    self.wrong('%s: read at %d returned %d bytes (not whole blocks)'
                               % (name, off, len(data)))
                    return
                for p in range(0, len(data), BLK):
                    chunk = data[p:p + BLK]
                    w = chunk[:8]
                    words = [w]
                    if chunk != w * WORDS:  # a page racing its write
                        words = [struct.pack('<Q', x) for x in set(memoryview(chunk).cast('Q'))]
                        self.checked['torn_blocks_overlapping_writes'] += 1
                    for w in words:
                        mg, f, shape, v = unword(w)
                        if mg != MAGIC or f != fid or not ok(0, v) \
                                or (shape & 0xFF) >= (shape >> 8):
                            self.wrong('%s block %d: not a record block (magic %#x file %d'
                                       ' shape %#x version %#x)%s'
                                       % (name, (off + p) // BLK, mg, f, shape, v,
                                          '' if len(words) == 1 else ' ' + self.describe(chunk)))
                            return
                off += len(data)
            self.checked['weak'] += 1
        finally:
            self.op('close', os.close, fd)

    # ---- writers ----
    def writer_s(self, i):
        lay, sh, rng = self.lay, self.sh, self.rng
        fid, name = lay.fid_s(i), 's%02d' % i
        model, ver = [], 0
        while not self.stopping():
            ver += 1
            sh.svmax[i] = ver
            sh.sgen[i] += 1  # odd: being written
            try:
                if model and rng.random() < 0.4:
                    # patch a block range in place (may grow the file)
                    a = rng.randrange(len(model))
                    b = min(lay.smax, a + rng.randint(1, 1024))
                    fd = self.op('open', os.open, self.path(name), os.O_RDWR)
                    try:
                        self.write_all(fd, b''.join(block(fid, k, ver) for k in range(a, b)),
                                       a * BLK)
                    finally:
                        self.op('close', os.close, fd)
                    model[a:b] = [ver] * (b - a)
                else:
                    # rewrite: small (one PUT) or streamed (multipart)
                    n = rng.randint(1, lay.smax if rng.random() < 0.5 else max(1, lay.smax // 5))
                    fd = self.op('open', os.open, self.path(name),
                                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    try:
                        k = 0
                        while k < n:
                            m = min(n - k, rng.choice([1, 16, 64, 256]))
                            self.write_all(fd, b''.join(block(fid, j, ver) for j in range(k, k + m)))
                            k += m
                        if rng.random() < 0.1:
                            self.op('fsync', os.fsync, fd)
                    finally:
                        self.op('close', os.close, fd)
                    model = [ver] * n
                for k, v in enumerate(model):
                    sh.smap[i * lay.smax + k] = v
                sh.ssize[i] = len(model)
            except OSError as e:
                self.error('write %s version %d' % (name, ver), e)
                model = []  # unknown now: readers keep to the weak check
                sh.ssize[i] = -1
            sh.sgen[i] += 1  # even: published
            # a rest, so that readers find it with no writer (the strict check)
            rest = time.monotonic() + rng.uniform(0.2, 2.0)
            while not self.stopping() and time.monotonic() < rest:
                time.sleep(0.05)
        self.journal = {'file': i, 'size': sh.ssize[i], 'ver': ver}

    def writer_o(self, i, slot):
        lay, sh, rng = self.lay, self.sh, self.rng
        fid, name = lay.fid_o(i), 'o%02d' % i
        seq = 0
        while not self.stopping():
            try:
                fd = self.op('open', os.open, self.path(name), os.O_RDWR)
            except OSError as e:
                self.error('open %s' % name, e)
                continue
            try:
                for _ in range(rng.randint(1, 4)):
                    seq += 1
                    v = stamp(slot, seq)
                    sh.oseq[i * lay.owriters + slot] = seq
                    a = rng.randrange(lay.oblocks)
                    b = min(lay.oblocks, a + rng.choice([1, 4, 16, 64, 256]))
                    t0 = time.monotonic()
                    ok = True
                    try:
                        self.write_all(fd, b''.join(block(fid, k, v) for k in range(a, b)), a * BLK)
                    except OSError as e:
                        ok = False
                        self.error('pwrite %s' % name, e)
                    self.journal.append([seq, a, b, t0, time.monotonic(), ok])
                if rng.random() < 0.2:
                    self.op('fsync', os.fsync, fd)
            except OSError as e:
                self.error('fsync %s' % name, e)
            finally:
                try:
                    self.op('close', os.close, fd)
                except OSError as e:
                    self.error('close %s' % name, e)

    def writer_a(self, i, slot):
        lay, sh, rng = self.lay, self.sh, self.rng
        fid, name = lay.fid_a(i), 'a%02d' % i
        seq = 0
        while not self.stopping():
            try:
                fd = self.op('open', os.open, self.path(name), os.O_WRONLY | os.O_APPEND)
            except OSError as e:
                self.error('open %s' % name, e)
                continue
            try:
                for _ in range(rng.randint(1, 8)):
                    seq += 1
                    v = stamp(slot, seq)
                    sh.aseq[i * lay.awriters + slot] = seq
                    n = rng.randint(1, 8)
                    rec = b''.join(block(fid, (n << 8) | p, v) for p in range(n))
                    try:
                        got = self.op('write', os.write, fd, rec)
                        self.sh.bytes[self.wid] += got
                        ok = got == len(rec)
                        if not ok:
                            self.error('append %s' % name, 'short write %d of %d' % (got, len(rec)))
                    except OSError as e:
                        ok = False
                        self.error('append %s' % name, e)
                    self.journal.append([seq, n, ok])
            finally:
                try:
                    self.op('close', os.close, fd)
                except OSError as e:
                    self.error('close %s' % name, e)

    def run(self, out):
        kind, i, slot = self.spec
        try:
            if kind == 'r':
                self.reader()
            elif kind == 'ws':
                self.writer_s(i)
            elif kind == 'wo':
                self.writer_o(i, slot)
            elif kind == 'wa':
                self.writer_a(i, slot)
        except Exception as e:  # a bug here must not look like a pass
            self.error('worker %s died' % (self.spec,), repr(e))
        with open(out, 'w') as f:
            json.dump({'spec': self.spec, 'errors': self.errors, 'nerr': self.nerr,
                       'bad': self.bad, 'nbad': self.nbad, 'maxlat': self.maxlat,
                       'journal': self.journal, 'checked': self.checked}, f)


def worker_main(wid, spec, lay, sh, base, seed, out):
    Worker(wid, spec, lay, sh, base, seed).run(out)


# ---- the final content -------------------------------------------------------

def final_check(base, lay, model):
    """Check every s, o and a file under BASE against MODEL (from the
    writers' journals); a list of what is wrong."""
    bad = []

    def blocks(name):
        with open(os.path.join(base, name), 'rb') as f:
            data = f.read()
        if len(data) % BLK:
            bad.append('%s: %d bytes, not whole blocks' % (name, len(data)))
        return [data[p:p + BLK] for p in range(0, len(data) - len(data) % BLK, BLK)]

    for i in range(lay.ns):
        name, fid, m = 's%02d' % i, lay.fid_s(i), model['s'][i]
        if m is None or m['size'] < 0:
            continue  # its writer failed: counted there
        bl = blocks(name)
        if len(bl) != m['size']:
            bad.append('%s: %d blocks, the writer left %d' % (name, len(bl), m['size']))
            continue
        for b, chunk in enumerate(bl):
            if chunk != block(fid, b, m['map'][b]):
                bad.append('%s block %d: not version %d (holds %s)'
                           % (name, b, m['map'][b], unword(chunk[:8])))
                break
    for i in range(lay.no):
        name, fid = 'o%02d' % i, lay.fid_o(i)
        writes = model['o'][i]  # slot -> [[seq, a, b, t0, t1, ok], ...]
        bl = blocks(name)
        if len(bl) != lay.oblocks:
            bad.append('%s: %d blocks, want %d' % (name, len(bl), lay.oblocks))
            continue
        cover = {}  # block -> writes covering it
        for slot, js in enumerate(writes):
            for seq, a, b, t0, t1, ok in js:
                if ok:
                    for k in range(a, b):
                        cover.setdefault(k, []).append((slot, seq, t0, t1))
        for b, chunk in enumerate(bl):
            w = chunk[:8]
            mg, f, blk, v = unword(w)
            if chunk != w * WORDS or mg != MAGIC or f != fid or blk != b:
                bad.append('%s block %d: not a block of its own (%s)' % (name, b, unword(w)))
                break
            cv = cover.get(b, [])
            if v == 0:
                if cv:
                    bad.append('%s block %d: still the first version, though %d writes covered it'
                               % (name, b, len(cv)))
                    break
                continue
            slot, seq = v >> 16, v & 0xFFFF
            mine = [c for c in cv if c[0] == slot and c[1] == seq]
            if not mine:
                bad.append('%s block %d: stamp (%d, %d) of no write that covered it'
                           % (name, b, slot, seq))
                break
            t1 = mine[0][3]
            later = [c for c in cv if (c[0] == slot and c[1] > seq) or c[2] > t1]
            if later:
                bad.append('%s block %d: holds (%d, %d), but (%d, %d) covered it after'
                           % (name, b, slot, seq, later[0][0], later[0][1]))
                break
    for i in range(lay.na):
        name, fid = 'a%02d' % i, lay.fid_a(i)
        want = {}
        for slot, js in enumerate(model['a'][i]):
            for seq, n, ok in js:
                want[(slot, seq)] = (n, ok)
        bl = blocks(name)
        seen, last, p = set(), {}, 0
        while p < len(bl):
            w = bl[p][:8]
            mg, f, shape, v = unword(w)
            n, part = shape >> 8, shape & 0xFF
            key = (v >> 16, v & 0xFFFF)
            if bl[p] != w * WORDS or mg != MAGIC or f != fid or part != 0 or key not in want:
                bad.append('%s block %d: not the start of a record written (%s)'
                           % (name, p, unword(w)))
                break
            if want[key][0] != n or p + n > len(bl) or any(
                    bl[p + k] != block(fid, (n << 8) | k, v) for k in range(n)):
                bad.append('%s block %d: record (%d, %d) of %d blocks not whole'
                           % (name, p, key[0], key[1], n))
                break
            if key in seen:
                bad.append('%s block %d: record (%d, %d) twice' % (name, p, key[0], key[1]))
                break
            if last.get(key[0], 0) > key[1]:
                bad.append('%s block %d: record (%d, %d) after (%d, %d)'
                           % (name, p, key[0], key[1], key[0], last[key[0]]))
                break
            seen.add(key)
            last[key[0]] = key[1]
            p += n
        missing = [k for k, (n, ok) in want.items() if ok and k not in seen]
        if missing:
            bad.append('%s: %d records written are missing, e.g. %s'
                       % (name, len(missing), missing[:3]))
    return bad


# ---- the parent ---------------------------------------------------------------

def rss(pid):
    out = {}
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                k, _, v = line.partition(':')
                if k in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile', 'RssShmem'):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def show_hang(sh, lay, pids, now, hang_s, dpid):
    print('# HANG: operations pending for more than %d s:' % hang_s)
    for i, t in enumerate(sh.start):
        if t and now - t > hang_s:
            print('#   worker %d %s: %s for %.0f s; kernel stack: %s' % (
                i, lay.workers[i], OPS[sh.kind[i]], now - t,
                ' '.join(open_quiet('/proc/%d/stack' % pids[i]).split('\n')[:6])))
    waits = {}
    for t in os.listdir('/proc/%d/task' % dpid) if os.path.isdir('/proc/%d' % dpid) else []:
        w = open_quiet('/proc/%d/task/%s/wchan' % (dpid, t)).strip() or '?'
        waits[w] = waits.get(w, 0) + 1
    print('#   the daemon\'s threads wait in: %s' % waits)


def open_quiet(p):
    try:
        with open(p) as f:
            return f.read()
    except OSError:
        return ''


def run(a):
    lay = Layout(a)
    base = os.path.join(a.mnt, a.prefix)
    ctx = mp.get_context('fork')
    sh = Shared(ctx, lay, len(lay.workers))
    os.makedirs(a.dir, exist_ok=True)
    # the files the workers share, before they start
    os.makedirs(base, exist_ok=True)
    for i in range(lay.no):
        with open(os.path.join(base, 'o%02d' % i), 'wb') as f:
            for b in range(0, lay.oblocks, 256):
                f.write(b''.join(block(lay.fid_o(i), k, 0)
                                 for k in range(b, min(lay.oblocks, b + 256))))
    for i in range(lay.na):
        open(os.path.join(base, 'a%02d' % i), 'wb').close()
    for i in range(lay.nr):
        st = os.stat(os.path.join(lay.rbase, rname(i)))
        if st.st_size != lay.rblocks * BLK:
            print('# %s: %d bytes, want %d' % (rname(i), st.st_size, lay.rblocks * BLK))
            return 1
    print('# seed %d: %d workers (%d writers: %d s files, %d o files x %d, %d a files x %d;'
          ' %d readers) for %d s' % (a.seed, len(lay.workers), len(lay.writers), lay.ns,
                                     lay.no, lay.owriters, lay.na, lay.awriters,
                                     len(lay.readers), a.duration))
    sys.stdout.flush()
    procs = []
    for wid, spec in enumerate(lay.workers):
        p = ctx.Process(target=worker_main, args=(wid, spec, lay, sh, base, a.seed,
                                                  os.path.join(a.dir, 'w%03d.json' % wid)))
        p.start()
        procs.append(p)
    pids = [p.pid for p in procs]
    t_start = time.monotonic()
    t_end = t_start + a.duration
    windows, wdone, wstart = [], 0, t_start
    rss_max, rss_at = 0, {}
    samples = []
    hang = None
    last_done = 0
    progress_done, progress_at = 0, t_start  # the last completion seen
    while True:
        time.sleep(1.0)
        now = time.monotonic()
        r = rss(a.daemon_pid)
        if r.get('VmRSS', 0) > rss_max:
            rss_max, rss_at = r['VmRSS'], r
        samples.append(r.get('VmRSS', 0))
        done = sum(sh.done)
        pending = sum(1 for t in sh.start if t)
        if done != progress_done or pending == 0:
            progress_done, progress_at = done, now
        elif now - progress_at >= a.stall_s and now <= t_end + 0.5:
            hang = ('no operation completed in %.0f s while %d were pending'
                    % (now - progress_at, pending))
        oldest = max((now - t for t in sh.start if t), default=0.0)
        if oldest > a.hang_s:
            hang = 'an operation pending for %.0f s' % oldest
        if now - wstart >= a.window:
            n = done - last_done
            # (while the load runs: after it, a last upload may be alone)
            if now <= t_end + 0.5:
                windows.append(n)
            last_done, wstart = done, now
        if now > t_end + a.hang_s + 30 and not hang:
            hang = 'workers still running %.0f s after the end' % (now - t_end)
        if hang:
            show_hang(sh, lay, pids, now, min(a.hang_s, a.stall_s), a.daemon_pid)
            print('# hang: %s' % hang)
            for p in procs:
                p.kill()
            return 3
        if now >= t_end:
            sh.stop.value = 1
        if now >= t_end and not any(p.is_alive() for p in procs):
            break
    elapsed = time.monotonic() - t_start
    for p in procs:
        p.join()
    res = []
    for wid in range(len(lay.workers)):
        try:
            with open(os.path.join(a.dir, 'w%03d.json' % wid)) as f:
                res.append(json.load(f))
        except (OSError, ValueError) as e:
            res.append({'spec': lay.workers[wid], 'errors': ['no result: %s' % e], 'nerr': 1,
                        'bad': [], 'nbad': 0, 'maxlat': {}, 'journal': [], 'checked': {}})
    # the final model, from the journals
    model = {'s': [None] * lay.ns, 'o': [[[] for _ in range(lay.owriters)] for _ in range(lay.no)],
             'a': [[[] for _ in range(lay.awriters)] for _ in range(lay.na)]}
    for r in res:
        kind, i, slot = r['spec']
        if kind == 'ws':
            n = sh.ssize[i]
            model['s'][i] = {'size': n, 'map': [sh.smap[i * lay.smax + k] for k in range(max(n, 0))]}
        elif kind == 'wo':
            model['o'][i][slot] = r['journal']
        elif kind == 'wa':
            model['a'][i][slot] = r['journal']
    with open(os.path.join(a.dir, 'model.json'), 'w') as f:
        json.dump({'layout': vars(a), 'model': model}, f)
    final = final_check(base, lay, model)
    nerr = sum(r['nerr'] for r in res)
    nbad = sum(r['nbad'] for r in res)
    maxlat = {}
    for r in res:
        for k, v in r['maxlat'].items():
            maxlat[k] = max(maxlat.get(k, 0.0), v)
    checked = {}
    for r in res:
        for k, v in r['checked'].items():
            checked[k] = checked.get(k, 0) + v
    ops, nbytes = sum(sh.done), sum(sh.bytes)
    ws = sorted(windows)
    hwm = rss(a.daemon_pid).get('VmHWM', 0)
    rep = {'seed': a.seed, 'elapsed': elapsed, 'ops': ops, 'bytes': nbytes,
           'windows': windows, 'window_s': a.window, 'maxlat': maxlat, 'checked': checked,
           'errors': nerr, 'wrong': nbad, 'final': final, 'rss_max': rss_max, 'rss_at_max': rss_at,
           'vmhwm': hwm, 'rss_samples': samples}
    with open(a.report, 'w') as f:
        json.dump(rep, f)
    mib = 1 << 20
    print('# %d operations, %.0f MiB moved in %.0f s; per %d s window: min %d, median %d, max %d ops'
          % (ops, nbytes / mib, elapsed, a.window, ws[0] if ws else 0,
             ws[len(ws) // 2] if ws else 0, ws[-1] if ws else 0))
    print('# checked: %s' % checked)
    print('# longest wait per operation: %s' % ', '.join(
        '%s %.2f s' % (k, v) for k, v in sorted(maxlat.items())))
    print('# daemon VmRSS max %.0f MiB (anon %.0f, file %.0f, shmem %.0f), VmHWM %.0f MiB'
          % (rss_max / mib, rss_at.get('RssAnon', 0) / mib, rss_at.get('RssFile', 0) / mib,
             rss_at.get('RssShmem', 0) / mib, hwm / mib))
    rc = 0
    for r in res:
        for e in r['errors']:
            print('# error in %s: %s' % (r['spec'], e))
        for b in r['bad']:
            print('# WRONG in %s: %s' % (r['spec'], b))
    for b in final:
        print('# FINAL: %s' % b)
    if nerr or nbad or final:
        print('# %d errors, %d wrong reads, %d bad final files' % (nerr, nbad, len(final)))
        rc = 1
    return rc


def verify(a):
    with open(os.path.join(a.dir, 'model.json')) as f:
        m = json.load(f)
    m['layout']['mnt'] = a.mnt
    lay = Layout(argparse.Namespace(**m['layout']))
    model = m['model']
    bad = final_check(os.path.join(a.mnt, m['layout']['prefix']), lay, model)
    for b in bad:
        print('# FINAL: %s' % b)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    g = sub.add_parser('gen')
    g.add_argument('fid', type=int)
    g.add_argument('nblocks', type=int)
    r = sub.add_parser('run')
    r.add_argument('mnt')
    r.add_argument('dir')
    r.add_argument('--prefix', default='load', help='directory of the s, o, a files')
    r.add_argument('--r-prefix', default='ro', help='directory of the r files')
    r.add_argument('--seed', type=int, required=True)
    r.add_argument('--duration', type=int, default=30)
    r.add_argument('--daemon-pid', type=int, required=True)
    r.add_argument('--report', required=True)
    r.add_argument('--hang-s', type=int, default=120)
    r.add_argument('--window', type=int, default=5)
    r.add_argument('--stall-s', type=int, default=20)
    r.add_argument('--readers', type=int, default=64)
    r.add_argument('--r-files', type=int, default=8)
    r.add_argument('--r-blocks', type=int, default=10240)       # 40 MiB
    r.add_argument('--s-files', type=int, default=6)
    r.add_argument('--s-max-blocks', type=int, default=6144)    # 24 MiB
    r.add_argument('--o-files', type=int, default=2)
    r.add_argument('--o-blocks', type=int, default=4096)        # 16 MiB
    r.add_argument('--o-writers', type=int, default=3)
    r.add_argument('--a-files', type=int, default=2)
    r.add_argument('--a-writers', type=int, default=2)
    v = sub.add_parser('verify')
    v.add_argument('dir')
    v.add_argument('mnt')
    a = ap.parse_args()
    if a.cmd == 'gen':
        out = sys.stdout.buffer
        for b in range(0, a.nblocks, 256):
            out.write(b''.join(block(a.fid, k, 0) for k in range(b, min(a.nblocks, b + 256))))
        return 0
    if a.cmd == 'verify':
        return verify(a)
    return run(a)


if __name__ == '__main__':
    sys.exit(main())
