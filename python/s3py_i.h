/*
 * s3py_i: what the files of the Python module s3rdmafs._s3rdmafs share:
 * s3py_file.c (the module, File, the I/O itself), s3py_buf.c (the memory
 * a call may take: the buffer protocol, __cuda_array_interface__, Buffer
 * from s3rdmafs_buf_alloc), s3py_pool.c (Future and the module's
 * threads).
 *
 * Every I/O call runs without the GIL, on a file descriptor the File keeps
 * open while calls use it (s3py_file_use/_unuse: close() waits for them).
 */
#ifndef S3R_S3PY_I_H
#define S3R_S3PY_I_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

/* Where the bytes of a call go or come from. */
struct s3py_mem {
  void *ptr;
  size_t len;
  bool device;      /* GPU memory (__cuda_array_interface__) */
  bool has_view;    /* view holds the host buffer (release it) */
  Py_buffer view;
  PyObject *owner;  /* device memory: its object, held until put */
  unsigned long stream; /* device memory: a CUDA stream waited for in
                           s3py_mem_get (0: none) */
  PyObject *dl_capsule; /* DLPack: the capsule taken ("used_dltensor") */
  void *dl_tensor;  /* and its DLManagedTensor, deleted at put */
};

enum s3py_op { S3PY_READ, S3PY_WRITE };

typedef struct {
  PyObject_HEAD
  int fd;                    /* -1 once closed; under the GIL */
  atomic_int direct;         /* 1: try the library; 0: plain calls */
  atomic_uint users;         /* calls using fd now */
  bool readable, writable;
  PyObject *name;
} s3py_file;

extern PyTypeObject s3py_file_type, s3py_buffer_type, s3py_future_type;

/* The counters of every call: which path it took. */
struct s3py_counts {
  atomic_ullong direct_reads, direct_read_bytes, plain_reads,
      plain_read_bytes, gpu_reads, gpu_read_bytes, direct_writes,
      direct_write_bytes, plain_writes, plain_write_bytes, gpu_writes,
      gpu_write_bytes;
};
extern struct s3py_counts s3py_counts;

/* obj's memory for op (read: written into, so writable), size bytes of it
   (-1: all); a Python exception and -1 when it cannot be taken. */
int s3py_mem_get(PyObject *obj, enum s3py_op op, Py_ssize_t size,
                 struct s3py_mem *m);
/* Give back what s3py_mem_get took (with the GIL). */
void s3py_mem_put(struct s3py_mem *m);
/* s3py_dlpack.c: obj's memory by DLPack into m: 0; 1 when obj speaks no
   DLPack; -1 with an exception (m then needs s3py_dlpack_put). */
int s3py_dlpack_mem(PyObject *obj, struct s3py_mem *m);
void s3py_dlpack_put(struct s3py_mem *m);

/* The call itself, without the GIL: bytes moved, or -errno. */
ssize_t s3py_io(s3py_file *f, int fd, enum s3py_op op, struct s3py_mem *m,
                off_t off);
/* OSError for a negative return of s3py_io. */
PyObject *s3py_error(ssize_t rc);

/* f's descriptor held for a call (-1 and ValueError when closed), and let
   go after it. */
int s3py_file_use(s3py_file *f);
void s3py_file_unuse(s3py_file *f);

/* A Future running s3py_io on the module's threads; NULL with an
   exception. Takes over m. */
PyObject *s3py_submit(s3py_file *f, int fd, enum s3py_op op,
                      struct s3py_mem *m, off_t off);
/* Stop the threads (atexit): what is queued runs first. */
PyObject *s3py_pool_shutdown(PyObject *self, PyObject *noargs);

int s3py_buf_init(PyObject *module);
int s3py_pool_init(PyObject *module);

#endif
