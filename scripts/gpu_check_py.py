#!/usr/bin/env python3
"""gpu_check_py: the Python module's device path, for scripts/gpu-check.sh.

    gpu_check_py.py MNT REF

MNT/big.bin is the object REF holds. One line per case, "ok|NAME|detail",
"FAIL|NAME|detail" or "skip|NAME|why":
  - driver memory: 64 MiB + 3 at offset 777 read into memory of the CUDA
    driver's own (cuMemAlloc through ctypes, handed over by
    __cuda_array_interface__), copied back and compared; the driver is
    libcuda.so.1, or $S3RDMAFS_CUDA_LIB (the stand-in: simulated);
  - torch: the same into a CUDA tensor (torch with a GPU only);
  - cupy: the same into a CuPy array (cupy with a GPU only);
  - safetensors: tensors saved with save_safetensors on the mount, loaded
    with load_safetensors(device="cuda"), compared (torch with a GPU only).
"""
import ctypes
import os
import sys

import s3rdmafs

N = (64 << 20) + 3
OFF = 777


def say(tag, name, detail=""):
    print("%s|%s|%s" % (tag, name, detail), flush=True)


class DriverMemory:
    """Device memory from the CUDA driver itself (no toolkit, no torch)."""

    def __init__(self, n):
        lib = os.environ.get("S3RDMAFS_CUDA_LIB") or "libcuda.so.1"
        cu = self.cu = ctypes.CDLL(lib)
        self.simulated = hasattr(cu, "fake_cuda_simulated")
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        self.ptr = ctypes.c_ulonglong()
        for call, args in (("cuInit", (0,)),
                           ("cuDeviceGet", (ctypes.byref(dev), 0)),
                           ("cuDevicePrimaryCtxRetain", (ctypes.byref(ctx),
                                                         dev)),
                           ("cuCtxPushCurrent_v2", (ctx,)),
                           ("cuMemAlloc_v2", (ctypes.byref(self.ptr),
                                              ctypes.c_size_t(n)))):
            rc = getattr(cu, call)(*args)
            if rc:
                raise OSError("%s: CUDA error %d" % (call, rc))
        self.n = n
        self.__cuda_array_interface__ = {
            "shape": (n,), "typestr": "|u1", "version": 3,
            "data": (self.ptr.value, False), "strides": None}

    def host(self):
        out = ctypes.create_string_buffer(self.n)
        rc = self.cu.cuMemcpyDtoH_v2(out, self.ptr, ctypes.c_size_t(self.n))
        if rc:
            raise OSError("cuMemcpyDtoH: CUDA error %d" % rc)
        return out.raw

    def free(self):
        self.cu.cuMemFree_v2(self.ptr)


def read_case(name, mem, to_host, path, want):
    try:
        with s3rdmafs.File(path) as f:
            n = f.read_into(mem, OFF)
        got = to_host()
        if n == len(want) and got == want:
            say("ok", name, "%d bytes at %d, compared" % (n, OFF))
        else:
            diff = next((i for i in range(min(len(got), len(want)))
                         if got[i] != want[i]), None)
            say("FAIL", name, "read %d of %d; first difference at %s" %
                (n, len(want), diff))
    except Exception as e:  # (a case's failure, said: the others go on)
        say("FAIL", name, "%s: %s" % (type(e).__name__, e))


def main():
    mnt, ref = sys.argv[1], sys.argv[2]
    path = os.path.join(mnt, "big.bin")
    with open(ref, "rb") as f:
        f.seek(OFF)
        want = f.read(N)
    simulated = False
    try:
        mem = DriverMemory(N)
    except OSError as e:
        say("FAIL", "driver memory", str(e))
    else:
        # the stand-in: torch's and cupy's memory (the real driver's, if
        # any) is not the library's; their cases are left out
        simulated = mem.simulated
        read_case("driver memory" + (" (simulated)" if mem.simulated
                                     else ""), mem, mem.host, path, want)
        mem.free()
    try:
        import torch
        gpu = torch.cuda.is_available() and not simulated
    except ImportError:
        torch, gpu = None, False
    if not gpu:
        why = "no torch" if torch is None else "torch sees no GPU" if \
            not simulated else "simulated: the library's driver is the stand-in"
        say("skip", "torch", why)
        say("skip", "safetensors to the GPU", why)
    else:
        t = torch.empty(N, dtype=torch.uint8, device="cuda")
        read_case("torch", t, lambda: t.cpu().numpy().tobytes(), path, want)
        tensors = {"w": torch.arange(1 << 20, dtype=torch.float32),
                   "b": torch.ones(33, 7, dtype=torch.bfloat16)}
        st = os.path.join(mnt, "check.safetensors")
        try:
            s3rdmafs.save_safetensors(tensors, st)
            back = s3rdmafs.load_safetensors(st, device="cuda")
            ok = all(back[k].is_cuda and torch.equal(back[k].cpu(), v)
                     for k, v in tensors.items())
            say("ok" if ok else "FAIL", "safetensors to the GPU",
                "2 tensors" + ("" if ok else ": other values"))
        except Exception as e:
            say("FAIL", "safetensors to the GPU", "%s: %s" %
                (type(e).__name__, e))
    try:
        import cupy
        ndev = 0 if simulated else cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or no device/driver for cupy
        say("skip", "cupy", "no cupy" if isinstance(e, ImportError)
            else "cupy sees no GPU")
    else:
        if ndev:
            a = cupy.empty(N, dtype=cupy.uint8)
            read_case("cupy", a, lambda: a.get().tobytes(), path, want)
        else:
            say("skip", "cupy", "cupy sees no GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
