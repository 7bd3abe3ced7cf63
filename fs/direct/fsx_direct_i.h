/* Internals of fsx_direct shared with its read and write sides
   (fsx_direct_read.c, fsx_direct_write.c): a registration and its use. */
#ifndef S3R_FSX_DIRECT_I_H
#define S3R_FSX_DIRECT_I_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct fsx_mount;
struct fsx_fh;

struct fsx_dreg {
  struct fsx_dreg *next;      /* fsx_direct's lock: its file's list */
  uint64_t handle;
  pid_t tgid;                 /* the process that registered it, and its */
  unsigned long long start;   /* start time: a later one with the pid is
                                 another process */
  char *map;
  size_t len;
  unsigned busy;              /* fsx_direct's lock: READs and WRITEs
                                 using it */
  bool gone;                  /* fsx_direct's lock: unregistered, unmapped
                                 by the last user */
  bool kept;                  /* a server may still touch it (write into
                                 it, or read it for a WRITE) */
  void *dmabuf;               /* a dma-buf's registration (GPUDirect):
                                 device memory, map is NULL */
  bool source;                /* dmabuf: for WRITEs (the server reads it),
                                 else for READs (it writes there) */
  uid_t uid;                  /* the user it counts against, when counted */
  bool counted;
};

/* The registration for handle of process tgid on open file fh, marked
   busy (with unlink, also taken off fh's list); NULL: none. */
struct fsx_dreg *fsx_dreg_use(struct fsx_mount *m, const struct fsx_fh *fh,
                              uint64_t handle, pid_t tgid,
                              unsigned long long start, bool unlink);
/* d (in use) leaves fh's list: freed by its last fsx_dreg_done. */
void fsx_dreg_drop(struct fsx_mount *m, const struct fsx_fh *fh,
                   struct fsx_dreg *d);
/* The end of a use (fsx_dreg_use): the last one frees a dropped d. */
void fsx_dreg_done(struct fsx_mount *m, struct fsx_dreg *d);

/* A READ's (write: a WRITE's) done bytes counted, by path: host buffers,
   GPU staging slots (flags), dma-bufs. */
void fsx_direct_count(struct fsx_mount *m, const struct fsx_dreg *d,
                      uint32_t flags, size_t done, bool write);

/* fsx_direct_read.c: READ (struct s3rdmafs_ioc_read) of tgid's. */
struct s3rdmafs_ioc_read;
int fsx_direct_read(struct fsx_mount *m, struct fsx_fh *fh, pid_t tgid,
                    unsigned long long start, struct s3rdmafs_ioc_read *a);

/* fsx_direct_write.c: WRITE (struct s3rdmafs_ioc_write) of tgid's. */
struct s3rdmafs_ioc_write;
int fsx_direct_write(struct fsx_mount *m, struct fsx_fh *fh, pid_t tgid,
                     unsigned long long start, struct s3rdmafs_ioc_write *a);

#endif
