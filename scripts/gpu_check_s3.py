#!/usr/bin/env python3
"""gpu_check_s3: the GPU check's own S3 server (scripts/gpu-check.sh), for
that check only, on machines where nothing can be installed. NOT an S3
server to use: signatures are not checked, anyone who reaches the port
may read and write, and it keeps no promise across a crash. The test
suites use Ceph RGW.

Python's standard library alone. Path-style requests: buckets (PUT, HEAD,
DELETE, ListBuckets); objects: GET (Range, If-Match, If-None-Match), HEAD,
PUT (If-Match, If-None-Match, x-amz-meta-*, Content-Type), CopyObject
(x-amz-copy-source, x-amz-metadata-directive), DELETE, DeleteObjects;
ListObjectsV2 (prefix, delimiter, max-keys, continuation-token,
start-after, encoding-type=url); multipart uploads (create, UploadPart,
UploadPartCopy, complete with If-Match/If-None-Match, abort, ListParts,
ListMultipartUploads). ETags as S3 makes them (the MD5 of the bytes, or
of the parts' MD5s followed by "-N").

Objects live in files under DIR (each its bytes and a JSON record beside
them, named by a hash of bucket and key); the index is in memory, built
from DIR at start.

    gpu_check_s3.py --dir DIR [--bucket NAME] [--port N] [--port-file FILE]
        serves 127.0.0.1:N (N 0: a free port, written to FILE once
        listening), with bucket NAME made; stops on SIGTERM or SIGINT
    gpu_check_s3.py --put URL FILE
        FILE to the server as one PUT to URL (http://HOST:PORT/BUCKET/KEY)
"""
import argparse
import email.utils
import hashlib
import http.client
import json
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PART_MIN = 5 << 20
CHUNK = 1 << 20
META = ("content-type", "cache-control", "content-disposition",
        "content-encoding", "expires")


class Store:
    """Buckets and objects: the index in memory (one lock), bytes in files
    written whole before they are renamed into place."""

    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.buckets = {}  # name -> {key: record}
        self.uploads = {}  # id -> {bucket, key, meta, parts: {n: rec}}
        os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
        for name in sorted(os.listdir(root)):
            d = os.path.join(root, name)
            if name == "tmp" or not os.path.isdir(d):
                continue
            objs = self.buckets.setdefault(name, {})
            for f in os.listdir(d):
                if f.endswith(".json"):
                    with open(os.path.join(d, f)) as fh:
                        rec = json.load(fh)
                    objs[rec["key"]] = rec

    def path(self, bucket, key):
        h = hashlib.sha256(key.encode("utf-8", "surrogateescape"))
        return os.path.join(self.root, bucket, h.hexdigest()[:40])

    def tmp(self):
        return os.path.join(self.root, "tmp", secrets.token_hex(12))

    def put(self, bucket, key, tmp, size, etag, meta):
        """The file tmp becomes the object (lock held): its bytes in a file
        of their own (a GET of the version before reads that one)."""
        base = self.path(bucket, key)
        data = "%s.%s.data" % (base, secrets.token_hex(6))
        rec = dict(key=key, size=size, etag=etag, meta=meta,
                   mtime=time.time(), data=data)
        os.replace(tmp, data)
        with open(base + ".json.tmp", "w") as fh:
            json.dump(rec, fh)
        os.replace(base + ".json.tmp", base + ".json")
        old = self.buckets[bucket].get(key)
        self.buckets[bucket][key] = rec
        if old:
            unlink(old["data"])
        return rec

    def delete(self, bucket, key):
        rec = self.buckets.get(bucket, {}).pop(key, None)
        if rec is None:
            return
        unlink(self.path(bucket, key) + ".json")
        unlink(rec["data"])


def unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


def esc(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace('"', "&quot;"))


def unquote_etag(e):
    return e.strip().strip('"')


def match(cond, rec):
    """If-Match / If-None-Match value against rec (None: absent)."""
    if cond is None:
        return None
    if cond.strip() == "*":
        return rec is not None
    return rec is not None and any(unquote_etag(c) == rec["etag"]
                                   for c in cond.split(","))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "gpu_check_s3"

    def log_message(self, fmt, *args):  # quiet: the check prints its own
        pass

    # ---- answers ----

    def send(self, status, body=b"", headers=None, length=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length",
                         str(len(body) if length is None else length))
        self.send_header("x-amz-request-id", secrets.token_hex(8))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def xml(self, root, inner, status=200):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<%s>%s</%s>' %
                (root, inner, root)).encode()
        self.send(status, body, {"Content-Type": "application/xml"})

    def error(self, status, code, msg=""):
        self.xml("Error", "<Code>%s</Code><Message>%s</Message><Resource>%s"
                 "</Resource>" % (code, esc(msg or code), esc(self.path)),
                 status)

    def obj_headers(self, rec):
        h = {"ETag": '"%s"' % rec["etag"], "Accept-Ranges": "bytes",
             "Last-Modified": email.utils.formatdate(rec["mtime"],
                                                     usegmt=True)}
        h.update(rec["meta"])
        h.setdefault("content-type", "binary/octet-stream")
        return h

    # ---- requests ----

    def parse(self):
        u = urllib.parse.urlsplit(self.path)
        self.q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
        parts = u.path.lstrip("/").split("/", 1)
        self.bucket = urllib.parse.unquote(parts[0]) or None
        self.key = urllib.parse.unquote(parts[1]) if len(parts) > 1 and \
            parts[1] else None
        self.st = self.server.store

    def body_to(self, f, md5):
        """The request's body into file f (its MD5 into md5): its size."""
        n = int(self.headers.get("Content-Length") or 0)
        left = n
        while left:
            b = self.rfile.read(min(CHUNK, left))
            if not b:
                raise ConnectionError("body cut short")
            f.write(b)
            md5.update(b)
            left -= len(b)
        return n

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.parse()
        st = self.st
        if not self.bucket:
            inner = "".join("<Bucket><Name>%s</Name><CreationDate>%s"
                            "</CreationDate></Bucket>" % (esc(b), iso(0))
                            for b in sorted(st.buckets))
            return self.xml("ListAllMyBucketsResult",
                            "<Owner><ID>check</ID></Owner><Buckets>%s"
                            "</Buckets>" % inner)
        if self.bucket not in st.buckets:
            return self.error(404, "NoSuchBucket")
        if not self.key:
            if self.command == "HEAD":
                return self.send(200)
            if "uploads" in self.q:
                return self.list_uploads()
            return self.list_objects()
        if "uploadId" in self.q:
            return self.list_parts()
        with st.lock:
            rec = st.buckets[self.bucket].get(self.key)
        if rec is None:
            return self.error(404, "NoSuchKey")
        if match(self.headers.get("If-Match"), rec) is False:
            return self.error(412, "PreconditionFailed")
        if match(self.headers.get("If-None-Match"), rec):
            return self.send(304, headers={"ETag": '"%s"' % rec["etag"]})
        h = self.obj_headers(rec)
        size, a, z = rec["size"], 0, rec["size"] - 1
        rng = self.headers.get("Range")
        status = 200
        if rng and self.command == "GET":
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if not m or (not m.group(1) and not m.group(2)):
                return self.error(416, "InvalidRange")
            if m.group(1):
                a = int(m.group(1))
                z = int(m.group(2)) if m.group(2) else size - 1
            else:
                a, z = max(0, size - int(m.group(2))), size - 1
            z = min(z, size - 1)
            if a >= size or z < a:
                return self.error(416, "InvalidRange")
            status = 206
            h["Content-Range"] = "bytes %d-%d/%d" % (a, z, size)
        if self.command == "HEAD":
            return self.send(200, headers=h, length=size)
        self.send_response(status)
        for k, v in h.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(z - a + 1))
        self.end_headers()
        self.wfile.flush()
        left = z - a + 1
        try:
            with open(rec["data"], "rb") as f:
                off = a
                while left > 0:
                    n = os.sendfile(self.connection.fileno(), f.fileno(),
                                    off, min(left, 64 * CHUNK))
                    if n <= 0:
                        break
                    off += n
                    left -= n
        except FileNotFoundError:  # (replaced, and gone, before the open)
            pass
        if left:  # the answer is cut: the client must see it so
            self.close_connection = True

    def list_objects(self):
        q, st = self.q, self.st
        prefix, delim = q.get("prefix", ""), q.get("delimiter", "")
        token = q.get("continuation-token") or q.get("start-after") or ""
        mk = int(q.get("max-keys") or 1000) or 1000
        enc = q.get("encoding-type") == "url"

        def name(k):
            return urllib.parse.quote(k, safe="/") if enc else k
        with st.lock:
            recs = sorted(st.buckets[self.bucket].items())
        out, prefixes, n, last, trunc = [], [], 0, "", False
        for k, rec in recs:
            if not k.startswith(prefix) or (token and k <= token):
                continue
            d = k.find(delim, len(prefix)) if delim else -1
            if d >= 0:
                cp = k[:d + len(delim)]
                if prefixes and prefixes[-1] == cp:
                    last = k
                    continue
                if n == mk:
                    trunc = True
                    break
                prefixes.append(cp)
            else:
                if n == mk:
                    trunc = True
                    break
                out.append((k, rec))
            n += 1
            last = k
        inner = "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount>" \
            "<MaxKeys>%d</MaxKeys><IsTruncated>%s</IsTruncated>" % (
                esc(self.bucket), esc(name(prefix)), n, mk,
                "true" if trunc else "false")
        if enc:
            inner += "<EncodingType>url</EncodingType>"
        if delim:
            inner += "<Delimiter>%s</Delimiter>" % esc(delim)
        if trunc:  # past every key under the last prefix given
            t = prefixes[-1] + "\U0010ffff" if prefixes and \
                last.startswith(prefixes[-1]) else last
            inner += "<NextContinuationToken>%s</NextContinuationToken>" % \
                esc(t)
        for k, rec in out:
            inner += ("<Contents><Key>%s</Key><LastModified>%s</LastModified>"
                      "<ETag>&quot;%s&quot;</ETag><Size>%d</Size><StorageClass>"
                      "STANDARD</StorageClass></Contents>" %
                      (esc(name(k)), iso(rec["mtime"]), rec["etag"],
                       rec["size"]))
        for p in prefixes:
            inner += "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % \
                esc(name(p))
        self.xml("ListBucketResult", inner)

    def list_uploads(self):
        prefix = self.q.get("prefix", "")
        with self.st.lock:
            ups = sorted((u["key"], i) for i, u in self.st.uploads.items()
                         if u["bucket"] == self.bucket and
                         u["key"].startswith(prefix))
        inner = "<Bucket>%s</Bucket><IsTruncated>false</IsTruncated>" % \
            esc(self.bucket)
        for k, i in ups:
            inner += ("<Upload><Key>%s</Key><UploadId>%s</UploadId>"
                      "<Initiated>%s</Initiated></Upload>" %
                      (esc(k), i, iso(self.st.uploads[i]["at"])))
        self.xml("ListMultipartUploadsResult", inner)

    def upload(self):
        u = self.st.uploads.get(self.q.get("uploadId", ""))
        if u and u["bucket"] == self.bucket and u["key"] == self.key:
            return u
        self.error(404, "NoSuchUpload")
        return None

    def list_parts(self):
        with self.st.lock:
            u = self.upload()
            parts = sorted(u["parts"].items()) if u else None
        if u is None:
            return None
        inner = "<Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId>" \
            "<IsTruncated>false</IsTruncated>" % (
                esc(self.bucket), esc(self.key), self.q["uploadId"])
        for n, p in parts:
            inner += ("<Part><PartNumber>%d</PartNumber><ETag>&quot;%s&quot;"
                      "</ETag><Size>%d</Size><LastModified>%s</LastModified>"
                      "</Part>" % (n, p["etag"], p["size"], iso(p["at"])))
        return self.xml("ListPartsResult", inner)

    def do_PUT(self):
        self.parse()
        st = self.st
        if not self.key:
            self.body()
            with st.lock:
                if self.bucket not in st.buckets:
                    os.makedirs(os.path.join(st.root, self.bucket),
                                exist_ok=True)
                    st.buckets[self.bucket] = {}
            return self.send(200)
        if self.bucket not in st.buckets:
            self.body()
            return self.error(404, "NoSuchBucket")
        src = self.headers.get("x-amz-copy-source")
        if "partNumber" in self.q:
            return self.put_part(src)
        tmp, md5 = st.tmp(), hashlib.md5()
        meta = self.meta()
        if src:
            self.body()
            srec = self.source(src)
            if srec is None:
                return None
            if match(self.headers.get("x-amz-copy-source-if-match"),
                     srec) is False:
                return self.error(412, "PreconditionFailed")
            size = copy_range(srec["data"], tmp, 0, srec["size"], md5)
            if (self.headers.get("x-amz-metadata-directive") or
                    "").upper() != "REPLACE":
                meta = srec["meta"]
            etag = srec["etag"]
        else:
            with open(tmp, "wb") as f:
                size = self.body_to(f, md5)
            etag = md5.hexdigest()
        with st.lock:
            rc = self.conditions(st.buckets[self.bucket].get(self.key))
            rec = st.put(self.bucket, self.key, tmp, size, etag, meta) \
                if not rc else None
        if rc:
            os.unlink(tmp)
            return self.error(*rc)
        if src:
            return self.xml("CopyObjectResult", "<LastModified>%s"
                            "</LastModified><ETag>&quot;%s&quot;</ETag>" %
                            (iso(rec["mtime"]), etag))
        return self.send(200, headers={"ETag": '"%s"' % etag})

    def conditions(self, rec):
        """A write's If-Match / If-None-Match: None, or (status, code)."""
        im = match(self.headers.get("If-Match"), rec)
        if im is False:
            return (412, "PreconditionFailed") if rec else (404, "NoSuchKey")
        if match(self.headers.get("If-None-Match"), rec):
            return (412, "PreconditionFailed")
        return None

    def meta(self):
        return {k.lower(): v for k, v in self.headers.items()
                if k.lower().startswith("x-amz-meta-") or k.lower() in META}

    def source(self, src):
        b, _, k = urllib.parse.unquote(src.split("?")[0]).lstrip("/") \
            .partition("/")
        with self.st.lock:
            rec = self.st.buckets.get(b, {}).get(k)
        if rec is None:
            self.error(404, "NoSuchKey")
        return rec

    def put_part(self, src):
        n = int(self.q["partNumber"])
        tmp, md5 = self.st.tmp(), hashlib.md5()
        if src:
            self.body()
            srec = self.source(src)
            if srec is None:
                return None
            a, z = 0, srec["size"] - 1
            m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get(
                "x-amz-copy-source-range", "bytes=0-%d" % z).strip())
            if not m or int(m.group(2)) >= srec["size"]:
                return self.error(400, "InvalidRange")
            a, z = int(m.group(1)), int(m.group(2))
            size = copy_range(srec["data"], tmp, a, z - a + 1, md5)
        else:
            with open(tmp, "wb") as f:
                size = self.body_to(f, md5)
        with self.st.lock:
            u = self.upload()
            if u is not None:
                old = u["parts"].get(n)
                u["parts"][n] = dict(etag=md5.hexdigest(), size=size,
                                     data=tmp, at=time.time())
                if old:  # (sent again: the earlier bytes go)
                    unlink(old["data"])
        if u is None:
            os.unlink(tmp)
            return None
        if src:
            return self.xml("CopyPartResult", "<LastModified>%s</LastModified>"
                            "<ETag>&quot;%s&quot;</ETag>" %
                            (iso(time.time()), md5.hexdigest()))
        return self.send(200, headers={"ETag": '"%s"' % md5.hexdigest()})

    def do_POST(self):
        self.parse()
        st, body = self.st, self.body()
        if self.bucket not in st.buckets:
            return self.error(404, "NoSuchBucket")
        if not self.key and "delete" in self.q:
            return self.delete_many(body)
        if "uploads" in self.q:
            i = secrets.token_hex(16)
            with st.lock:
                st.uploads[i] = dict(bucket=self.bucket, key=self.key,
                                     meta=self.meta(), parts={},
                                     at=time.time())
            return self.xml("InitiateMultipartUploadResult",
                            "<Bucket>%s</Bucket><Key>%s</Key><UploadId>%s"
                            "</UploadId>" % (esc(self.bucket), esc(self.key),
                                             i))
        return self.complete(body)

    def complete(self, body):
        st = self.st
        try:
            want = [(int(p.findtext("{*}PartNumber") or
                         p.findtext("PartNumber")),
                     unquote_etag(p.findtext("{*}ETag") or
                                  p.findtext("ETag") or ""))
                    for p in ET.fromstring(body).iter()
                    if p.tag.split("}")[-1] == "Part"]
        except (ET.ParseError, TypeError, ValueError):
            return self.error(400, "MalformedXML")
        with st.lock:
            u = self.upload()
            if u is None:
                return None
            parts = []
            for k, (n, e) in enumerate(want):
                p = u["parts"].get(n)
                if n != k + 1:
                    return self.error(400, "InvalidPartOrder")
                if p is None or p["etag"] != e:
                    return self.error(400, "InvalidPart")
                if k + 1 < len(want) and p["size"] < PART_MIN:
                    return self.error(400, "EntityTooSmall")
                parts.append(p)
            if not parts:
                return self.error(400, "MalformedXML")
            rc = self.conditions(st.buckets[self.bucket].get(self.key))
            if rc:
                return self.error(*rc)
            del st.uploads[self.q["uploadId"]]
        # (outside the lock: the parts are this request's alone now)
        tmp = st.tmp()
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p["data"], "rb") as f:
                    while os.sendfile(out.fileno(), f.fileno(), None,
                                      64 * CHUNK) > 0:
                        pass
        sums = b"".join(bytes.fromhex(p["etag"]) for p in parts)
        etag = "%s-%d" % (hashlib.md5(sums).hexdigest(), len(parts))
        with st.lock:
            rec = st.put(self.bucket, self.key, tmp,
                         sum(p["size"] for p in parts), etag, u["meta"])
        drop_parts(u)
        return self.xml("CompleteMultipartUploadResult",
                        "<Bucket>%s</Bucket><Key>%s</Key><ETag>&quot;%s"
                        "&quot;</ETag><LastModified>%s</LastModified>" %
                        (esc(self.bucket), esc(self.key), etag,
                         iso(rec["mtime"])))

    def delete_many(self, body):
        try:
            keys = [o.text or "" for o in ET.fromstring(body).iter()
                    if o.tag.split("}")[-1] == "Key"]
        except ET.ParseError:
            return self.error(400, "MalformedXML")
        with self.st.lock:
            for k in keys:
                self.st.delete(self.bucket, k)
        self.xml("DeleteResult", "".join(
            "<Deleted><Key>%s</Key></Deleted>" % esc(k) for k in keys))

    def do_DELETE(self):
        self.parse()
        st = self.st
        self.body()
        if self.bucket not in st.buckets:
            return self.error(404, "NoSuchBucket")
        if not self.key:
            with st.lock:
                if st.buckets[self.bucket]:
                    return self.error(409, "BucketNotEmpty")
                del st.buckets[self.bucket]
            return self.send(204)
        if "uploadId" in self.q:
            with st.lock:
                u = self.upload()
                if u is None:
                    return None
                del st.uploads[self.q["uploadId"]]
            drop_parts(u)
            return self.send(204)
        with st.lock:
            st.delete(self.bucket, self.key)
        return self.send(204)


def copy_range(src, dst, off, size, md5):
    with open(src, "rb") as f, open(dst, "wb") as out:
        f.seek(off)
        left = size
        while left:
            b = f.read(min(CHUNK, left))
            if not b:
                break
            out.write(b)
            md5.update(b)
            left -= len(b)
    return size - left


def drop_parts(u):
    for p in u["parts"].values():
        unlink(p["data"])


class Server(ThreadingHTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET


def put(url, path):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
    with open(path, "rb") as f:
        c.request("PUT", u.path, body=f, headers={
            "Content-Length": str(os.fstat(f.fileno()).st_size)})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        print("gpu_check_s3: PUT %s: %d %s" % (url, r.status, r.reason),
              file=sys.stderr)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir")
    ap.add_argument("--bucket")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--put", nargs=2, metavar=("URL", "FILE"))
    a = ap.parse_args()
    if a.put:
        return put(*a.put)
    if not a.dir:
        ap.error("--dir is needed")
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.store = Store(os.path.abspath(a.dir))
    if a.bucket:
        os.makedirs(os.path.join(a.dir, a.bucket), exist_ok=True)
        srv.store.buckets.setdefault(a.bucket, {})
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % srv.server_address[1])
        os.replace(a.port_file + ".tmp", a.port_file)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(
        target=srv.shutdown).start())
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
