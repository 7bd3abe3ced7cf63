#!/usr/bin/env python3
"""fault_proxy: a seeded, fault-injecting HTTP/1.1 reverse proxy in front of
an S3 server (RGW), for the chaos test (test_fs_chaos.sh). Standard library
only.

  fault_proxy.py --upstream HOST:PORT [--listen HOST:PORT] [--admin HOST:PORT]
                 [--seed N] [--rates KIND=P,...] [--classes CLASS,...]
                 [--spare KIND:CLASS,...] [--stall-s S] [--paused]
                 [--delay-ms MS] [--port-file FILE] [--log FILE]
                 [--exit-with-parent]

--delay-ms holds every response that long before relaying it: a distant
server's round trip, for measurements (bench/), not for tests.

Requests pass through unmodified: the request head is forwarded byte for
byte (Host, path, query and every header as signed), bodies are streamed as
they come (Content-Length or chunked, Expect: 100-continue relayed), one
upstream connection per client connection, kept alive as long as both ends
keep it. Responses are streamed back unmodified unless a fault is injected.

Faults (KIND: what the client sees):
  slowdown    503 SlowDown (S3 XML error), the request not forwarded
  internal    500 InternalError, the request not forwarded
  forbidden   403 ExpiredToken or RequestTimeTooSkewed, not forwarded
  reset_resp  forwarded; the response's head and part of its body, then a
              TCP reset (no body: a reset instead of the response)
  reset_req   (requests with a body) part of the body forwarded, then a
              reset towards both ends: the server never completes it
  truncate    (GET) forwarded; the head with its full Content-Length, part
              of the body, then the connection closed
  stall       nothing for --stall-s seconds, then the connection closed:
              before forwarding, or (GET) after part of the body
  bad_xml     (ListObjectsV2) the listing's XML made malformed (cut short,
              a mismatched end tag, or stray markup), its length correct
  bad_length  (GET) the body with a Content-Length that is wrong (larger,
              or smaller with the whole body sent), then closed
  error_200   (CompleteMultipartUpload, CopyObject, UploadPartCopy) 200 OK
              whose body is an S3 <Error> document, not forwarded (as S3
              does when such a request fails after its 200 was sent)
  no_cond     (PUT, CompleteMultipartUpload carrying If-Match or
              If-None-Match) 501 NotImplemented, not forwarded: a server
              that does not take conditional writes
  late        (requests with a body) the whole request read, the client's
              connection reset (it retries); the request sent on a
              connection of its own --stall-s seconds later, its answer
              logged and dropped: a write given up that lands late
  flip        (GET) one byte of the body changed, nothing else: corruption
              no HTTP client can see. Not a fault to survive: the chaos
              test's check that its checker catches wrong bytes

Choice: each request gets a number u in [0,1) from SHA-256 of (seed, its
class, its path, its partNumber, how many such requests came before), so a
request's fate does not depend on how requests from several threads
interleave; the first kind (in the order above) applicable to the request
whose cumulative rate exceeds u is injected. A fault never fires while
paused.

Classes (--classes restricts faults to them): list, get, head, put (PUT
object or part), copy (x-amz-copy-source), init (POST ?uploads), complete
(POST ?uploadId=), abort (DELETE ?uploadId=), delete, other. --spare
KIND:CLASS never injects that kind into that class (reset_resp:init: no
CreateMultipartUpload whose reply is lost after the server made it).

Admin interface (HTTP, on --admin; --port-file gets "proxy PORT" and
"admin PORT" lines):
  GET /stats            JSON: requests, by class, faults by kind, paused
  GET /pause, /resume   stop / restart injecting faults
  GET /set?KIND=P&...&classes=a,b&spare=k:c,...&stall_s=S&seed=N&limit=N
                        change rates (others kept), classes ("" = all),
                        spared pairs, the stall, the seed, the most faults
                        to inject from now on (-1: no limit)
  GET /zero             reset the counters
"""
import argparse
import hashlib
import json
import os
import re
import select
import socket
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KINDS = ("slowdown", "internal", "forbidden", "reset_resp", "reset_req",
         "truncate", "stall", "bad_xml", "bad_length", "error_200", "no_cond",
         "late", "flip")
CLASSES = ("list", "get", "head", "put", "copy", "init", "complete", "abort",
           "delete", "other")
BUF = 256 * 1024
HEAD_MAX = 256 * 1024


class Closed(Exception):
    """a connection ended (or must end) before the exchange was done"""


# ---------------------------------------------------------------- HTTP bits

class Sock:
    """a socket with a read buffer"""

    def __init__(self, s):
        self.s = s
        self.buf = bytearray()

    def fill(self):
        d = self.s.recv(BUF)
        if not d:
            raise Closed("peer closed")
        self.buf += d

    def head(self, first=False):
        """the next message head (through the blank line); None when the
        peer closed cleanly before its first byte (with first=True)"""
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                h = bytes(self.buf[:i + 4])
                del self.buf[:i + 4]
                return h
            if len(self.buf) > HEAD_MAX:
                raise Closed("head too large")
            try:
                self.fill()
            except Closed:
                if first and not self.buf:
                    return None
                raise

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                ln = bytes(self.buf[:i + 2])
                del self.buf[:i + 2]
                return ln
            if len(self.buf) > HEAD_MAX:
                raise Closed("line too long")
            self.fill()

    def some(self, n):
        """up to n bytes (at least one)"""
        if not self.buf:
            self.fill()
        d = bytes(self.buf[:n])
        del self.buf[:n]
        return d

    def send(self, data):
        self.s.sendall(data)

    def reset(self):
        """close with a TCP RST (waking a thread blocked reading it)"""
        try:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                              struct.pack("ii", 1, 0))
            self.s.shutdown(socket.SHUT_RD)
        except OSError:
            pass
        self.close()

    def stale(self):
        """a kept-alive connection the peer has closed meanwhile"""
        if self.buf:
            return True
        r, _, _ = select.select([self.s], [], [], 0)
        if not r:
            return False
        try:
            return not self.s.recv(1, socket.MSG_PEEK)
        except OSError:
            return True

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


class Head:
    """a parsed message head; raw is kept to forward unmodified"""

    def __init__(self, raw):
        self.raw = raw
        lines = raw[:-4].decode("latin-1").split("\r\n")
        self.first = lines[0]
        self.headers = []
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            self.headers.append((k.strip().lower(), v.strip()))

    def get(self, name, default=None):
        for k, v in self.headers:
            if k == name:
                return v
        return default

    def framing(self):
        """('chunked', None), ('length', N) or ('none', None)"""
        te = self.get("transfer-encoding", "")
        if "chunked" in te.lower():
            return "chunked", None
        cl = self.get("content-length")
        if cl is not None:
            return "length", int(cl)
        return "none", None

    def wants_close(self):
        return "close" in self.get("connection", "").lower() or \
            self.first.endswith("HTTP/1.0") or self.first.startswith("HTTP/1.0")


def relay_length(src, dst, n, stop_after=None):
    """relay n body bytes; with stop_after, only that many (returns False
    when stopped early)"""
    left = n if stop_after is None else min(n, stop_after)
    while left > 0:
        d = src.some(min(left, BUF))
        if dst is not None:
            dst.send(d)
        left -= len(d)
    return stop_after is None or stop_after >= n


def relay_chunked(src, dst, stop_after=None):
    """relay a chunked body as is, chunk lines included; with stop_after,
    stop after about that many data bytes (returns False when stopped)"""
    sent = 0
    while True:
        ln = src.line()
        if dst is not None:
            dst.send(ln)
        size = int(ln.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while True:  # trailers, up to the blank line
                t = src.line()
                if dst is not None:
                    dst.send(t)
                if t == b"\r\n":
                    return True
        if stop_after is not None and sent + size > stop_after:
            relay_length(src, dst, size, max(0, stop_after - sent))
            return False
        relay_length(src, dst, size + 2)
        sent += size


def read_body(src, head, is_head_req=False):
    """the whole (de-chunked) body of a response"""
    kind, n = resp_framing(head, is_head_req)
    out = bytearray()
    if kind == "length":
        while len(out) < n:
            out += src.some(min(n - len(out), BUF))
    elif kind == "chunked":
        while True:
            size = int(src.line().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while src.line() != b"\r\n":
                    pass
                break
            chunk = bytearray()
            while len(chunk) < size + 2:
                chunk += src.some(size + 2 - len(chunk))
            out += chunk[:size]
    elif kind == "close":
        try:
            while True:
                out += src.some(BUF)
        except (Closed, OSError):
            pass
    return bytes(out)


def status_of(head):
    try:
        return int(head.first.split()[1])
    except (IndexError, ValueError):
        raise Closed("bad status line %r" % head.first)


def resp_framing(head, is_head_req):
    st = status_of(head)
    if is_head_req or st < 200 or st in (204, 304):
        return "none", None
    kind, n = head.framing()
    if kind == "none":
        return "close", None
    return kind, n


def rebuild_head(head, body_len, close=True, length=None):
    """the response head with the framing replaced: Content-Length (length,
    default body_len), no Transfer-Encoding, Connection: close"""
    out = [head.first]
    for k, v in head.headers:
        if k in ("content-length", "transfer-encoding", "connection"):
            continue
        out.append("%s: %s" % (k, v))
    out.append("Content-Length: %d" % (body_len if length is None else length))
    if close:
        out.append("Connection: close")
    return ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")


def error_doc(code, message, resource):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            '<Message>%s</Message><Resource>%s</Resource>'
            '<RequestId>fault-proxy</RequestId></Error>' %
            (code, message, resource)).encode()


def error_response(status, reason, code, message, resource, close):
    body = error_doc(code, message, resource)
    h = ("HTTP/1.1 %d %s\r\nContent-Type: application/xml\r\n"
         "Content-Length: %d\r\nx-amz-request-id: fault-proxy\r\n%s\r\n" %
         (status, reason, len(body), "Connection: close\r\n" if close else ""))
    return h.encode() + body


# ---------------------------------------------------------------- policy

def classify(method, target, head):
    path, _, query = target.partition("?")
    q = urllib.parse.parse_qs(query, keep_blank_values=True)
    segs = [s for s in path.split("/") if s]
    if method == "GET":
        if len(segs) <= 1:
            return "list" if "uploads" not in q else "other"
        return "get"
    if method == "HEAD":
        return "head"
    if method == "PUT":
        if len(segs) <= 1:
            return "other"
        return "copy" if head.get("x-amz-copy-source") else "put"
    if method == "POST":
        if "uploads" in q:
            return "init"
        if "uploadId" in q:
            return "complete"
        return "other"
    if method == "DELETE":
        return "abort" if "uploadId" in q else "delete"
    return "other"


def applicable(kind, cls, method, has_body, q, head):
    if kind == "no_cond":
        return cls in ("put", "complete") and \
            (head.get("if-match") is not None or
             head.get("if-none-match") is not None)
    if kind in ("reset_req", "late"):
        return has_body
    if kind in ("truncate", "bad_length", "flip"):
        return cls == "get"
    if kind == "bad_xml":
        return cls == "list" and q.get("list-type") == ["2"]
    if kind == "error_200":
        return cls in ("complete", "copy")
    return True


class Policy:
    def __init__(self, seed, rates, classes, spare, stall_s, paused):
        self.lock = threading.Lock()
        self.spare = set(spare)
        self.limit = -1
        self.seed = seed
        self.rates = {k: 0.0 for k in KINDS}
        self.rates.update(rates)
        self.classes = set(classes)
        self.stall_s = stall_s
        self.paused = paused
        self.delay_s = 0.0
        self.seen = {}
        self.zero()

    def zero(self):
        self.requests = 0
        self.by_class = {c: 0 for c in CLASSES}
        self.faults = {k: 0 for k in KINDS}
        self.upstream_errors = 0

    def choose(self, method, target, head, has_body):
        """(kind or None, two more random numbers for the variant and
        where to cut, the request's class)"""
        path, _, query = target.partition("?")
        q = urllib.parse.parse_qs(query, keep_blank_values=True)
        cls = classify(method, target, head)
        ident = "%s|%s|%s" % (cls, path, ",".join(q.get("partNumber", [])))
        with self.lock:
            self.requests += 1
            self.by_class[cls] += 1
            n = self.seen.get(ident, 0)
            self.seen[ident] = n + 1
            if self.paused or self.limit == 0 or \
                    (self.classes and cls not in self.classes):
                return None, 0.0, 0.0, cls
            h = hashlib.sha256(("%d|%s|%d" % (self.seed, ident, n)).encode())
            d = h.digest()
            u = int.from_bytes(d[:7], "big") / float(1 << 56)
            v = int.from_bytes(d[7:14], "big") / float(1 << 56)
            w = int.from_bytes(d[14:21], "big") / float(1 << 56)
            cum = 0.0
            for k in KINDS:
                if not applicable(k, cls, method, has_body, q, head) or \
                        (k, cls) in self.spare:
                    continue
                cum += self.rates[k]
                if u < cum:
                    if self.limit > 0:
                        self.limit -= 1
                    return k, v, w, cls
            return None, v, w, cls

    def count(self, kind):
        with self.lock:
            self.faults[kind] += 1

    def stats(self):
        with self.lock:
            return {"requests": self.requests, "by_class": dict(self.by_class),
                    "faults": dict(self.faults),
                    "faults_total": sum(self.faults.values()),
                    "upstream_errors": self.upstream_errors,
                    "paused": self.paused, "seed": self.seed,
                    "rates": dict(self.rates),
                    "classes": sorted(self.classes),
                    "spare": sorted("%s:%s" % p for p in self.spare),
                    "stall_s": self.stall_s, "limit": self.limit}


# ---------------------------------------------------------------- proxying

class Exchange:
    """one client connection: requests relayed one after the other"""

    def __init__(self, pol, client, upstream, log):
        self.pol, self.c, self.up_addr, self.log = pol, Sock(client), upstream, log
        self.u = None

    def connect(self):
        if self.u is None:
            s = socket.create_connection(self.up_addr, timeout=None)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.u = Sock(s)
        return self.u

    def drop_upstream(self, reset=False):
        if self.u is not None:
            self.u.reset() if reset else self.u.close()
            self.u = None

    def run(self):
        try:
            while self.one():
                pass
        except (Closed, OSError, ValueError):
            pass
        finally:
            self.drop_upstream()
            self.c.close()

    def note(self, kind, method, target, what=""):
        self.pol.count(kind)
        if self.log:
            self.log("fault %s %s %s %s" % (kind, method, target[:160], what))

    def one(self):
        """relay one request; False when the connection is done"""
        raw = self.c.head(first=True)
        if raw is None:
            return False
        req = Head(raw)
        parts = req.first.split(" ")
        if len(parts) != 3:
            raise Closed("bad request line")
        method, target = parts[0], parts[1]
        fr, n = req.framing()
        has_body = fr == "chunked" or (fr == "length" and n > 0)
        expect = "100-continue" in req.get("expect", "").lower()
        kind, v, w, cls = self.pol.choose(method, target, req, has_body)
        resource = target.partition("?")[0]

        if kind == "late":
            self.hold_back(raw, fr, n, expect, method, target)
            raise Closed("held back")

        if kind in ("slowdown", "internal", "forbidden", "error_200",
                    "no_cond") or \
                (kind == "stall" and (cls != "get" or v < 0.5)):
            # answered here: the request never reaches the server. A body
            # the client holds back for 100-continue is not waited for.
            close = expect and has_body
            if has_body and not expect:
                self.discard_body(fr, n)
            self.note(kind, method, target)
            if kind == "stall":
                time.sleep(self.pol.stall_s)
                raise Closed("stalled")
            if kind == "slowdown":
                msg = error_response(503, "Slow Down", "SlowDown",
                                     "Please reduce your request rate.",
                                     resource, close)
            elif kind == "internal":
                msg = error_response(500, "Internal Server Error",
                                     "InternalError",
                                     "We encountered an internal error. "
                                     "Please try again.", resource, close)
            elif kind == "no_cond":
                msg = error_response(501, "Not Implemented", "NotImplemented",
                                     "A header you provided implies "
                                     "functionality that is not implemented",
                                     resource, close)
            elif kind == "forbidden":
                if v < 0.5:
                    msg = error_response(403, "Forbidden", "ExpiredToken",
                                         "The provided token has expired.",
                                         resource, close)
                else:
                    msg = error_response(403, "Forbidden",
                                         "RequestTimeTooSkewed",
                                         "The difference between the request "
                                         "time and the current time is too "
                                         "large.", resource, close)
            else:
                body = error_doc("InternalError", "We encountered an internal "
                                 "error. Please try again.", resource)
                msg = ("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
                       "Content-Length: %d\r\nx-amz-request-id: fault-proxy\r\n"
                       "%s\r\n" % (len(body), "Connection: close\r\n"
                                   if close else "")).encode() + body
            self.c.send(msg)
            return not close and not req.wants_close()

        try:
            if self.u is not None and self.u.stale():
                self.drop_upstream()
            up = self.connect()
            up.send(raw)
        except OSError:
            # the server is down: so is the client's connection
            with self.pol.lock:
                self.pol.upstream_errors += 1
            self.drop_upstream()
            self.c.reset()
            raise Closed("upstream unreachable")

        body_done = threading.Event()
        body_err = []
        if has_body:
            cut = None
            if kind == "reset_req":
                total = n if fr == "length" else 1 << 20
                cut = int(total * (0.1 + 0.8 * w))

            def pump():
                try:
                    if fr == "length":
                        whole = relay_length(self.c, up, n, cut)
                    else:
                        whole = relay_chunked(self.c, up, cut)
                    if not whole:
                        self.note("reset_req", method, target,
                                  "after %d body bytes" % cut)
                        self.c.reset()
                        up.reset()
                        body_err.append("reset")
                except (Closed, OSError) as e:
                    body_err.append(str(e))
                finally:
                    body_done.set()
            threading.Thread(target=pump, daemon=True).start()
        else:
            body_done.set()

        try:
            while True:
                rraw = up.head()
                resp = Head(rraw)
                if status_of(resp) >= 200:
                    break
                self.c.send(rraw)  # 100 Continue and other interim replies
        except (Closed, OSError):
            body_done.wait(5)
            self.drop_upstream(reset=True)
            if body_err:
                raise Closed("request reset")
            self.c.reset()  # the server hung up: so do we
            raise Closed("upstream closed")

        keep = self.respond(method, target, kind, v, w, up, resp)
        # a server answers once it has read the body: a body still coming
        # (a final answer to 100-continue) leaves the connection unusable
        if not body_done.wait(2) or body_err:
            keep = False
        if not keep or resp.wants_close():
            self.drop_upstream()
            return False
        return not req.wants_close()

    def hold_back(self, raw, fr, n, expect, method, target):
        """the late fault: keep the request, cut the client off, send the
        request later on a connection of its own"""
        class Keep:
            def __init__(self):
                self.b = bytearray(raw)

            def send(self, d):
                self.b += d
        k = Keep()
        if expect:
            self.c.send(b"HTTP/1.1 100 Continue\r\n\r\n")
        if fr == "length":
            relay_length(self.c, k, n)
        else:
            relay_chunked(self.c, k)
        self.note("late", method, target,
                  "sent %.1f s later" % self.pol.stall_s)
        self.c.reset()

        def later():
            time.sleep(self.pol.stall_s)
            st = "unsent"
            try:
                u = Sock(socket.create_connection(self.up_addr, timeout=60))
                u.send(bytes(k.b))
                while True:
                    resp = Head(u.head())
                    if status_of(resp) >= 200:
                        break
                st = status_of(resp)
                u.close()
            except (Closed, OSError) as e:
                st = "failed: %s" % e
            if self.log:
                self.log("late %s %s answered %s" % (method, target[:160], st))
        threading.Thread(target=later, daemon=True).start()

    def discard_body(self, fr, n):
        if fr == "length":
            relay_length(self.c, None, n)
        elif fr == "chunked":
            relay_chunked(self.c, None)

    def respond(self, method, target, kind, v, w, up, resp):
        """relay (or spoil) the response; True when both connections may be
        kept for the next request"""
        is_head = method == "HEAD"
        rf, rn = resp_framing(resp, is_head)
        if self.pol.delay_s:
            time.sleep(self.pol.delay_s)
        if kind == "bad_xml" and status_of(resp) == 200:
            body = read_body(up, resp)
            bad = spoil_xml(body, v)
            self.note(kind, method, target, "%d -> %d bytes" %
                      (len(body), len(bad)))
            self.c.send(rebuild_head(resp, len(bad), close=False) + bad)
            return rf != "close"
        if kind == "bad_length" and status_of(resp) in (200, 206):
            body = read_body(up, resp)
            if len(body) >= 2:
                k = 1 + int(w * min(len(body) - 1, 4096))
                k = min(k, len(body) - 1)
                wrong = len(body) + k if v < 0.5 else len(body) - k
                self.note(kind, method, target, "%d announced for %d" %
                          (wrong, len(body)))
                self.c.send(rebuild_head(resp, len(body), length=wrong) + body)
                self.c.close()
                raise Closed("wrong length sent")
            self.c.send(rebuild_head(resp, len(body), close=False) + body)
            return rf != "close"
        if kind == "flip" and status_of(resp) in (200, 206):
            body = bytearray(read_body(up, resp))
            if body:
                i = int(w * len(body))
                body[i] ^= 0x5a
                self.note(kind, method, target, "byte %d of %d" %
                          (i, len(body)))
            self.c.send(rebuild_head(resp, len(body), close=False) +
                        bytes(body))
            return rf != "close"
        partial = kind in ("truncate", "reset_resp") or \
            (kind == "stall" and status_of(resp) in (200, 206))
        if partial:
            length = rn if rf == "length" else None
            if rf in ("length", "chunked") and (length is None or length >= 2):
                stop = int((length or (1 << 20)) * (0.05 + 0.9 * w))
                self.c.send(resp.raw)
                whole = relay_length(up, self.c, length, stop) \
                    if rf == "length" else relay_chunked(up, self.c, stop)
                if not whole:
                    self.note(kind, method, target,
                              "after %d body bytes" % stop)
                    self.drop_upstream(reset=True)
                    if kind == "stall":
                        time.sleep(self.pol.stall_s)
                    if kind == "reset_resp":
                        self.c.reset()
                    else:
                        self.c.close()
                    raise Closed(kind)
                return True
            if kind == "reset_resp":  # no body to cut: lose the response
                self.note(kind, method, target, "instead of the response")
                self.drop_upstream(reset=True)
                self.c.reset()
                raise Closed(kind)
        self.c.send(resp.raw)
        if rf == "length":
            relay_length(up, self.c, rn)
        elif rf == "chunked":
            relay_chunked(up, self.c)
        elif rf == "close":
            try:
                while True:
                    self.c.send(up.some(BUF))
            except Closed:
                pass
            return False
        return True


def spoil_xml(body, v):
    """malformed XML from a well-formed listing"""
    text = body
    last_lt = text.rfind(b"<")
    if v < 0.34 and last_lt > 1:
        return text[:max(1, int(last_lt * (v / 0.34)))]
    if v < 0.67:
        m = list(re.finditer(rb"</([A-Za-z]+)>", text))
        if m:
            x = m[int(v * 1000) % len(m)]
            return text[:x.start()] + b"</" + x.group(1)[:-1] + b"Q>" + \
                text[x.end():]
    i = text.find(b">", text.find(b"<ListBucketResult")) + 1
    if i <= 0:
        i = len(text) // 2
    return text[:i] + b"<Contents><Key>&bogus;</Key<<Size>" + text[i:]


# ---------------------------------------------------------------- admin

def admin_server(addr, pol):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            u = urllib.parse.urlsplit(self.path)
            q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
            code = 200
            try:
                with pol.lock:
                    if u.path == "/pause":
                        pol.paused = True
                    elif u.path == "/resume":
                        pol.paused = False
                    elif u.path == "/zero":
                        pol.zero()
                    elif u.path == "/set":
                        for k, vals in q.items():
                            if k in KINDS:
                                pol.rates[k] = float(vals[-1])
                            elif k == "classes":
                                cl = [c for c in vals[-1].split(",") if c]
                                bad = [c for c in cl if c not in CLASSES]
                                if bad:
                                    raise ValueError("unknown class %s" % bad)
                                pol.classes = set(cl)
                            elif k == "spare":
                                pol.spare = parse_spare(vals[-1])
                            elif k == "limit":
                                pol.limit = int(vals[-1])
                            elif k == "stall_s":
                                pol.stall_s = float(vals[-1])
                            elif k == "seed":
                                pol.seed = int(vals[-1])
                                pol.seen.clear()
                            else:
                                raise ValueError("unknown key %s" % k)
                    elif u.path != "/stats":
                        code = 404
                body = json.dumps(pol.stats(), sort_keys=True).encode() \
                    if code == 200 else b"not found\n"
            except ValueError as e:
                code, body = 400, (str(e) + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(addr, H)
    srv.daemon_threads = True
    return srv


# ---------------------------------------------------------------- main

def hostport(text):
    h, _, p = text.rpartition(":")
    return (h or "127.0.0.1", int(p))


def parse_rates(text):
    r = {}
    for item in filter(None, (text or "").split(",")):
        k, _, val = item.partition("=")
        if k not in KINDS:
            raise SystemExit("fault_proxy: unknown fault kind %r (one of %s)"
                             % (k, ", ".join(KINDS)))
        r[k] = float(val)
    return r


def parse_spare(text):
    out = set()
    for item in filter(None, (text or "").split(",")):
        k, _, c = item.partition(":")
        if k not in KINDS or c not in CLASSES:
            raise ValueError("bad KIND:CLASS pair %r" % item)
        out.add((k, c))
    return out


def main():
    ap = argparse.ArgumentParser(description="seeded fault-injecting proxy")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--admin", default="127.0.0.1:0")
    ap.add_argument("--upstream", default="127.0.0.1:7480")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rates", default="")
    ap.add_argument("--classes", default="")
    ap.add_argument("--spare", default="")
    ap.add_argument("--stall-s", type=float, default=5.0)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--paused", action="store_true")
    ap.add_argument("--port-file")
    ap.add_argument("--log")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="exit when the process that started it is gone "
                    "(a test killed with SIGKILL leaves no proxy behind)")
    a = ap.parse_args()
    if a.exit_with_parent:
        ppid = os.getppid()

        def orphaned():
            while os.getppid() == ppid:
                time.sleep(1)
            os._exit(0)
        threading.Thread(target=orphaned, daemon=True).start()
    classes = [c for c in a.classes.split(",") if c]
    for c in classes:
        if c not in CLASSES:
            raise SystemExit("fault_proxy: unknown class %r" % c)
    try:
        spare = parse_spare(a.spare)
    except ValueError as e:
        raise SystemExit("fault_proxy: %s" % e)
    pol = Policy(a.seed, parse_rates(a.rates), classes, spare, a.stall_s,
                 a.paused)
    pol.delay_s = a.delay_ms / 1000.0
    logf = open(a.log, "a", buffering=1) if a.log else None
    loglock = threading.Lock()

    def log(msg):
        if logf:
            with loglock:
                logf.write("%.3f %s\n" % (time.time(), msg))

    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(hostport(a.listen))
    lsock.listen(128)
    adm = admin_server(hostport(a.admin), pol)
    threading.Thread(target=adm.serve_forever, daemon=True).start()
    ports = "proxy %d\nadmin %d\n" % (lsock.getsockname()[1],
                                      adm.server_address[1])
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(ports)
        os.rename(a.port_file + ".tmp", a.port_file)
    sys.stdout.write(ports)
    sys.stdout.flush()
    upstream = hostport(a.upstream)
    while True:
        c, _ = lsock.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        ex = Exchange(pol, c, upstream, log)
        threading.Thread(target=ex.run, daemon=True).start()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
