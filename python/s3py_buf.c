/*
 * s3py_buf: the memory a call may take (see s3py_i.h): host memory by the
 * buffer protocol (bytearray, memoryview, NumPy arrays, CPU tensors: no
 * copy), device memory by __cuda_array_interface__ (CuPy arrays, CUDA
 * tensors), either by DLPack where neither is spoken (s3py_dlpack.c: a
 * CPU torch tensor), and Buffer, memory from s3rdmafs_buf_alloc
 * (registered with the mount's daemon: a read into it costs the daemon
 * one copy or none), or from the heap where the file is on no s3rdmafs
 * mount.
 */
#include "s3py_i.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libs3rdmafs/s3rdmafs.h"

/* The bytes of a typestr ("<f4", "|u1"): its count. */
static Py_ssize_t item_size(PyObject *typestr)
{
  const char *t = PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : NULL;
  long n;
  char *end;

  if (!t || strlen(t) < 3)
    return -1;
  n = strtol(t + 2, &end, 10);
  return *end || n <= 0 ? -1 : (Py_ssize_t)n;
}

/* d, a __cuda_array_interface__: its pointer and length, C-contiguous;
   -1 with an exception else. */
static int cuda_mem(PyObject *d, enum s3py_op op, struct s3py_mem *m)
{
  PyObject *data, *shape, *strides, *typestr, *stream;
  Py_ssize_t len, isz;
  int readonly;
  void *ptr;

  if (!PyDict_Check(d) || !(data = PyDict_GetItemString(d, "data")) ||
      !(shape = PyDict_GetItemString(d, "shape")) ||
      !(typestr = PyDict_GetItemString(d, "typestr")) ||
      !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 ||
      !PyTuple_Check(shape) || (isz = item_size(typestr)) < 0) {
    PyErr_SetString(PyExc_TypeError, "a __cuda_array_interface__ without "
                                     "data, shape or typestr");
    return -1;
  }
  ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
  readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
  if (PyErr_Occurred())
    return -1;
  len = isz;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
    Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
    if (n < 0 || (n && len > PY_SSIZE_T_MAX / n)) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "a device array's shape");
      return -1;
    }
    len *= n;
  }
  /* v3's stream: the producer's work on it to be waited for (0 is
     ambiguous, refused; None or absent: nothing to wait for) */
  stream = PyDict_GetItemString(d, "stream");
  if (stream && stream != Py_None) {
    m->stream = PyLong_AsUnsignedLong(stream);
    if (PyErr_Occurred())
      return -1;
    if (!m->stream) {
      PyErr_SetString(PyExc_ValueError, "__cuda_array_interface__'s stream "
                                        "0 (ambiguous)");
      return -1;
    }
  }
  strides = PyDict_GetItemString(d, "strides");
  if (strides && strides != Py_None && len) {
    /* C order: each stride the product of the dimensions after it (a
       dimension of one may have any) */
    Py_ssize_t want = isz;
    if (!PyTuple_Check(strides) ||
        PyTuple_GET_SIZE(strides) != PyTuple_GET_SIZE(shape)) {
      PyErr_SetString(PyExc_ValueError, "a device array's strides do not "
                                        "match its shape");
      return -1;
    }
    for (Py_ssize_t i = PyTuple_GET_SIZE(shape); i-- > 0;) {
      Py_ssize_t st = PyLong_AsSsize_t(PyTuple_GET_ITEM(strides, i));
      Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
      if (PyErr_Occurred())
        return -1;
      if (n != 1 && st != want) {
        PyErr_SetString(PyExc_ValueError,
                        "device memory that is not contiguous (C order)");
        return -1;
      }
      want *= n;
    }
  }
  if (readonly && op == S3PY_READ) {
    PyErr_SetString(PyExc_ValueError, "read into read-only device memory");
    return -1;
  }
  if (!ptr && len) {
    PyErr_SetString(PyExc_ValueError, "device memory at address 0");
    return -1;
  }
  m->ptr = ptr;
  m->len = (size_t)len;
  m->device = true;
  return 0;
}

int s3py_mem_get(PyObject *obj, enum s3py_op op, Py_ssize_t size,
                 struct s3py_mem *m)
{
  PyObject *cai;
  int flags = PyBUF_ANY_CONTIGUOUS | (op == S3PY_READ ? PyBUF_WRITABLE : 0);

  memset(m, 0, sizeof(*m));
  cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
  if (cai) {
    int rc = cuda_mem(cai, op, m);
    Py_DECREF(cai);
    if (rc)
      return -1;
    Py_INCREF(obj); /* (its memory must outlive a pread's call) */
    m->owner = obj;
  } else {
    int rc = 1;
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
      return -1; /* (the attribute itself failed: said as it is) */
    PyErr_Clear();
    /* the buffer protocol first (it says read-only), else DLPack (a CPU
       torch tensor) */
    if (!PyObject_CheckBuffer(obj) && (rc = s3py_dlpack_mem(obj, m)) < 0) {
      s3py_dlpack_put(m);
      return -1;
    }
    if (rc == 1 && PyObject_GetBuffer(obj, &m->view, flags))
      return -1; /* (BufferError, TypeError: read-only, not contiguous) */
    if (rc == 1) {
      m->has_view = true;
      m->ptr = m->view.buf;
      m->len = (size_t)m->view.len;
    }
  }
  if (size >= 0) {
    if ((size_t)size > m->len) {
      s3py_mem_put(m);
      PyErr_Format(PyExc_ValueError, "size %zd is past the buffer's %zu "
                   "bytes", size, m->len);
      return -1;
    }
    m->len = (size_t)size;
  }
  /* the producer's work on device memory waited for here, at the call,
     while its stream surely lives (a pread's runs later), the GIL let go
     (an empty array has no memory to wait for) */
  if (m->device && m->stream && m->len && m->ptr) {
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = s3rdmafs_gpu_stream_wait(m->ptr, m->stream);
    Py_END_ALLOW_THREADS
    if (rc) {
      s3py_mem_put(m);
      s3py_error(rc);
      return -1;
    }
  }
  m->stream = 0;
  return 0;
}

void s3py_mem_put(struct s3py_mem *m)
{
  if (m->has_view)
    PyBuffer_Release(&m->view);
  m->has_view = false;
  Py_CLEAR(m->owner);
  s3py_dlpack_put(m);
}

/* ---- Buffer: registered memory ---- */

typedef struct {
  PyObject_HEAD
  void *mem;
  Py_ssize_t len;
  bool registered;  /* s3rdmafs_buf_alloc's, else the heap's */
  Py_ssize_t exports;
} s3py_buffer;

static int buffer_get(s3py_buffer *b, Py_buffer *v, int flags)
{
  if (PyBuffer_FillInfo(v, (PyObject *)b, b->mem, b->len, 0, flags))
    return -1;
  b->exports++;
  return 0;
}

static void buffer_release(s3py_buffer *b, Py_buffer *v)
{
  b->exports--;
}

static PyBufferProcs buffer_procs = {(getbufferproc)buffer_get,
                                     (releasebufferproc)buffer_release};

static void buffer_dealloc(s3py_buffer *b)
{
  if (b->registered)
    s3rdmafs_buf_free(b->mem);
  else
    free(b->mem);
  Py_TYPE(b)->tp_free((PyObject *)b);
}

static Py_ssize_t buffer_len(s3py_buffer *b)
{
  return b->len;
}

static PySequenceMethods buffer_seq = {.sq_length = (lenfunc)buffer_len};

static PyObject *buffer_registered(s3py_buffer *b, void *closure)
{
  return PyBool_FromLong(b->registered);
}

static PyGetSetDef buffer_getset[] = {
    {"registered", (getter)buffer_registered, NULL,
     "True: registered with the mount's daemon (s3rdmafs_buf_alloc)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject s3py_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "s3rdmafs.Buffer",
    .tp_basicsize = sizeof(s3py_buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "memory for reads and writes, registered with an s3rdmafs "
              "mount's daemon where it can be (s3rdmafs.alloc)",
    .tp_dealloc = (destructor)buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_as_sequence = &buffer_seq,
    .tp_getset = buffer_getset,
};

/* alloc(size, file): size bytes, zeroed, registered for file's mount */
static PyObject *alloc(PyObject *self, PyObject *args, PyObject *kw)
{
  static char *names[] = {"size", "file", NULL};
  Py_ssize_t size;
  s3py_file *f;
  s3py_buffer *b;
  void *mem;
  int fd, err = 0;

  if (!PyArg_ParseTupleAndKeywords(args, kw, "nO!", names, &size,
                                   &s3py_file_type, &f))
    return NULL;
  if (size <= 0) {
    PyErr_SetString(PyExc_ValueError, "size must be positive");
    return NULL;
  }
  if ((fd = s3py_file_use(f)) < 0)
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  mem = s3rdmafs_buf_alloc(fd, (size_t)size);
  if (!mem)
    err = errno;
  Py_END_ALLOW_THREADS
  s3py_file_unuse(f);
  if (!mem && (err == ENOTTY || err == EPERM || err == EACCES ||
               err == EOPNOTSUPP)) {
    /* no mount of ours: ordinary memory, for the ordinary calls */
    mem = calloc(1, (size_t)size);
    err = mem ? 0 : ENOMEM;
  } else if (mem) {
    err = -1; /* registered */
  }
  if (!mem)
    return s3py_error(-err);
  b = PyObject_New(s3py_buffer, &s3py_buffer_type);
  if (!b) {
    if (err == -1)
      s3rdmafs_buf_free(mem);
    else
      free(mem);
    return NULL;
  }
  b->mem = mem;
  b->len = size;
  b->registered = err == -1;
  b->exports = 0;
  return (PyObject *)b;
}

static PyMethodDef buf_methods[] = {
    {"alloc", (PyCFunction)(void (*)(void))alloc, METH_VARARGS | METH_KEYWORDS,
     "alloc(size, file) -> Buffer: registered for file's mount where it "
     "can be"},
    {NULL, NULL, 0, NULL}};

int s3py_buf_init(PyObject *module)
{
  if (PyType_Ready(&s3py_buffer_type) < 0)
    return -1;
  Py_INCREF(&s3py_buffer_type);
  if (PyModule_AddObject(module, "Buffer", (PyObject *)&s3py_buffer_type))
    return -1;
  return PyModule_AddFunctions(module, buf_methods);
}
