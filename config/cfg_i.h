/*
 * cfg_i.h: inside the config module only. The key table (cfg_table.c) and
 * the typed values it describes (cfg_value.c: parse, check, store, format).
 */
#ifndef S3R_CFG_I_H
#define S3R_CFG_I_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cfg.h"

enum cfg_type {
  CFG_T_STR,    /* const char *, owned by struct cfg */
  CFG_T_BOOL,   /* bool */
  CFG_T_UINT,   /* unsigned */
  CFG_T_SIZE,   /* uint64_t bytes */
  CFG_T_DUR,    /* unsigned ms; written in the row's unit_ms */
  CFG_T_ENUM,   /* int or an enum the size of int */
  CFG_T_MODE,   /* unsigned permission bits; CFG_MODE_UNSET allowed */
};

#define CFG_F_SECRET 0x1u  /* never printed: "***" */
#define CFG_F_HEX    0x2u  /* printed as 0x%08x */
#define CFG_F_KEY    0x4u  /* a secret key: a file setting it must be private
                              (common/secret.h), and -o warns */
#define CFG_F_LIST   0x8u  /* STR: a list, "a;b;c" (or a JSON array of
                              strings, joined so) */

struct cfg_enum_val {
  const char *name;
  int value;
};

/* A parsed value; which member is live follows the key's type. */
union cfg_val {
  const char *s;   /* STR: borrowed until cfg_put copies it */
  bool b;          /* BOOL */
  uint64_t u;      /* UINT, SIZE, DUR (ms), MODE */
  int e;           /* ENUM */
};

/* A value check beyond the bounds: NULL if fine, else the reason, which
 * reads after the value ("is not a power of two"). */
typedef const char *(*cfg_check_fn)(const union cfg_val *v);

struct cfg_key {
  const char *name;          /* dotted: "s3.retry.max_attempts" */
  enum cfg_type type;
  size_t off;                /* into struct cfg */
  unsigned flags;            /* CFG_F_* */
  uint64_t min, max;         /* numeric types, in stored units (ms, bytes) */
  union cfg_val def;         /* STR: a static string or NULL */
  uint64_t (*def_fn)(void);  /* computed default, overrides def */
  unsigned unit_ms;          /* DUR: 1000 for seconds keys, 1 for _ms keys */
  const struct cfg_enum_val *vals; /* ENUM: ends with a NULL name */
  cfg_check_fn check;        /* NULL: bounds only */
  const char *def_doc;       /* help text for a computed or unset default */
  const char *doc;           /* one line for --help and docs/config.md */
};

extern const struct cfg_key cfg_keys[];
extern const size_t cfg_nkeys;

/* The key called name, or NULL. */
const struct cfg_key *cfg_key_find(const char *name);

/* The default value of k. */
void cfg_value_default(const struct cfg_key *k, union cfg_val *v);

/* Read k's field of c into *v (strings borrowed from c). */
void cfg_value_get(const struct cfg *c, const struct cfg_key *k,
                   union cfg_val *v);

/* Store *v into c (strings copied, the old one released). 0 or -ENOMEM. */
int cfg_value_put(struct cfg *c, const struct cfg_key *k,
                  const union cfg_val *v);

/* Free k's string in c, wiping secrets; the field becomes NULL. */
void cfg_value_release(struct cfg *c, const struct cfg_key *k);

/*
 * Parse text (from -o or a JSON string) or a JSON value into *v (strings
 * borrowed from the input). Returns 0 or -EINVAL with the reason in why,
 * worded to follow "key: ".
 */
int cfg_value_from_text(const struct cfg_key *k, const char *s,
                        union cfg_val *v, char *why, size_t whylen);
int cfg_value_from_json(const struct cfg_key *k, json_t *j, union cfg_val *v,
                        char *why, size_t whylen);

/* Bounds and the row's validator. 0 or -EINVAL with the reason in why. */
int cfg_value_check(const struct cfg_key *k, const union cfg_val *v,
                    char *why, size_t whylen);

/*
 * Print *v as -o would accept it (secrets "***", unset "(unset)"). Returns
 * what snprintf returns.
 */
int cfg_value_format(const struct cfg_key *k, const union cfg_val *v,
                     char *buf, size_t len);

/* One word for the type: "string", "bool", "size", "seconds", ... */
const char *cfg_type_word(const struct cfg_key *k);

/* "a|b|c": an enum key's names. */
void cfg_enum_list(const struct cfg_key *k, char *buf, size_t len);

/* "an object", "a string", ...: for "expected X, got Y". */
const char *cfg_json_type_word(const json_t *j);

/* "1G", "512K", "12345": the largest binary unit that divides exactly. */
void cfg_format_size(uint64_t v, char *buf, size_t len);

#endif
