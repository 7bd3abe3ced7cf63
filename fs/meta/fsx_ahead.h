/*
 * fsx_ahead: the metadata of a listing's names asked for ahead of their
 * lookups, on a mount that shows no listing's attributes (allow_other,
 * mount.listing_attrs=false: a listing has no x-amz-meta-*, so each name
 * needs a HEAD before the kernel may check access against it).
 *
 * `ls -l` of a thousand files looks the names up one at a time, in the
 * listing's order: a HEAD each, a thousand round trips in a row. Here a
 * lookup that is the third in a row to follow the one before closely in
 * the listing (a reader going through it) HEADs the next FSX_AHEAD_N
 * names at once (every HEAD in flight together) and keeps the answers on
 * the listing's snapshot; the lookups after it take theirs from there,
 * each answer once and only within FSX_AHEAD_FRESH_MS of its HEAD (never
 * longer than the attribute TTL): a cache of metadata it is not. A
 * lookup that does not follow (a program opening names in its own
 * order), or whose answer is missing, stale or being asked, HEADs its
 * own name alone, as before: nothing is asked that no reader seems about
 * to want.
 *
 * Threads: any lookup thread. The table hangs off its snapshot (its side
 * table: made once, an atomic pointer; freed with it) and its fields are protected by
 * its mutex, never held across a request; a window's HEADs are asked
 * without it, and their answers kept only if no other window replaced it
 * meanwhile (gen). A name whose answer is being asked by another lookup
 * is asked again alone.
 */
#ifndef S3R_FSX_AHEAD_H
#define S3R_FSX_AHEAD_H

#include "fs/meta/fsx_attr.h"

struct fsx_mount;
struct fsx_inode;
struct fsx_dirsnap;

/* Names asked for at once. */
#define FSX_AHEAD_N 64
/* How far past the previous lookup a lookup may be and still count as a
   reader going through the listing. */
#define FSX_AHEAD_STEP 4
/* How old an answer may be when its lookup comes (at most). */
#define FSX_AHEAD_FRESH_MS 2000

/*
 * The metadata of entry i of snapshot s (dir's) from a HEAD: from the
 * table when one asked ahead answered it, else asked now, with the next
 * FSX_AHEAD_N - 1 entries for a reader going through the listing. 0 and
 * *a (from_head); 1: no answer here (not a listing's reader, asked by
 * another lookup, stale, the HEAD failed, no memory): the caller asks on
 * its own. Lock order: the table's mutex, then the inode table's.
 */
int fsx_ahead_meta(struct fsx_mount *m, struct fsx_inode *dir,
                   struct fsx_dirsnap *s, size_t i, struct fsx_attr *a);

#endif
