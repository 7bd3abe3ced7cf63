#!/usr/bin/env python3
"""Writers for test_fs_stream.sh: each writes one file on the mount in a
pattern and the bytes it should hold to REF (a local file).

    stream_work.py PATTERN PATH REF PART [CTL]

PART is the mount's part size in bytes. Patterns:
  seq N          N parts and a half, in order, 1 MiB writes
  seekback N     N parts and 3 MiB, then 6 bytes at 100, then 4 at the end
  trunc          2 parts and 3 MiB, cut to a part and a half, 5 MiB more
  second         2 parts and a half; a second descriptor writes 1000 bytes
                 at 1 MiB; the first appends 2 MiB
  readback       a part and a half, read back through the same descriptor
                 (O_RDWR) and compared, and its last half part with
                 O_DIRECT through another; then a part more
  fsync          2 parts and a half, fsync; REF.synced gets the bytes so
                 far, CTL/synced is made, CTL/go waited for (bounded,
                 120 s); then a part more
  fsyncfail      2.5 parts; CTL/written made, CTL/go waited for; fsync,
                 its outcome to CTL/fsync; CTL/go2 waited for; a part more
  hold N:CTL     N parts and a half; CTL/written made; then waits for
                 CTL/go (bounded, 120 s) before it closes, and writes what
                 close() returned to CTL/result ("0" or the errno's name)
Exit 0, or 1 with a line on stderr.
"""
import errno
import mmap
import os
import sys
import time

MiB = 1 << 20


def wait_for(path, limit=120.0):
    t0 = time.monotonic()
    while not os.path.exists(path):
        if time.monotonic() - t0 > limit:
            raise SystemExit("timed out waiting for " + path)
        time.sleep(0.05)


def say(path, text):
    """text into path whole: written aside, then renamed (the test waits
    for path to appear, and must never read it half written)"""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def data(n, seed):
    """n incompressible bytes (seed: which call, for the reader of a
    failure; the bytes themselves are random and written to REF)."""
    del seed
    return os.urandom(n)


def write_all(fd, buf):
    for i in range(0, len(buf), MiB):
        os.write(fd, buf[i:i + MiB])


def outcome(call, fd):
    """call(fd)'s result as the test reads it: "0", or the errno's name."""
    try:
        call(fd)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return "0"


def main():
    pat, path, ref, part = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    arg = sys.argv[5] if len(sys.argv) > 5 else ""
    flags = os.O_CREAT | os.O_TRUNC
    if pat == "readback":
        flags |= os.O_RDWR
    else:
        flags |= os.O_WRONLY
    fd = os.open(path, flags, 0o644)
    want = bytearray()

    def put(buf):
        write_all(fd, buf)
        want.extend(buf)

    if pat == "seq":
        put(data(int(arg) * part + part // 2, 1))
    elif pat == "seekback":
        put(data(int(arg) * part + 3 * MiB, 2))
        os.pwrite(fd, b"HEADER", 100)
        want[100:106] = b"HEADER"
        put(b"tail")
    elif pat == "trunc":
        put(data(2 * part + 3 * MiB, 3))
        os.ftruncate(fd, part + part // 2)
        os.lseek(fd, 0, os.SEEK_END)  # (a cut leaves the offset where it was)
        del want[part + part // 2:]
        put(data(5 * MiB, 4))
    elif pat == "second":
        put(data(2 * part + part // 2, 5))
        fd2 = os.open(path, os.O_WRONLY)
        os.pwrite(fd2, b"2" * 1000, MiB)
        want[MiB:MiB + 1000] = b"2" * 1000
        put(data(2 * MiB, 6))
        os.close(fd2)
    elif pat == "readback":
        put(data(part + part // 2, 7))
        got = os.pread(fd, len(want), 0)
        if got != bytes(want):
            raise SystemExit("readback: the bytes read are not those written")
        # the part being written, past the kernel's cache: from the buffer
        dfd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, part // 2)
        n = os.preadv(dfd, [buf], part)
        os.close(dfd)
        if n != part // 2 or bytes(buf) != bytes(want[part:]):
            raise SystemExit("readback: O_DIRECT read %d bytes, not those "
                             "written" % n)
        put(data(part, 8))
    elif pat == "fsync":
        put(data(2 * part + part // 2, 9))
        os.fsync(fd)
        with open(ref + ".synced", "wb") as f:
            f.write(want)
        open(os.path.join(sys.argv[5], "synced"), "w").close()
        wait_for(os.path.join(sys.argv[5], "go"))
        put(data(part, 10))
    elif pat == "fsyncfail":
        ctl = sys.argv[5]
        put(data(2 * part + part // 2, 12))
        open(os.path.join(ctl, "written"), "w").close()
        wait_for(os.path.join(ctl, "go"))
        say(os.path.join(ctl, "fsync"), outcome(os.fsync, fd))
        wait_for(os.path.join(ctl, "go2"))
        put(data(part, 13))
    elif pat == "hold":
        n, ctl = sys.argv[5].split(":", 1)
        put(data(int(n) * part + part // 2, 11))
        with open(ref, "wb") as f:
            f.write(want)
        open(os.path.join(ctl, "written"), "w").close()
        wait_for(os.path.join(ctl, "go"))
        say(os.path.join(ctl, "result"), outcome(os.close, fd))
        return
    else:
        raise SystemExit("unknown pattern " + pat)
    os.close(fd)
    with open(ref, "wb") as f:
        f.write(want)


if __name__ == "__main__":
    main()
