"""Checkpoints in the safetensors format, read straight into each tensor's
own storage and written from it, with s3rdmafs.File.

The format: 8 bytes (little-endian) giving the header's length, the header
(JSON: for each tensor its dtype, shape and [begin, end) in the data that
follows; "__metadata__" a map of strings), then the data.
"""
import json
import os
import struct

from ._s3rdmafs import File

# safetensors' dtypes: (NumPy's name, torch's name, bytes each)
DTYPES = {
    "F64": ("float64", "float64", 8), "F32": ("float32", "float32", 4),
    "F16": ("float16", "float16", 2), "BF16": (None, "bfloat16", 2),
    "I64": ("int64", "int64", 8), "I32": ("int32", "int32", 4),
    "I16": ("int16", "int16", 2), "I8": ("int8", "int8", 1),
    "U8": ("uint8", "uint8", 1), "BOOL": ("bool", "bool", 1),
    "U16": ("uint16", None, 2), "U32": ("uint32", None, 4),
    "U64": ("uint64", None, 8),
}
HEADER_MAX = 100 << 20  # a header larger than this is refused


def _count(t, name):
    """The element count of header entry t, every field checked."""
    if not isinstance(t, dict):
        raise ValueError("%s: not an object" % name)
    shape, offs = t.get("shape"), t.get("data_offsets")
    if t.get("dtype") not in DTYPES:
        raise ValueError("%s: dtype %r" % (name, t.get("dtype")))
    if not isinstance(shape, list) or not all(
            type(d) is int and d >= 0 for d in shape):
        raise ValueError("%s: shape %r" % (name, shape))
    if not isinstance(offs, list) or len(offs) != 2 or not all(
            type(o) is int and o >= 0 for o in offs):
        raise ValueError("%s: data_offsets %r" % (name, offs))
    count = 1
    for d in shape:
        count *= d
    return count


def read_header(f):
    """(header dict, offset of the data, the data's length) of the open
    File f: every tensor's entry checked, their ranges one after another
    from 0 with no gap or overlap, and the file exactly that long."""
    head = bytearray(8)
    if f.read_into(head, 0) != 8:
        raise ValueError("not a safetensors file: shorter than 8 bytes")
    (n,) = struct.unpack("<Q", head)
    if n > HEADER_MAX:
        raise ValueError("safetensors header of %d bytes: refused" % n)
    raw = bytearray(n)
    if f.read_into(raw, 8) != n:
        raise ValueError("safetensors header cut short")
    header = json.loads(raw.decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("safetensors header is not a JSON object")
    ranges = []
    for name, t in header.items():
        if name == "__metadata__":
            continue
        count = _count(t, name)
        b, e = t["data_offsets"]
        if b > e or e - b != count * DTYPES[t["dtype"]][2]:
            raise ValueError("%s: data_offsets %r do not fit its shape"
                             % (name, t["data_offsets"]))
        ranges.append((b, e, name))
    end = 0
    for b, e, name in sorted(ranges):
        if b != end:
            raise ValueError("%s: data at %d, where %d was due (a gap or an "
                             "overlap)" % (name, b, end))
        end = e
    size = os.fstat(f.fileno()).st_size
    if size != 8 + n + end:
        raise ValueError("the file is %d bytes, its header says %d"
                         % (size, 8 + n + end))
    return header, 8 + n, end


def _empty(dtype, shape, device):
    """Storage for one tensor: torch's when torch is there (on device),
    else NumPy's (host)."""
    np_name, torch_name, _ = DTYPES[dtype]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch_name is not None:
        dev = torch.device(device or "cpu")
        pin = dev.type == "cpu" and torch.cuda.is_available()
        return torch.empty(shape, dtype=getattr(torch, torch_name),
                           device=dev, pin_memory=pin)
    if device not in (None, "cpu"):
        raise ValueError("device %r needs torch" % device)
    if np_name is None:
        raise ValueError("dtype %s needs torch" % dtype)
    import numpy
    return numpy.empty(shape, dtype=np_name)


def _bytes_of(t):
    """What a call may take for tensor or array t (host: a byte view; a
    CUDA tensor: itself, by __cuda_array_interface__)."""
    if hasattr(t, "__cuda_array_interface__"):
        return t
    if hasattr(t, "numpy"):  # a CPU torch tensor
        import torch
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        t = t.numpy()
    import numpy
    # (a copy only if it is not contiguous already)
    return memoryview(numpy.ascontiguousarray(t).reshape(-1)).cast("B")


def load_safetensors(path, device=None):
    """{name: tensor} of the safetensors file at path, each tensor's bytes
    read once, straight into its own storage on device (torch tensors when
    torch is installed, NumPy arrays on the host otherwise), the reads
    running at once on the module's threads (device reads in this one)."""
    out = {}
    with File(path) as f:
        header, base, _ = read_header(f)
        futs = []
        for name, t in header.items():
            if name == "__metadata__":
                continue
            x = _empty(t["dtype"], tuple(t["shape"]), device)
            b, e = t["data_offsets"]
            out[name] = x
            if e == b:
                continue
            mem = _bytes_of(x)
            if hasattr(mem, "__cuda_array_interface__"):
                n = f.read_into(mem, base + b)  # (its context: this thread)
            else:
                futs.append((name, e - b, f.pread(mem, base + b)))
                continue
            if n != e - b:
                raise ValueError("%s: %d of %d bytes" % (name, n, e - b))
        for name, want, fu in futs:
            if fu.result() != want:
                raise ValueError("%s: the file ends early" % name)
    return out


def save_safetensors(tensors, path, metadata=None):
    """Write {name: tensor or NumPy array} as a safetensors file at path:
    the header, then each tensor's bytes in order from its own storage (a
    new file written in order goes up in whole parts, from registered
    memory where the mount can)."""
    header, order, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        dtype = _dtype_of(t)
        n = _nbytes(t)
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [off, off + n]}
        order.append((name, off, n))
        off += n
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the data 8-byte aligned, as the format's
    with File(path, "wb") as f:
        f.write_from(struct.pack("<Q", len(raw)) + raw, 0)
        base = 8 + len(raw)
        for name, o, n in order:
            if n and f.write_from(_bytes_of(tensors[name]), base + o) != n:
                raise OSError("%s: written short" % name)


def _nbytes(t):
    if hasattr(t, "nbytes"):
        return int(t.nbytes)
    return t.numel() * t.element_size()


def _dtype_of(t):
    name = str(t.dtype).replace("torch.", "")
    for st, (np_name, torch_name, _) in DTYPES.items():
        if name in (np_name, torch_name):
            return st
    raise ValueError("dtype %s has no safetensors name" % t.dtype)
