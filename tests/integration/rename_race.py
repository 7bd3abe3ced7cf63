#!/usr/bin/env python3
"""Renames racing with writers on a mount (test_fs_rename.sh).

    rename_race.py dir MNT ROUND   a directory rename while a file in it is
        open for writing: half written before the rename, the rest written
        and closed while the rename copies; the file must arrive whole under
        the new name and nothing may stay under the old one
    rename_race.py onto MNT ROUND  a rename onto a file open for writing,
        closed while the rename copies: the renamed data must win
    rename_race.py cross MNT ROUND a directory rename and a rename of one
        open file onto another inside it, at once: neither may hang
Prints one line per check ("ok ..." / "not ok ...") and exits 1 on a failure.
"""
import os
import sys
import threading
import time

MiB = 1 << 20


def pattern(tag, n):
    b = (tag * (n // len(tag) + 1))[:n]
    return b


class Rename(threading.Thread):
    """os.rename(src, dst), started at once in a thread of its own (a
    daemon: one that hangs does not keep the process); after join(),
    outcome() is "ok", the error's text, or "hangs"."""

    def __init__(self, src, dst):
        super().__init__(daemon=True)
        self.src, self.dst, self.error = src, dst, None
        self.start()

    def run(self):
        try:
            os.rename(self.src, self.dst)
        except OSError as e:
            self.error = e

    def outcome(self):
        if self.is_alive():
            return "hangs"
        return self.error.strerror if self.error else "ok"


def dir_round(mnt, rnd):
    src = os.path.join(mnt, "d%d" % rnd)
    dst = os.path.join(mnt, "moved%d" % rnd)
    first = pattern(b"first-half-%d|" % rnd, 3 * MiB)
    second = pattern(b"second-half-%d|" % rnd, 3 * MiB)
    fd = os.open(os.path.join(src, "aaa-open.bin"), os.O_WRONLY | os.O_CREAT,
                 0o644)
    os.write(fd, first)
    mv = Rename(src, dst)
    time.sleep(0.3)  # the rename is copying the siblings
    os.write(fd, second)
    os.close(fd)
    mv.join(300)
    ok = True
    if mv.outcome() != "ok":
        print("not ok - round %d: rename: %s" % (rnd, mv.outcome()))
        return False
    got = open(os.path.join(dst, "aaa-open.bin"), "rb").read()
    if got != first + second:
        print("not ok - round %d: the file under the new name has %d bytes, "
              "%s" % (rnd, len(got), "first half only" if got == first
                      else "wrong bytes"))
        ok = False
    if os.path.exists(src):
        print("not ok - round %d: the old directory is still there: %s"
              % (rnd, os.listdir(src)))
        ok = False
    if ok:
        print("ok - round %d: the file written during the rename arrived "
              "whole" % rnd)
    return ok


def onto_round(mnt, rnd):
    src = os.path.join(mnt, "big%d.bin" % rnd)
    dst = os.path.join(mnt, "target%d.bin" % rnd)
    want = open(src, "rb").read()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, pattern(b"the old target|", MiB))
    mv = Rename(src, dst)
    time.sleep(0.2)
    os.write(fd, b"more of the old target")
    os.close(fd)
    mv.join(300)
    if mv.outcome() != "ok":
        print("not ok - round %d: rename: %s" % (rnd, mv.outcome()))
        return False
    time.sleep(0.5)
    got = open(dst, "rb").read()
    if got != want:
        print("not ok - round %d: the target holds %d bytes, not the renamed "
              "file's %d" % (rnd, len(got), len(want)))
        return False
    print("ok - round %d: the renamed data won over the closing writer" % rnd)
    return True


def cross_round(mnt, rnd):
    """mv dX eX while mv dX/a dX/b, both files open for writing: the two
    renames take the files' write-back in opposite orders unless they are
    kept apart; neither may hang, and a's bytes must end up somewhere."""
    src = os.path.join(mnt, "c%d" % rnd)
    dst = os.path.join(mnt, "cmoved%d" % rnd)
    da = pattern(b"file a %d|" % rnd, MiB)
    db = pattern(b"file b %d|" % rnd, MiB)
    fa = os.open(os.path.join(src, "a"), os.O_WRONLY | os.O_CREAT, 0o644)
    fb = os.open(os.path.join(src, "b"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fa, da)
    os.write(fb, db)
    mv_dir = Rename(src, dst)
    time.sleep(0.1)
    mv_file = Rename(os.path.join(src, "a"), os.path.join(src, "b"))
    mv_dir.join(120)
    mv_file.join(120)
    os.close(fa)
    os.close(fb)
    res = {"dir": mv_dir.outcome(), "file": mv_file.outcome()}
    if "hangs" in res.values():
        print("not ok - round %d: the renames hang (%s)" % (rnd, res))
        return False
    where = [p for p in (os.path.join(d, n) for d in (src, dst)
                         for n in ("a", "b")) if os.path.exists(p)]
    found = any(open(p, "rb").read() == da for p in where)
    if res.get("dir") != "ok" or not found:
        print("not ok - round %d: %s; a's bytes %s" %
              (rnd, res, "found" if found else "lost"))
        return False
    print("ok - round %d: both renames ended (%s), a's bytes kept" %
          (rnd, res))
    return True


def main():
    kind, mnt, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ok = {"dir": dir_round, "onto": onto_round,
          "cross": cross_round}[kind](mnt, rnd)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
