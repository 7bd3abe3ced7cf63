/*
 * The inode table: children by name, lookup counts and forget, freeing up
 * the tree, rehashing, a name whose kind changes, attribute age and
 * metadata rules, directory snapshots; renames (files, over an existing
 * name, directories with everything below re-keyed), unlink (detach),
 * attributes while a file is being written, and patching a directory's
 * snapshot in place or by copy-on-write.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/clock.h"
#include "fs/meta/fsx_inode_i.h" /* white-box: the record itself */

static struct fsx_attr file_attr(const char *etag, uint64_t size,
                                 uint64_t as_of)
{
  struct fsx_attr a = {.kind = FSX_FILE, .size = size, .as_of_ms = as_of};

  snprintf(a.etag, sizeof(a.etag), "%s", etag);
  return a;
}

static void test_children_and_keys(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "pre/");
  struct fsx_attr d = {.kind = FSX_DIR}, f = file_attr("e1", 5, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO), *dir, *file, *again;

  assert_non_null(root);
  dir = fsx_inode_child(t, root, "sub", &d, NULL, 1000, true);
  file = fsx_inode_child(t, dir, "a b.txt", &f, NULL, 1000, true);
  assert_non_null(dir);
  assert_non_null(file);
  assert_string_equal(dir->key, "pre/sub/");
  assert_string_equal(file->key, "pre/sub/a b.txt");
  assert_string_equal(file->bucket, "bkt");
  assert_true(file->ino > FSX_STATS_INO); /* never the reserved numbers */
  again = fsx_inode_child(t, dir, "a b.txt", &f, NULL, 1000, true);
  assert_ptr_equal(again, file);
  assert_int_equal(file->nlookup, 2);
  assert_ptr_equal(fsx_inode_find(t, dir->ino, "a b.txt"), file);
  fsx_inode_put(t, file);
  assert_null(fsx_inode_find(t, dir->ino, "missing"));
  assert_int_equal(fsx_table_count(t), 3);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_forget_frees_up_the_tree(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_attr d = {.kind = FSX_DIR}, f = file_attr("e", 1, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *a = fsx_inode_child(t, root, "a", &d, NULL, 0, true);
  struct fsx_inode *b = fsx_inode_child(t, a, "b", &d, NULL, 0, true);
  struct fsx_inode *c = fsx_inode_child(t, b, "c", &f, NULL, 0, true);
  uint64_t ia = a->ino, ic = c->ino;

  assert_int_equal(fsx_table_count(t), 4);
  /* the kernel forgets the parents first: they stay while c needs them */
  fsx_inode_forget(t, a->ino, 1);
  fsx_inode_forget(t, b->ino, 1);
  assert_int_equal(fsx_table_count(t), 4);
  /* an internal reference keeps c alive past its last forget */
  assert_non_null(fsx_inode_get(t, ic));
  fsx_inode_forget(t, ic, 1);
  assert_int_equal(fsx_table_count(t), 4);
  fsx_inode_put(t, c); /* last reference: c, b and a go */
  assert_int_equal(fsx_table_count(t), 1);
  assert_null(fsx_inode_get(t, ia));
  /* forgetting an unknown or freed inode is harmless */
  fsx_inode_forget(t, ia, 5);
  fsx_inode_forget(t, 999999, 1);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_many_inodes_rehash(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  uint64_t inos[5000];
  char name[32];

  for (int i = 0; i < 5000; i++) {
    struct fsx_attr f = file_attr("e", (uint64_t)i, 1);
    snprintf(name, sizeof(name), "f%05d", i);
    inos[i] = fsx_inode_child(t, root, name, &f, NULL, 0, true)->ino;
  }
  assert_int_equal(fsx_table_count(t), 5001);
  for (int i = 0; i < 5000; i++) {
    struct fsx_inode *in = fsx_inode_get(t, inos[i]);
    snprintf(name, sizeof(name), "f%05d", i);
    assert_non_null(in);
    assert_string_equal(in->name, name);
    assert_int_equal(in->attr.size, (uint64_t)i);
    assert_ptr_equal(fsx_inode_find(t, FSX_ROOT_INO, name), in);
    fsx_inode_put(t, in);
    fsx_inode_put(t, in);
    fsx_inode_forget(t, inos[i], 1);
  }
  assert_int_equal(fsx_table_count(t), 1);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_kind_change_makes_a_new_inode(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO), *f, *d;
  struct fsx_attr fa = file_attr("e", 3, 1), da = {.kind = FSX_DIR};

  f = fsx_inode_child(t, root, "x", &fa, NULL, 0, true);
  d = fsx_inode_child(t, root, "x", &da, NULL, 0, true);
  assert_ptr_not_equal(f, d);
  assert_true(d->ino > f->ino);
  assert_ptr_equal(fsx_inode_find(t, FSX_ROOT_INO, "x"), d);
  fsx_inode_put(t, d);
  /* the old inode lives on for the kernel's reference, nameless */
  assert_non_null(fsx_inode_get(t, f->ino));
  fsx_inode_put(t, f);
  fsx_inode_forget(t, f->ino, 1);
  fsx_inode_forget(t, d->ino, 1);
  assert_int_equal(fsx_table_count(t), 1);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_attribute_age_and_metadata(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO), *in;
  struct fsx_attr listed = file_attr("e1", 1, 100), head = file_attr("e2", 6,
                                                                     200);
  struct fsx_attr old_list = file_attr("e1", 1, 150), new_list;

  in = fsx_inode_child(t, root, "f", &listed, NULL, 0, true);
  head.from_head = true;
  head.has_mode = true;
  head.mode = 0100750;
  fsx_inode_set_attr(t, in, &head, true, 1000);
  assert_int_equal(in->attr.size, 6);
  assert_int_equal(in->gen, fsx_etag_gen("e2"));
  /* a listing older than the HEAD changes nothing */
  fsx_inode_child(t, root, "f", &old_list, NULL, 0, true);
  assert_int_equal(in->attr.size, 6);
  assert_string_equal(in->attr.etag, "e2");
  /* a newer listing of the same object keeps the HEAD's metadata */
  new_list = file_attr("e2", 6, 300);
  fsx_inode_child(t, root, "f", &new_list, NULL, 0, true);
  assert_true(in->attr.has_mode);
  assert_int_equal(in->attr.mode, 0100750);
  /* a newer listing of a changed object drops it */
  new_list = file_attr("e3", 9, 400);
  fsx_inode_child(t, root, "f", &new_list, NULL, 0, true);
  assert_int_equal(in->attr.size, 9);
  assert_false(in->attr.has_mode);
  assert_false(in->meta_known);
  /* a symlink known from a HEAD is not turned into a file by a listing */
  head = file_attr("e3", 9, 500);
  head.from_head = true;
  head.kind = FSX_SYMLINK;
  fsx_inode_child(t, root, "l", &head, NULL, 0, true);
  new_list = file_attr("e3", 9, 600);
  in = fsx_inode_child(t, root, "l", &new_list, NULL, 0, true);
  assert_int_equal(in->attr.kind, FSX_SYMLINK);
  assert_int_equal(in->nlookup, 2);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_snapshots(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_dirsnap *s = fsx_dirsnap_new(), *got;
  static const char *const names[] = {"zz", "b b", "c", "a"};
  struct fsx_attr a = {.kind = FSX_FILE};

  assert_non_null(s);
  for (int i = 0; i < 4; i++)
    assert_int_equal(fsx_dirsnap_add(s, names[i], strlen(names[i]), &a), 0);
  fsx_dirsnap_seal(s, 7, NULL, NULL);
  assert_string_equal(s->ents[0].name, "a"); /* sorted */
  assert_int_equal(s->ents[3].attr.as_of_ms, 7);
  fsx_dir_set_snap(t, root, s, 60000);
  for (int i = 0; i < 4; i++)
    assert_non_null(fsx_dirsnap_find(s, names[i]));
  assert_null(fsx_dirsnap_find(s, "b"));
  assert_null(fsx_dirsnap_find(s, "zzz"));
  got = fsx_dir_get_snap(t, root, true);
  assert_ptr_equal(got, s);
  fsx_dir_invalidate(t, root); /* our two references keep it readable */
  assert_null(fsx_dir_get_snap(t, root, false));
  assert_non_null(fsx_dirsnap_find(got, "c"));
  fsx_dirsnap_put(got);
  fsx_dirsnap_put(s); /* the last one frees it (ASan checks) */
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static struct fsx_attr dir_attr(void)
{
  struct fsx_attr a = {.kind = FSX_DIR};

  return a;
}

static void test_move_file(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "pre/");
  struct fsx_attr d = dir_attr(), f = file_attr("e1", 7, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *a = fsx_inode_child(t, root, "a", &d, NULL, 0, true);
  struct fsx_inode *b = fsx_inode_child(t, root, "b", &d, NULL, 0, true);
  struct fsx_inode *in = fsx_inode_child(t, a, "f", &f, NULL, 0, true);
  const char *oldkey = fsx_inode_key(t, in), *k2;
  uint64_t ia = a->ino, ib = b->ino, iin = in->ino;

  assert_string_equal(oldkey, "pre/a/f");
  assert_int_equal(a->n_children, 1);
  assert_int_equal(b->n_children, 0);
  assert_int_equal(fsx_inode_move(t, in, b, "g"), 0);
  assert_string_equal(fsx_inode_key(t, in), "pre/b/g");
  assert_string_equal(in->key, "pre/b/g");
  assert_string_equal(in->name, "g");
  assert_int_equal(in->parent, ib);
  assert_int_equal(in->ino, iin); /* the same inode */
  assert_string_equal(oldkey, "pre/a/f"); /* still readable (ASan) */
  assert_ptr_equal(fsx_inode_find(t, ib, "g"), in);
  fsx_inode_put(t, in);
  assert_null(fsx_inode_find(t, ia, "f"));
  assert_null(fsx_inode_find(t, ib, "f"));
  assert_null(fsx_inode_find(t, ia, "g"));
  assert_int_equal(a->n_children, 0);
  assert_int_equal(b->n_children, 1);
  assert_int_equal(in->attr.size, 7); /* attributes travel with it */
  /* a rename within the same directory, twice: every old key stays */
  k2 = fsx_inode_key(t, in);
  assert_int_equal(fsx_inode_move(t, in, b, "h"), 0);
  assert_int_equal(fsx_inode_move(t, in, b, "i j"), 0);
  assert_string_equal(fsx_inode_key(t, in), "pre/b/i j");
  assert_string_equal(k2, "pre/b/g");
  assert_string_equal(oldkey, "pre/a/f");
  assert_int_equal(b->n_children, 1);
  assert_null(fsx_inode_find(t, ib, "g"));
  assert_null(fsx_inode_find(t, ib, "h"));
  assert_ptr_equal(fsx_inode_find(t, ib, "i j"), in);
  fsx_inode_put(t, in);
  assert_int_equal(fsx_table_count(t), 4);
  /* a, now empty and forgotten, goes; b stays while in needs it */
  fsx_inode_forget(t, ia, 1);
  assert_int_equal(fsx_table_count(t), 3);
  assert_null(fsx_inode_get(t, ia));
  fsx_inode_forget(t, ib, 1);
  assert_int_equal(fsx_table_count(t), 3);
  fsx_inode_forget(t, iin, 1);
  assert_int_equal(fsx_table_count(t), 1);
  assert_int_equal(root->n_children, 0);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

/* The source directory, forgotten before the move, goes with its last child. */
static void test_move_frees_the_old_parent(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_attr d = dir_attr(), f = file_attr("e1", 1, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *a = fsx_inode_child(t, root, "a", &d, NULL, 0, true);
  struct fsx_inode *in = fsx_inode_child(t, a, "f", &f, NULL, 0, true);
  uint64_t ia = a->ino;

  fsx_inode_forget(t, ia, 1); /* kept by its child */
  assert_int_equal(fsx_table_count(t), 3);
  assert_int_equal(fsx_inode_move(t, in, root, "f"), 0);
  assert_int_equal(fsx_table_count(t), 2);
  assert_null(fsx_inode_get(t, ia));
  assert_string_equal(fsx_inode_key(t, in), "f");
  assert_int_equal(root->n_children, 1);
  fsx_inode_forget(t, in->ino, 1);
  assert_int_equal(fsx_table_count(t), 1);
  assert_int_equal(root->n_children, 0);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_move_over_existing_name(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_attr d = dir_attr(), f1 = file_attr("e1", 1, 1),
                  f2 = file_attr("e2", 2, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *dir = fsx_inode_child(t, root, "d", &d, NULL, 0, true);
  struct fsx_inode *x = fsx_inode_child(t, dir, "x", &f1, NULL, 0, true);
  struct fsx_inode *y = fsx_inode_child(t, dir, "y", &f2, NULL, 0, true);
  uint64_t iy = y->ino, ix = x->ino, id = dir->ino;

  assert_int_equal(dir->n_children, 2);
  assert_non_null(fsx_inode_get(t, iy)); /* someone still uses the victim */
  assert_int_equal(fsx_inode_move(t, x, dir, "y"), 0);
  assert_ptr_equal(fsx_inode_find(t, id, "y"), x);
  fsx_inode_put(t, x);
  assert_null(fsx_inode_find(t, id, "x"));
  /* the victim has no name, keeps its key and stays alive */
  assert_null(y->name);
  assert_string_equal(fsx_inode_key(t, y), "d/y");
  assert_string_equal(fsx_inode_key(t, x), "d/y");
  assert_int_equal(y->attr.size, 2);
  assert_int_equal(dir->n_children, 2);
  assert_int_equal(fsx_table_count(t), 4);
  fsx_inode_forget(t, iy, 1); /* the internal reference keeps it */
  assert_int_equal(fsx_table_count(t), 4);
  assert_ptr_equal(fsx_inode_find(t, id, "y"), x);
  fsx_inode_put(t, x);
  fsx_inode_put(t, y); /* now it goes, and the name stays x's */
  assert_int_equal(fsx_table_count(t), 3);
  assert_null(fsx_inode_get(t, iy));
  assert_int_equal(dir->n_children, 1);
  assert_ptr_equal(fsx_inode_find(t, id, "y"), x);
  fsx_inode_put(t, x);
  /* a new child of that name would now refresh x, not make another */
  assert_ptr_equal(fsx_inode_child(t, dir, "y", &f1, NULL, 0, false), x);
  fsx_inode_put(t, x);
  fsx_inode_forget(t, id, 1);
  fsx_inode_forget(t, ix, 1);
  assert_int_equal(fsx_table_count(t), 1);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_move_directory_rekeys_below(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "m/");
  struct fsx_attr d = dir_attr(), f = file_attr("e", 1, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *dir = fsx_inode_child(t, root, "dir", &d, NULL, 0, true);
  struct fsx_inode *dir2 = fsx_inode_child(t, root, "dir2", &d, NULL, 0, true);
  struct fsx_inode *other = fsx_inode_child(t, root, "other", &d, NULL, 0,
                                            true);
  struct fsx_inode *sub = fsx_inode_child(t, dir, "sub", &d, NULL, 0, true);
  struct fsx_inode *deep = fsx_inode_child(t, sub, "deep", &f, NULL, 0, true);
  struct fsx_inode *g = fsx_inode_child(t, dir, "g", &f, NULL, 0, true);
  struct fsx_inode *h = fsx_inode_child(t, dir2, "h", &f, NULL, 0, true);
  /* a file named like the directory, beside it: "m/dir" is no prefix of
     "m/dir/" */
  struct fsx_inode *plain = fsx_inode_child(t, other, "dir", &f, NULL, 0,
                                            true);
  struct fsx_inode *all[] = {dir, dir2, other, sub, deep, g, h, plain};
  const char *old_deep = fsx_inode_key(t, deep), *old_dir = fsx_inode_key(t,
                                                                          dir);

  assert_string_equal(old_deep, "m/dir/sub/deep");
  assert_int_equal(root->n_children, 3);
  assert_int_equal(fsx_inode_move(t, dir, other, "moved"), 0);
  assert_string_equal(fsx_inode_key(t, dir), "m/other/moved/");
  assert_string_equal(fsx_inode_key(t, sub), "m/other/moved/sub/");
  assert_string_equal(fsx_inode_key(t, deep), "m/other/moved/sub/deep");
  assert_string_equal(fsx_inode_key(t, g), "m/other/moved/g");
  /* untouched: the sibling sharing a textual prefix, and everything else */
  assert_string_equal(fsx_inode_key(t, dir2), "m/dir2/");
  assert_string_equal(fsx_inode_key(t, h), "m/dir2/h");
  assert_string_equal(fsx_inode_key(t, other), "m/other/");
  assert_string_equal(fsx_inode_key(t, plain), "m/other/dir");
  assert_string_equal(fsx_inode_key(t, root), "m/");
  /* the old keys stay readable */
  assert_string_equal(old_deep, "m/dir/sub/deep");
  assert_string_equal(old_dir, "m/dir/");
  /* names and parents below are unchanged: lookups still work */
  assert_ptr_equal(fsx_inode_find(t, sub->ino, "deep"), deep);
  fsx_inode_put(t, deep);
  assert_ptr_equal(fsx_inode_find(t, other->ino, "moved"), dir);
  fsx_inode_put(t, dir);
  assert_null(fsx_inode_find(t, FSX_ROOT_INO, "dir"));
  assert_int_equal(root->n_children, 2);
  assert_int_equal(other->n_children, 2);
  assert_int_equal(dir->n_children, 2);
  /* and back to the top under another name: keys move again */
  assert_int_equal(fsx_inode_move(t, dir, root, "d3"), 0);
  assert_string_equal(fsx_inode_key(t, deep), "m/d3/sub/deep");
  assert_string_equal(fsx_inode_key(t, g), "m/d3/g");
  assert_string_equal(fsx_inode_key(t, plain), "m/other/dir");
  assert_string_equal(old_deep, "m/dir/sub/deep");
  assert_int_equal(root->n_children, 3);
  assert_int_equal(other->n_children, 1);
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    fsx_inode_forget(t, all[i]->ino, 1);
  assert_int_equal(fsx_table_count(t), 1);
  assert_int_equal(root->n_children, 0);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

/* Moving a directory in one bucket leaves the same keys in another alone. */
static void test_move_directory_other_bucket(void **state)
{
  struct fsx_table *t = fsx_table_create(NULL, "");
  struct fsx_attr d = dir_attr(), f = file_attr("e", 1, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *b1 = fsx_inode_child(t, root, "b1", &d, "b1", 0, true);
  struct fsx_inode *b2 = fsx_inode_child(t, root, "b2", &d, "b2", 0, true);
  struct fsx_inode *d1 = fsx_inode_child(t, b1, "dir", &d, NULL, 0, true);
  struct fsx_inode *d2 = fsx_inode_child(t, b2, "dir", &d, NULL, 0, true);
  struct fsx_inode *f1 = fsx_inode_child(t, d1, "f", &f, NULL, 0, true);
  struct fsx_inode *f2 = fsx_inode_child(t, d2, "f", &f, NULL, 0, true);
  struct fsx_inode *all[] = {b1, b2, d1, d2, f1, f2};

  assert_string_equal(fsx_inode_key(t, b1), "");
  assert_string_equal(fsx_inode_key(t, f1), "dir/f");
  assert_string_equal(f1->bucket, "b1");
  assert_int_equal(fsx_inode_move(t, d1, b1, "new"), 0);
  assert_string_equal(fsx_inode_key(t, d1), "new/");
  assert_string_equal(fsx_inode_key(t, f1), "new/f");
  assert_string_equal(fsx_inode_key(t, d2), "dir/");
  assert_string_equal(fsx_inode_key(t, f2), "dir/f");
  assert_string_equal(fsx_inode_key(t, b1), "");
  assert_string_equal(fsx_inode_key(t, b2), "");
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    fsx_inode_forget(t, all[i]->ino, 1);
  assert_int_equal(fsx_table_count(t), 1);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_detach_and_key(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "p/");
  struct fsx_attr d = dir_attr(), f = file_attr("e1", 3, 1);
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_inode *dir = fsx_inode_child(t, root, "d", &d, NULL, 0, true);
  struct fsx_inode *in = fsx_inode_child(t, dir, "f", &f, NULL, 0, true), *n2;
  uint64_t iin = in->ino, id = dir->ino;

  assert_string_equal(fsx_inode_key(t, root), "p/");
  assert_string_equal(fsx_inode_key(t, dir), "p/d/");
  assert_string_equal(fsx_inode_key(t, in), "p/d/f");
  fsx_inode_detach(t, in);
  assert_null(in->name);
  assert_null(fsx_inode_find(t, id, "f"));
  /* it lives on for the kernel's reference, with its key and attributes */
  assert_ptr_equal(fsx_inode_get(t, iin), in);
  fsx_inode_put(t, in);
  assert_string_equal(fsx_inode_key(t, in), "p/d/f");
  assert_int_equal(in->attr.size, 3);
  assert_int_equal(dir->n_children, 1);
  /* detaching twice is harmless */
  fsx_inode_detach(t, in);
  /* the name is free for a new inode */
  n2 = fsx_inode_child(t, dir, "f", &f, NULL, 0, true);
  assert_ptr_not_equal(n2, in);
  assert_true(n2->ino > iin);
  assert_int_equal(dir->n_children, 2);
  assert_ptr_equal(fsx_inode_find(t, id, "f"), n2);
  fsx_inode_put(t, n2);
  /* the last forget of the detached inode frees it, and only it */
  fsx_inode_forget(t, iin, 1);
  assert_null(fsx_inode_get(t, iin));
  assert_int_equal(dir->n_children, 1);
  assert_ptr_equal(fsx_inode_find(t, id, "f"), n2);
  fsx_inode_put(t, n2);
  /* a detached directory: its children still hold it */
  fsx_inode_detach(t, dir);
  assert_null(fsx_inode_find(t, FSX_ROOT_INO, "d"));
  fsx_inode_forget(t, id, 1);
  assert_int_equal(fsx_table_count(t), 3);
  fsx_inode_forget(t, n2->ino, 1);
  assert_int_equal(fsx_table_count(t), 1);
  assert_int_equal(root->n_children, 0);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_set_attr_while_written(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO), *in;
  struct fsx_attr a = file_attr("e1", 10, 100), b = file_attr("e2", 20, 200);
  int dummy;

  in = fsx_inode_child(t, root, "f", &a, NULL, 0, true);
  in->wb = (struct fsx_wb *)(void *)&dummy;
  /* a HEAD or a listing newer than what we have: ignored */
  b.from_head = true;
  b.has_mode = true;
  b.mode = 0100600;
  fsx_inode_set_attr(t, in, &b, true, 1000);
  assert_int_equal(in->attr.size, 10);
  assert_string_equal(in->attr.etag, "e1");
  assert_int_equal(in->gen, fsx_etag_gen("e1"));
  assert_false(in->attr.has_mode);
  assert_false(in->meta_known);
  b.from_head = false;
  assert_ptr_equal(fsx_inode_child(t, root, "f", &b, NULL, 0, false), in);
  fsx_inode_put(t, in);
  assert_int_equal(in->attr.size, 10);
  assert_string_equal(in->attr.etag, "e1");
  /* the write-back itself forces its own (even if older) */
  b = file_attr("e3", 30, 50);
  b.has_mode = b.has_uid = b.has_gid = true;
  b.mode = 0100640;
  b.uid = 12;
  b.gid = 34;
  fsx_inode_set_attr_force(t, in, &b, 1000);
  assert_int_equal(in->attr.size, 30);
  assert_string_equal(in->attr.etag, "e3");
  assert_int_equal(in->gen, fsx_etag_gen("e3"));
  assert_true(in->meta_known);
  assert_int_equal(in->attr.mode, 0100640);
  assert_int_equal(in->attr.uid, 12);
  assert_int_equal(in->attr.gid, 34);
  assert_true(in->attr_expire_ms >= clock_mono_ms());
  /* no write-back: set_attr applies again */
  in->wb = NULL;
  b = file_attr("e4", 40, 300);
  fsx_inode_set_attr(t, in, &b, false, 0);
  assert_int_equal(in->attr.size, 40);
  assert_string_equal(in->attr.etag, "e4");
  assert_int_equal(in->gen, fsx_etag_gen("e4"));
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

/* A snapshot of the given names (sizes 1, 2, ...), installed on dir and
   held only by it. */
static struct fsx_dirsnap *install_snap(struct fsx_table *t,
                                        struct fsx_inode *dir,
                                        const char *const *names, size_t n)
{
  struct fsx_dirsnap *s = fsx_dirsnap_new();

  assert_non_null(s);
  for (size_t i = 0; i < n; i++) {
    struct fsx_attr a = file_attr("e", i + 1, 1);
    assert_int_equal(fsx_dirsnap_add(s, names[i], strlen(names[i]), &a), 0);
  }
  fsx_dirsnap_seal(s, 1, NULL, NULL);
  fsx_dir_set_snap(t, dir, s, 60000);
  fsx_dirsnap_put(s); /* ours */
  assert_int_equal(s->refs, 1);
  return s;
}

/* The snapshot's names in order, joined by ',' */
static void snap_names(const struct fsx_dirsnap *s, char *buf, size_t sz)
{
  size_t o = 0;

  buf[0] = '\0';
  for (size_t i = 0; i < s->n; i++)
    o += (size_t)snprintf(buf + o, sz - o, "%s%s", i ? "," : "",
                          s->ents[i].name);
}

static void test_snap_put_entry_and_remove(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  static const char *const names[] = {"b", "d"};
  struct fsx_dirsnap *s;
  struct fsx_attr a = file_attr("new", 99, 5);
  const struct fsx_dirent *e;
  char buf[128];

  /* no snapshot: nothing to patch, none made */
  fsx_dir_snap_put_entry(t, root, "x", &a);
  fsx_dir_snap_remove(t, root, "x");
  assert_null(root->snap);
  s = install_snap(t, root, names, 2);
  /* inserted in order: before, between, after all */
  fsx_dir_snap_put_entry(t, root, "c", &a);
  fsx_dir_snap_put_entry(t, root, "a", &a);
  fsx_dir_snap_put_entry(t, root, "e", &a);
  fsx_dir_snap_put_entry(t, root, "b b", &a);
  assert_ptr_equal(root->snap, s); /* only the directory held it: in place */
  snap_names(s, buf, sizeof(buf));
  assert_string_equal(buf, "a,b,b b,c,d,e");
  assert_int_equal(s->n, 6);
  e = fsx_dirsnap_find(s, "c");
  assert_non_null(e);
  assert_int_equal(e->attr.size, 99);
  assert_string_equal(e->attr.etag, "new");
  e = fsx_dirsnap_find(s, "d");
  assert_int_equal(e->attr.size, 2);
  /* an existing name: its attributes replaced, no new entry */
  a = file_attr("newer", 123, 6);
  a.kind = FSX_DIR;
  fsx_dir_snap_put_entry(t, root, "d", &a);
  assert_int_equal(s->n, 6);
  e = fsx_dirsnap_find(s, "d");
  assert_int_equal(e->attr.size, 123);
  assert_int_equal(e->attr.kind, FSX_DIR);
  assert_string_equal(e->attr.etag, "newer");
  assert_string_equal(e->name, "d");
  /* remove: first, middle, last, missing */
  fsx_dir_snap_remove(t, root, "a");
  fsx_dir_snap_remove(t, root, "c");
  fsx_dir_snap_remove(t, root, "e");
  fsx_dir_snap_remove(t, root, "zzz");
  fsx_dir_snap_remove(t, root, "");
  assert_ptr_equal(root->snap, s);
  snap_names(s, buf, sizeof(buf));
  assert_string_equal(buf, "b,b b,d");
  assert_null(fsx_dirsnap_find(s, "a"));
  assert_int_equal(fsx_dirsnap_find(s, "b")->attr.size, 1);
  /* down to empty, then one again */
  fsx_dir_snap_remove(t, root, "b");
  fsx_dir_snap_remove(t, root, "d");
  fsx_dir_snap_remove(t, root, "b b");
  assert_int_equal(s->n, 0);
  assert_null(fsx_dirsnap_find(s, "b"));
  fsx_dir_snap_remove(t, root, "b");
  assert_ptr_equal(root->snap, s);
  fsx_dir_snap_put_entry(t, root, "only", &a);
  assert_non_null(root->snap);
  snap_names(root->snap, buf, sizeof(buf));
  assert_string_equal(buf, "only");
  /* the snapshot still answers a reader */
  s = fsx_dir_get_snap(t, root, true);
  assert_ptr_equal(s, root->snap);
  assert_non_null(fsx_dirsnap_find(s, "only"));
  fsx_dirsnap_put(s);
  fsx_inode_put(t, root);
  fsx_table_destroy(t); /* frees the directory's snapshot (ASan) */
}

/* An empty snapshot held only by the directory grows in place. */
static void test_snap_put_entry_into_empty(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  struct fsx_attr a = file_attr("x", 1, 1);
  struct fsx_dirsnap *s = install_snap(t, root, NULL, 0);
  char buf[64];

  fsx_dir_snap_remove(t, root, "nothing");
  fsx_dir_snap_put_entry(t, root, "m", &a);
  fsx_dir_snap_put_entry(t, root, "a", &a);
  assert_non_null(root->snap);
  snap_names(root->snap, buf, sizeof(buf));
  assert_string_equal(buf, "a,m");
  (void)s;
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

static void test_snap_copy_on_write(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO);
  static const char *const names[] = {"a", "b", "c"};
  struct fsx_dirsnap *s = install_snap(t, root, names, 3), *r1, *r2, *cur;
  struct fsx_attr a = file_attr("n", 77, 9);
  char buf[128];

  r1 = fsx_dir_get_snap(t, root, true);
  assert_ptr_equal(r1, s);
  assert_int_equal(s->refs, 2);
  /* a put while a reader holds it: the directory gets a copy */
  fsx_dir_snap_put_entry(t, root, "bb", &a);
  cur = root->snap;
  assert_ptr_not_equal(cur, r1);
  assert_int_equal(r1->refs, 1);
  assert_int_equal(cur->refs, 1);
  snap_names(r1, buf, sizeof(buf));
  assert_string_equal(buf, "a,b,c");
  snap_names(cur, buf, sizeof(buf));
  assert_string_equal(buf, "a,b,bb,c");
  assert_null(fsx_dirsnap_find(r1, "bb"));
  assert_int_equal(fsx_dirsnap_find(cur, "bb")->attr.size, 77);
  /* the copy's names are its own */
  assert_ptr_not_equal(fsx_dirsnap_find(cur, "a")->name,
                       fsx_dirsnap_find(r1, "a")->name);
  /* the copy is the directory's alone now: later changes are in place
     and the reader still sees nothing of them */
  fsx_dir_snap_put_entry(t, root, "a", &a);
  fsx_dir_snap_remove(t, root, "c");
  assert_ptr_equal(root->snap, cur);
  assert_int_equal(fsx_dirsnap_find(cur, "a")->attr.size, 77);
  assert_int_equal(fsx_dirsnap_find(r1, "a")->attr.size, 1);
  assert_null(fsx_dirsnap_find(cur, "c"));
  assert_non_null(fsx_dirsnap_find(r1, "c"));
  snap_names(r1, buf, sizeof(buf));
  assert_string_equal(buf, "a,b,c");
  /* a remove while another reader holds it: copied too */
  r2 = fsx_dir_get_snap(t, root, false);
  assert_ptr_equal(r2, cur);
  fsx_dir_snap_remove(t, root, "zzz"); /* absent: nothing to copy */
  assert_ptr_equal(root->snap, r2);
  assert_int_equal(r2->refs, 2);
  fsx_dir_snap_remove(t, root, "b");
  assert_ptr_not_equal(root->snap, r2);
  snap_names(r2, buf, sizeof(buf));
  assert_string_equal(buf, "a,b,bb");
  snap_names(root->snap, buf, sizeof(buf));
  assert_string_equal(buf, "a,bb");
  assert_int_equal(fsx_dirsnap_find(root->snap, "a")->attr.size, 77);
  /* the readers let go: their snapshots are freed (ASan checks) */
  fsx_dirsnap_put(r1);
  fsx_dirsnap_put(r2);
  /* the directory's still answers */
  r1 = fsx_dir_get_snap(t, root, true);
  assert_non_null(r1);
  assert_non_null(fsx_dirsnap_find(r1, "bb"));
  fsx_dirsnap_put(r1);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

/*
 * The write-back attachment: counted on the inode, the last reference
 * detaching it; a state whose count reached 0 (its free still to come,
 * while it is on the mount's list) never gains a reference, not even when
 * the inode holds a new state by then; the orphan reference goes with the
 * last handle.
 */
static void test_wb_attachment(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO), *in;
  struct fsx_attr f = file_attr("e", 1, 1);
  char a_mem, b_mem;
  struct fsx_wb *a = (struct fsx_wb *)&a_mem, *b = (struct fsx_wb *)&b_mem;
  bool removed = true;

  (void)state;
  in = fsx_inode_child(t, root, "f", &f, NULL, 60000, false);
  assert_non_null(in);
  assert_null(fsx_inode_wb_get(t, in));
  assert_ptr_equal(fsx_inode_wb_attach(t, in, a, &removed), a);
  assert_false(removed);
  assert_ptr_equal(fsx_inode_wb_attach(t, in, b, &removed), a); /* 2nd */
  assert_null(fsx_inode_wb_unref(t, in));
  assert_true(fsx_inode_wb_ref_live(t, in, a));
  assert_null(fsx_inode_wb_unref(t, in));
  assert_ptr_equal(fsx_inode_wb_unref(t, in), a); /* the last: detached */
  assert_false(fsx_inode_wb_ref_live(t, in, a));
  fsx_inode_put(t, in); /* what freeing a does: its inode reference */
  assert_ptr_equal(fsx_inode_wb_attach(t, in, b, &removed), b);
  fsx_inode_wb_ref(t, in);                       /* b: 2 */
  assert_false(fsx_inode_wb_ref_live(t, in, a)); /* stale: not b's count */
  fsx_inode_wb_reset(t, in, a);                  /* nor this */
  assert_null(fsx_inode_wb_unref(t, in));        /* b: still 1 */
  /* open for reading, unlinked: b kept for the handle until it closes */
  fsx_inode_open(t, in);
  assert_true(fsx_inode_in_use(t, in));
  assert_true(fsx_inode_keep_orphan(t, in));
  assert_false(fsx_inode_keep_orphan(t, in)); /* kept already */
  assert_null(fsx_inode_wb_unref(t, in));     /* the orphan's remains */
  assert_ptr_equal(fsx_inode_close(t, in), b);
  assert_false(fsx_inode_in_use(t, in));
  fsx_inode_put(t, in);                          /* the handle's */
  assert_ptr_equal(fsx_inode_wb_unref(t, in), b); /* the orphan's, last */
  fsx_inode_put(t, in); /* freeing b */
  fsx_inode_put(t, in); /* ours */
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

/* The kernel's page cache: when an open drops it, and when our own writes
   leave it unsure (a drop may have raced them). */
/* fsx_inode_wb_attach on a thread of its own (it may wait). */
struct attacher {
  struct fsx_table *t;
  struct fsx_inode *in;
  struct fsx_wb *mine, *got;
  bool removed;
  _Atomic bool done;
};

static void *attach_main(void *arg)
{
  struct attacher *a = arg;

  a->got = fsx_inode_wb_attach(a->t, a->in, a->mine, &a->removed);
  atomic_store(&a->done, true);
  return NULL;
}

static void test_kernel_pages(void **state)
{
  struct fsx_table *t = fsx_table_create("bkt", "");
  struct fsx_inode *root = fsx_inode_get(t, FSX_ROOT_INO), *in;
  struct fsx_attr f = file_attr("e1", 5, 1);
  struct fsx_kernel_seen seen;
  struct fsx_wb *fake = (struct fsx_wb *)&seen; /* only compared */
  uint64_t c, ep, sz;
  bool drop, removed;

  (void)state;
  in = fsx_inode_child(t, root, "f", &f, NULL, 1000, true);
  assert_non_null(in);
  c = fsx_inode_commits(t, in);
  /* first open: the kernel held nothing of it */
  assert_int_equal(fsx_inode_kernel_open(t, in, "e1", c, true, &seen, &drop), 0);
  assert_true(seen.changed);
  assert_false(seen.reopened);
  assert_true(drop);
  assert_int_equal(fsx_inode_kernel_open(t, in, "e1", c, true, &seen, &drop), 0);
  assert_false(drop);
  /* a mount that keeps no pages across opens always drops */
  assert_int_equal(fsx_inode_kernel_open(t, in, "e1", c, false, &seen, &drop), 0);
  assert_false(seen.changed);
  assert_true(drop);
  /* a writer long after that drop: our upload leaves the pages ours */
  in->kernel_drop_ms -= 60000;
  fsx_inode_kernel_writer(t, in);
  fsx_inode_kernel_wrote(t, in, "e2");
  /* a HEAD asked before that upload may be older: asked again */
  assert_int_equal(fsx_inode_kernel_open(t, in, "e1", c, true, &seen, &drop), -EAGAIN);
  c = fsx_inode_commits(t, in);
  assert_int_equal(fsx_inode_kernel_open(t, in, "e2", c, true, &seen, &drop), 0);
  assert_false(seen.changed);
  assert_false(drop);
  /* never a drop while write-back state is on the inode */
  assert_ptr_equal(fsx_inode_wb_attach(t, in, fake, &removed), fake);
  assert_int_equal(fsx_inode_kernel_open(t, in, "e2", c, true, &seen, &drop), -EAGAIN);
  assert_ptr_equal(fsx_inode_wb_unref(t, in), fake);
  fsx_inode_put(t, in); /* what freeing the state does */
  /* a writer just after a drop: the pages it leaves are unsure */
  assert_int_equal(fsx_inode_kernel_open(t, in, "e9", c, true, &seen, &drop), 0);
  assert_true(drop);
  fsx_inode_kernel_writer(t, in);
  fsx_inode_kernel_wrote(t, in, "e3");
  c = fsx_inode_commits(t, in);
  assert_int_equal(fsx_inode_kernel_open(t, in, "e3", c, true, &seen, &drop), 0);
  assert_true(seen.changed);
  assert_false(seen.reopened); /* unknown: attributes need no dropping */
  assert_true(drop);
  /* that drop had no writer: the pages are the object's again */
  in->kernel_drop_ms -= 60000;
  fsx_inode_kernel_writer(t, in);
  fsx_inode_kernel_wrote(t, in, "e4");
  c = fsx_inode_commits(t, in);
  assert_int_equal(fsx_inode_kernel_open(t, in, "e4", c, true, &seen, &drop), 0);
  assert_false(drop);
  /* bytes handed to the kernel (dense reads): only of the object its pages
     and attributes hold, with no upload since and no writer; then like a
     drop; a drop, writer or upload during the store undoes it */
  in->kernel_drop_ms -= 60000;
  f = file_attr("e4", 5, 2);
  fsx_inode_set_attr_force(t, in, &f, 1000);
  assert_false(fsx_inode_kernel_store(t, in, fsx_etag_gen("e3"), c, &ep, &sz));
  assert_false(fsx_inode_kernel_store(t, in, fsx_etag_gen("e4"), c - 1, &ep, &sz));
  assert_ptr_equal(fsx_inode_wb_attach(t, in, fake, &removed), fake);
  assert_false(fsx_inode_kernel_store(t, in, fsx_etag_gen("e4"), c, &ep, &sz));
  assert_ptr_equal(fsx_inode_wb_unref(t, in), fake);
  fsx_inode_put(t, in);
  assert_true(fsx_inode_kernel_store(t, in, fsx_etag_gen("e4"), c, &ep, &sz));
  assert_int_equal(sz, 5);
  assert_true(fsx_inode_kernel_stored(t, in, ep));
  assert_true(fsx_inode_kernel_store(t, in, fsx_etag_gen("e4"), c, &ep, &sz));
  /* a writer waits for the store on its way: the kernel takes a WRITE's
     bytes from its pages when the daemon reads the request, and a store
     meanwhile would replace them with the object's older ones */
  {
    struct attacher a = {t, in, fake, NULL, false, false};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, attach_main, &a), 0);
    usleep(200 * 1000); /* (time to get in, were it let in) */
    assert_false(atomic_load(&a.done));
    assert_true(fsx_inode_kernel_stored(t, in, ep)); /* no writer came */
    pthread_join(th, NULL);
    assert_ptr_equal(a.got, fake);
    fsx_inode_kernel_writer(t, in); /* (as its open does: right after the
                                       store, the pages are left unsure) */
  }
  assert_false(fsx_inode_kernel_store(t, in, fsx_etag_gen("e4"), c, &ep, &sz));
  assert_ptr_equal(fsx_inode_wb_unref(t, in), fake);
  fsx_inode_put(t, in);
  fsx_inode_kernel_wrote(t, in, "e5"); /* unsure: kernel_etag unknown */
  c = fsx_inode_commits(t, in);
  assert_false(fsx_inode_kernel_store(t, in, fsx_etag_gen("e5"), c, &ep, &sz));
  assert_int_equal(fsx_inode_kernel_open(t, in, "e5", c, true, &seen, &drop), 0);
  assert_true(drop);
  fsx_inode_put(t, in);
  fsx_inode_put(t, root);
  fsx_table_destroy(t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_children_and_keys),
      cmocka_unit_test(test_forget_frees_up_the_tree),
      cmocka_unit_test(test_many_inodes_rehash),
      cmocka_unit_test(test_kind_change_makes_a_new_inode),
      cmocka_unit_test(test_attribute_age_and_metadata),
      cmocka_unit_test(test_snapshots),
      cmocka_unit_test(test_move_file),
      cmocka_unit_test(test_move_frees_the_old_parent),
      cmocka_unit_test(test_move_over_existing_name),
      cmocka_unit_test(test_move_directory_rekeys_below),
      cmocka_unit_test(test_move_directory_other_bucket),
      cmocka_unit_test(test_detach_and_key),
      cmocka_unit_test(test_set_attr_while_written),
      cmocka_unit_test(test_snap_put_entry_and_remove),
      cmocka_unit_test(test_snap_put_entry_into_empty),
      cmocka_unit_test(test_snap_copy_on_write),
      cmocka_unit_test(test_wb_attachment),
      cmocka_unit_test(test_kernel_pages),
  };
  return cmocka_run_group_tests_name("fsx_inode", tests, NULL, NULL);
}
