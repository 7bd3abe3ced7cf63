"""s3rdmafs: direct and GPU reads and writes of files on s3rdmafs mounts.

    import numpy, s3rdmafs
    with s3rdmafs.File("/mnt/bucket/data.bin") as f:
        a = numpy.empty(1 << 20, dtype=numpy.uint8)
        n = f.read_into(a, offset=0)          # bytes read, short at the end
        fut = f.pread(a, offset=1 << 20)      # on the module's threads
        n = fut.result()

A File reads and writes with libs3rdmafs on an s3rdmafs mount (the daemon
copies once into the caller's memory, or, with an RDMA data plane, the
server writes it itself) and with ordinary pread/pwrite anywhere else
(File.direct says which; counters() counts both). Host memory is taken
through the buffer protocol without a copy (bytearray, memoryview, NumPy
arrays; a CPU tensor as t.numpy()); device memory through
__cuda_array_interface__ (CuPy arrays, CUDA tensors). alloc(size, file)
gives memory registered with the file's mount. Errors are OSError with the errno and
libs3rdmafs's words; the GIL is released around every call.
"""
import atexit

from ._s3rdmafs import Buffer, File, Future, alloc, counters, strerror
from ._s3rdmafs import _shutdown
from .dataset import FileDataset, ShardDataset
from .safetensors import load_safetensors, save_safetensors

atexit.register(_shutdown)

__all__ = ["Buffer", "File", "Future", "alloc", "counters", "strerror",
           "load_safetensors", "save_safetensors", "FileDataset",
           "ShardDataset"]
