#!/usr/bin/env python3
"""chaos_work: a seeded, bounded workload on an s3rdmafs mount checked
against a model, for test_fs_chaos.sh (faults, RGW restarts, gateway kills,
daemon kills). Standard library only.

  chaos_work.py run    --state F --mnt M --bucket B --prefix P --seed S
                       --profile mixed|seqread|randread|stream|dirrename
                       [--ops N] [--time-limit S] [--admin URL] [--ctl DIR]
  chaos_work.py settle --state F [--mnt M] [--wait S]
  chaos_work.py verify --state F --cache-dir C [--scenario NAME]
                       [--results FILE] [--faults N]
  chaos_work.py killwrite --state F ... --sizes N... [--hold N --ctl DIR]
                       (files whose close() fails, then one held open half
                       written, before the daemon is killed; cmd_killwrite)

"run" works under PREFIX/ of the mount (a directory it creates) and keeps a
model: for each file the bytes the mount must show, and whether the server
must already hold them ("durable": its last close() or fsync() returned 0)
or must get them eventually ("pending": close(), fsync() or a write
failed: the daemon keeps the data and retries). Invariants, checked as it
goes:
  - every read returns the model's bytes or an error, never other bytes
    (corrupt bytes: bytes that differ, and bytes missing before the end);
  - after a close() or fsync() that returned 0 the server holds exactly the
    file (asked of RGW directly, SigV4 here, never through the mount or the
    proxy): otherwise a lost write (or corrupt bytes, for other content);
  - after an operation that failed, the mount shows one of the outcomes the
    operation allows (renamed or not, each file whole), and the server holds
    for each name nothing, or one complete version ever written there
    (a partial object otherwise). This "resync" pauses the proxy's faults
    (--admin) while it looks, and resumes them.
"settle" waits (bounded) with faults paused until the server holds every
pending file. "verify", after the unmount, checks through awscli: every
file of the model is on the server with its bytes, or kept in
CACHE/unsaved/ (same bytes); no other object under the prefix; no multipart
upload left in the bucket. It prints one summary line and appends one
tab-separated line to --results; exit 1 when an invariant failed.

Seeds: all randomness comes from random.Random(seed); the command line
printed first replays it (the faults' timing still varies from run to run).
Environment: S3R_ENDPOINT (RGW), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_REGION.
"""
import argparse
import datetime
import errno
import hashlib
import hmac
import http.client
import json
import os
import random
import shlex
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

KiB = 1 << 10
MiB = 1 << 20
AWSD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib",
                    "awsd.py")


def md5(b):
    return hashlib.md5(b).hexdigest()


def errname(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if isinstance(
        e, OSError) else type(e).__name__


# ---------------------------------------------------------------- S3 direct

class S3:
    """GET/HEAD/list to RGW itself, SigV4-signed (not through the mount)"""

    def __init__(self):
        u = urllib.parse.urlsplit(os.environ["S3R_ENDPOINT"])
        self.host, self.port = u.hostname, u.port or 80
        self.ak = os.environ["AWS_ACCESS_KEY_ID"]
        self.sk = os.environ["AWS_SECRET_ACCESS_KEY"]
        self.region = os.environ.get("AWS_REGION", "us-east-1")

    def request(self, method, path, query=None, body=b""):
        query = sorted((query or {}).items())
        qs = "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"),
                                 urllib.parse.quote(v, safe="-_.~"))
                      for k, v in query)
        now = datetime.datetime.now(datetime.timezone.utc)
        amz = now.strftime("%Y%m%dT%H%M%SZ")
        hostport = "%s:%d" % (self.host, self.port)
        ph = hashlib.sha256(body).hexdigest()
        hdrs = {"host": hostport, "x-amz-date": amz,
                "x-amz-content-sha256": ph}
        names = sorted(hdrs)
        creq = "\n".join([method, path, qs,
                          "".join("%s:%s\n" % (n, hdrs[n]) for n in names),
                          ";".join(names), ph])
        scope = "%s/%s/s3/aws4_request" % (amz[:8], self.region)
        sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
        k = ("AWS4" + self.sk).encode()
        for part in (amz[:8], self.region, "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        hdrs["authorization"] = (
            "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
            "Signature=%s" % (self.ak, scope, ";".join(names), sig))
        c = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            c.request(method, path + ("?" + qs if qs else ""), headers=hdrs,
                      body=body if body or method in ("PUT", "POST") else None)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def get(self, bucket, key):
        """the object's bytes, or None when there is none; raises on other
        answers (after a few tries: RGW may be restarting)"""
        path = "/%s/%s" % (bucket, urllib.parse.quote(key, safe="/-_.~"))
        last = None
        for i in range(40):
            try:
                st, body = self.request("GET", path)
                if st == 200:
                    return body
                if st == 404:
                    return None
                last = "HTTP %d" % st
            except (OSError, http.client.HTTPException) as e:
                last = str(e)
            time.sleep(0.5)
        raise RuntimeError("GET %s: %s" % (path, last))


# ---------------------------------------------------------------- the model

class Bad(Exception):
    pass


class Chaos:
    def __init__(self, a, state=None):
        self.a = a
        self.s3 = S3()
        st = state or {}
        self.bucket = st.get("bucket", getattr(a, "bucket", None))
        self.prefix = st.get("prefix", getattr(a, "prefix", None))
        self.mnt = getattr(a, "mnt", None) or st.get("mnt")
        self.files = {}       # name -> bytes the mount must show
        self.pending = set()  # names the server may not hold yet
        self.dirs = set(st.get("dirs", []))
        self.versions = {k: set(v) for k, v in st.get("versions", {}).items()}
        self.c = dict(ops=0, errors=0, corrupt_bytes=0, corrupt=0, lost=0,
                      partial=0, other=0, violations=0, resyncs=0)
        self.c.update(st.get("counters", {}))
        self.errs = dict(st.get("errs", {}))
        self.notes = list(st.get("notes", []))
        # destinations of failed renames: the server may hold complete
        # copies there that the mount does not show (yet)
        self.maybe = set(st.get("maybe", []))
        for name, (m, size, pend) in st.get("files", {}).items():
            self.files[name] = None  # loaded: only its md5 and size are known
            if pend:
                self.pending.add(name)
        self.md5s = {n: v[0] for n, v in st.get("files", {}).items()}
        self.sizes = {n: v[1] for n, v in st.get("files", {}).items()}
        self.op = "(setup)"
        self.index = 0

    # -- persistence (bytes are kept only in memory; the state has md5s)
    def save(self):
        st = dict(bucket=self.bucket, prefix=self.prefix, mnt=self.mnt,
                  dirs=sorted(self.dirs),
                  files={n: [self.md5_of(n), self.size_of(n),
                             n in self.pending] for n in self.files},
                  versions={k: sorted(v) for k, v in self.versions.items()},
                  maybe=sorted(self.maybe),
                  counters=self.c, errs=self.errs, notes=self.notes[-50:])
        tmp = self.a.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f)
        os.rename(tmp, self.a.state)

    def md5_of(self, n):
        b = self.files[n]
        return md5(b) if b is not None else self.md5s[n]

    def size_of(self, n):
        b = self.files[n]
        return len(b) if b is not None else self.sizes[n]

    # -- paths
    def path(self, name=""):
        return os.path.join(self.mnt, self.prefix, name) if name else \
            os.path.join(self.mnt, self.prefix)

    def key(self, name):
        return "%s/%s" % (self.prefix, name)

    # -- reporting
    def violation(self, kind, text, amount=1):
        """kind: corrupt_bytes (amount: how many), lost, partial, other"""
        self.c["violations"] += 1
        if kind == "corrupt_bytes":
            self.c["corrupt_bytes"] += amount
            self.c["corrupt"] += 1
        else:
            self.c[kind] += 1
        msg = "VIOLATION %s: op %d %s: %s" % (kind, self.index, self.op, text)
        self.notes.append(msg)
        print("# " + msg, flush=True)

    def error(self, e, where):
        self.c["errors"] += 1
        k = "%s:%s" % (where, errname(e))
        self.errs[k] = self.errs.get(k, 0) + 1

    # -- proxy control
    def proxy(self, what):
        if not self.a.admin:
            return
        for _ in range(20):
            try:
                urllib.request.urlopen(self.a.admin + "/" + what,
                                       timeout=5).read()
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the fault proxy's admin port does not answer")

    # -- server checks
    def server(self, name):
        return self.s3.get(self.bucket, self.key(name))

    def known(self, name, data):
        self.versions.setdefault(name, set()).add(md5(data))

    def check_durable(self, name, when):
        """the server must hold exactly the model's bytes now"""
        want = self.files[name]
        got = self.server(name)
        if got == want:
            return
        if got is None:
            self.violation("lost", "%s returned 0 but %s is not on the "
                           "server" % (when, name))
        elif md5(got) in self.versions.get(name, ()):
            self.violation("lost", "%s returned 0 but the server holds an "
                           "older version of %s (%d bytes, want %d)" %
                           (when, name, len(got), len(want)))
        else:
            self.violation("corrupt_bytes", "%s returned 0 but the server's "
                           "%s differs: %s" % (when, name,
                                               diff(got, want)),
                           max(1, ndiff(got, want)))

    def check_server_sane(self, name):
        """nothing, or one complete version ever written, under the name"""
        got = self.server(name)
        if got is not None and md5(got) not in self.versions.get(name, ()):
            self.violation("partial", "the server holds a version of %s "
                           "never written (%d bytes)" % (name, len(got)))

    # -- reading through the mount
    def read_all(self, name):
        with open(self.path(name), "rb", buffering=0) as f:
            out = bytearray()
            while True:
                b = f.read(MiB)
                if not b:
                    return bytes(out)
                out += b

    def compare_read(self, name, off, got, want_len):
        """bytes read at off against the model"""
        want = self.files[name][off:off + want_len]
        if got == want:
            return True
        self.violation("corrupt_bytes", "read of %s at %d: %s" %
                       (name, off, diff(got, want)), max(1, ndiff(got, want)))
        return False

    def resync(self, names, allowed, at_least_one=None):
        """after a failed operation: look (faults paused) at what the mount
        shows for each name; allowed[name]: the contents it may show (bytes,
        or None for absent; ("prefix", b, n): a prefix of b of n bytes or
        more). at_least_one: a list of names of which one must exist (the
        data must not vanish). The model takes what was seen."""
        self.c["resyncs"] += 1
        self.proxy("pause")
        try:
            seen = {}
            for n in names:
                seen[n] = self.look(n)
            for n in names:
                got = seen[n]
                if not any(fits(got, c) for c in allowed[n]):
                    if got is None:
                        self.violation("lost", "%s vanished after a failed "
                                       "%s" % (n, self.op))
                    else:
                        self.violation(
                            "corrupt_bytes", "%s shows %d bytes (md5 %s) "
                            "after a failed %s, none of the outcomes "
                            "allowed" % (n, len(got), md5(got), self.op),
                            len(got) or 1)
                if got is None:
                    self.files.pop(n, None)
                    self.pending.discard(n)
                else:
                    self.files[n] = got
                    self.known(n, got)
                    self.pending.add(n)
            if at_least_one and all(seen[n] is None for n in at_least_one):
                self.violation("lost", "none of %s exists after a failed %s"
                               % (at_least_one, self.op))
            for n in names:
                self.check_server_sane(n)
        finally:
            self.proxy("resume")

    def look(self, name):
        """the file's content as the mount shows it now (None: absent);
        retried: the server may be restarting"""
        last = None
        for i in range(30):
            try:
                return self.read_all(name)
            except FileNotFoundError:
                return None
            except OSError as e:
                last = e
                time.sleep(1)
        raise Bad("cannot read %s through the mount to resync: %s" %
                  (name, last))

    def look_dir(self, d):
        """the names in directory d as the mount shows it (None: no such
        directory); retried"""
        for i in range(30):
            try:
                if not os.path.isdir(self.path(d)):
                    return None
                return set(os.listdir(self.path(d)))
            except FileNotFoundError:
                return None
            except OSError:
                time.sleep(1)
        raise Bad("cannot list %s through the mount" % d)


def fits(got, c):
    if isinstance(c, tuple):
        _, full, n = c
        return got is not None and len(got) >= n and full.startswith(got)
    return got == c


def ndiff(a, b):
    n = sum(1 for x, y in zip(a, b) if x != y)
    return n + abs(len(a) - len(b))


def diff(got, want):
    i = next((k for k, (x, y) in enumerate(zip(got, want)) if x != y),
             min(len(got), len(want)))
    return "got %d bytes (md5 %s), want %d (md5 %s); first difference at " \
        "%d: got %r, want %r" % (len(got), md5(got), len(want), md5(want), i,
                                 bytes(got[i:i + 8]), bytes(want[i:i + 8]))


# ---------------------------------------------------------------- the run

class Run(Chaos):
    def __init__(self, a):
        super().__init__(a)
        self.rng = random.Random(a.seed)
        self.t0 = time.monotonic()
        self.n_new = 0

    def content(self, size):
        return random.Random(self.rng.getrandbits(64)).randbytes(size)

    def fresh(self, stem="f"):
        self.n_new += 1
        return "%s%03d" % (stem, self.n_new)

    def names(self, pred=lambda n: True):
        return sorted(n for n in self.files if pred(n))

    # ---- operations: each returns nothing; errors are counted, outcomes
    # ---- checked
    def op_write(self, name=None, size=None, fsync=None, chunk=MiB,
                 large=False):
        if name is None:
            if self.files and self.rng.random() < 0.4:
                name = self.rng.choice(self.names())
            else:
                d = self.rng.choice(sorted(self.dirs))
                name = (d + "/" if d else "") + self.fresh()
        if size is None:
            size = self.rng.randint(6 * MiB, 20 * MiB) if large else \
                self.rng.choice([0, 1, 4 * KiB, self.rng.randint(1, 300 * KiB)])
        if fsync is None:
            fsync = self.rng.random() < 0.3
        data = self.content(size)
        old = self.files.get(name)
        self.op = "write %s (%d bytes%s%s)" % (
            name, size, ", fsync" if fsync else "",
            ", over the old" if old is not None else "")
        self.known(name, data)
        try:
            fd = os.open(self.path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                         0o644)
        except OSError as e:
            self.error(e, "open-w")
            self.resync([name], {name: [old] if old is not None else
                                 [None, b""]})
            return
        acked, werr = 0, None
        view = memoryview(data)
        while acked < size:
            try:
                k = os.write(fd, view[acked:acked + chunk])
            except OSError as e:
                werr = e
                self.error(e, "write")
                break
            acked += k
        self.files[name] = data[:acked] if werr else data
        self.pending.add(name)
        ok_at = None
        if fsync and not werr:
            try:
                os.fsync(fd)
                ok_at = "fsync"
            except OSError as e:
                self.error(e, "fsync")
        try:
            os.close(fd)
            ok_at = "close"
        except OSError as e:
            self.error(e, "close")
        if werr:
            self.resync([name], {name: [("prefix", data, acked)]})
            if ok_at == "close":
                self.pending.discard(name)
                self.check_durable(name, "close")
            return
        if ok_at:
            self.pending.discard(name)
            self.check_durable(name, ok_at)
        else:
            self.check_server_sane(name)

    def op_patch(self):
        """pwrite a few blocks into an existing file (UploadPartCopy)"""
        cands = self.names(lambda n: self.files[n] and len(self.files[n]) > 0)
        if not cands:
            return self.op_write()
        name = self.rng.choice(cands)
        old = self.files[name]
        off = self.rng.randrange(0, len(old) + 1)
        n = self.rng.randint(1, 96 * KiB)
        patch = self.content(n)
        new = bytearray(old)
        if off + n > len(new):
            new.extend(b"\0" * (off + n - len(new)))
        new[off:off + n] = patch
        new = bytes(new)
        self.op = "patch %s (%d bytes at %d of %d)" % (name, n, off, len(old))
        self.known(name, new)
        try:
            fd = os.open(self.path(name), os.O_RDWR)
        except OSError as e:
            self.error(e, "open-rw")
            self.resync([name], {name: [old]})
            return
        try:
            k = os.pwrite(fd, patch, off)
            if k != n:
                self.violation("other", "pwrite wrote %d of %d" % (k, n))
                new = None
        except OSError as e:
            self.error(e, "pwrite")
            new = None
        ok = True
        try:
            os.close(fd)
        except OSError as e:
            self.error(e, "close")
            ok = False
        if new is None:
            self.resync([name], {name: [old, new] if new else [old]})
            return
        self.files[name] = new
        if ok:
            self.pending.discard(name)
            self.check_durable(name, "close")
        else:
            self.pending.add(name)
            self.check_server_sane(name)

    def op_read_seq(self, name=None):
        name = name or self.rng.choice(self.names() or [None])
        if name is None:
            return
        self.op = "read %s (%d bytes)" % (name, len(self.files[name]))
        want = self.files[name]
        got = bytearray()
        try:
            with open(self.path(name), "rb", buffering=0) as f:
                while True:
                    b = f.read(self.rng.choice([4 * KiB, 128 * KiB, MiB]))
                    if not b:
                        break
                    if want[len(got):len(got) + len(b)] != b:
                        self.compare_read(name, len(got), b, len(b))
                        return
                    got += b
        except OSError as e:
            self.error(e, "read")
            return
        if len(got) != len(want):
            self.violation("corrupt_bytes", "read of %s ended at %d of %d "
                           "bytes without an error" %
                           (name, len(got), len(want)),
                           abs(len(want) - len(got)))

    def op_read_rand(self, name=None):
        name = name or self.rng.choice(self.names() or [None])
        if name is None:
            return
        want = self.files[name]
        self.op = "preads of %s (%d bytes)" % (name, len(want))
        try:
            fd = os.open(self.path(name), os.O_RDONLY)
        except OSError as e:
            self.error(e, "open-r")
            return
        try:
            for _ in range(self.rng.randint(3, 12)):
                off = self.rng.randrange(0, len(want) + 2)
                n = self.rng.choice([1, 4 * KiB, self.rng.randint(1, 300 * KiB)])
                try:
                    b = os.pread(fd, n, off)
                    # a short count is no EOF: Linux returns what it read
                    # before a failed page; the next call says more
                    while b and len(b) < n:
                        more = os.pread(fd, n - len(b), off + len(b))
                        if not more:
                            break
                        b += more
                except OSError as e:
                    self.error(e, "pread")
                    return
                exp = want[off:off + n]
                if b != exp:
                    self.compare_read(name, off, b, n)
                    return
        finally:
            os.close(fd)

    def op_stat(self):
        name = self.rng.choice(self.names() or [None])
        if name is None:
            return
        self.op = "stat %s" % name
        try:
            st = os.stat(self.path(name))
        except OSError as e:
            self.error(e, "stat")
            return
        if st.st_size != len(self.files[name]):
            self.violation("other", "stat size %d, want %d" %
                           (st.st_size, len(self.files[name])))

    def op_list(self, d=None):
        d = self.rng.choice(sorted(self.dirs)) if d is None else d
        self.op = "list %s/" % (d or ".")
        want = {n.split("/")[-1] for n in self.files
                if n.rpartition("/")[0] == d}
        want |= {x.split("/")[-1] for x in self.dirs
                 if x and x.rpartition("/")[0] == d}
        try:
            got = set(os.listdir(self.path(d) if d else self.path()))
        except OSError as e:
            self.error(e, "list")
            return
        # what a failed rename left at its destination may show up
        maybe = {m.split("/")[-1] for m in self.maybe if m.rpartition("/")[0] == d}
        maybe |= {m.split("/")[0] for m in self.maybe if "/" in m and not d}
        got -= maybe - want
        if got != want:
            self.violation("other", "listing: extra %s, missing %s" %
                           (sorted(got - want), sorted(want - got)))

    def op_unlink(self):
        name = self.rng.choice(self.names() or [None])
        if name is None:
            return
        self.op = "unlink %s" % name
        old = self.files[name]
        try:
            os.unlink(self.path(name))
        except OSError as e:
            self.error(e, "unlink")
            self.resync([name], {name: [old, None]})
            return
        del self.files[name]
        self.pending.discard(name)
        if self.server(name) is not None:
            self.violation("other", "unlink returned 0 but %s is still "
                           "on the server" % name)

    def op_rename(self):
        src = self.rng.choice(self.names() or [None])
        if src is None:
            return
        if self.rng.random() < 0.3 and len(self.files) > 1:
            dst = self.rng.choice([n for n in self.names() if n != src])
        else:
            d = self.rng.choice(sorted(self.dirs))
            dst = (d + "/" if d else "") + self.fresh("r")
        data, old_dst = self.files[src], self.files.get(dst)
        self.op = "rename %s -> %s%s" % (src, dst, " (over it)"
                                         if old_dst is not None else "")
        self.known(dst, data)
        try:
            os.rename(self.path(src), self.path(dst))
        except OSError as e:
            self.error(e, "rename")
            self.resync([src, dst], {src: [data, None],
                                     dst: [old_dst, data]},
                        at_least_one=[src, dst])
            if dst not in self.files:
                self.maybe.add(dst)
            return
        pend = src in self.pending
        del self.files[src]
        self.pending.discard(src)
        self.files[dst] = data
        if pend:
            self.pending.add(dst)
            return
        self.pending.discard(dst)
        self.check_durable(dst, "rename")
        if self.server(src) is not None:
            self.violation("other", "rename returned 0 but %s is still "
                           "on the server" % src)

    def op_rename_dir(self, d=None, e=None):
        if d is None:
            dirs = sorted(x for x in self.dirs if x)
            if not dirs:
                return
            d = self.rng.choice(dirs)
        e = e or self.fresh("d")
        inside = self.names(lambda n: n.startswith(d + "/"))
        self.op = "rename directory %s -> %s (%d files)" % (d, e, len(inside))
        for n in inside:
            self.known(e + n[len(d):], self.files[n])
        # what the server may hold below d moves too: copies a failed rename
        # left there, any version ever written there
        for n in [x for x in self.versions if x.startswith(d + "/")]:
            self.versions.setdefault(e + n[len(d):], set()).update(
                self.versions[n])
        for n in [x for x in self.maybe if x.startswith(d + "/")]:
            self.maybe.add(e + n[len(d):])
        try:
            os.rename(self.path(d), self.path(e))
        except OSError as ex:
            self.error(ex, "rename-dir")
            allowed, names = {}, []
            for n in inside:
                m = e + n[len(d):]
                allowed[n] = [self.files[n], None]
                allowed[m] = [self.files[n], None]
                names += [n, m]
            self.resync(names, allowed)
            for n in inside:
                m = e + n[len(d):]
                if n not in self.files and m not in self.files:
                    self.violation("lost", "%s is in neither %s nor %s" %
                                   (n, d, e))
                if m not in self.files:
                    self.maybe.add(m)
            self.dirs.discard(d)
            for x in (d, e):
                if self.look_dir(x) is not None:
                    self.dirs.add(x)
            return
        moved = []
        for n in inside:
            m = e + n[len(d):]
            self.files[m] = self.files.pop(n)
            if n in self.pending:
                self.pending.discard(n)
                self.pending.add(m)
            else:
                moved.append(m)
        self.dirs.discard(d)
        self.dirs.add(e)
        for m in moved:
            self.check_durable(m, "directory rename")

    # ---- profiles
    def setup(self):
        p = self.a.profile
        self.dirs = {""}
        os.makedirs(self.path(), exist_ok=True)
        if p == "mixed":
            for d in ("da", "db"):
                os.mkdir(self.path(d))
                self.dirs.add(d)
            for _ in range(6):
                self.op_write(size=self.rng.randint(1, 200 * KiB),
                              fsync=False)
            for _ in range(2):
                self.op_write(size=self.rng.randint(6 * MiB, 12 * MiB),
                              fsync=False)
        elif p in ("seqread", "randread"):
            for i in range(self.a.read_files):
                self.op_write(name="big%d" % i, size=self.a.read_size,
                              fsync=False)
        elif p == "dirrename":
            os.mkdir(self.path("da"))
            self.dirs.add("da")
            for i in range(self.a.dir_files):
                self.op_write(name="da/x%02d" % i,
                              size=self.rng.randint(1, 64 * KiB), fsync=False)
        elif p == "stream":
            pass
        if self.c["errors"] or self.c["violations"]:
            raise Bad("setup failed: %s" % self.notes[-3:])

    def step(self):
        p = self.a.profile
        if p == "mixed":
            ops = [(self.op_write, 10), (lambda: self.op_write(large=True), 2),
                   (self.op_patch, 3), (self.op_read_seq, 6),
                   (self.op_read_rand, 6), (self.op_stat, 2),
                   (self.op_list, 3), (self.op_unlink, 2),
                   (self.op_rename, 3), (self.op_rename_dir, 1)]
            r = self.rng.uniform(0, sum(w for _, w in ops))
            for f, w in ops:
                r -= w
                if r <= 0:
                    return f()
            return ops[-1][0]()
        if p == "seqread":
            return self.op_read_seq(self.rng.choice(self.names()))
        if p == "randread":
            return self.op_read_rand(self.rng.choice(self.names()))
        if p == "stream":
            names = self.names()
            name = self.rng.choice(names) if names and \
                self.rng.random() < 0.3 else self.fresh("s")
            return self.op_write(name=name, large=True)
        if p == "dirrename":
            # the directory holding most files (after a failed rename they
            # may be spread over two) moves to a new name
            d = max(sorted(x for x in self.dirs if x), key=lambda x: len(
                self.names(lambda n: n.startswith(x + "/"))))
            self.op_rename_dir(d)
            self.op_list("")
            for x in sorted(x for x in self.dirs if x):
                self.op_list(x)
            return None
        raise SystemExit("unknown profile %s" % p)


def watchdog(run, limit):
    """an operation that does not return in limit seconds is a hang: say
    which, and end (the shell cleans up the mount); end too when the test
    that started us is gone"""
    last = [-1, time.monotonic()]
    ppid = os.getppid()

    def loop():
        while True:
            time.sleep(1)
            if os.getppid() != ppid:  # the test is gone (SIGKILL): so are we
                os._exit(4)
            if run.index != last[0]:
                last[:] = [run.index, time.monotonic()]
            elif time.monotonic() - last[1] > limit:
                print("# HANG: op %d (%s) has not returned in %d s; seed %d"
                      % (run.index, run.op, limit, run.a.seed), flush=True)
                run.c["violations"] += 1
                run.c["other"] += 1
                run.notes.append("HANG op %d %s" % (run.index, run.op))
                try:
                    run.save()
                finally:
                    os._exit(3)
    threading.Thread(target=loop, daemon=True).start()


def cmd_run(a):
    r = Run(a)
    print("# chaos_work run: profile %s seed %d ops %d; replay: %s" %
          (a.profile, a.seed, a.ops, " ".join(shlex.quote(x)
                                               for x in sys.argv)), flush=True)
    watchdog(r, a.op_timeout)
    r.proxy("pause")
    try:
        r.setup()
    finally:
        r.proxy("resume")
    ctl = a.ctl
    if ctl:
        open(os.path.join(ctl, "ready"), "w").close()
    t0 = time.monotonic()
    after_stop = None
    # one line per operation, for a post-mortem (S3R_CHAOS_KEEP keeps it)
    trace = open(a.state[:-len(".json")] + ".ops.log", "w", buffering=1) \
        if a.state.endswith(".json") else None
    try:
        for i in range(a.ops):
            if time.monotonic() - t0 > a.time_limit:
                print("# time limit: %d ops done" % i)
                break
            if ctl:
                if i == a.signal_after:
                    open(os.path.join(ctl, "started"), "w").close()
                if after_stop is None and \
                        os.path.exists(os.path.join(ctl, "stop")):
                    after_stop = i
                if after_stop is not None and i >= after_stop + a.after_stop:
                    break
            r.index = i + 1
            r.c["ops"] += 1
            e0 = r.c["errors"]
            r.step()
            if trace:
                trace.write("%d %s%s\n" % (r.index, r.op, " (error)"
                                           if r.c["errors"] > e0 else ""))
    except Bad as e:
        r.violation("other", str(e))
    r.proxy("pause")
    r.save()
    if ctl:
        open(os.path.join(ctl, "done"), "w").close()
    print("# run: %d ops, %d errors surfaced (%s), %d files, %d pending, "
          "%d resyncs" % (r.c["ops"], r.c["errors"],
                          ", ".join("%s %d" % kv for kv in
                                    sorted(r.errs.items())) or "none",
                          len(r.files), len(r.pending), r.c["resyncs"]))
    return 0


def cmd_settle(a):
    """faults paused: wait until the server holds every pending file (the
    daemon's background retry), then check that the daemon still serves: a
    write and a read through the mount"""
    st = json.load(open(a.state))
    c = Chaos(a, st)
    pend = sorted(c.pending)
    t0 = time.monotonic()
    while pend and time.monotonic() - t0 < a.wait:
        left = []
        for n in pend:
            got = c.server(n)
            if got is None or md5(got) != c.md5s[n]:
                left.append(n)
        pend = left
        if pend:
            time.sleep(1)
    print("# settle: %d pending file(s); %d not on the server after %.0f s%s"
          % (len(c.pending), len(pend), time.monotonic() - t0,
             (": " + ", ".join(pend[:8])) if pend else ""))
    ok = True
    probe = os.path.join(c.mnt, c.prefix, ".probe-still-serves")
    data = os.urandom(100 * KiB)
    try:
        with open(probe, "wb") as f:
            f.write(data)
        with open(probe, "rb") as f:
            back = f.read()
        os.unlink(probe)
        if back != data:
            print("# settle: the daemon read back other bytes than written")
            ok = False
    except OSError as e:
        print("# settle: the daemon no longer serves: %s" % e)
        ok = False
    st.setdefault("counters", {})["still_serves"] = 1 if ok else 0
    with open(a.state, "w") as f:
        json.dump(st, f)
    return 0 if ok else 1


def aws(*args):
    """awscli against RGW: through the calling script's warm awscli when it
    has one (tests/lib/aws.sh), else aws itself"""
    cmd = [os.environ.get("S3R_AWS", "/usr/bin/aws")]
    if os.environ.get("S3R_AWSD"):
        cmd = [sys.executable, "-I", "-S", AWSD, "call",
               os.environ["S3R_AWSD"]] + cmd
    cmd += ["--endpoint-url", os.environ["S3R_ENDPOINT"]] + list(args)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          check=False, timeout=300)


def upload_is_object(bucket, key, upload_id):
    """RGW killed in the middle of a CompleteMultipartUpload can write the
    object and leave the upload listed (its completion "in progress" for
    minutes; an abort would delete the object's data): is the object's
    ETag that of this upload's parts 1..n?"""
    r = aws("s3api", "list-parts", "--bucket", bucket, "--key", key,
            "--upload-id", upload_id, "--output", "json")
    h = aws("s3api", "head-object", "--bucket", bucket, "--key", key,
            "--output", "json")
    if r.returncode or h.returncode:
        return False
    parts = json.loads(r.stdout or b"{}").get("Parts") or []
    if not parts or [p["PartNumber"] for p in parts] != \
            list(range(1, len(parts) + 1)):
        return False
    sums = b"".join(bytes.fromhex(p["ETag"].strip('"')) for p in parts)
    want = "%s-%d" % (hashlib.md5(sums).hexdigest(), len(parts))
    return json.loads(h.stdout)["ETag"].strip('"') == want


def unsaved_md5s(cache_dir):
    out = {}
    d = os.path.join(cache_dir, "unsaved")
    for root, _, names in os.walk(d):
        for n in names:
            if n == "MANIFEST":
                continue
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out.setdefault(md5(f.read()), []).append(p)
    return out


def cmd_verify(a):
    st = json.load(open(a.state))
    c = Chaos(a, st)
    cnt = st.get("counters", {})
    fails = []
    # every object under the prefix, through awscli from RGW
    tmp = a.download
    r = aws("s3", "cp", "--recursive", "--only-show-errors",
            "s3://%s/%s/" % (c.bucket, c.prefix), tmp)
    if r.returncode:
        fails.append("aws s3 cp --recursive failed: %s" %
                     r.stderr.decode()[-300:])
    got = {}
    for root, _, names in os.walk(tmp):
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, tmp)
            with open(p, "rb") as f:
                got[rel] = md5(f.read())
    kept = unsaved_md5s(a.cache_dir)
    lost = corrupt = nkept = 0
    for n in sorted(c.files):
        want = c.md5s[n]
        if got.get(n) == want:
            continue
        if want in kept:
            nkept += 1
            print("# verify: %s is not on the server; kept in %s" %
                  (n, kept[want][0]))
            continue
        if n in got and got[n] not in c.versions.get(n, ()):
            corrupt += 1
            fails.append("%s on the server is a version never written" % n)
        else:
            lost += 1
            fails.append("%s: %s on the server, not in unsaved/ either" %
                         (n, "an older version" if n in got else "absent"))
    extra = sorted(k for k in got if k not in c.files)
    leftovers = 0
    for k in extra:
        if k in c.maybe and got[k] in c.versions.get(k, ()):
            leftovers += 1
            print("# verify: note: %s: a complete copy left on the server by "
                  "a failed rename (the mount did not show it)" % k)
        elif got[k] in c.versions.get(k, ()):
            fails.append("%s is on the server though the mount removed it" %
                         k)
        else:
            corrupt += 1
            fails.append("%s on the server is a version never written "
                         "(partial?)" % k)
    r = aws("s3api", "list-multipart-uploads", "--bucket", c.bucket,
            "--prefix", c.prefix + "/", "--output", "json")
    orphans = 0
    if r.returncode:
        fails.append("list-multipart-uploads failed: %s" %
                     r.stderr.decode()[-300:])
        orphans = -1
    elif r.stdout.strip():
        ups = json.loads(r.stdout).get("Uploads") or []
        # (RGW killed as it completed can leave one listed that is the
        # object: only where it was killed, and said)
        left = [u for u in ups if not (a.rgw_killed and upload_is_object(
            c.bucket, u.get("Key"), u.get("UploadId")))]
        for u in ups:
            if u not in left:
                print("# verify: note: upload %s of %s is the object (RGW "
                      "was killed as it completed it, and lists it still)"
                      % (u.get("UploadId"), u.get("Key")))
        orphans = len(left)
        for u in left[:5]:
            fails.append("multipart upload left: %s %s" %
                         (u.get("Key"), u.get("UploadId")))
    lost_total = cnt.get("lost", 0) + lost
    corrupt_total = cnt.get("corrupt_bytes", 0) + corrupt
    partial = cnt.get("partial", 0)
    other = cnt.get("other", 0)
    if cnt.get("still_serves", 1) != 1:
        fails.append("the daemon did not serve a write and a read at the end")
    ok = lost_total == 0 and corrupt_total == 0 and orphans == 0 and \
        partial == 0 and other <= 0 and not fails
    for n in st.get("notes", [])[-10:]:
        print("# " + n)
    for f in fails:
        print("# verify: " + f)
    line = dict(scenario=a.scenario, seed=st.get("seed", a.seed),
                faults=a.faults, ops=cnt.get("ops", 0),
                errors=cnt.get("errors", 0), corrupt=corrupt_total,
                lost=lost_total, orphans=orphans, partial=partial,
                other=max(0, other) + len([f for f in fails if
                                           "server though" in f]),
                kept=nkept, leftovers=leftovers, ok=int(ok))
    print("# %s: seed %s, %d faults injected, %d operations, %d errors "
          "surfaced, %d corrupt bytes, %d lost writes, %d orphaned uploads, "
          "%d partial objects, %d kept in unsaved/, %d copies left by failed "
          "renames -> %s" %
          (a.scenario, line["seed"], a.faults, line["ops"], line["errors"],
           corrupt_total, lost_total, orphans, partial, nkept, leftovers,
           "ok" if ok else "FAILED"))
    if a.results:
        with open(a.results, "a") as f:
            f.write(json.dumps(line) + "\n")
    return 0 if ok else 1


# ---------------------------------------------------------------- kill

def cmd_killwrite(a):
    """write files whose close() must fail (the proxy fails every upload),
    then hold one more file open mid-write; record what the server must get
    after the daemon is killed and mounted again"""
    r = Run(a)
    os.makedirs(r.path(), exist_ok=True)
    r.dirs = {""}
    eio = []
    for i, size in enumerate(a.sizes):
        name = "k%d" % i
        data = r.content(size)
        r.known(name, data)
        r.op = "write %s (%d bytes) with every upload failing" % (name, size)
        fd = os.open(r.path(name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     0o644)
        acked = 0
        while acked < size:
            try:
                acked += os.write(fd, data[acked:acked + MiB])
            except OSError as e:
                r.error(e, "write")
                print("# killwrite: write to %s failed at %d: %s" %
                      (name, acked, errname(e)))
                break
        r.files[name] = data[:acked]
        r.pending.add(name)
        try:
            os.close(fd)
            r.pending.discard(name)
            print("# killwrite: close() of %s returned 0 (an upload got "
                  "through)" % name)
            r.check_durable(name, "close")
        except OSError as e:
            eio.append(name)
            r.error(e, "close")
            print("# killwrite: close() of %s: %s, as the proxy fails every "
                  "upload" % (name, errname(e)))
    r.c["ops"] = len(a.sizes)
    r.save()
    st = json.load(open(a.state))
    st["eio"] = eio
    st["seed"] = a.seed
    with open(a.state, "w") as f:
        json.dump(st, f)
    if not a.hold:
        return 0 if eio else 1
    # uploads work again: one more file, left open half written (its first
    # parts uploading) until the daemon is killed. It was never closed: the
    # server must never show it (verify: no object but the model's)
    r.proxy("pause")
    fd = os.open(r.path("held"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    data = r.content(a.hold)
    for o in range(0, a.hold, MiB):
        os.write(fd, data[o:o + MiB])
    print("# killwrite: %d bytes written to held, left open" % a.hold,
          flush=True)
    open(os.path.join(a.ctl, "holding"), "w").close()
    t0 = time.monotonic()
    while not os.path.exists(os.path.join(a.ctl, "killed")) and \
            time.monotonic() - t0 < 120:
        time.sleep(0.1)
    try:
        os.close(fd)
    except OSError:
        pass
    return 0 if eio else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("--state", required=True)
    p.add_argument("--mnt", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--profile", required=True,
                   choices=["mixed", "seqread", "randread", "stream",
                            "dirrename"])
    p.add_argument("--ops", type=int, default=40)
    p.add_argument("--time-limit", type=float, default=120)
    p.add_argument("--op-timeout", type=float, default=150)
    p.add_argument("--admin")
    p.add_argument("--ctl")
    p.add_argument("--signal-after", type=int, default=0)
    p.add_argument("--after-stop", type=int, default=2)
    p.add_argument("--read-files", type=int, default=3)
    p.add_argument("--read-size", type=int, default=12 * MiB)
    p.add_argument("--dir-files", type=int, default=20)
    p = sub.add_parser("settle")
    p.add_argument("--state", required=True)
    p.add_argument("--mnt")
    p.add_argument("--wait", type=float, default=30)
    p = sub.add_parser("verify")
    p.add_argument("--state", required=True)
    p.add_argument("--cache-dir", required=True)
    p.add_argument("--download", required=True)
    p.add_argument("--scenario", default="?")
    p.add_argument("--rgw-killed", action="store_true",
                   help="RGW was killed: an upload left listed that is the "
                   "object (killed as it completed) is not an orphan")
    p.add_argument("--seed", default="?")
    p.add_argument("--faults", type=int, default=0)
    p.add_argument("--results")
    p = sub.add_parser("killwrite")
    p.add_argument("--state", required=True)
    p.add_argument("--mnt", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--sizes", type=int, nargs="+", required=True)
    p.add_argument("--hold", type=int, default=0,
                   help="then write this much to one more file, kept open "
                   "until CTL/killed exists")
    p.add_argument("--ctl")
    p.add_argument("--admin")
    a = ap.parse_args()
    if a.cmd == "run":
        rc = cmd_run(a)
        st = json.load(open(a.state))
        st["seed"] = a.seed
        with open(a.state, "w") as f:
            json.dump(st, f)
        return rc
    if a.cmd == "settle":
        return cmd_settle(a)
    if a.cmd == "verify":
        return cmd_verify(a)
    if a.cmd == "killwrite":
        return cmd_killwrite(a)
    return 2


if __name__ == "__main__":
    sys.exit(main())
