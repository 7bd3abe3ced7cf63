/*
 * s3py_file: the module s3rdmafs._s3rdmafs and its File (see s3py_i.h).
 *
 * DESIGN
 * - A File is an open descriptor. Each call holds it (users, atomic)
 *   while it runs without the GIL; close() marks it closed at once (new
 *   calls: ValueError), waits for the calls using it, then closes it.
 * - A read or write tries libs3rdmafs first (direct, atomic: 1 until the
 *   library says this is no file of a trusted s3rdmafs mount, then
 *   ordinary pread/pwrite for good); device memory has no such fallback.
 */
#include "s3py_i.h"

#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libs3rdmafs/s3rdmafs.h"

struct s3py_counts s3py_counts;

PyObject *s3py_error(ssize_t rc)
{
  int e = (int)-rc;
  PyObject *args = Py_BuildValue("(is)", e, s3rdmafs_strerror(e));

  if (args) {
    PyErr_SetObject(PyExc_OSError, args);
    Py_DECREF(args);
  }
  return NULL;
}

/* Not an error of the file: the library cannot be used for it (no
   s3rdmafs mount, another user's, a daemon that cannot take our fd, an
   older one); the kernel's calls still can. */
static bool not_ours(ssize_t rc)
{
  return rc == -ENOTTY || rc == -EACCES || rc == -EPERM ||
         rc == -EOPNOTSUPP;
}

static void count(atomic_ullong *calls, atomic_ullong *bytes, ssize_t n)
{
  atomic_fetch_add(calls, 1);
  if (n > 0)
    atomic_fetch_add(bytes, (unsigned long long)n);
}

/* One step of op: some bytes, 0 at the end, or -errno. */
static ssize_t step(s3py_file *f, int fd, enum s3py_op op, char *p,
                    size_t n, off_t off, bool device)
{
  struct s3py_counts *c = &s3py_counts;
  ssize_t r;

  if (device) {
    r = op == S3PY_READ ? s3rdmafs_gpu_read(fd, p, n, off)
                        : s3rdmafs_gpu_write(fd, p, n, off);
    if (op == S3PY_READ)
      count(&c->gpu_reads, &c->gpu_read_bytes, r);
    else
      count(&c->gpu_writes, &c->gpu_write_bytes, r);
    return r;
  }
  if (atomic_load(&f->direct)) {
    r = op == S3PY_READ ? s3rdmafs_read_direct(fd, p, n, off)
                        : s3rdmafs_write_direct(fd, p, n, off);
    if (!not_ours(r)) {
      if (op == S3PY_READ)
        count(&c->direct_reads, &c->direct_read_bytes, r);
      else
        count(&c->direct_writes, &c->direct_write_bytes, r);
      return r;
    }
    atomic_store(&f->direct, 0); /* plain calls from now on */
  }
  do
    r = op == S3PY_READ ? pread(fd, p, n, off) : pwrite(fd, p, n, off);
  while (r < 0 && errno == EINTR);
  if (r < 0)
    return -errno;
  if (op == S3PY_READ)
    count(&c->plain_reads, &c->plain_read_bytes, r);
  else
    count(&c->plain_writes, &c->plain_write_bytes, r);
  return r;
}

ssize_t s3py_io(s3py_file *f, int fd, enum s3py_op op, struct s3py_mem *m,
                off_t off)
{
  size_t done = 0;

  /* bounded: each step moves bytes or ends the loop */
  while (done < m->len) {
    ssize_t r = step(f, fd, op, (char *)m->ptr + done, m->len - done,
                     off + (off_t)done, m->device);
    if (r < 0)
      return done ? (ssize_t)done : r;
    if (r == 0)
      break; /* end of file (a write of 0: never, but not a loop) */
    done += (size_t)r;
  }
  return (ssize_t)done;
}

int s3py_file_use(s3py_file *f)
{
  if (f->fd < 0) {
    PyErr_SetString(PyExc_ValueError, "I/O on a closed file");
    return -1;
  }
  atomic_fetch_add(&f->users, 1);
  return f->fd;
}

void s3py_file_unuse(s3py_file *f)
{
  atomic_fetch_sub(&f->users, 1);
}

static int file_init(s3py_file *f, PyObject *args, PyObject *kw)
{
  static char *names[] = {"path", "mode", NULL};
  PyObject *path = NULL;
  const char *mode = "rb";
  int flags = O_CLOEXEC, fd;
  bool plus;

  if (f->fd >= 0) { /* (calls may be using it) */
    PyErr_SetString(PyExc_ValueError, "the File is open already");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|s", names,
                                   PyUnicode_FSConverter, &path, &mode))
    return -1;
  plus = strchr(mode, '+') != NULL;
  /* one of r w x first, then b and + at most once each (no 'a': every
     call names its offset, which O_APPEND would ignore) */
  if (!mode[0] || !strchr("rwx", mode[0]) ||
      strspn(mode + 1, "b+") != strlen(mode + 1) || strlen(mode) > 3 ||
      strchr(mode, '+') != strrchr(mode, '+') ||
      strchr(mode, 'b') != strrchr(mode, 'b')) {
    Py_DECREF(path);
    PyErr_Format(PyExc_ValueError, "invalid mode: '%s'", mode);
    return -1;
  }
  switch (mode[0]) {
  case 'r': flags |= plus ? O_RDWR : O_RDONLY; break;
  case 'w': flags |= (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
  default: flags |= (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_EXCL; break;
  }
  Py_BEGIN_ALLOW_THREADS
  fd = open(PyBytes_AS_STRING(path), flags, 0666);
  Py_END_ALLOW_THREADS
  if (fd < 0) {
    PyObject *shown = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, shown ? shown : path);
    Py_XDECREF(shown);
    Py_DECREF(path);
    return -1;
  }
  f->fd = fd;
  atomic_store(&f->direct, 1);
  f->readable = mode[0] == 'r' || plus;
  f->writable = mode[0] != 'r' || plus;
  Py_XSETREF(f->name, PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path)));
  Py_DECREF(path);
  return f->name ? 0 : -1;
}

static PyObject *file_new(PyTypeObject *t, PyObject *args, PyObject *kw)
{
  s3py_file *f = (s3py_file *)t->tp_alloc(t, 0);

  if (f)
    f->fd = -1;
  return (PyObject *)f;
}

/* close(): new calls refused now, the descriptor closed once the calls
   using it are done */
static PyObject *file_close(s3py_file *f, PyObject *noargs)
{
  int fd = f->fd, rc = 0;

  if (fd < 0)
    Py_RETURN_NONE;
  f->fd = -1;
  Py_BEGIN_ALLOW_THREADS
  while (atomic_load(&f->users)) /* bounded by the calls in flight */
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  rc = close(fd);
  Py_END_ALLOW_THREADS
  if (rc && errno != EINTR) /* an upload's failure, as close(2) says it */
    return PyErr_SetFromErrno(PyExc_OSError);
  Py_RETURN_NONE;
}

static void file_dealloc(s3py_file *f)
{
  if (f->fd >= 0) {
    PyObject *et, *ev, *tb, *r;
    PyErr_Fetch(&et, &ev, &tb);
    r = file_close(f, NULL);
    if (!r)
      PyErr_WriteUnraisable((PyObject *)f);
    Py_XDECREF(r);
    PyErr_Restore(et, ev, tb);
  }
  Py_XDECREF(f->name);
  Py_TYPE(f)->tp_free((PyObject *)f);
}

/* The arguments of read_into/write_from/pread/pwrite: buf, offset, size. */
static int io_args(s3py_file *f, enum s3py_op op, PyObject *args,
                   PyObject *kw, struct s3py_mem *m, off_t *off)
{
  static char *names[] = {"buf", "offset", "size", NULL};
  PyObject *buf;
  long long o = 0;
  Py_ssize_t size = -1;

  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Ln", names, &buf, &o, &size))
    return -1;
  if (o < 0 || size < -1) {
    PyErr_SetString(PyExc_ValueError, "negative offset or size");
    return -1;
  }
  if (f->fd >= 0 && !(op == S3PY_READ ? f->readable : f->writable)) {
    PyErr_SetString(PyExc_ValueError, op == S3PY_READ
                                          ? "file not open for reading"
                                          : "file not open for writing");
    return -1;
  }
  *off = (off_t)o;
  return s3py_mem_get(buf, op, size, m);
}

/* io_args, then the file held: its fd, or -1 with an exception (m given
   back) */
static int io_begin(s3py_file *f, enum s3py_op op, PyObject *args,
                    PyObject *kw, struct s3py_mem *m, off_t *off)
{
  int fd;

  if (io_args(f, op, args, kw, m, off))
    return -1;
  if ((fd = s3py_file_use(f)) < 0)
    s3py_mem_put(m);
  return fd;
}

static PyObject *io_now(s3py_file *f, enum s3py_op op, PyObject *args,
                        PyObject *kw)
{
  struct s3py_mem m;
  ssize_t rc;
  off_t off;
  int fd = io_begin(f, op, args, kw, &m, &off);

  if (fd < 0)
    return NULL;
  Py_BEGIN_ALLOW_THREADS
  rc = s3py_io(f, fd, op, &m, off);
  Py_END_ALLOW_THREADS
  s3py_file_unuse(f);
  s3py_mem_put(&m);
  return rc < 0 ? s3py_error(rc) : PyLong_FromSsize_t(rc);
}

static PyObject *io_later(s3py_file *f, enum s3py_op op, PyObject *args,
                          PyObject *kw)
{
  struct s3py_mem m;
  off_t off;
  int fd = io_begin(f, op, args, kw, &m, &off);

  if (fd < 0)
    return NULL;
  return s3py_submit(f, fd, op, &m, off); /* (unuse when it is done) */
}

static PyObject *file_read_into(s3py_file *f, PyObject *a, PyObject *k)
{
  return io_now(f, S3PY_READ, a, k);
}

static PyObject *file_write_from(s3py_file *f, PyObject *a, PyObject *k)
{
  return io_now(f, S3PY_WRITE, a, k);
}

static PyObject *file_pread(s3py_file *f, PyObject *a, PyObject *k)
{
  return io_later(f, S3PY_READ, a, k);
}

static PyObject *file_pwrite(s3py_file *f, PyObject *a, PyObject *k)
{
  return io_later(f, S3PY_WRITE, a, k);
}

static PyObject *file_fileno(s3py_file *f, PyObject *noargs)
{
  if (f->fd < 0) {
    PyErr_SetString(PyExc_ValueError, "I/O on a closed file");
    return NULL;
  }
  return PyLong_FromLong(f->fd);
}

static PyObject *file_enter(s3py_file *f, PyObject *noargs)
{
  if (f->fd < 0) {
    PyErr_SetString(PyExc_ValueError, "I/O on a closed file");
    return NULL;
  }
  Py_INCREF(f);
  return (PyObject *)f;
}

static PyObject *file_exit(s3py_file *f, PyObject *args)
{
  return file_close(f, NULL);
}

static PyObject *file_closed(s3py_file *f, void *closure)
{
  return PyBool_FromLong(f->fd < 0);
}

static PyObject *file_is_direct(s3py_file *f, void *closure)
{
  return PyBool_FromLong(atomic_load(&f->direct));
}

static PyMethodDef file_methods[] = {
    {"read_into", (PyCFunction)(void (*)(void))file_read_into,
     METH_VARARGS | METH_KEYWORDS,
     "read_into(buf, offset=0, size=-1) -> bytes read (short at the end)"},
    {"write_from", (PyCFunction)(void (*)(void))file_write_from,
     METH_VARARGS | METH_KEYWORDS,
     "write_from(buf, offset=0, size=-1) -> bytes written"},
    {"pread", (PyCFunction)(void (*)(void))file_pread,
     METH_VARARGS | METH_KEYWORDS,
     "pread(buf, offset=0, size=-1) -> Future of read_into"},
    {"pwrite", (PyCFunction)(void (*)(void))file_pwrite,
     METH_VARARGS | METH_KEYWORDS,
     "pwrite(buf, offset=0, size=-1) -> Future of write_from"},
    {"close", (PyCFunction)file_close, METH_NOARGS,
     "close(): waits for the calls using the file"},
    {"fileno", (PyCFunction)file_fileno, METH_NOARGS, NULL},
    {"__enter__", (PyCFunction)file_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)file_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef file_getset[] = {
    {"closed", (getter)file_closed, NULL, NULL, NULL},
    {"direct", (getter)file_is_direct, NULL,
     "False once a call found this is no file libs3rdmafs may read "
     "(ordinary pread/pwrite since)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMemberDef file_members[] = {
    {"name", T_OBJECT, offsetof(s3py_file, name), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};

PyTypeObject s3py_file_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "s3rdmafs.File",
    .tp_basicsize = sizeof(s3py_file),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "File(path, mode='rb'): a file read and written with "
              "libs3rdmafs where it can, ordinary pread/pwrite elsewhere",
    .tp_new = file_new,
    .tp_init = (initproc)file_init,
    .tp_dealloc = (destructor)file_dealloc,
    .tp_methods = file_methods,
    .tp_getset = file_getset,
    .tp_members = file_members,
};

static PyObject *counters(PyObject *self, PyObject *noargs)
{
  struct s3py_counts *c = &s3py_counts;

  return Py_BuildValue(
      "{sKsKsKsKsKsKsKsKsKsKsKsK}", "direct_reads",
      atomic_load(&c->direct_reads), "direct_read_bytes",
      atomic_load(&c->direct_read_bytes), "plain_reads",
      atomic_load(&c->plain_reads), "plain_read_bytes",
      atomic_load(&c->plain_read_bytes), "gpu_reads",
      atomic_load(&c->gpu_reads), "gpu_read_bytes",
      atomic_load(&c->gpu_read_bytes), "direct_writes",
      atomic_load(&c->direct_writes), "direct_write_bytes",
      atomic_load(&c->direct_write_bytes), "plain_writes",
      atomic_load(&c->plain_writes), "plain_write_bytes",
      atomic_load(&c->plain_write_bytes), "gpu_writes",
      atomic_load(&c->gpu_writes), "gpu_write_bytes",
      atomic_load(&c->gpu_write_bytes));
}

static PyObject *strerror_(PyObject *self, PyObject *arg)
{
  long e = PyLong_AsLong(arg);

  if (e == -1 && PyErr_Occurred())
    return NULL;
  return PyUnicode_FromString(s3rdmafs_strerror((int)e));
}

static PyMethodDef module_methods[] = {
    {"counters", counters, METH_NOARGS,
     "counters() -> how many calls took each path, and their bytes"},
    {"strerror", strerror_, METH_O, "strerror(errno) -> libs3rdmafs's words"},
    {"_shutdown", s3py_pool_shutdown, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "s3rdmafs._s3rdmafs",
    "libs3rdmafs's direct and GPU I/O for Python", -1, module_methods,
    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__s3rdmafs(void); /* (the interpreter's to call) */

PyMODINIT_FUNC PyInit__s3rdmafs(void)
{
  PyObject *m;

  if (PyType_Ready(&s3py_file_type) < 0 ||
      !(m = PyModule_Create(&module_def)))
    return NULL;
  Py_INCREF(&s3py_file_type);
  if (PyModule_AddObject(m, "File", (PyObject *)&s3py_file_type) < 0 ||
      s3py_buf_init(m) || s3py_pool_init(m)) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
