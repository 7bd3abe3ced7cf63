/*
 * s3py_dlpack: memory taken by DLPack (see s3py_i.h): objects with
 * __dlpack__ and __dlpack_device__ (torch tensors on the CPU or a GPU,
 * JAX arrays, CuPy arrays, NumPy >= 1.22), for those that have neither
 * __cuda_array_interface__ nor the buffer protocol (a CPU torch tensor).
 *
 * The structures are DLPack's ABI (dlpack.h, the unversioned
 * DLManagedTensor that every producer hands out when the consumer asks
 * for no max_version), declared here as the header is not at hand. As
 * the protocol says, the capsule taken is renamed "used_dltensor" and the
 * tensor's deleter is called once the call is done with the memory
 * (s3py_mem_put), which lets the producer free it.
 */
#include "s3py_i.h"

#include <stdint.h>
#include <string.h>

enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3 };

typedef struct {
  int32_t device_type;
  int32_t device_id;
} dl_device;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} dl_dtype;

typedef struct {
  void *data;
  dl_device device;
  int32_t ndim;
  dl_dtype dtype;
  int64_t *shape;
  int64_t *strides;           /* in elements; NULL: compact, C order */
  uint64_t byte_offset;
} dl_tensor;

typedef struct dl_managed {
  dl_tensor t;
  void *manager_ctx;
  void (*deleter)(struct dl_managed *self);
} dl_managed;

/* The device obj.__dlpack_device__() names: its type, or -1 with an
   exception. */
static int device_type(PyObject *obj)
{
  PyObject *d = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
  long type = -1;

  if (!d)
    return -1;
  if (PyTuple_Check(d) && PyTuple_GET_SIZE(d) == 2)
    type = PyLong_AsLong(PyTuple_GET_ITEM(d, 0));
  Py_DECREF(d);
  if (type < 0 && !PyErr_Occurred())
    PyErr_SetString(PyExc_TypeError, "__dlpack_device__ did not answer "
                                     "(type, id)");
  return PyErr_Occurred() ? -1 : (int)type;
}

/* t's bytes, C-contiguous: their count in *len; -1 with an exception. */
static int extent(const dl_tensor *t, size_t *len)
{
  uint64_t isz = (uint64_t)t->dtype.bits * t->dtype.lanes, n = 1, want = 1;

  if (!isz || isz % 8) {
    PyErr_SetString(PyExc_ValueError, "a DLPack dtype of no whole bytes");
    return -1;
  }
  for (int32_t i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0 ||
        (t->shape[i] && n > (uint64_t)PY_SSIZE_T_MAX / (uint64_t)t->shape[i])) {
      PyErr_SetString(PyExc_ValueError, "a DLPack tensor's shape");
      return -1;
    }
    n *= (uint64_t)t->shape[i];
  }
  for (int32_t i = t->ndim; t->strides && n && i-- > 0;) {
    /* C order: each stride the product of the dimensions after it (a
       dimension of one may have any) */
    if (t->shape[i] != 1 && t->strides[i] != (int64_t)want) {
      PyErr_SetString(PyExc_ValueError,
                      "memory that is not contiguous (C order)");
      return -1;
    }
    want *= (uint64_t)t->shape[i];
  }
  if (n > (uint64_t)PY_SSIZE_T_MAX / (isz / 8)) {
    PyErr_SetString(PyExc_ValueError, "a DLPack tensor's size");
    return -1;
  }
  *len = (size_t)(n * (isz / 8));
  return 0;
}

int s3py_dlpack_mem(PyObject *obj, struct s3py_mem *m)
{
  PyObject *cap;
  dl_managed *mt;
  size_t len;
  int type;

  if (!PyObject_HasAttrString(obj, "__dlpack__") ||
      !PyObject_HasAttrString(obj, "__dlpack_device__"))
    return 1;
  if ((type = device_type(obj)) < 0)
    return -1;
  if (type != DL_CPU && type != DL_CUDA && type != DL_CUDA_HOST) {
    PyErr_Format(PyExc_TypeError, "memory on a DLPack device of type %d "
                 "(CPU, CUDA and CUDA host memory only)", type);
    return -1;
  }
  if (type == DL_CUDA) {
    /* its producer's work made visible to the legacy default stream (1),
       which the library's blocking streams wait for */
    PyObject *f = PyObject_GetAttrString(obj, "__dlpack__");
    PyObject *args = PyTuple_New(0), *kw = Py_BuildValue("{s:i}", "stream", 1);
    cap = f && args && kw ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(args);
    Py_XDECREF(kw);
  } else {
    cap = PyObject_CallMethod(obj, "__dlpack__", NULL);
  }
  if (!cap)
    return -1;
  if (!PyCapsule_IsValid(cap, "dltensor")) {
    Py_DECREF(cap);
    PyErr_SetString(PyExc_TypeError, "__dlpack__ gave no \"dltensor\" "
                                     "capsule (one used already?)");
    return -1;
  }
  mt = PyCapsule_GetPointer(cap, "dltensor");
  if (PyCapsule_SetName(cap, "used_dltensor")) {
    Py_DECREF(cap);
    return -1;
  }
  m->dl_capsule = cap;
  m->dl_tensor = mt;
  if (extent(&mt->t, &len))
    return -1; /* (the caller's put calls the deleter) */
  if (!mt->t.data && len) {
    PyErr_SetString(PyExc_ValueError, "DLPack memory at address 0");
    return -1;
  }
  m->ptr = (char *)mt->t.data + mt->t.byte_offset;
  m->len = len;
  m->device = type == DL_CUDA;
  /* the legacy default stream the producer ordered its work before:
     waited for, so that GPUDirect (no stream) sees that work done too */
  m->stream = type == DL_CUDA ? 1 : 0;
  return 0;
}

void s3py_dlpack_put(struct s3py_mem *m)
{
  dl_managed *mt = m->dl_tensor;

  if (mt && mt->deleter)
    mt->deleter(mt);
  m->dl_tensor = NULL;
  Py_CLEAR(m->dl_capsule);
}
