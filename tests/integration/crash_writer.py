#!/usr/bin/env python3
"""Write a reference file's bytes into a file on the mount, then wait for a
go file before close(), and report what write() and close() returned.

    crash_writer.py SRC DST OFFSET FLAGS CTL
FLAGS: "trunc" (O_TRUNC) or "keep"; CTL: a directory where the writer
touches CTL/written once every byte is written, waits (bounded, 120 s) for
CTL/go, closes, and writes CTL/result ("0" or the errno name).
"""
import errno
import os
import sys
import time


def main():
    src, dst, off, flags, ctl = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        sys.argv[4], sys.argv[5]
    data = open(src, "rb").read()
    mode = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if flags == "trunc" else 0)
    fd = os.open(dst, mode, 0o644)
    res = "0"
    try:
        os.pwrite(fd, data, off) if data else None
    except OSError as e:
        res = "write:" + errno.errorcode.get(e.errno, str(e.errno))
    open(os.path.join(ctl, "written"), "w").close()
    for _ in range(1200):
        if os.path.exists(os.path.join(ctl, "go")):
            break
        time.sleep(0.1)
    try:
        os.close(fd)
    except OSError as e:
        if res == "0":
            res = errno.errorcode.get(e.errno, str(e.errno))
    with open(os.path.join(ctl, "result"), "w") as f:
        f.write(res)


if __name__ == "__main__":
    main()
