#!/usr/bin/env python3
"""posix_check: the POSIX details of issue 34 on a mount, for
test_fs_posix.sh. Each check prints "ok - NAME" or "not ok - NAME (why)";
exit 0 when all hold.

    posix_check.py MOUNT_DIR
"""

import errno
import os
import sys
import time

FAILED = []


def check(name, cond, why=""):
    if cond:
        print("ok - %s" % name)
    else:
        print("not ok - %s%s" % (name, " (%s)" % why if why else ""))
        FAILED.append(name)


def errno_of(fn, *args, **kw):
    """The errno fn raises, or 0."""
    try:
        fn(*args, **kw)
    except OSError as e:
        return e.errno
    return 0


def names_too_long(mnt, d):
    """ENAMETOOLONG from every call, for a component over 255 bytes and for
    a key over 1,024 bytes (components of 200 bytes each, nested)."""
    long_name = os.path.join(d, "n" * 256)
    deep = os.path.join(d, "a" * 200, "b" * 200, "c" * 200, "d" * 200)
    os.makedirs(deep)  # 804 bytes of key so far: fine
    over = os.path.join(deep, "e" * 230)  # past 1,024 bytes
    for label, p in (("a 256-byte name", long_name), ("a key past 1,024 bytes", over)):
        calls = {
            "create": lambda p=p: open(p, "w").close(),
            "open": lambda p=p: open(p).close(),
            "mkdir": lambda p=p: os.mkdir(p),
            "mkfifo": lambda p=p: os.mkfifo(p),
            "mknod": lambda p=p: os.mknod(p, 0o644 | 0o100000),
            "symlink": lambda p=p: os.symlink("target", p),
            "rename": lambda p=p: os.rename(os.path.join(d, "src"), p),
            "truncate": lambda p=p: os.truncate(p, 0),
            "chmod": lambda p=p: os.chmod(p, 0o600),
            "chown": lambda p=p: os.chown(p, 0, 0),
            "stat": lambda p=p: os.stat(p),
        }
        for call, fn in calls.items():
            got = errno_of(fn)
            check("%s: %s gets ENAMETOOLONG" % (label, call),
                  got == errno.ENAMETOOLONG, errno.errorcode.get(got, got))
    # the longest key S3 takes is still a file
    key_len = len(os.path.relpath(deep, mnt)) + 1  # the directory's key
    fits = os.path.join(deep, "f" * (1024 - key_len))
    check("a key of exactly 1,024 bytes can be made",
          errno_of(lambda: open(fits, "w").close()) == 0)


def unlinked_open(d):
    """fstat of an open file that was unlinked: nlink 0, size kept."""
    p = os.path.join(d, "gone")
    with open(p, "w") as f:
        f.write("hello")
    fd = os.open(p, os.O_RDONLY)
    try:
        check("an open file: nlink 1", os.fstat(fd).st_nlink == 1)
        os.unlink(p)
        st = os.fstat(fd)
        check("the same, unlinked: fstat says nlink 0", st.st_nlink == 0,
              "nlink %d" % st.st_nlink)
        check("... and its size still", st.st_size == 5, "size %d" % st.st_size)
        check("... and it reads still", os.pread(fd, 5, 0) == b"hello")
    finally:
        os.close(fd)
    # replaced by a rename over it: the same
    q = os.path.join(d, "other")
    with open(p, "w") as f:
        f.write("first")
    with open(q, "w") as f:
        f.write("second")
    fd = os.open(p, os.O_RDONLY)
    try:
        os.rename(q, p)
        st = os.fstat(fd)
        check("an open file renamed over: fstat says nlink 0", st.st_nlink == 0,
              "nlink %d" % st.st_nlink)
        check("... the new one nlink 1", os.stat(p).st_nlink == 1)
        os.fchmod(fd, 0o600)
        check("... and after a chmod of it still 0", os.fstat(fd).st_nlink == 0)
    finally:
        os.close(fd)


def link_counts(d):
    """A directory's link count: 2 and its subdirectories."""
    a, b = os.path.join(d, "na"), os.path.join(d, "nb")
    os.mkdir(a)
    os.mkdir(b)
    nl = lambda p: os.stat(p).st_nlink
    check("a new directory: nlink 2", nl(a) == 2, "nlink %d" % nl(a))
    os.mkdir(os.path.join(a, "x"))
    os.mkdir(os.path.join(a, "y"))
    open(os.path.join(a, "f"), "w").close()
    check("two subdirectories and a file: nlink 4", nl(a) == 4, "nlink %d" % nl(a))
    os.rename(os.path.join(a, "x"), os.path.join(b, "x"))
    check("a subdirectory renamed away: nlink 3", nl(a) == 3, "nlink %d" % nl(a))
    check("... and its new parent's: nlink 3", nl(b) == 3, "nlink %d" % nl(b))
    os.rmdir(os.path.join(a, "y"))
    check("one removed: nlink 2", nl(a) == 2, "nlink %d" % nl(a))


def dir_times(d):
    """A directory's mtime and ctime move when a name in it is made,
    removed or renamed (file, directory, fifo, symlink)."""
    t = os.path.join(d, "times")
    u = os.path.join(d, "times2")
    os.mkdir(t)
    os.mkdir(u)
    steps = (
        ("a file created", lambda: open(os.path.join(t, "f"), "w").close()),
        ("a directory made", lambda: os.mkdir(os.path.join(t, "sub"))),
        ("a fifo made", lambda: os.mkfifo(os.path.join(t, "fifo"))),
        ("a symlink made", lambda: os.symlink("f", os.path.join(t, "ln"))),
        ("a file renamed in it", lambda: os.rename(os.path.join(t, "f"),
                                                   os.path.join(t, "g"))),
        ("a file removed", lambda: os.unlink(os.path.join(t, "g"))),
        ("a directory removed", lambda: os.rmdir(os.path.join(t, "sub"))),
        ("a name renamed away", lambda: os.rename(os.path.join(t, "fifo"),
                                                  os.path.join(u, "fifo"))),
    )
    for label, step in steps:
        before = os.stat(t)
        time.sleep(1.1)  # (the times are whole seconds)
        step()
        after = os.stat(t)
        check("%s: the directory's mtime moves" % label,
              after.st_mtime > before.st_mtime,
              "%d then %d" % (before.st_mtime, after.st_mtime))
        check("%s: ... and its ctime" % label,
              after.st_ctime > before.st_ctime,
              "%d then %d" % (before.st_ctime, after.st_ctime))
    check("the new parent's mtime moved too",
          os.stat(u).st_mtime >= os.stat(t).st_mtime)


def devices(d):
    """Device nodes keep their type and numbers (root only, as anywhere)."""
    import stat
    for kind, label in ((stat.S_IFBLK, "block"), (stat.S_IFCHR, "character")):
        p = os.path.join(d, "dev-" + label)
        os.mknod(p, 0o640 | kind, os.makedev(8, 3))
        st = os.lstat(p)
        check("mknod of a %s device: its type kept" % label,
              stat.S_IFMT(st.st_mode) == kind, oct(st.st_mode))
        check("... and its numbers (8, 3)" ,
              (os.major(st.st_rdev), os.minor(st.st_rdev)) == (8, 3),
              "%d, %d" % (os.major(st.st_rdev), os.minor(st.st_rdev)))


def hard_link(d):
    p = os.path.join(d, "orig")
    open(p, "w").close()
    got = errno_of(os.link, p, os.path.join(d, "hard"))
    check("link(2) answers EOPNOTSUPP", got == errno.EOPNOTSUPP,
          errno.errorcode.get(got, got))


def main():
    d = os.path.join(sys.argv[1], "posix")
    os.mkdir(d)
    open(os.path.join(d, "src"), "w").close()
    names_too_long(sys.argv[1], d)
    unlinked_open(d)
    link_counts(d)
    dir_times(d)
    devices(d)
    hard_link(d)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
