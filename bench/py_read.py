"""One timed read for bench/py_read.sh: MODE PATH -> "seconds cpu_s bytes".

  read_into   s3rdmafs.File.read_into into a NumPy array (registered
              memory from s3rdmafs.alloc, 64 MiB calls)
  readinto    the builtin file's readinto into a NumPy array
  fromfile    numpy.fromfile
  load_st     s3rdmafs.load_safetensors
  load_ref    the file read whole (open().read()), then each tensor a
              NumPy array over its bytes (what a reader without the module
              does)
"""
import json
import resource
import struct
import sys
import time

import numpy

import s3rdmafs

CALL = 64 << 20


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(mode, path):
    t0, c0 = time.monotonic(), cpu()
    n = 0
    if mode == "read_into":
        with s3rdmafs.File(path) as f:
            size = __import__("os").fstat(f.fileno()).st_size
            buf = s3rdmafs.alloc(size, f)
            futs = [f.pread(buf, off, min(CALL, size - off))
                    for off in range(0, size, CALL)]
            n = sum(fu.result() for fu in futs)
            a = numpy.frombuffer(buf, dtype=numpy.uint8)
            assert a.size == size
    elif mode == "readinto":
        with open(path, "rb", buffering=0) as f:
            size = __import__("os").fstat(f.fileno()).st_size
            a = numpy.empty(size, dtype=numpy.uint8)
            n = f.readinto(a)
    elif mode == "fromfile":
        a = numpy.fromfile(path, dtype=numpy.uint8)
        n = a.size
    elif mode == "load_st":
        t = s3rdmafs.load_safetensors(path)
        n = sum(x.nbytes for x in t.values())
    elif mode == "load_ref":
        with open(path, "rb") as f:
            raw = f.read()
        (h,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + h])
        t = {k: numpy.frombuffer(raw[8 + h + v["data_offsets"][0]:
                                     8 + h + v["data_offsets"][1]],
                                 dtype=numpy.float32).reshape(v["shape"])
             for k, v in header.items() if k != "__metadata__"}
        n = sum(x.nbytes for x in t.values())
    else:
        raise SystemExit("unknown mode " + mode)
    print("%.4f %.3f %d" % (time.monotonic() - t0, cpu() - c0, n))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
