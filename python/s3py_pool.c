/*
 * s3py_pool: Future, and the module's threads that run pread and pwrite
 * (see s3py_i.h).
 *
 * DESIGN
 * - A queue of Futures under pool.lock; S3PY_THREADS threads, started at
 *   the first submit, take one at a time and run s3py_io without the GIL.
 *   Each Future's own lock and cv say when it is done.
 * - The thread that ran a Future then takes the GIL (PyGILState), gives
 *   back what the call held (the buffer's view, the File's use and
 *   reference), and only then marks it done (so result() returns with the
 *   buffer free again) and drops the queue's reference: a Future dropped
 *   unread still completes and frees. Lock order: the GIL, then pool.lock
 *   or a Future's lock; never the GIL with either held.
 * - Every Future not done is on pool.live (queued or running). A forked
 *   child starts with no threads and an empty queue (pthread_atfork); the
 *   parent's Futures are done there with ECANCELED and their Files' uses
 *   dropped (their memory is left: the child cannot know who else holds
 *   it). Its threads start at its first submit.
 * - _shutdown (atexit) lets the queue drain and joins the threads before
 *   the interpreter finalizes.
 */
#include "s3py_i.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#define S3PY_THREADS 8

typedef struct s3py_future {
  PyObject_HEAD
  pthread_mutex_t lock;
  pthread_cond_t cv;            /* lock: done */
  bool done;                    /* lock */
  ssize_t rc;                   /* lock: s3py_io's */
  /* what the call uses, fixed at submit, given back once done */
  s3py_file *file;
  int fd;
  enum s3py_op op;
  struct s3py_mem mem;
  off_t off;
  struct s3py_future *next;     /* pool.lock: the queue */
  struct s3py_future *lprev, *lnext; /* pool.lock: pool.live */
} s3py_future;

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cv;            /* lock: queued, or stop */
  s3py_future *head, *tail;     /* lock */
  s3py_future live;             /* lock: the list of Futures not done */
  bool stop;                    /* lock */
  unsigned nthreads;            /* lock */
  pthread_t threads[S3PY_THREADS];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* pool.lock held: fu on or off pool.live */
static void live_add(s3py_future *fu)
{
  if (!pool.live.lnext)
    pool.live.lnext = pool.live.lprev = &pool.live;
  fu->lnext = &pool.live;
  fu->lprev = pool.live.lprev;
  pool.live.lprev->lnext = fu;
  pool.live.lprev = fu;
}

static void live_del(s3py_future *fu)
{
  fu->lprev->lnext = fu->lnext;
  fu->lnext->lprev = fu->lprev;
  fu->lnext = fu->lprev = NULL;
}

/* fu's call returned rc: what it held given back, then done */
static void finish(s3py_future *fu, ssize_t rc)
{
  PyGILState_STATE g = PyGILState_Ensure();

  s3py_mem_put(&fu->mem);
  s3py_file_unuse(fu->file);
  Py_CLEAR(fu->file);
  pthread_mutex_lock(&pool.lock);
  live_del(fu);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_lock(&fu->lock);
  fu->rc = rc;
  fu->done = true;
  pthread_cond_broadcast(&fu->cv);
  pthread_mutex_unlock(&fu->lock);
  Py_DECREF(fu); /* the queue's */
  PyGILState_Release(g);
}

static void *worker(void *arg)
{
  pthread_mutex_lock(&pool.lock);
  for (;;) {
    s3py_future *fu = pool.head;
    ssize_t rc;

    if (!fu) {
      if (pool.stop)
        break;
      pthread_cond_wait(&pool.cv, &pool.lock);
      continue;
    }
    pool.head = fu->next;
    if (!pool.head)
      pool.tail = NULL;
    pthread_mutex_unlock(&pool.lock);
    rc = s3py_io(fu->file, fu->fd, fu->op, &fu->mem, fu->off);
    finish(fu, rc);
    pthread_mutex_lock(&pool.lock);
  }
  pthread_mutex_unlock(&pool.lock);
  return arg;
}

static void forked_child(void)
{
  pthread_mutex_init(&pool.lock, NULL);
  pthread_cond_init(&pool.cv, NULL);
  /* the parent's calls run there, not here: done with ECANCELED */
  for (s3py_future *fu = pool.live.lnext; fu && fu != &pool.live;
       fu = fu->lnext) {
    pthread_mutex_init(&fu->lock, NULL);
    pthread_cond_init(&fu->cv, NULL);
    fu->rc = -ECANCELED;
    fu->done = true;
    if (fu->file)
      s3py_file_unuse(fu->file);
  }
  pool.live.lnext = pool.live.lprev = &pool.live;
  pool.head = pool.tail = NULL;
  pool.nthreads = 0;
  pool.stop = false;
}

PyObject *s3py_submit(s3py_file *f, int fd, enum s3py_op op,
                      struct s3py_mem *m, off_t off)
{
  s3py_future *fu = PyObject_New(s3py_future, &s3py_future_type);
  int err = 0;

  if (!fu) {
    s3py_mem_put(m);
    s3py_file_unuse(f);
    return NULL;
  }
  pthread_mutex_init(&fu->lock, NULL);
  pthread_cond_init(&fu->cv, NULL);
  fu->done = false;
  fu->rc = 0;
  Py_INCREF(f);
  fu->file = f;
  fu->fd = fd;
  fu->op = op;
  fu->mem = *m;
  fu->off = off;
  fu->next = NULL;
  Py_INCREF(fu); /* the queue's, dropped by finish() */
  pthread_mutex_lock(&pool.lock);
  if (pool.stop) {
    err = ESHUTDOWN;
  } else {
    /* a thread more for each call until there are S3PY_THREADS */
    if (pool.nthreads < S3PY_THREADS &&
        !pthread_create(&pool.threads[pool.nthreads], NULL, worker, NULL))
      pool.nthreads++;
    err = pool.nthreads ? 0 : EAGAIN;
  }
  if (!err) {
    if (pool.tail)
      pool.tail->next = fu;
    else
      pool.head = fu;
    pool.tail = fu;
    live_add(fu);
    pthread_cond_signal(&pool.cv);
  }
  pthread_mutex_unlock(&pool.lock);
  if (err) { /* not queued: given back here */
    s3py_mem_put(&fu->mem);
    s3py_file_unuse(f);
    Py_CLEAR(fu->file);
    Py_DECREF(fu);
    Py_DECREF(fu);
    errno = err;
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return (PyObject *)fu;
}

/* result(timeout=None): the call's bytes, or its OSError */
static PyObject *future_result(s3py_future *fu, PyObject *args, PyObject *kw)
{
  static char *names[] = {"timeout", NULL};
  PyObject *timeout = Py_None;
  struct timespec until;
  bool done;
  ssize_t rc;

  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", names, &timeout))
    return NULL;
  if (timeout != Py_None) {
    double t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred())
      return NULL;
    if (isnan(t) || t < 0) {
      PyErr_SetString(PyExc_ValueError, "timeout must be 0 or more");
      return NULL;
    }
    if (t > 1e9) /* (inf, or past any wait: as None) */
      timeout = Py_None;
  }
  if (timeout != Py_None) {
    double t = PyFloat_AsDouble(timeout);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)t;
    until.tv_nsec += (long)((t - (double)(time_t)t) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
  }
  Py_BEGIN_ALLOW_THREADS
  pthread_mutex_lock(&fu->lock);
  while (!fu->done &&
         (timeout == Py_None
              ? pthread_cond_wait(&fu->cv, &fu->lock) == 0
              : pthread_cond_timedwait(&fu->cv, &fu->lock, &until) == 0))
    ;
  done = fu->done;
  rc = fu->rc;
  pthread_mutex_unlock(&fu->lock);
  Py_END_ALLOW_THREADS
  if (!done) {
    PyErr_SetString(PyExc_TimeoutError, "the call is still running");
    return NULL;
  }
  return rc < 0 ? s3py_error(rc) : PyLong_FromSsize_t(rc);
}

static PyObject *future_done(s3py_future *fu, PyObject *noargs)
{
  bool done;

  pthread_mutex_lock(&fu->lock);
  done = fu->done;
  pthread_mutex_unlock(&fu->lock);
  return PyBool_FromLong(done);
}

static void future_dealloc(s3py_future *fu)
{
  /* (the queue's reference goes last, after done: nothing waits) */
  pthread_cond_destroy(&fu->cv);
  pthread_mutex_destroy(&fu->lock);
  PyObject_Free(fu);
}

static PyMethodDef future_methods[] = {
    {"result", (PyCFunction)(void (*)(void))future_result,
     METH_VARARGS | METH_KEYWORDS,
     "result(timeout=None) -> bytes moved; OSError as the call raised"},
    {"done", (PyCFunction)future_done, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL}};

PyTypeObject s3py_future_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "s3rdmafs.Future",
    .tp_basicsize = sizeof(s3py_future),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a pread or pwrite running on the module's threads",
    .tp_dealloc = (destructor)future_dealloc,
    .tp_methods = future_methods,
};

PyObject *s3py_pool_shutdown(PyObject *self, PyObject *noargs)
{
  unsigned n;

  pthread_mutex_lock(&pool.lock);
  pool.stop = true;
  pthread_cond_broadcast(&pool.cv);
  n = pool.nthreads;
  pool.nthreads = 0;
  pthread_mutex_unlock(&pool.lock);
  Py_BEGIN_ALLOW_THREADS /* (they take the GIL to finish) */
  for (unsigned i = 0; i < n; i++)
    pthread_join(pool.threads[i], NULL);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

int s3py_pool_init(PyObject *module)
{
  if (PyType_Ready(&s3py_future_type) < 0)
    return -1;
  Py_INCREF(&s3py_future_type);
  if (PyModule_AddObject(module, "Future", (PyObject *)&s3py_future_type))
    return -1;
  if (pthread_atfork(NULL, NULL, forked_child)) {
    PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
    return -1;
  }
  return 0;
}
