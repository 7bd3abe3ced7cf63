#!/usr/bin/env python3
"""A warm awscli for the test scripts (tests/lib/aws.sh's aws_).

Each run of `aws` spends one to two seconds starting Python and importing
awscli and botocore before it sends anything; the suites run it hundreds of
times, and that was most of some suites' time. `serve` imports them once,
then forks a child per call from that warm process (a call then costs a
few tenths of a second); `call` hands one call to it: its argument list,
environment, working directory and umask, and its stdin, stdout and stderr
as file descriptors (SCM_RIGHTS), so pipes and redirections work as they do
for aws itself; it exits with the call's status.

    awsd.py serve SOCKET PID      listen on SOCKET; return at once, serving
                                  in the background until process PID ends
                                  (then SOCKET is removed, and its directory
                                  when that is empty)
    awsd.py call SOCKET AWS ARG...  run "AWS ARG..." through the server at
                                  SOCKET; when none answers, exec AWS itself

A call runs what aws runs, awscli.clidriver.main(), with the call's argument
list, environment, directory and umask, in a child forked from a process
that has imported awscli and made (and thrown away) one driver, so that
the modules a call loads on demand are loaded too: the child makes its own
driver, which reads the call's environment and files as aws would.

The server must run with the interpreter of the aws it stands for (aws.sh
reads it from aws's first line); `call` needs nothing but the standard
library and starts in a few milliseconds (python3 -I -S).
"""
import json
import os
import socket
import struct
import sys
import threading

ACCEPTED = b"A"  # the server took the call: from then on it is not re-run
DECLINED = b"D"  # the client runs aws itself


# ---------------------------------------------------------------- client
def call(sock_path, aws, args):
    mask = os.umask(0o022)
    os.umask(mask)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        msg = json.dumps({"argv": args, "cwd": os.getcwd(),
                          "env": dict(os.environ), "umask": mask}).encode()
        s.connect(sock_path)
        socket.send_fds(s, [struct.pack("!I", len(msg))], [0, 1, 2])
        s.sendall(msg)
        taken = s.recv(1)
    except OSError:
        taken = b""
    if taken != ACCEPTED:  # no server, or a call it declined: aws itself
        s.close()
        os.execv(aws, [aws] + args)
    got = b""
    while len(got) < 4:
        b = s.recv(4 - len(got))
        if not b:
            sys.stderr.write("awsd.py: the call ended without a status: %s\n"
                             % " ".join(args))
            return 255
        got += b
    return struct.unpack("!i", got)[0]


# ---------------------------------------------------------------- server
def warm():
    """Import awscli and what a call of s3 or s3api loads on demand."""
    import awscli.clidriver
    driver = awscli.clidriver.create_clidriver()
    try:  # (internals that differ between awscli versions: a best effort)
        table = driver._get_command_table()
        table["s3api"]._get_command_table()
        driver.session.get_service_model("s3")
    except Exception:
        pass


def recv_exact(conn, n):
    got = b""
    while len(got) < n:
        b = conn.recv(n - len(got))
        if not b:
            raise EOFError
        got += b
    return got


def exit_on_eof(conn):
    try:
        conn.recv(1)
    except OSError:
        pass
    os._exit(1)


def run_call(conn, env0, env1):
    """In the forked child: take the call, run it as aws would, send its
    status. env0 and env1: the server's environment before and after
    importing awscli (which sets AWS_DATA_PATH from what it found)."""
    import signal
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    head, fds, _, _ = socket.recv_fds(conn, 4, 3)
    if len(head) != 4 or len(fds) != 3:
        os._exit(1)
    req = json.loads(recv_exact(conn, struct.unpack("!I", head)[0]))
    env = req["env"]
    for k in set(env0) | set(env1):
        if env0.get(k) == env1.get(k):
            continue
        if env.get(k) != env0.get(k):  # the import would have seen another
            conn.sendall(DECLINED)
            os._exit(0)
        if k in env1:  # what importing awscli set, as it would set it
            env[k] = env1[k]
        else:
            env.pop(k, None)
    for i, fd in enumerate(fds):
        os.dup2(fd, i)
        os.close(fd)
    os.environ.clear()
    os.environ.update(env)
    if os.environ.get("LC_CTYPE", "") == "UTF-8":  # (as /usr/bin/aws does)
        os.environ["LC_CTYPE"] = "en_US.UTF-8"
    os.chdir(req["cwd"])
    os.umask(req["umask"])
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    sys.argv = ["aws"] + req["argv"]
    conn.sendall(ACCEPTED)
    # a client gone (killed by timeout, say) takes its call with it, as a
    # killed aws would
    threading.Thread(target=exit_on_eof, args=(conn,), daemon=True).start()
    import awscli.clidriver
    try:
        rc = awscli.clidriver.main()
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except OSError:
            pass
    conn.sendall(struct.pack("!i", rc or 0))
    os._exit(0)


def serve(sock_path, watch_pid):
    import select
    import signal
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    lsock.bind(sock_path)
    lsock.listen(64)
    watch = os.pidfd_open(watch_pid)
    if os.fork():  # the caller goes on at once; calls queue until warm
        os._exit(0)
    os.setsid()
    # nothing of the caller's kept open (a pipe ctest reads, say)
    null = os.open(os.devnull, os.O_RDWR)
    for i in range(3):
        os.dup2(null, i)
    keep = sorted({lsock.fileno(), watch})
    os.closerange(3, keep[0])
    os.closerange(keep[0] + 1, keep[1])
    os.closerange(keep[1] + 1, os.sysconf("SC_OPEN_MAX"))
    env0 = dict(os.environ)
    try:
        warm()
    except Exception:  # no awscli here: the callers run aws
        remove(lsock, sock_path)
        os._exit(1)
    env1 = dict(os.environ)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    while True:
        ready, _, _ = select.select([lsock, watch], [], [])
        if watch in ready:  # the test script has ended
            break
        conn, _ = lsock.accept()
        if os.fork() == 0:
            lsock.close()
            os.close(watch)
            try:
                run_call(conn, env0, env1)
            finally:
                os._exit(1)
        conn.close()
    remove(lsock, sock_path)
    os._exit(0)


def remove(lsock, sock_path):
    """Stop listening; remove the socket, and its directory when empty."""
    lsock.close()
    os.unlink(sock_path)
    try:
        os.rmdir(os.path.dirname(sock_path))
    except OSError:
        pass


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) >= 4 and sys.argv[1] == "call":
        sys.exit(call(sys.argv[2], sys.argv[3], sys.argv[4:]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
