#!/usr/bin/env python3
"""gw_hostile: a hostile HTTP client of s3rdma-gateway (test_gw_hostile.sh).

Raw sockets, so that the request line and the framing are exactly what is
under test; SigV4 signed here (host, x-amz-date, x-amz-content-sha256 and
any header the case adds), so that a request is validly signed wherever the
signature is not the point. Standard library only.

    gw_hostile.py [--expect STATUS[/CODE]] CASE [ARG...]

One case per run; it prints what it saw ("# ..." lines) and exits 0 when
the case holds, 1 when not, 2 when it could not be run. --expect: the
status (and S3 error <Code>) the gateway must answer with; STATUS and CODE
may be lists ("400,431", "InvalidURI,-"), CODE "-" meaning no S3 error
document (libmicrohttpd's own answer), "any" or nothing any code.

Environment: S3R_GW_ENDPOINT (the gateway), S3R_ENDPOINT (RGW itself: the
"nothing stored" checks ask it directly), AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, HOSTILE_BUCKET.

Cases (TARGET: "{B}" is the bucket, "{PORT}" a listener's port, Python
escapes such as \\x01 are decoded):
  good                 PUT /{B}/good then GET it back: 200, same bytes
  noauth badsig badkey skew malformed
                       a GET whose Authorization is missing, has a wrong
                       signature, an unknown access key, an x-amz-date 20
                       minutes old (validly signed), or is malformed
  target TARGET        a validly signed GET of the raw request-target
                       TARGET, with a TCP listener on a kernel-chosen
                       port: it must see no connection (SSRF)
  put-target TARGET    a validly signed PUT to the raw TARGET
  cl-te                PUT with Content-Length and Transfer-Encoding:
                       chunked
  cl-cl                PUT with two Content-Length headers (5 and 11)
                       (both with UNSIGNED-PAYLOAD: upstream's own payload
                       check does not hide a gateway that forwards them)
  cl-short             PUT with Content-Length: 5 and more bytes after the
                       body (a pipelined request): the object must be
                       exactly the 5 bytes, the smuggled request must store
                       nothing
  big-header           a GET with one header of 200 KiB
  many-headers         a GET with 200 headers
  only KEY...          the bucket (asked of RGW directly) holds exactly
                       these keys; any other is reported, then deleted (so
                       that one failure does not fail the checks after it)
  mb / rb              create / empty and delete the bucket (on RGW
                       directly; these need no S3R_GW_ENDPOINT)
  slowloris            half a request's head, then silence: the gateway
                       must close the connection (its --auth-timeout, well
                       before --timeout) within 30 s
  upload-share         with --max-uploads-per-addr 1: a PUT whose body
                       trickles holds this address's share, a second PUT
                       meanwhile gets 503 SlowDown, and once the first is
                       done a PUT is served again
  conns-limit N        with --max-conns-per-addr N (a non-loopback
                       address): N idle connections are kept, the next is
                       closed at once, and one is accepted again when one
                       of the N closes
  trickle N SECONDS    (needs only S3R_GW_ENDPOINT: run it as another
                       user) for SECONDS, keep N connections open that
                       each send a request's head one byte every 0.5 s,
                       never finishing it; one that is closed is opened
                       again 0.2 s later. Prints "# trickle: opened=..
                       refused=.. (closed within 1 s) longest=.. (the
                       longest life seen, s) open=.. (at the end)" and
                       "started" into FILE $TRICKLE_STARTED (when set)
                       once the first N were opened; stops early once
                       FILE $TRICKLE_STOP (when set) exists
  dc-target other|own  a signed GET of /{B}/good with a DC token whose
                       target's GID is another host's (192.0.2.77: must
                       be refused) or this client's own (127.0.0.1, from
                       loopback: must not be refused, served or declined)
  fake-upstream FILE   serve as an upstream that adds x-amz-rdma-reply and
                       x-amz-rdma-bytes-transferred to every reply (its
                       port written to FILE) until killed
  rdma-headers         a GET through a gateway in front of fake-upstream:
                       the reply carries no x-amz-rdma-* header
"""

import datetime
import hashlib
import hmac
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

TIMEOUT = 30  # seconds, for every socket operation
UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       b"0123456789-_.~")


def say(*a):
    print("#", *a, flush=True)


# ---- SigV4 (as s3/s3_sigv4.c in S3 mode: the path as sent) --------------

def uri_encode(b):
    return "".join(chr(c) if c in UNRESERVED else "%%%02X" % c for c in b)


def canonical_query(q):
    params = []
    for part in q.split("&") if q else []:
        if not part:
            continue
        name, _, val = part.partition("=")
        params.append((uri_encode(urllib.parse.unquote_to_bytes(name)),
                       uri_encode(urllib.parse.unquote_to_bytes(val))))
    params.sort()
    return "&".join(n + "=" + v for n, v in params)


def trimmed(v):
    return " ".join(v.split())


def hmac256(key, msg):
    return hmac.new(key, msg.encode("latin-1"), hashlib.sha256).digest()


def amz_now(delta_s=0):
    t = datetime.datetime.now(datetime.timezone.utc)
    return (t + datetime.timedelta(seconds=delta_s)).strftime("%Y%m%dT%H%M%SZ")


def sign(method, target, headers, payload_hash, access, secret, region,
         amz_date):
    """headers: [(name, value)] including host, x-amz-date and
    x-amz-content-sha256; every one is signed. Returns the Authorization
    value."""
    path, _, query = target.partition("?")
    byname = {}
    for k, v in headers:
        byname.setdefault(k.lower().strip(), []).append(trimmed(v))
    names = sorted(byname)
    creq = "\n".join([
        method, path, canonical_query(query),
        "".join(n + ":" + ",".join(byname[n]) + "\n" for n in names),
        ";".join(names), payload_hash])
    scope = "%s/%s/s3/aws4_request" % (amz_date[:8], region)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode("latin-1")).hexdigest()])
    k = hmac256(("AWS4" + secret).encode(), amz_date[:8])
    for part in (region, "s3", "aws4_request"):
        k = hmac256(k, part)
    sig = hmac.new(k, sts.encode("latin-1"), hashlib.sha256).hexdigest()
    return ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
            "Signature=%s" % (access, scope, ";".join(names), sig))


# ---- raw HTTP -------------------------------------------------------------

class Endpoint:
    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.hostport = "%s:%d" % (self.host, self.port)


def env(name):
    v = os.environ.get(name)
    if not v:
        print("gw_hostile: %s is not set" % name, file=sys.stderr)
        sys.exit(2)
    return v


GW = None
RGW = None
ACCESS = SECRET = REGION = BUCKET = ""


def request_bytes(method, target, body=b"", extra=(), ep=None, sign_it=True,
                  amz_date=None, access=None, secret=None,
                  payload_hash=None, framing=None):
    """The bytes of one request. extra: [(name, value)] more headers, all
    signed; framing: [(name, value)] replacing Content-Length (not signed):
    the caller then sends the body its own way (it is not appended)."""
    ep = ep or GW
    amz_date = amz_date or amz_now()
    payload_hash = payload_hash or hashlib.sha256(body).hexdigest()
    hdrs = [("Host", ep.hostport), ("x-amz-date", amz_date),
            ("x-amz-content-sha256", payload_hash)] + list(extra)
    if sign_it:
        auth = sign(method, target, hdrs, payload_hash, access or ACCESS,
                    secret or SECRET, REGION, amz_date)
        hdrs.append(("Authorization", auth))
    tail = b""
    if framing is None:
        framing = [("Content-Length", str(len(body)))] \
            if body or method == "PUT" else []
        tail = body
    hdrs += framing
    head = "%s %s HTTP/1.1\r\n" % (method, target)
    head += "".join("%s: %s\r\n" % (k, v) for k, v in hdrs)
    return head.encode("latin-1") + b"\r\n" + tail


class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        self.code = "-"
        m = re.search(rb"<Code>([^<]*)</Code>", body)
        if m:
            self.code = m.group(1).decode("latin-1")

    def __str__(self):
        return "%d %s %r" % (self.status, self.code, self.body[:300])


class Conn:
    def __init__(self, ep=None):
        ep = ep or GW
        self.s = socket.create_connection((ep.host, ep.port), timeout=TIMEOUT)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _more(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def reply(self, head=False):
        """The next reply; None when the connection closed before one."""
        try:
            line = self._line()
        except (EOFError, ConnectionError):
            return None
        parts = line.split(b" ", 2)
        status = int(parts[1])
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode("latin-1")] = \
                v.strip().decode("latin-1")
        body = b""
        if head or status in (204, 304) or 100 <= status < 200:
            pass
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                n = int(self._line().split(b";")[0], 16)
                if n == 0:
                    while self._line():
                        pass
                    break
                body += self._take(n)
                self._take(2)
        elif "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        else:
            try:
                while True:
                    self._more()
            except (EOFError, ConnectionError):
                pass
            body, self.buf = self.buf, b""
        return Reply(status, headers, body)

    def close(self):
        self.s.close()


def roundtrip(data, ep=None, head=False):
    c = Conn(ep)
    try:
        c.send(data)
        return c.reply(head)
    except (ConnectionError, socket.timeout) as e:
        say("connection:", e)
        return None
    finally:
        c.close()


# ---- checks -----------------------------------------------------------------

EXPECT = None  # (set of statuses, code or "any")


def matches(rep):
    if rep is None:
        say("no reply: the connection closed")
        return False
    say("reply:", rep)
    if EXPECT is None:
        return True
    statuses, codes = EXPECT
    ok = rep.status in statuses and ("any" in codes or rep.code in codes)
    if not ok:
        say("expected %s %s" % (",".join(map(str, sorted(statuses))),
                                ",".join(sorted(codes))))
    return ok


def get_object(key, ep=None):
    """(status, body) of a signed GET of /BUCKET/key (key already encoded)."""
    ep = ep or RGW
    rep = roundtrip(request_bytes("GET", "/%s/%s" % (BUCKET, key), ep=ep), ep)
    return (rep.status, rep.body) if rep else (0, b"")


def list_keys():
    ep = RGW
    rep = roundtrip(request_bytes("GET", "/%s?list-type=2&max-keys=1000"
                                  % BUCKET, ep=ep), ep)
    if not rep or rep.status != 200:
        say("cannot list the bucket:", rep)
        return None
    root = ET.fromstring(rep.body)
    return sorted(e.text or "" for e in root.iter()
                  if e.tag.endswith("}Key") or e.tag == "Key")


# ---- cases ------------------------------------------------------------------

def case_good():
    body = os.urandom(1000) + b"good"
    rep = roundtrip(request_bytes("PUT", "/%s/good" % BUCKET, body))
    if not rep or rep.status != 200:
        say("PUT good:", rep)
        return False
    status, got = get_object("good", GW)
    if status != 200 or got != body:
        say("GET good: %d, %d bytes%s" % (status, len(got),
                                           "" if got == body else ", differ"))
        return False
    say("PUT and GET through the gateway: 200, same bytes")
    return True


def case_auth(kind):
    target = "/%s/good" % BUCKET
    if kind == "noauth":
        data = request_bytes("GET", target, sign_it=False)
    elif kind == "badsig":
        data = request_bytes("GET", target)
        m = re.search(rb"Signature=([0-9a-f])", data)
        flip = b"0" if m.group(1) != b"0" else b"1"
        data = data[:m.start(1)] + flip + data[m.end(1):]
    elif kind == "badkey":
        data = request_bytes("GET", target, access="AKIDHOSTILEUNKNOWN00",
                             secret="not-the-secret")
    elif kind == "skew":
        data = request_bytes("GET", target, amz_date=amz_now(-20 * 60))
    elif kind == "malformed":
        data = request_bytes("GET", target, sign_it=False)
        data = data.replace(b"\r\n\r\n", b"\r\nAuthorization: AWS4-HMAC-SHA256 "
                            b"Credential=garbage, SignedHeaders=host, "
                            b"Signature=xyz\r\n\r\n", 1)
    return matches(roundtrip(data))


class Listener:
    """A TCP listener on 127.0.0.1 and a kernel-chosen port that records
    every connection (and answers it a 200, as a server would)."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.seen = []
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            try:
                c, addr = self.s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(2)
            try:
                first = c.recv(4096)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                          b"Connection: close\r\n\r\nok")
            except OSError:
                first = b""
            c.close()
            self.seen.append((addr, first[:200]))

    def close(self):
        self.stop = True
        self.t.join(5)
        self.s.close()


def expand(target, port=0):
    t = target.replace("{B}", BUCKET).replace("{PORT}", str(port))
    return t.encode("latin-1").decode("unicode_escape")


def case_target(target):
    lis = Listener()
    try:
        t = expand(target, lis.port)
        say("request-target %r (listener on port %d)" % (t, lis.port))
        ok = matches(roundtrip(request_bytes("GET", t)))
        time.sleep(1)  # a forwarded request may still be on its way
    finally:
        lis.close()
    for addr, first in lis.seen:
        say("the listener got a connection from %s:%d: %r" % (addr + (first,)))
    if lis.seen:
        say("FORWARDED to the listener: %d connection(s)" % len(lis.seen))
    return ok and not lis.seen


def case_put_target(target):
    t = expand(target)
    say("request-target %r" % t)
    return matches(roundtrip(request_bytes("PUT", t, b"hostile body")))


def case_cl_te():
    body = b"hello"
    chunked = b"5\r\nhello\r\n0\r\n\r\n"
    data = request_bytes("PUT", "/%s/clte" % BUCKET, body,
                         payload_hash="UNSIGNED-PAYLOAD",
                         framing=[("Content-Length", "5"),
                                  ("Transfer-Encoding", "chunked")])
    return matches(roundtrip(data + chunked))


def case_cl_cl():
    body = b"hello world"
    data = request_bytes("PUT", "/%s/clcl" % BUCKET, body,
                         payload_hash="UNSIGNED-PAYLOAD",
                         framing=[("Content-Length", "5"),
                                  ("Content-Length", "11")])
    return matches(roundtrip(data + body))


def case_cl_short():
    body = b"hello"
    smuggled = ("PUT /%s/smuggled HTTP/1.1\r\nHost: %s\r\n"
                "Content-Length: 3\r\n\r\nabc" % (BUCKET, GW.hostport)).encode()
    data = request_bytes("PUT", "/%s/pipelined" % BUCKET, body)
    c = Conn()
    try:
        c.send(data + smuggled)
        first = c.reply()
        ok = matches(first)
        try:
            second = c.reply()
            say("the bytes after the body, as a request:", second)
        except (ConnectionError, socket.timeout, ValueError, IndexError) as e:
            say("the bytes after the body: no reply (%s)" % e)
    finally:
        c.close()
    status, got = get_object("pipelined")
    say("stored: %d, %r" % (status, got[:100]))
    if status == 200 and got != body:
        say("STORED beyond Content-Length: %d bytes" % len(got))
        ok = False
    if status not in (200, 404):
        ok = False
    return ok


def case_big_header():
    return matches(roundtrip(request_bytes(
        "GET", "/%s/good" % BUCKET, sign_it=True,
        extra=[("x-hostile-big", "a" * (200 * 1024))])))


def case_many_headers():
    return matches(roundtrip(request_bytes(
        "GET", "/%s/good" % BUCKET,
        extra=[("x-hostile-%03d" % i, "v") for i in range(200)])))


def case_only(keys):
    got = list_keys()
    if got is None:
        return False
    if got != sorted(keys):
        say("the bucket holds %r, expected %r" % (got, sorted(keys)))
        for k in set(got) - set(keys):
            target = "/%s/%s" % (BUCKET, uri_encode(k.encode()).replace(
                "%2F", "/"))
            rep = roundtrip(request_bytes("DELETE", target, ep=RGW), RGW)
            say("deleted %r: %s" % (k, rep.status if rep else "no reply"))
        return False
    say("the bucket holds exactly %r" % got)
    return True


def case_mb():
    rep = roundtrip(request_bytes("PUT", "/" + BUCKET, ep=RGW), RGW)
    say("create bucket %s: %s" % (BUCKET, rep))
    return rep is not None and rep.status == 200


def case_rb():
    case_only([])
    rep = roundtrip(request_bytes("DELETE", "/" + BUCKET, ep=RGW), RGW)
    say("delete bucket %s: %s" % (BUCKET, rep))
    return rep is not None and rep.status == 204


def gw_stat(name):
    rep = roundtrip(("GET /_s3rdma/stats HTTP/1.1\r\nHost: %s\r\n\r\n"
                     % GW.hostport).encode())
    for line in (rep.body.decode() if rep else "").splitlines():
        k, _, v = line.partition(" ")
        if k == name:
            return int(v)
    return -1


def closed_by_peer(c, wait_s):
    """Does the peer close c (EOF or reset) within wait_s seconds?"""
    c.s.settimeout(wait_s)
    try:
        return c.s.recv(1) == b""
    except ConnectionError:
        return True
    except socket.timeout:
        return False


def case_slowloris():
    c = Conn()
    try:
        c.send(("GET /%s/good HTTP/1.1\r\nHost: %s\r\n"
                % (BUCKET, GW.hostport)).encode())
        ok = closed_by_peer(c, 30)
    finally:
        c.close()
    say("a half-sent request's connection %s" %
        ("was closed" if ok else "is still open after 30 s"))
    return ok


def case_upload_share():
    body = b"x" * 100000
    head = request_bytes("PUT", "/%s/trickled" % BUCKET, body,
                         payload_hash="UNSIGNED-PAYLOAD")
    head = head[:len(head) - len(body)]
    before = gw_stat("http_bytes_in")
    a = Conn()
    try:
        a.send(head + body[:10])
        # the first PUT holds its slot once its body reaches a worker
        for _ in range(100):
            if gw_stat("http_bytes_in") >= before + 10:
                break
            time.sleep(0.1)
        else:
            say("the first PUT's body never reached a worker")
            return False
        second = roundtrip(request_bytes("PUT", "/%s/second" % BUCKET, b"2"))
        say("a second PUT meanwhile:", second)
        ok = second is not None and second.status == 503 and \
            second.code == "SlowDown"
        a.send(body[10:])
        first = a.reply()
        say("the trickled PUT:", first)
        ok = ok and first is not None and first.status == 200
    finally:
        a.close()
    third = roundtrip(request_bytes("PUT", "/%s/second" % BUCKET, b"3"))
    say("a PUT after it:", third)
    return ok and third is not None and third.status == 200


def case_conns_limit(n):
    n = int(n)
    held = [Conn() for _ in range(n)]
    try:
        extra = Conn()
        refused = closed_by_peer(extra, 10)
        extra.close()
        say("connection %d: %s" % (n + 1, "closed" if refused else "kept"))
        kept = not any(closed_by_peer(c, 0.5) for c in held)
        say("the first %d: %s" % (n, "kept" if kept else "closed"))
        held.pop().close()
        time.sleep(0.5)  # the gateway notices the close
        again = roundtrip(request_bytes("GET", "/%s/good" % BUCKET))
        say("after one closed, a request:", again)
        return refused and kept and again is not None and again.status == 200
    finally:
        for c in held:
            c.close()


def case_trickle(n, seconds):
    import selectors
    n, end = int(n), time.monotonic() + float(seconds)
    host, port = GW.host, GW.port
    sel = selectors.DefaultSelector()
    born = {}  # socket -> when opened
    stats = {"opened": 0, "refused": 0, "longest": 0.0}
    reopen_at = []  # when a slot may open again
    head = b"GET /x HTTP/1.1\r\nHost: gw\r\nX-Trickle: "

    def open_one():
        try:
            s = socket.create_connection((host, port), timeout=2)
            s.sendall(head[:8])
        except OSError:
            reopen_at.append(time.monotonic() + 0.2)
            stats["opened"] += 1
            stats["refused"] += 1
            return
        s.setblocking(False)
        born[s] = (time.monotonic(), 8)
        sel.register(s, selectors.EVENT_READ)
        stats["opened"] += 1

    def closed(s):
        life = time.monotonic() - born.pop(s)[0]
        sel.unregister(s)
        s.close()
        if life < 1.0:
            stats["refused"] += 1
        stats["longest"] = max(stats["longest"], life)
        reopen_at.append(time.monotonic() + 0.2)

    for _ in range(n):
        open_one()
    started = os.environ.get("TRICKLE_STARTED")
    if started:
        with open(started, "w") as f:
            f.write("started\n")
    stop = os.environ.get("TRICKLE_STOP")
    next_byte = time.monotonic() + 0.5
    while time.monotonic() < end and not (stop and os.path.exists(stop)):
        for key, _ in sel.select(timeout=0.05):
            try:
                if key.fileobj.recv(4096):
                    continue  # an answer: the connection stays ours
            except OSError:
                pass
            closed(key.fileobj)
        now = time.monotonic()
        if now >= next_byte:
            next_byte = now + 0.5
            for s in list(born):
                t0, sent = born[s]
                b = head[sent:sent + 1] or b"a"
                try:
                    s.send(b)
                    born[s] = (t0, sent + 1)
                except OSError:
                    closed(s)
        while reopen_at and min(reopen_at) <= now:
            reopen_at.remove(min(reopen_at))
            open_one()
    for s in list(born):
        stats["longest"] = max(stats["longest"], time.monotonic() - born[s][0])
    say("trickle: opened=%d refused=%d longest=%.1f open=%d" %
        (stats["opened"], stats["refused"], stats["longest"], len(born)))
    for s in born:
        s.close()
    return True


def dc_token(gid_v4):
    """A cuObject DC token (rdx_token.h, form 1) for 4096 bytes at a made-up
    address, its GID the IPv4-mapped form of gid_v4."""
    gid = bytes(10) + b"\xff\xff" + socket.inet_aton(gid_v4)
    return "%016x:%08x:%08x:%04x:%06x:%01x:%s" % (
        0x7f0000000000, 4096, 0x1f2e3, 0, 0x7a03, 1, gid.hex())


def case_dc_target(which):
    gid = {"other": "192.0.2.77", "own": "127.0.0.1"}[which]
    rep = roundtrip(request_bytes(
        "GET", "/%s/good" % BUCKET,
        extra=[("x-amz-rdma-token", dc_token(gid))]))
    if which == "other":
        return matches(rep)
    say("reply:", rep)
    return rep is not None and rep.status != 403


def case_fake_upstream(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    s.settimeout(0.2)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % s.getsockname()[1])
    os.rename(portfile + ".tmp", portfile)
    while True:
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.settimeout(5)
        try:
            while b"\r\n\r\n" not in c.recv(65536):
                pass
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                      b"x-amz-rdma-reply: 200\r\n"
                      b"x-amz-rdma-bytes-transferred: 5\r\n"
                      b"Connection: close\r\n\r\nhello")
        except OSError:
            pass
        c.close()


def case_rdma_headers():
    rep = roundtrip(request_bytes("GET", "/%s/anything" % BUCKET))
    if not matches(rep):
        return False
    bad = [k for k in rep.headers if k.startswith("x-amz-rdma-")]
    if bad:
        say("upstream's headers reached the client:", bad)
    return rep.status == 200 and rep.body == b"hello" and not bad


def main(argv):
    global GW, RGW, ACCESS, SECRET, REGION, BUCKET, EXPECT
    if len(argv) >= 2 and argv[0] == "--expect":
        st, _, code = argv[1].partition("/")
        EXPECT = ({int(x) for x in st.split(",")},
                  set((code or "any").split(",")))
        argv = argv[2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    case, args = argv[0], argv[1:]
    if case == "fake-upstream":  # needs none of the environment
        return 0 if case_fake_upstream(*args) else 1
    if case == "trickle":  # needs the gateway only
        GW = Endpoint(env("S3R_GW_ENDPOINT"))
        return 0 if case_trickle(*args) else 1
    if case not in ("mb", "rb"):
        GW = Endpoint(env("S3R_GW_ENDPOINT"))
    RGW = Endpoint(env("S3R_ENDPOINT"))
    ACCESS, SECRET = env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")
    REGION = os.environ.get("AWS_REGION", "us-east-1")
    BUCKET = env("HOSTILE_BUCKET")
    cases = {
        "mb": case_mb,
        "rb": case_rb,
        "good": case_good,
        "target": case_target,
        "put-target": case_put_target,
        "cl-te": case_cl_te,
        "cl-cl": case_cl_cl,
        "cl-short": case_cl_short,
        "big-header": case_big_header,
        "many-headers": case_many_headers,
        "only": lambda *k: case_only(list(k)),
        "slowloris": case_slowloris,
        "upload-share": case_upload_share,
        "conns-limit": case_conns_limit,
        "rdma-headers": case_rdma_headers,
        "dc-target": case_dc_target,
    }
    for k in ("noauth", "badsig", "badkey", "skew", "malformed"):
        cases[k] = lambda k=k: case_auth(k)
    if case not in cases:
        print("gw_hostile: unknown case %r" % case, file=sys.stderr)
        return 2
    try:
        return 0 if cases[case](*args) else 1
    except (OSError, ValueError) as e:
        say("error: %s: %s" % (type(e).__name__, e))
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
