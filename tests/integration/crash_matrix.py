#!/usr/bin/env python3
"""crash_matrix: every failpoint of the write path (common/failpoint.h)
crossed with workloads that reach it, for test_fs_crashpoints.sh. Standard
library only; needs a daemon built with S3R_FAILPOINTS.

  crash_matrix.py --bin DIR --bucket B --work DIR [--only CASE,...]
                  [--only-regex RE]
                  [--sample N --seed S] [--list]

A case is a failpoint armed (kill: the daemon dies there; error: the
operation fails there, then the daemon is killed) in a workload's mount;
for a point of recovery, the file is first left to recovery (its
completion refused by commit.complete=error, the daemon killed) and the
point armed in the first mount after. Then (twice when the crash may land
in recovery) the mount is made again with the same cache.dir, and the
last one must answer stat within 10 s and unmount with status 0. The
invariants, checked on RGW directly:
  - every close() or fsync() that returned 0: its bytes whole on the
    server (close) or the server holds them or a later whole version
    (fsync);
  - every close() that failed with EIO (the daemon's verdict): the file
    whole on the server, or whole in cache.dir/unsaved/ with a MANIFEST
    line naming its key;
  - a file never closed, or whose close() got no verdict (the daemon died
    in it: ENOTCONN, ECONNABORTED): on the server nothing, its old version
    or one complete version written (never a partial object);
  - no multipart upload of ours left but those MANIFEST names (kept: the
    only copy of acknowledged parts), and another writer's upload of a key
    of the same prefix, made before, untouched;
  - no sanitizer report in any daemon's log.
One line per case ("ok"/"FAILED", the point, reached or not, the
workload); the command that replays one case is printed with a failure.
Deterministic: fixed data (seeded), fixed workloads, one kill point each.
"""
import argparse
import errno
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chaos_work import S3, md5  # noqa: E402

MiB = 1 << 20
PART = 5 * MiB

# ---------------------------------------------------------------- workloads
# Each takes the mount's directory (the case's prefix inside it) and a
# recorder; it records every file's versions and what close()/fsync()
# returned. A dead daemon makes calls fail (ENOTCONN): recorded, not fatal.


def data(seed, n):
    return random.Random(seed).randbytes(n)


class Rec:
    def __init__(self):
        self.files = {}

    def file(self, key, base=None):
        f = self.files.setdefault(key, dict(base=md5(base) if base is not None
                                            else None, versions=[],
                                            acked=None, final=None,
                                            closed=None))
        if base is not None:
            f["versions"].append(md5(base))
        return f

    def intend(self, key, content):
        f = self.files[key]
        f["final"] = md5(content)
        f["versions"].append(md5(content))


def _close(f, fd):
    try:
        os.close(fd)
        f["closed"] = "ok"
        f["acked"] = f["final"]
    except OSError as e:
        f["closed"] = errno.errorcode.get(e.errno, str(e.errno))


def w_new(d, r, base):
    k = "new.bin"
    body = data(1, 100 * 1024)
    f = r.file(k)
    r.intend(k, body)
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, body)
    _close(f, fd)


def _stream(d, r, k, n, seed):
    body = data(seed, n)
    f = r.file(k)
    r.intend(k, body)
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, body)  # one write(): streamed from write buffers
    _close(f, fd)


def w_stream3(d, r, base):
    _stream(d, r, "s3.bin", 3 * PART, 2)


def w_stream3p1(d, r, base):
    _stream(d, r, "s3p1.bin", 3 * PART + 1, 3)


def _parts_sent(root):
    """write.parts_sent of the mount at root (None: it is gone)"""
    try:
        with open(os.path.join(root, ".s3rdmafs-stats")) as f:
            for line in f:
                name, _, v = line.partition(" ")
                if name == "write.parts_sent":
                    return int(v)
    except (OSError, ValueError):
        return None
    return 0


def w_streamopen(d, r, base):
    """3 parts and a byte written a part at a time, the next only once the
    last was acknowledged (bounded: 30 s each): each listed as it is, the
    file still open. (A part goes once a byte past it is written: the
    writes end one byte into the next part.)"""
    k = "so.bin"
    body = data(4, 3 * PART + 1)
    f = r.file(k)
    r.intend(k, body)
    root = os.path.dirname(os.path.dirname(d))  # (d: the mount's cm/NAME)
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for i in range(3):
            os.write(fd, body[i * PART + (i > 0):(i + 1) * PART + 1])
            for _ in range(300):
                n = _parts_sent(root)
                if n is None or n > i:
                    break
                time.sleep(0.1)
    except OSError:
        pass  # (the daemon died: close says so)
    _close(f, fd)


def w_overwrite(d, r, base):
    k = "over.bin"
    old = base[k]
    f = r.file(k, old)
    patch = data(5, MiB)
    new = bytearray(old)
    new[5 * MiB + 7:6 * MiB + 7] = patch
    r.intend(k, bytes(new))
    fd = os.open(os.path.join(d, k), os.O_WRONLY)
    os.pwrite(fd, patch, 5 * MiB + 7)
    _close(f, fd)


def w_append(d, r, base):
    k = "app.bin"
    old = base[k]
    f = r.file(k, old)
    more = data(7, 3 * MiB)
    r.intend(k, old + more)
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_APPEND)
    os.write(fd, more)
    _close(f, fd)


def w_rename(d, r, base):
    body = data(8, 7 * MiB)
    f = r.file("ren-b.bin")
    r.intend("ren-b.bin", body)
    fd = os.open(os.path.join(d, "ren-a.bin"),
                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, body[:4 * MiB])
    os.rename(os.path.join(d, "ren-a.bin"), os.path.join(d, "ren-b.bin"))
    os.write(fd, body[4 * MiB:])
    _close(f, fd)


def w_fsync(d, r, base):
    k = "fsync.bin"
    one, two = data(9, 6 * MiB), data(10, 6 * MiB)
    f = r.file(k)
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, one)
    r.intend(k, one)
    os.fsync(fd)
    f["acked"] = md5(one)
    r.intend(k, one + two)
    os.write(fd, two)
    _close(f, fd)


def w_truncate(d, r, base):
    k = "trunc.bin"
    old = base[k]
    f = r.file(k, old)
    r.intend(k, old[:3 * MiB + 5])
    fd = os.open(os.path.join(d, k), os.O_WRONLY)
    os.ftruncate(fd, 3 * MiB + 5)
    _close(f, fd)


def w_rewrite(d, r, base):
    k = "rw.bin"
    body = bytearray(data(14, 7 * MiB))
    patch = data(15, MiB)
    f = r.file(k)
    r.intend(k, bytes(body))
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, bytes(body))  # streamed, its first part sent
    # leaving the stream path completes the parts the server has as the
    # object (docs/mounting.md states it: that shorter version is visible until
    # the file is closed), so a crash then leaves it there
    r.files[k]["versions"].append(md5(bytes(body[:PART])))
    body[MiB:2 * MiB] = patch
    r.intend(k, bytes(body))
    os.pwrite(fd, patch, MiB)  # not at the end: through the staging file
    _close(f, fd)


def w_trunc0(d, r, base):
    k = "t0.bin"
    first, last = data(11, 12 * MiB), data(12, 1024)
    f = r.file(k)
    fd = os.open(os.path.join(d, k), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(fd, first)  # its parts go up as they are passed
    r.intend(k, b"")
    os.ftruncate(fd, 0)  # the upload under way is abandoned: aborted
    r.intend(k, last)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, last)
    _close(f, fd)


WORKLOADS = {
    "new": (w_new, {}),
    "stream3": (w_stream3, {}),
    "stream3p1": (w_stream3p1, {}),
    "streamopen": (w_streamopen, {}),
    "overwrite": (w_overwrite, {"over.bin": (4, 12 * MiB)}),
    "append": (w_append, {"app.bin": (6, 6 * MiB)}),
    "rename": (w_rename, {}),
    "fsync": (w_fsync, {}),
    "truncate": (w_truncate, {"trunc.bin": (13, 12 * MiB)}),
    "trunc0": (w_trunc0, {}),
    "rewrite": (w_rewrite, {}),
}

# ---------------------------------------------------------------- the cases
# (name, first mount's arming, workload, first remount's arming). A point
# in recovery is reached by leaving the file to it: its completion (or its
# PUT) refused, the daemon killed after the workload.
LEAVE_MP = "commit.complete=error"
LEAVE_PUT = "commit.put=error"


def cases():
    c = []

    def add(point, arm, works, rearm=None, every=False):
        for w in works:
            c.append(dict(name="%s:%s" % (point, w), point=point, arm=arm,
                          work=w, rearm=rearm, every=every))
    mp = ["stream3", "stream3p1", "overwrite", "append", "rename", "fsync"]
    big = mp + ["truncate"]
    add("wb.write", "wb.write=kill@2", ["overwrite", "fsync", "rename"])
    add("wb.journal", "wb.journal=kill@2", ["new", "overwrite", "fsync"])
    add("stage.rec", "stage.rec=kill@2", ["new", "stream3", "truncate"])
    add("stage.parts", "stage.parts=kill", ["stream3", "stream3p1", "fsync"])
    add("stage.sent", "stage.sent=kill@2", ["stream3", "stream3p1"])
    # a part's line appended to the list as it is acknowledged, the file
    # open (the first part's is written whole, through stage.parts):
    # killed before the second part's
    add("stage.parts_add", "stage.parts_add=kill", ["streamopen"])
    add("part.send", "part.send=kill@2", mp)
    add("part.acked", "part.acked=kill@2", mp)
    add("commit.begin", "commit.begin=kill", ["new"] + big)
    add("commit.put", "commit.put=kill", ["new", "truncate"])
    add("commit.complete", "commit.complete=kill", mp)
    add("commit.done", "commit.done=kill", ["new"] + big)
    add("unstream", "unstream=kill", ["rewrite"])
    add("abort", "abort=kill", ["trunc0"])
    add("leftover", "abort=error,leftover=kill", ["trunc0"])
    add("unmount", "commit.put=error,unmount=kill", ["new"])
    add("pool.recover", LEAVE_MP, ["stream3p1"], "pool.recover=kill")
    add("recover.file", LEAVE_MP, ["stream3", "overwrite"],
        "recover.file=kill")
    add("recover.file", LEAVE_PUT, ["new"], "recover.file=kill")
    # every recovery worker dies at the file: set aside after 3 attempts,
    # kept whole in unsaved/, and the mount serves throughout
    add("recover.file", LEAVE_PUT, ["new"], "recover.file=kill", True)
    add("recover.put", LEAVE_PUT, ["new"], "recover.put=error")
    add("recover.complete", LEAVE_MP, ["stream3", "stream3p1", "overwrite",
                                       "fsync"], "recover.complete=kill")
    add("recover.done", LEAVE_MP, ["stream3", "append"], "recover.done=kill")
    add("recover.done", LEAVE_PUT, ["new"], "recover.done=kill")
    # the same point twice in a name: the second one gets a suffix
    seen = {}
    for x in c:
        n = seen.setdefault(x["name"], 0)
        seen[x["name"]] = n + 1
        if n:
            x["name"] += "#%d" % (n + 1)
    return c

# ---------------------------------------------------------------- the mount


class Mount:
    def __init__(self, a, case_dir, mnt, cache):
        self.a, self.dir, self.mnt, self.cache = a, case_dir, mnt, cache
        self.proc = None
        self.n = 0

    def log(self):
        return os.path.join(self.dir, "fs-%d.log" % self.n)

    def up(self, arm=None, every=False):
        self.n += 1
        env = dict(os.environ)
        env.pop("S3R_FAILPOINTS", None)
        env.pop("S3R_FAILPOINTS_EVERY_WORKER", None)
        if arm:
            env["S3R_FAILPOINTS"] = arm
        if every:  # recovery's workers all get it: a fault that comes back
            env["S3R_FAILPOINTS_EVERY_WORKER"] = "1"
        san = os.path.join(self.dir, "san")
        os.makedirs(san, exist_ok=True)
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
            v = env.get(k, "")
            env[k] = (v + ":" if v else "") + "log_path=%s/%s" % (
                san, k[:5].lower())
        cmd = [os.path.join(self.a.bin, "s3rdmafs"), self.a.bucket, self.mnt,
               "-f", "-o", "cache.mlock=false,rdma.transport=off",
               "-o", "endpoint=%s" % os.environ["S3R_ENDPOINT"],
               "-o", "cache.dir=%s" % self.cache,
               "-o", "write.part_size=5M,write.retry_interval=3600",
               "-o", "s3.retry.max_attempts=2,s3.retry.budget_ms=2000"]
        self.out = open(self.log(), "ab")
        self.out.write(b"--- mount %d\n" % self.n)
        self.out.flush()
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.out,
                                     env=env)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            if self.mounted():
                subprocess.run(["timeout", "30", "stat", self.mnt],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=False)
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def mounted(self):
        with open("/proc/mounts") as f:
            return any(l.split()[1] == self.mnt for l in f)

    def answers(self, within=10):
        r = subprocess.run(["timeout", str(within), "stat", self.mnt],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        return r.returncode == 0

    def dead(self):
        return self.proc is None or self.proc.poll() is not None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.reap()

    def reap(self):
        st = None
        if self.proc:
            try:
                st = self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                st = self.proc.wait()
        if self.mounted():
            subprocess.run(["fusermount3", "-u", "-z", self.mnt],
                           stderr=subprocess.DEVNULL, check=False)
        self.proc = None
        return st

    def down(self):
        """unmounted cleanly: the daemon's exit status"""
        if self.dead():
            return self.reap()
        subprocess.run(["fusermount3", "-u", self.mnt],
                       stderr=subprocess.DEVNULL, check=False)
        return self.reap()

    def wait_recovered(self, within=60):
        """its recovery over (at once when there was none to do)"""
        t0 = time.monotonic()
        while time.monotonic() - t0 < within and not self.dead():
            try:
                t = open(self.log()).read().split("--- mount")[-1]
            except OSError:
                t = ""
            if "earlier mounts' leftovers" in t or (
                    "notice: mounted" in t and "dead mount(s)" not in t):
                return True
            time.sleep(0.1)
        return False

    def san_reports(self):
        d = os.path.join(self.dir, "san")
        return [os.path.join(d, n) for n in os.listdir(d)] \
            if os.path.isdir(d) else []

# ---------------------------------------------------------------- S3 side


def uploads(s3, bucket, prefix):
    st, body = s3.request("GET", "/" + bucket,
                          {"uploads": "", "prefix": prefix})
    if st != 200:
        raise RuntimeError("list uploads: HTTP %d" % st)
    txt = body.decode()
    return re.findall(r"<Key>([^<]*)</Key>\s*<UploadId>([^<]*)</UploadId>",
                      txt)


def abort(s3, bucket, key, uid):
    s3.request("DELETE", "/%s/%s" % (bucket, urllib.parse.quote(key)),
               {"uploadId": uid})


def create_upload(s3, bucket, key):
    st, body = s3.request("POST", "/%s/%s" % (bucket, urllib.parse.quote(
        key)), {"uploads": ""})
    m = re.search(r"<UploadId>([^<]*)</UploadId>", body.decode())
    if st != 200 or not m:
        raise RuntimeError("create upload: HTTP %d" % st)
    return m.group(1)


def manifest(cache):
    """{key: [kept file's md5, ...]} and the upload ids the lines name"""
    kept, ids = {}, set()
    root = cache
    for d, _, names in os.walk(cache):
        if os.path.basename(d) == "unsaved" and "MANIFEST" in names:
            root = d
            for line in open(os.path.join(d, "MANIFEST"), errors="replace"):
                f = line.rstrip("\n").split("\t")
                if len(f) < 6:
                    continue
                p = os.path.join(d, f[1])
                if os.path.isfile(p) and not os.path.islink(p):
                    kept.setdefault(f[4], []).append(md5(open(p, "rb").read()))
                ids.update(re.findall(r"multipart upload (\S+) of the key",
                                      f[5]))
    return kept, ids, root

# ---------------------------------------------------------------- one case


def run_case(a, s3, c):
    t0 = time.monotonic()
    cd = os.path.join(a.work, re.sub(r"[^A-Za-z0-9._-]", "_", c["name"]))
    mnt, cache = os.path.join(cd, "mnt"), os.path.join(cd, "cache")
    os.makedirs(mnt, exist_ok=True)
    prefix = "cm/%s" % re.sub(r"[^A-Za-z0-9._-]", "_", c["name"])
    fn, bases = WORKLOADS[c["work"]]
    base = {k: data(seed, n) for k, (seed, n) in bases.items()}
    for k, b in base.items():
        st, _ = s3.request("PUT", "/%s/%s/%s" % (a.bucket, prefix, k),
                           body=b)
        if st != 200:
            raise RuntimeError("PUT base: HTTP %d" % st)
    foreign = create_upload(s3, a.bucket, "%s/foreign.bin" % prefix)
    m = Mount(a, cd, mnt, cache)
    fails, reached = [], False
    rec = Rec()
    if not m.up(c["arm"]):
        fails.append("the first mount did not come up")
    else:
        d = os.path.join(mnt, prefix)
        try:
            os.makedirs(d, exist_ok=True)
            fn(d, rec, base)
        except OSError as e:
            rec.error = errno.errorcode.get(e.errno, str(e.errno))
        if c["point"] in ("unmount", "leftover", "abort") and not m.dead():
            m.down()  # (reached at the unmount)
        m.kill()  # every case ends the first daemon by SIGKILL
    logs = [m.log()]
    if c["rearm"]:  # the crash lands in recovery: its process, not the mount
        if not m.up(c["rearm"], c["every"]):
            fails.append("the mount with recovery's point armed did not "
                         "come up (see %s)" % m.log())
        else:
            m.wait_recovered(60)
            if m.dead() or not m.answers(10):
                fails.append("the mount went down with its recovery (see %s)"
                             % m.log())
            elif c["every"] and "was begun 3 times" not in open(
                    m.log(), errors="replace").read():
                fails.append("a file whose recovery died 3 times was not set "
                             "aside")
        m.kill()
        logs.append(m.log())
    for lg in logs:
        try:
            reached |= ("failpoint %s:" % c["point"]) in open(lg).read()
        except OSError:
            pass
    # the mount after: it answers and ends cleanly (twice: its recovery
    # may have been the one cut short)
    for _ in range(2):
        if not m.up():
            fails.append("a mount after the crash did not come up (crash "
                         "loop?): see %s" % m.log())
            m.reap()
            break
        if not m.answers(10):
            fails.append("a mount after the crash did not answer stat within "
                         "10 s")
        m.wait_recovered(60)
        st = m.down()
        if st != 0:
            fails.append("a mount after the crash ended with status %s (see "
                         "%s)" % (st, m.log()))
    # the invariants
    kept, kept_ids, _ = manifest(cache)
    for k, f in rec.files.items():
        got = s3.get(a.bucket, "%s/%s" % (prefix, k))
        got = md5(got) if got is not None else None
        if f["closed"] == "ok":
            if got != f["final"]:
                fails.append("%s: close() returned 0 but the server holds %s"
                             % (k, "nothing" if got is None else
                                "another version"))
        elif f["acked"]:
            if got not in (f["acked"], f["final"]):
                fails.append("%s: fsync() returned 0 but the server holds %s"
                             % (k, "nothing" if got is None else
                                "another version"))
        elif f["closed"] == "EIO":  # the daemon's verdict: kept or there
            if got != f["final"] and f["final"] not in kept.get(
                    "%s/%s" % (prefix, k), []):
                fails.append("%s: close() returned %s and the file is neither "
                             "on the server nor whole in unsaved/" %
                             (k, f["closed"]))
        elif got is not None and got not in f["versions"]:
            # never closed, or closed with no verdict (the daemon died in
            # it: ENOTCONN, ECONNABORTED): no promise but no partial object
            fails.append("%s: never closed, and the server holds a version "
                         "never written (partial?)" % k)
    ups = uploads(s3, a.bucket, prefix + "/")
    if not any(u == foreign for _, u in ups):
        fails.append("another writer's upload of the prefix was aborted")
    for k, u in ups:
        if u != foreign and u not in kept_ids:
            fails.append("multipart upload %s of %s left, named by no "
                         "MANIFEST line" % (u, k))
        abort(s3, a.bucket, k, u)
    for p in m.san_reports():
        fails.append("a sanitizer report: %s" % p)
    if not reached:  # a case proves its point only where it reached it
        fails.append("the point was not reached")
    ok = not fails
    print("%s %-30s point %-16s %-9s workload %-9s %4.1f s" % (
        "ok    " if ok else "FAILED", c["name"], c["point"],
        "reached" if reached else "NOT-REACHED", c["work"],
        time.monotonic() - t0), flush=True)
    for f in fails:
        print("#   " + f)
    if not ok:
        print("#   replay: %s" % " ".join(shlex.quote(x) for x in [
            sys.argv[0], "--bin", a.bin, "--bucket", a.bucket, "--work",
            a.work, "--only", c["name"]]))
        for lg in logs[-1:]:
            print("#   the daemon's log (%s), its end:" % lg)
            try:
                for line in open(lg, errors="replace").readlines()[-12:]:
                    print("#     " + line.rstrip())
            except OSError:
                pass
    return ok, reached


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--only", default="")
    p.add_argument("--only-regex", default="",
                   help="the cases whose name matches (S3R_ONLY)")
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--list", action="store_true")
    a = p.parse_args()
    a.bin, a.work = os.path.abspath(a.bin), os.path.abspath(a.work)
    cs = cases()
    if a.list:
        for c in cs:
            print(c["name"])
        return 0
    if a.only:
        want = set(a.only.split(","))
        cs = [c for c in cs if c["name"] in want or c["point"] in want]
    elif a.only_regex:
        cs = [c for c in cs if re.search(a.only_regex, c["name"])]
        if not cs:
            print("crash matrix: --only-regex %r names no case" %
                  a.only_regex)
            return 1
    elif a.sample and a.sample < len(cs):
        seed = a.seed if a.seed is not None else random.randrange(1 << 30)
        # every point once at least, then others by the seed
        rnd = random.Random(seed)
        by = {}
        for c in cs:
            by.setdefault(c["point"], []).append(c)
        pick = [rnd.choice(v) for v in by.values()]
        rest = [c for c in cs if c not in pick]
        rnd.shuffle(rest)
        pick += rest[:max(0, a.sample - len(pick))]
        cs = [c for c in cs if c in pick]
        print("# crash matrix: %d of %d cases, seed %d (all of them: no "
              "S3R_CRASH_SAMPLE; this sample: S3R_CRASH_SEED=%d)" %
              (len(cs), len(cases()), seed, seed), flush=True)
    s3 = S3()
    npass = nreached = 0
    points, reached_points = set(), set()
    for c in cs:
        ok, reached = run_case(a, s3, c)
        npass += ok
        nreached += reached
        points.add(c["point"])
        if reached:
            reached_points.add(c["point"])
    print("# crash matrix: %d cases, %d failpoints, %d workloads: %d ok, %d "
          "failed; %d cases reached their point, points reached: %d of %d%s"
          % (len(cs), len(points), len({c["work"] for c in cs}), npass,
             len(cs) - npass, nreached, len(reached_points), len(points),
             "" if reached_points == points else " (not reached: %s)" %
             ", ".join(sorted(points - reached_points))))
    return 0 if npass == len(cs) and reached_points == points else 1


if __name__ == "__main__":
    sys.exit(main())
