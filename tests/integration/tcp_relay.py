#!/usr/bin/env python3
"""A TCP relay on 127.0.0.1: the network path between a mount and RGW,
cut by killing the relay (connections refused and reset at once).

    tcp_relay.py LISTEN_PORT TARGET_PORT [--hold PATTERN GATE]
        (prints "ready" once listening)

--hold: a request whose bytes, as one read from the client, contain
PATTERN (e.g. "PUT /bucket/key ": a request line is the start of what the
client writes for a request) is held, not forwarded, until the file GATE
exists: the server does not see it meanwhile. Every such request is held
(a retry too); the first prints "held". A held request whose client goes
away (a cancellation, a timeout) is dropped, never forwarded. A hold lasts
at most 300 s; the connection is then closed.
"""
import os
import select
import socket
import sys
import threading
import time

HOLD_MAX_S = 300
hold = None              # (pattern bytes, gate path) or None
held_once = threading.Event()


def client_gone(src):
    """Has the client closed its side (or reset it)?"""
    try:
        r, _, _ = select.select([src], [], [], 0)
        return bool(r) and src.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def wait_gate(src):
    """Hold until the gate opens (True) or the client leaves (False)."""
    if not held_once.is_set():
        held_once.set()
        print("held", flush=True)
    end = time.monotonic() + HOLD_MAX_S
    while time.monotonic() < end:
        if os.path.exists(hold[1]):
            return True
        if client_gone(src):
            return False
        time.sleep(0.05)
    return False


def pump(src, dst, upstream):
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
                break
            if upstream and hold and hold[0] in b and not wait_gate(src):
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    global hold
    listen, target = int(sys.argv[1]), int(sys.argv[2])
    if len(sys.argv) == 6 and sys.argv[3] == "--hold":
        hold = (sys.argv[4].encode(), sys.argv[5])
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen))
    srv.listen(128)
    print("ready", flush=True)
    while True:
        c, _ = srv.accept()
        try:
            u = socket.create_connection(("127.0.0.1", target), timeout=5)
            u.settimeout(None)
        except OSError:
            c.close()
            continue
        for a, b, up in ((c, u, True), (u, c, False)):
            threading.Thread(target=pump, args=(a, b, up), daemon=True).start()


if __name__ == "__main__":
    main()
