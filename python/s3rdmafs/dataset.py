"""Datasets over files of a mount, read with s3rdmafs.File: PyTorch's
(torch.utils.data.Dataset and IterableDataset) when torch is installed,
the same protocol (len, [], iter) otherwise.

  FileDataset(root)               one sample per file below root
  ShardDataset(root, record_size) fixed-size records from the shard files
                                  below root, the shards split between a
                                  DataLoader's workers

A sample is a NumPy uint8 array of the file's (or the record's) bytes, or
what transform makes of it. Each worker opens its own files (a forked
DataLoader worker has the module's threads of its own).
"""
import os

from ._s3rdmafs import File, alloc

try:
    from torch.utils.data import Dataset as _Map
    from torch.utils.data import IterableDataset as _Iter
    from torch.utils.data import get_worker_info as _worker_info
except ImportError:  # the same protocol, without torch
    _Map = _Iter = object

    def _worker_info():
        return None

CHUNK = 64 << 20  # a shard's read, at most


def _files(root, suffix):
    out = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        out.extend(os.path.join(d, n) for n in sorted(names)
                   if n.endswith(suffix))
    if not out:
        raise ValueError("no file%s below %s" %
                         (" ending in " + suffix if suffix else "", root))
    return out


def _read_whole(path):
    import numpy
    with File(path) as f:
        size = os.fstat(f.fileno()).st_size
        a = numpy.empty(size, dtype=numpy.uint8)
        n = f.read_into(a, 0) if size else 0
    if n != size:
        raise OSError("%s: %d of %d bytes (it changed?)" % (path, n, size))
    return a


class FileDataset(_Map):
    """Map-style: sample i is the i-th file below root (sorted, depth
    first; only names ending in suffix), read whole."""

    def __init__(self, root, suffix="", transform=None):
        self.paths = _files(root, suffix)
        self.transform = transform

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        a = _read_whole(self.paths[i])
        return self.transform(a) if self.transform else a


class ShardDataset(_Iter):
    """Iterable: every record_size bytes of each shard below root (a
    shard's tail shorter than a record is left out), shards dealt to the
    DataLoader's workers in turn, each shard read in large calls into
    registered memory."""

    def __init__(self, root, record_size, suffix="", transform=None):
        if record_size <= 0:
            raise ValueError("record_size must be positive")
        self.paths = _files(root, suffix)
        self.record_size = record_size
        self.transform = transform

    def _mine(self):
        w = _worker_info()
        if w is None:
            return self.paths
        return self.paths[w.id::w.num_workers]

    def __iter__(self):
        import numpy
        rs = self.record_size
        step = max(rs, CHUNK // rs * rs)
        for path in self._mine():
            with File(path) as f:
                size = os.fstat(f.fileno()).st_size
                if size < rs:
                    continue
                buf = alloc(min(step, size // rs * rs), f)
                view = numpy.frombuffer(buf, dtype=numpy.uint8)
                for off in range(0, size // rs * rs, step):
                    want = min(step, size // rs * rs - off)
                    if f.read_into(buf, off, want) != want:
                        raise OSError("%s: shorter than it was" % path)
                    for r in range(0, want, rs):
                        rec = view[r:r + rs].copy()
                        yield self.transform(rec) if self.transform else rec
