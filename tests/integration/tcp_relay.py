#!/usr/bin/env python3
"""A TCP relay on 127.0.0.1: the network path between a mount and RGW,
cut by killing the relay (connections refused and reset at once).

    tcp_relay.py LISTEN_PORT TARGET_PORT   (prints "ready" once listening)
"""
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            b = src.recv(1 << 16)
            if not b:
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
    listen, target = int(sys.argv[1]), int(sys.argv[2])
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
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


if __name__ == "__main__":
    main()
