/*
 * The inode table: children by name, lookup counts and forget, freeing up
 * the tree, rehashing, a name whose kind changes, attribute age and
 * metadata rules, directory snapshots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <cmocka.h>

#include "fs/fsx_inode.h"

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
  struct fsx_dirsnap *s = calloc(1, sizeof(*s)), *got;
  static const char *const names[] = {"a", "b b", "c", "zz"};

  s->n = 4;
  s->ents = calloc(4, sizeof(*s->ents));
  for (int i = 0; i < 4; i++)
    s->ents[i].name = strdup(names[i]);
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
  fsx_dirsnap_put(t, got);
  fsx_dirsnap_put(t, s); /* the last one frees it (ASan checks) */
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
  };
  return cmocka_run_group_tests_name("fsx_inode", tests, NULL, NULL);
}
