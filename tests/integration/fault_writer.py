#!/usr/bin/env python3
"""A writer for the fault tests (test_fs_faults.sh) that reports the exact
errno and duration of every open/write/fsync/close, and stops at named
points until the test lets it go on, so the test can freeze RGW or kill the
daemon at a known place in the write.

  fault_writer.py PATH SIZE SEED CTLDIR [options]

Writes SIZE pseudo-random bytes (from SEED) to PATH, a new file, in 1 MiB
writes, and the bytes each write() acknowledged to CTLDIR/ref: the content
the object must end up with.  Results go to CTLDIR/result as KEY=VALUE
lines, written as they happen:

  open_err, write_err (errno of the first failed write, 0 if none),
  written (bytes acknowledged), write_err_at (offset of the failed write),
  fsync_err, fsync_s, close_err, close_s (seconds), done=1 at the end.

Pauses: --pause-at BYTES, --pause-before-fsync, --pause-before-close: at
each, create CTLDIR/at-NAME (NAME: bytes, fsync, close) and wait, at most
--pause-max seconds, for CTLDIR/go-NAME.  After the first failed write no
more writes are tried; fsync (with --fsync) and close still are.
"""
import argparse
import errno
import os
import random
import sys
import time

MiB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("size", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("ctl")
    ap.add_argument("--pause-at", type=int, default=-1)
    ap.add_argument("--pause-before-fsync", action="store_true")
    ap.add_argument("--pause-before-close", action="store_true")
    ap.add_argument("--pause-max", type=float, default=120.0)
    ap.add_argument("--fsync", action="store_true")
    a = ap.parse_args()

    res = open(os.path.join(a.ctl, "result"), "w", buffering=1)
    ref = open(os.path.join(a.ctl, "ref"), "wb")

    def put(key, val):
        res.write(f"{key}={val}\n")
        res.flush()

    def pause(name):
        open(os.path.join(a.ctl, "at-" + name), "w").close()
        go = os.path.join(a.ctl, "go-" + name)
        t0 = time.monotonic()
        while not os.path.exists(go):
            if time.monotonic() - t0 > a.pause_max:
                put("pause_timeout", name)
                return
            time.sleep(0.02)

    def err(e):
        return f"{e.errno}({errno.errorcode.get(e.errno, '?')})"

    def timed(name, call):  # NAME_err (0 or the errno), NAME_s (seconds)
        t0 = time.monotonic()
        try:
            call()
            put(name + "_err", 0)
        except OSError as e:
            put(name + "_err", err(e))
        put(name + "_s", f"{time.monotonic() - t0:.1f}")

    rng = random.Random(a.seed)
    try:
        fd = os.open(a.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as e:
        put("open_err", err(e))
        put("done", 1)
        return 1
    put("open_err", 0)

    written, write_err, paused = 0, 0, False
    while written < a.size and not write_err:
        if not paused and 0 <= a.pause_at <= written:
            pause("bytes")
            paused = True
        n = min(MiB, a.size - written)
        if 0 <= a.pause_at and not paused:
            n = min(n, a.pause_at - written)
        buf = rng.randbytes(n)
        view = memoryview(buf)
        while len(view):
            try:
                k = os.write(fd, view)
            except OSError as e:
                write_err = err(e)
                put("write_err_at", written)
                break
            ref.write(view[:k])
            written += k
            view = view[k:]
    ref.close()
    put("write_err", write_err)
    put("written", written)

    if a.fsync:
        if a.pause_before_fsync:
            pause("fsync")
        timed("fsync", lambda: os.fsync(fd))

    if a.pause_before_close:
        pause("close")
    timed("close", lambda: os.close(fd))
    put("done", 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
