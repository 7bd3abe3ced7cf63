"""The Python module s3rdmafs (python/) on a real mount of RGW.

Run by tests/python/run.sh, which mounts a bucket and sets:
  S3R_PY_MNT    the mount (direct reads and writes through libs3rdmafs)
  S3R_PY_PLAIN  a directory on no s3rdmafs mount (ordinary pread/pwrite)
  S3R_PY_STATS  the mount's stats file (the daemon's counters)
  S3R_PY_CMA    set when the mount goes through s3rdma-gateway with cma
Without S3R_PY_MNT (ctest unit.python, any user, no server) the tests of
the mount are skipped and the rest run on a temporary directory. Every
result is compared byte for byte with what was written.
"""
import gc
import json
import math
import os
import struct
import sys
import tempfile
import threading

import numpy
import pytest

import s3rdmafs

MiB = 1 << 20
MNT = os.environ.get("S3R_PY_MNT")
PLAIN = os.environ.get("S3R_PY_PLAIN") or tempfile.mkdtemp(prefix="s3r-py-")
STATS = os.environ.get("S3R_PY_STATS")
mounted = pytest.mark.skipif(MNT is None, reason="no mount (S3R_PY_MNT)")


def stat(name):
    """One counter of the daemon's stats file."""
    with open(STATS) as f:
        for line in f:
            k, _, v = line.partition(" ")
            if k == name:
                return int(float(v))
    raise KeyError(name)


def host(x):
    """x as a NumPy array: load_safetensors gives torch tensors where
    torch is installed"""
    return x if isinstance(x, numpy.ndarray) else x.numpy()


def data(n, seed):
    return numpy.random.default_rng(seed).integers(
        0, 256, n, dtype=numpy.uint8).tobytes()


@pytest.fixture(scope="module")
def big():
    """A 24 MiB file on the mount, written with ordinary calls."""
    if MNT is None:
        pytest.skip("no mount (S3R_PY_MNT)")
    path = os.path.join(MNT, "py-big.bin")
    want = data(24 * MiB + 4097, 1)
    with open(path, "wb") as f:
        f.write(want)
    return path, want


@pytest.fixture(scope="module")
def plain_file():
    path = os.path.join(PLAIN, "py-plain.bin")
    want = data(3 * MiB + 11, 2)
    with open(path, "wb") as f:
        f.write(want)
    return path, want


def test_read_into_numpy_direct(big):
    path, want = big
    before = stat("direct.bytes")
    with s3rdmafs.File(path) as f:
        a = numpy.empty(len(want), dtype=numpy.uint8)
        assert f.read_into(a) == len(want)
        assert f.direct
    assert a.tobytes() == want
    assert stat("direct.bytes") - before >= len(want)


def test_read_into_kinds_and_offsets(big):
    path, want = big
    with s3rdmafs.File(path, "rb") as f:
        b = bytearray(MiB)
        assert f.read_into(b, offset=5 * MiB + 3) == MiB
        assert bytes(b) == want[5 * MiB + 3:6 * MiB + 3]
        m = memoryview(bytearray(2 * MiB))
        assert f.read_into(m[MiB:], offset=7) == MiB
        assert bytes(m[MiB:]) == want[7:7 + MiB]
        # a size below the buffer's; a read past the end is short
        assert f.read_into(b, offset=0, size=100) == 100
        assert bytes(b[:100]) == want[:100]
        assert f.read_into(b, offset=len(want) - 10) == 10
        assert bytes(b[:10]) == want[-10:]
        assert f.read_into(b, offset=len(want) + 1) == 0


def test_registered_buffer(big):
    path, want = big
    with s3rdmafs.File(path) as f:
        buf = s3rdmafs.alloc(8 * MiB, f)
        assert buf.registered and len(buf) == 8 * MiB
        a = numpy.frombuffer(buf, dtype=numpy.uint8)
        assert f.read_into(buf, offset=MiB) == 8 * MiB
        assert a.tobytes() == want[MiB:9 * MiB]
        del a
    del buf
    gc.collect()


def test_futures_many_threads(big):
    path, want = big
    with s3rdmafs.File(path) as f:
        bufs = [bytearray(MiB) for _ in range(24)]
        futs = [f.pread(b, offset=i * MiB) for i, b in enumerate(bufs)]
        assert [fu.result(timeout=60) for fu in futs] == [MiB] * 24
        assert all(fu.done() for fu in futs)
    assert b"".join(bytes(b) for b in bufs) == want[:24 * MiB]


def test_futures_dropped_unread(plain_file):
    path, _ = plain_file
    bufs = [bytearray(MiB) for _ in range(3)]
    refs = [sys.getrefcount(b) for b in bufs]
    f = s3rdmafs.File(path)
    fref = sys.getrefcount(f)
    with f:
        for i in range(48):
            f.pread(bufs[i % 3], offset=(i % 3) * MiB)  # never asked
    gc.collect()  # close() waited for them
    assert sys.getrefcount(f) == fref
    assert [sys.getrefcount(b) for b in bufs] == refs  # views given back
    for b in bufs:
        b.extend(b"x")  # (fails while a view is exported)


def test_result_then_buffer_free(plain_file):
    """result() returns once the call's view of the buffer is given back."""
    path, want = plain_file
    with s3rdmafs.File(path) as f:
        for _ in range(200):
            b = bytearray(4096)
            m = memoryview(b)
            assert f.pread(m, offset=7).result() == 4096
            m.release()  # (BufferError if the call still held it)
            b.extend(b"!")
    assert bytes(b[:4096]) == want[7:4103]


def test_fork_with_calls_in_flight(plain_file):
    """A child forked while calls are queued: they are not its own (done
    with ECANCELED there), its close() does not wait for them, and its own
    calls work."""
    path, want = plain_file
    f = s3rdmafs.File(path)
    futs = [f.pread(bytearray(MiB), offset=0) for _ in range(64)]
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            b = bytearray(100)
            g = s3rdmafs.File(path)
            ok = g.pread(b, offset=5).result(timeout=30) == 100 and \
                bytes(b) == want[5:105]
            g.close()
            f.close()  # the parent's calls: not waited for here
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert [fu.result(timeout=60) for fu in futs] == [MiB] * 64
    f.close()


def test_refusals_without_io(plain_file):
    path, _ = plain_file
    f = s3rdmafs.File(path)
    with pytest.raises(ValueError):
        f.__init__(path)  # open already: calls may be using its fd
    with pytest.raises(ValueError):
        s3rdmafs.File(path, "a")  # append: offsets would be ignored
    fu = f.pread(bytearray(8))
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError):
            fu.result(timeout=bad)
    assert fu.result(timeout=math.inf) == 8
    assert fu.result(timeout=1e300) == 8
    for strides in ([4, 1], (1,), ("a", 1)):
        with pytest.raises((ValueError, TypeError)):
            f.read_into(FakeDevice({"data": (0x1000, False),
                                    "shape": (4, 4), "typestr": "|u1",
                                    "strides": strides, "version": 3}))
    f.close()


def test_threads_share_a_file(big):
    path, want = big
    errors = []

    def reader(k):
        b = bytearray(MiB + k)
        for i in range(8):
            off = (i * 3 + k) * MiB // 2
            n = f.read_into(b, offset=off)
            if n != len(b) or bytes(b) != want[off:off + n]:
                errors.append((k, off, n))

    with s3rdmafs.File(path) as f:
        ts = [threading.Thread(target=reader, args=(k,)) for k in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors


@mounted
def test_write_from_and_read_back():
    path = os.path.join(MNT, "py-written.bin")
    want = data(20 * MiB + 5, 3)
    before = stat("direct.writes")
    with s3rdmafs.File(path, "wb") as f:
        a = numpy.frombuffer(want, dtype=numpy.uint8)
        assert f.write_from(a[:8 * MiB]) == 8 * MiB
        assert f.pwrite(a[8 * MiB:], offset=8 * MiB).result() == len(want) - 8 * MiB
    assert stat("direct.writes") > before
    with open(path, "rb") as f:
        assert f.read() == want


def test_plain_file_falls_back(plain_file):
    path, want = plain_file
    c0 = s3rdmafs.counters()
    with s3rdmafs.File(path) as f:
        a = numpy.empty(len(want), dtype=numpy.uint8)
        assert f.read_into(a) == len(want)
        assert not f.direct
        buf = s3rdmafs.alloc(MiB, f)
        assert not buf.registered
        assert f.read_into(buf, offset=1) == MiB
        assert bytes(buf) == want[1:1 + MiB]
    assert a.tobytes() == want
    c1 = s3rdmafs.counters()
    assert c1["plain_read_bytes"] - c0["plain_read_bytes"] >= len(want) + MiB
    out = os.path.join(PLAIN, "py-plain-out.bin")
    with s3rdmafs.File(out, "w") as g:
        assert g.write_from(want) == len(want)
    with open(out, "rb") as g:
        assert g.read() == want


def test_hostile_arguments(plain_file):
    path, _ = plain_file
    f = s3rdmafs.File(path)
    with pytest.raises(BufferError):
        f.read_into(b"read-only bytes")
    with pytest.raises(ValueError):
        f.read_into(bytearray(10), size=11)  # past the buffer
    with pytest.raises(ValueError):
        f.read_into(bytearray(10), offset=-1)
    with pytest.raises(ValueError):
        f.write_from(b"x")  # not open for writing
    with pytest.raises(TypeError):
        f.read_into(12345)
    with pytest.raises((ValueError, BufferError)):
        f.read_into(numpy.zeros((8, 8))[:, ::2])  # not contiguous
    with pytest.raises(TypeError):
        f.read_into(FakeDevice({"shape": (4,)}))  # no data
    with pytest.raises(ValueError):
        f.read_into(FakeDevice({"data": (0x1000, True), "shape": (4,),
                                "typestr": "|u1", "version": 3}))  # ro
    with pytest.raises(ValueError):
        f.read_into(FakeDevice({"data": (0x1000, False), "shape": (4, 4),
                                "strides": (8, 1), "typestr": "|u1",
                                "version": 3}))  # gaps
    with pytest.raises(ValueError):
        s3rdmafs.File(path, "rq")
    with pytest.raises(OSError) as e:
        s3rdmafs.File(os.path.join(PLAIN, "no-such-dir", "x"))
    assert e.value.errno == 2
    f.close()
    f.close()  # twice: nothing
    assert f.closed
    with pytest.raises(ValueError):
        f.read_into(bytearray(1))
    with pytest.raises(ValueError):
        f.pread(bytearray(1))
    with pytest.raises(ValueError):
        f.fileno()


class FakeDevice:
    """An object that says it is device memory (never touched: refused
    before any call)."""

    def __init__(self, cai):
        self.__cuda_array_interface__ = cai


def test_device_memory_without_a_driver(big):
    """No CUDA driver here: a device read fails cleanly (no crash)."""
    if os.environ.get("S3RDMAFS_CUDA_LIB"):
        pytest.skip("a CUDA driver is named")
    path, _ = big
    with s3rdmafs.File(path) as f:
        with pytest.raises(OSError) as e:
            f.read_into(FakeDevice({"data": (0x7f0000000000, False),
                                    "shape": (16,), "typestr": "|u1",
                                    "version": 3}))
    assert e.value.errno in (19, 5)  # ENODEV (no driver), EIO


class StandInDevice:
    """Device memory from the stand-in CUDA driver (tests/gpu/fake_cuda.c,
    named by S3RDMAFS_CUDA_LIB): SIMULATED, no GPU takes part."""

    def __init__(self, n):
        import ctypes
        self.cu = ctypes.CDLL(os.environ["S3RDMAFS_CUDA_LIB"])
        self.ptr = ctypes.c_uint64()
        assert self.cu.cuMemAlloc_v2(ctypes.byref(self.ptr),
                                     ctypes.c_size_t(n)) == 0
        self.n = n
        self.__cuda_array_interface__ = {
            "data": (self.ptr.value, False), "shape": (n,),
            "typestr": "|u1", "strides": None, "version": 3}

    def to_host(self):
        import ctypes
        out = ctypes.create_string_buffer(self.n)
        assert self.cu.cuMemcpyDtoH_v2(out, self.ptr,
                                       ctypes.c_size_t(self.n)) == 0
        return out.raw

    def from_host(self, b):
        import ctypes
        assert self.cu.cuMemcpyHtoD_v2(self.ptr, b,
                                       ctypes.c_size_t(len(b))) == 0


@pytest.mark.skipif(not os.environ.get("S3RDMAFS_CUDA_LIB"),
                    reason="no stand-in CUDA driver named")
def test_device_simulated(big):
    """Device memory (SIMULATED: the stand-in driver) read and written
    through s3rdmafs_gpu_read and _write, byte-exact."""
    path, want = big
    dev = StandInDevice(6 * MiB + 5)
    c0 = s3rdmafs.counters()
    with s3rdmafs.File(path) as f:
        assert f.read_into(dev, offset=MiB + 1) == dev.n
    assert dev.to_host() == want[MiB + 1:MiB + 1 + dev.n]
    out = os.path.join(MNT, "py-from-device.bin")
    pattern = data(dev.n, 9)
    dev.from_host(pattern)
    with s3rdmafs.File(out, "wb") as g:
        assert g.write_from(dev) == dev.n
    with open(out, "rb") as g:
        assert g.read() == pattern
    c1 = s3rdmafs.counters()
    assert c1["gpu_read_bytes"] - c0["gpu_read_bytes"] == dev.n
    assert c1["gpu_write_bytes"] - c0["gpu_write_bytes"] == dev.n


@pytest.mark.skipif(not os.environ.get("S3RDMAFS_CUDA_LIB"),
                    reason="no stand-in CUDA driver named")
def test_cai_stream_waited_simulated():
    """__cuda_array_interface__'s stream (SIMULATED): copies still queued
    on the producer's stream (10 of them, each landing after the last)
    are done before the module's write reads the memory; stream 0
    (ambiguous) refused."""
    import ctypes
    dev = StandInDevice(2 * MiB)
    stream = ctypes.c_void_p()
    assert dev.cu.cuStreamCreate(ctypes.byref(stream), 0) == 0
    pattern = data(dev.n, 11)
    src = ctypes.create_string_buffer(pattern, dev.n)
    piece = dev.n // 10 + 1
    for at in range(0, dev.n, piece):
        n = min(piece, dev.n - at)
        assert dev.cu.cuMemcpyHtoDAsync_v2(
            ctypes.c_uint64(dev.ptr.value + at),
            ctypes.byref(src, at), ctypes.c_size_t(n), stream) == 0
    dev.__cuda_array_interface__["stream"] = stream.value
    out = os.path.join(MNT, "py-after-stream.bin")
    with s3rdmafs.File(out, "wb") as g:
        assert g.write_from(dev) == dev.n
        # an empty array (pointer 0, as the interface has it): nothing to
        # wait for, nothing written
        assert g.write_from(FakeDevice({
            "data": (0, False), "shape": (0,), "typestr": "|u1",
            "version": 3, "stream": stream.value}), offset=dev.n) == 0
        dev.__cuda_array_interface__["stream"] = 0
        with pytest.raises(ValueError, match="stream 0"):
            g.write_from(dev)
    with open(out, "rb") as g:
        assert g.read() == pattern


def test_dlpack_torch_cpu(big):
    """A CPU torch tensor (no buffer protocol) taken by DLPack: read into,
    read on the module's threads, written from; a strided one refused."""
    torch = pytest.importorskip("torch")
    path, want = big
    t = torch.empty(3 * MiB + 7, dtype=torch.uint8)
    with s3rdmafs.File(path) as f:
        assert f.read_into(t, offset=5) == t.numel()
        assert t.numpy().tobytes() == want[5:5 + t.numel()]
        w = torch.empty(MiB // 4, dtype=torch.float32)
        assert f.pread(w, offset=MiB).result() == MiB
        assert w.numpy().tobytes() == want[MiB:2 * MiB]
        with pytest.raises(ValueError, match="contiguous"):
            f.read_into(torch.empty(64, 64, dtype=torch.uint8)[:, :8], 0)
    out = os.path.join(MNT, "py-from-dlpack.bin")
    with s3rdmafs.File(out, "wb") as g:
        assert g.write_from(t) == t.numel()
    with open(out, "rb") as g:
        assert g.read() == want[5:5 + t.numel()]


class DLPackOfStandIn:
    """A DLPack producer of device memory from the stand-in CUDA driver
    (SIMULATED), its DLManagedTensor made with ctypes: counts the deleter's
    calls and says which stream it was asked for."""

    def __init__(self, dev):
        import ctypes as c

        class Device(c.Structure):
            _fields_ = [("type", c.c_int32), ("id", c.c_int32)]

        class DType(c.Structure):
            _fields_ = [("code", c.c_uint8), ("bits", c.c_uint8),
                        ("lanes", c.c_uint16)]

        class Managed(c.Structure):
            pass
        deleter_t = c.CFUNCTYPE(None, c.POINTER(Managed))
        Managed._fields_ = [("data", c.c_void_p), ("device", Device),
                            ("ndim", c.c_int32), ("dtype", DType),
                            ("shape", c.POINTER(c.c_int64)),
                            ("strides", c.POINTER(c.c_int64)),
                            ("byte_offset", c.c_uint64),
                            ("manager_ctx", c.c_void_p),
                            ("deleter", deleter_t)]
        self.deleted, self.streams, self.dev = 0, [], dev
        self.shape = (c.c_int64 * 1)(dev.n)

        def deleter(_):
            self.deleted += 1
        self.deleter = deleter_t(deleter)
        self.mt = Managed(dev.ptr.value, Device(2, 0), 1, DType(1, 8, 1),
                          self.shape, None, 0, None, self.deleter)
        self.name = b"dltensor"
        self.new = c.pythonapi.PyCapsule_New
        self.new.restype = c.py_object
        self.new.argtypes = [c.c_void_p, c.c_char_p, c.c_void_p]
        self.addr = c.addressof(self.mt)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.new(self.addr, self.name, None)


@pytest.mark.skipif(not os.environ.get("S3RDMAFS_CUDA_LIB"),
                    reason="no stand-in CUDA driver named")
def test_dlpack_device_simulated(big):
    """Device memory (SIMULATED) handed over by DLPack: read by
    s3rdmafs_gpu_read, the producer asked for the legacy default stream
    (1), its tensor's deleter called once the call is done."""
    path, want = big
    dev = StandInDevice(4 * MiB + 3)
    p = DLPackOfStandIn(dev)
    c0 = s3rdmafs.counters()
    with s3rdmafs.File(path) as f:
        assert f.read_into(p, offset=7) == dev.n
        assert p.deleted == 1
        assert f.pread(p, offset=9).result() == dev.n
    gc.collect()
    assert p.deleted == 2 and p.streams == [1, 1]
    assert dev.to_host() == want[9:9 + dev.n]
    assert s3rdmafs.counters()["gpu_read_bytes"] - c0["gpu_read_bytes"] == \
        2 * dev.n


@pytest.mark.skipif(not os.environ.get("S3R_PY_CMA"),
                    reason="the mount is not through the gateway with cma")
def test_cma_zero_copy(big):
    """Through s3rdma-gateway with cma: the server writes into the
    caller's registered buffer (s3.rdma_bytes grows by the bytes read)."""
    path, want = big
    r0 = stat("s3.rdma_bytes")
    with s3rdmafs.File(path) as f:
        buf = s3rdmafs.alloc(16 * MiB, f)
        assert f.read_into(buf, offset=4 * MiB) == 16 * MiB
        assert bytes(buf) == want[4 * MiB:20 * MiB]
    assert stat("s3.rdma_bytes") - r0 >= 16 * MiB


# ---- checkpoints: safetensors ----

def reference_save(tensors, path):
    """An ordinary writer of the format (struct, json, write(2)), header
    unpadded and in the caller's order: what load_safetensors must read."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        raw = numpy.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": {"float32": "F32", "int64": "I64",
                                  "uint8": "U8", "float16": "F16"}[
                                      str(a.dtype)],
                        "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def reference_load(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        body = f.read()
    np_names = {"F32": "float32", "I64": "int64", "U8": "uint8",
                "F16": "float16"}
    return {k: numpy.frombuffer(body[v["data_offsets"][0]:
                                     v["data_offsets"][1]],
                                dtype=np_names[v["dtype"]]).reshape(
                                    v["shape"])
            for k, v in header.items() if k != "__metadata__"}


def tensors():
    rng = numpy.random.default_rng(5)
    return {"layer.0.weight": rng.standard_normal((512, 1024),
                                                  dtype=numpy.float32),
            "layer.0.bias": rng.standard_normal(1024).astype(numpy.float16),
            "step": numpy.array([12345], dtype=numpy.int64),
            "empty": numpy.zeros((0, 3), dtype=numpy.uint8),
            "big": rng.integers(0, 256, 9 * MiB + 3, dtype=numpy.uint8)}


@pytest.mark.parametrize("where", ["mnt", "plain"])
def test_load_safetensors_reference_file(where):
    if where == "mnt" and MNT is None:
        pytest.skip("no mount (S3R_PY_MNT)")
    path = os.path.join(MNT if where == "mnt" else PLAIN, "ref.safetensors")
    want = tensors()
    reference_save(want, path)
    got = s3rdmafs.load_safetensors(path)
    assert sorted(got) == sorted(want)
    for k in want:
        g = host(got[k])
        assert g.dtype == want[k].dtype and g.shape == want[k].shape
        assert g.tobytes() == want[k].tobytes(), k


@pytest.mark.parametrize("where", ["mnt", "plain"])
def test_save_safetensors_read_by_reference(where):
    if where == "mnt" and MNT is None:
        pytest.skip("no mount (S3R_PY_MNT)")
    path = os.path.join(MNT if where == "mnt" else PLAIN, "ours.safetensors")
    want = tensors()
    s3rdmafs.save_safetensors(want, path, metadata={"by": "s3rdmafs"})
    got = reference_load(path)
    for k in want:
        assert got[k].tobytes() == want[k].tobytes(), k
        assert got[k].shape == want[k].shape
    again = s3rdmafs.load_safetensors(path)
    assert all(host(again[k]).tobytes() == want[k].tobytes() for k in want)


def st(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def test_safetensors_hostile():
    bad = os.path.join(PLAIN, "bad.safetensors")
    u8 = lambda b, e: {"dtype": "U8", "shape": [e - b],  # noqa: E731
                       "data_offsets": [b, e]}
    for blob in (st({"x": u8(0, 1 << 40)}, b"\0" * 100),   # claims 1 TiB
                 st({"x": {"dtype": "U8", "shape": [-1],
                           "data_offsets": [0, 0]}}),       # negative dim
                 st({"x": {"dtype": "U8", "shape": [2.0],
                           "data_offsets": [0, 2]}}, b"ab"),  # float dim
                 st({"x": 5}),                               # not an object
                 st({"x": u8(0, 4), "y": u8(2, 6)}, b"\0" * 6),  # overlap
                 st({"x": u8(0, 4), "y": u8(6, 8)}, b"\0" * 8),  # a gap
                 st({"x": u8(0, 4)}, b"\0" * 9)):           # a tail
        with open(bad, "wb") as f:
            f.write(blob)
        with pytest.raises(ValueError):
            s3rdmafs.load_safetensors(bad)
    for blob in (b"\x01\x02",                                   # short
                 struct.pack("<Q", 1 << 40),                   # header huge
                 struct.pack("<Q", 10) + b"[1,2,3]   ",         # not an object
                 struct.pack("<Q", 100) + b"{}",                # cut short
                 (lambda h: struct.pack("<Q", len(h)) + h)(json.dumps(
                     {"x": {"dtype": "F32", "shape": [4],
                            "data_offsets": [0, 8]}}).encode()),  # 8 != 16
                 (lambda h: struct.pack("<Q", len(h)) + h)(json.dumps(
                     {"x": {"dtype": "Q9", "shape": [1],
                            "data_offsets": [0, 1]}}).encode())):  # dtype
        with open(bad, "wb") as f:
            f.write(blob)
        with pytest.raises(ValueError):
            s3rdmafs.load_safetensors(bad)
    # the data shorter than the header says
    h = json.dumps({"x": {"dtype": "U8", "shape": [100],
                          "data_offsets": [0, 100]}}).encode()
    with open(bad, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"\0" * 10)
    with pytest.raises(ValueError):
        s3rdmafs.load_safetensors(bad)


# ---- datasets ----

def make_tree(base, n, size_of):
    """n files below base (two levels), file i holding data(size_of(i), i)."""
    want = []
    for i in range(n):
        d = os.path.join(base, "part%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "s%03d.bin" % i)
        b = data(size_of(i), 100 + i)
        with open(p, "wb") as f:
            f.write(b)
        want.append((p, b))
    return sorted(want)


def where_dir(where, name):
    if where == "mnt":
        if MNT is None:
            pytest.skip("no mount (S3R_PY_MNT)")
        return os.path.join(MNT, name)
    return os.path.join(PLAIN, name)


def _sample(args):
    """(in a forked worker) sample i of a FileDataset over root"""
    root, i = args
    return bytes(s3rdmafs.FileDataset(root)[i])


@pytest.mark.parametrize("where", ["mnt", "plain"])
def test_file_dataset(where):
    root = where_dir(where, "ds-files")
    want = make_tree(root, 12, lambda i: 1000 * i + 7)
    ds = s3rdmafs.FileDataset(root, suffix=".bin")
    assert len(ds) == 12
    for i, (_, b) in enumerate(want):
        assert ds[i].tobytes() == b
    assert s3rdmafs.FileDataset(root, transform=len)[3] == len(want[3][1])
    # forked workers, as a DataLoader's: each reads on its own
    import multiprocessing
    with multiprocessing.get_context("fork").Pool(3) as pool:
        got = pool.map(_sample, [(root, i) for i in range(12)])
    assert got == [b for _, b in want]
    with pytest.raises(ValueError):
        s3rdmafs.FileDataset(root, suffix=".none")


@pytest.mark.parametrize("where", ["mnt", "plain"])
def test_shard_dataset(where):
    root = where_dir(where, "ds-shards")
    rs = 4096
    want = make_tree(root, 4, lambda i: rs * (50 + i) + (i * 13))
    recs = [b[o:o + rs] for _, b in want
            for o in range(0, len(b) // rs * rs, rs)]
    got = [r.tobytes() for r in s3rdmafs.ShardDataset(root, rs)]
    assert got == recs
    with pytest.raises(ValueError):
        s3rdmafs.ShardDataset(root, 0)


def test_torch_dataloader():
    torch = pytest.importorskip("torch")
    root = where_dir("mnt" if MNT else "plain", "ds-torch")
    want = make_tree(root, 8, lambda i: 4096 * (i + 1))
    dl = torch.utils.data.DataLoader(s3rdmafs.FileDataset(root),
                                     batch_size=None, num_workers=2)
    assert [t.numpy().tobytes() for t in dl] == [b for _, b in want]
    sh = torch.utils.data.DataLoader(s3rdmafs.ShardDataset(root, 4096),
                                     batch_size=None, num_workers=2)
    assert sorted(t.numpy().tobytes() for t in sh) == sorted(
        b[o:o + 4096] for _, b in want for o in range(0, len(b), 4096))


@mounted
@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_torch_dataloader_forked_after_use():
    """PyTorch's DataLoader forks its workers after the main process has
    read (its thread's bounce buffer and the module's threads exist): 4
    workers each read files of 16 MiB (two bounce buffers' worth) at once
    into memory of their own, byte for byte what was written."""
    torch = pytest.importorskip("torch")
    root = os.path.join(MNT, "ds-forked")
    want = make_tree(root, 8, lambda i: 16 * MiB + 4096 * i + 3)
    ds = s3rdmafs.FileDataset(root)
    assert ds[0].tobytes() == want[0][1]  # the parent's bounce buffer made
    with s3rdmafs.File(want[1][0]) as f:  # and the module's threads
        a = numpy.empty(len(want[1][1]), dtype=numpy.uint8)
        assert f.pread(a, 0).result() == a.size
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4,
                                     multiprocessing_context="fork",
                                     prefetch_factor=2)
    for _ in range(2):
        got = [t.numpy().tobytes() for t in dl]
        for i, (p, b) in enumerate(want):
            assert got[i] == b, "%s: wrong bytes in a forked worker" % p


def test_torch_safetensors():
    """Where torch is installed, a checkpoint loads into torch tensors,
    bfloat16 included, and torch tensors save."""
    torch = pytest.importorskip("torch")
    path = os.path.join(MNT or PLAIN, "torch.safetensors")
    g = torch.Generator().manual_seed(7)
    want = {"w": torch.randn(300, 257, generator=g),
            "bf": torch.randn(1000, generator=g).to(torch.bfloat16),
            "i": torch.arange(5, dtype=torch.int64),
            "flag": torch.tensor([True, False, True])}
    s3rdmafs.save_safetensors(want, path)
    got = s3rdmafs.load_safetensors(path)
    assert sorted(got) == sorted(want)
    for k, t in want.items():
        assert isinstance(got[k], torch.Tensor), k
        assert got[k].dtype == t.dtype and got[k].shape == t.shape, k
        assert torch.equal(got[k], t), k
