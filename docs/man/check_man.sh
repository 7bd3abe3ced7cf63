#!/usr/bin/env bash
# check_man.sh: the man pages render cleanly and cannot drift from what
# they document.
#
#   check_man.sh MAN_DIR BIN_DIR
#
# MAN_DIR is the build's man directory (manN/ subdirectories), BIN_DIR
# holds s3rdmafs, s3rdma-gateway and s3rdma-cli. Checks:
#   a. every page (the .so link pages too) renders with man --warnings at
#      80 columns with nothing on stderr (groff warnings), no line wider
#      than 80 columns, and no roff request but go-md2man's (a markdown
#      line starting with "." or "'" becomes one, silently if it is a
#      macro);
#   b. every option (--long, -x) in the help of s3rdmafs (up to its list
#      of configuration keys) and of `s3rdmafs stats`, s3rdma-gateway and
#      s3rdma-cli is the tag of a paragraph (.TP) of the program's page,
#      and so is every command of s3rdma-cli;
#   c. every function declared in libs3rdmafs/s3rdmafs.h is in the NAME
#      section of s3rdmafs.3 and has a link page manN/<function>.3;
#   d. every key of docs/config.md's key tables is the tag of a paragraph
#      of s3rdmafs.json.5.
# Exits 1 listing every failure, 77 when man(1) is missing (skipped).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 MAN_DIR BIN_DIR" >&2; exit 2; }
man_dir=$(cd "$1" && pwd)
bin_dir=$2
src_dir=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v man >/dev/null 2>&1 || ! command -v groff >/dev/null 2>&1; then
  echo "SKIP: man or groff is missing (Debian: man-db)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 checked=0
exec 3>&1 # the report, also from functions whose stdout is a file

fail() {
  echo "FAIL: $*" >&3
  fails=$((fails + 1))
}

# have_page NAME (s3rdmafs.1): p=its path under man_dir (man1/s3rdmafs.1),
# or a failure
have_page() {
  p=man${1##*.}/$1
  [ -f "$man_dir/$p" ] && return 0
  fail "$p: no such page in $man_dir"
  return 1
}

# Words of stdin that are options: --long or -x, not inside a word
# (read-only, x-amz-..., a -file suffix), one per line, sorted.
options_of() {
  perl -ne 'print "$1\n" while /(?<![A-Za-z0-9_-])(--[a-z][a-z0-9-]*|-[A-Za-z])(?![A-Za-z0-9_])/g' |
    sort -u
}

# The roff of a page as plain text: font escapes gone, \- and \(hy as -.
plain() {
  sed -e 's/\\f[BIRPC]//g' -e 's/\\f(CW//g' -e 's/\\f\[[A-Z]*\]//g' \
      -e 's/\\&//g' -e 's/\\-/-/g' -e 's/\\(hy/-/g' "$man_dir/$1"
}

# The tags of a page's .TP paragraphs (the line after each .TP).
tags_of() {
  plain "$1" | awk 'tp { print; tp = 0; next } /^\.TP/ { tp = 1 }'
}

# Is word $2 in a line of file $1 (not inside a longer option or word)?
has_word() {
  W="$2" perl -e '
    my $w = quotemeta $ENV{W};
    while (<>) { exit 0 if /(?<![A-Za-z0-9_.-])$w(?![A-Za-z0-9_-])/ }
    exit 1' "$1"
}

# ---- a. rendering ----------------------------------------------------------

pages=()
while IFS= read -r p; do
  pages+=("$p")
done < <(cd "$man_dir" && find . -path './man[0-9]/*' -type f | sed 's|^\./||' | sort)
[ ${#pages[@]} -ge 6 ] || fail "only ${#pages[@]} pages in $man_dir"
known='^[.'"'"'](nh|ad|TH|SH|SS|PP|LP|P|TP|IP|RS|RE|nf|fi|br|sp|TS|TE|so|EX|EE)( |$)'
for p in "${pages[@]}"; do
  # (.so resolves against the current directory: the man root)
  if ! (cd "$man_dir" && LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p") \
      >"$tmp/out" 2>"$tmp/err"; then
    fail "$p: man exits non-zero"
  fi
  if [ -s "$tmp/err" ]; then
    fail "$p: warnings:"
    sed 's/^/    /' "$tmp/err"
  fi
  [ -s "$tmp/out" ] || fail "$p: renders nothing"
  width=$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")
  if [ "$width" -gt 80 ]; then
    fail "$p: a line $width columns wide:"
    perl -CSD -ne 'chomp; print "    $_\n" if length > 80' "$tmp/out"
  fi
  # in tables, lines between .TS and .TE are data
  awk -v re="$known" '
    /^\.TS/ { t = 1 } /^\.TE/ { t = 0; next }
    !t && /^[.'"'"']/ && $0 !~ re { print FILENAME ":" NR ": " $0 }
  ' "$man_dir/$p" >"$tmp/req"
  if [ -s "$tmp/req" ]; then
    fail "$p: roff requests go-md2man does not make (a line starting with . or ' in the markdown?):"
    sed 's/^/    /' "$tmp/req"
  fi
done

# ---- b. options and commands ----------------------------------------------

# check_options PAGE HELP_FILE: every option of HELP_FILE tags a paragraph
check_options() {
  local page_path=$1 help=$2 n=0 opt
  tags_of "$page_path" >"$tmp/tags"
  while IFS= read -r opt; do
    n=$((n + 1)) checked=$((checked + 1))
    has_word "$tmp/tags" "$opt" || fail "${page_path##*/}: option $opt (of --help) is not documented"
  done < <(options_of <"$help")
  [ "$n" -ge 3 ] || fail "${page_path##*/}: only $n options found in its --help"
}

help_of() { # PROGRAM ARGS...: its help on stdout; fails unless it exits 0
  local prog=$bin_dir/$1
  shift
  if [ ! -x "$prog" ]; then
    fail "$prog: not built"
    return 1
  fi
  "$prog" "$@" || { fail "${prog##*/} $*: exit status $?"; return 1; }
}

if have_page s3rdmafs.1; then
  # the options, not the configuration keys (s3rdmafs.json.5's)
  if help_of s3rdmafs --help >"$tmp/help.all"; then
    awk '/^Configuration keys/ { exit } { print }' "$tmp/help.all" >"$tmp/help"
    help_of s3rdmafs stats --help >>"$tmp/help" || true
    check_options "$p" "$tmp/help"
  fi
fi
if have_page s3rdma-gateway.8 && help_of s3rdma-gateway --help >"$tmp/help"; then
  check_options "$p" "$tmp/help"
fi
if have_page s3rdma-cli.1 && help_of s3rdma-cli --help >"$tmp/help"; then
  check_options "$p" "$tmp/help"
  # the commands: the first word of each line between "commands:" and
  # "options:", and any word after " | " (mb BUCKET | rb BUCKET)
  awk '/^options:/ { c = 0 } c { print } /^commands:/ { c = 1 }' "$tmp/help" |
    perl -ne 'print "$1\n" if /^\s+([a-z]+)\b/; print "$1\n" while /\| ([a-z]+)\b/g' |
    sort -u >"$tmp/commands"
  n=$(wc -l <"$tmp/commands")
  [ "$n" -ge 5 ] || fail "s3rdma-cli.1: only $n commands found in its --help"
  tags_of "$p" | awk '{ print $1 }' >"$tmp/first"
  while IFS= read -r cmd; do
    checked=$((checked + 1))
    grep -qx -- "$cmd" "$tmp/first" || fail "s3rdma-cli.1: command $cmd (of --help) is not documented"
  done <"$tmp/commands"
fi

# ---- c. libs3rdmafs --------------------------------------------------------

if have_page s3rdmafs.3; then
  plain "$p" | awk '/^\.SH/ { n = ($0 ~ /NAME/) ; next } n' >"$tmp/name"
  perl -ne 'print "$1\n" if /^[a-z].*?\b(s3rdmafs_[a-z0-9_]+)\s*\(/' \
    "$src_dir/libs3rdmafs/s3rdmafs.h" | sort -u >"$tmp/functions"
  n=$(wc -l <"$tmp/functions")
  [ "$n" -ge 5 ] || fail "only $n functions found in libs3rdmafs/s3rdmafs.h"
  while IFS= read -r fn; do
    checked=$((checked + 1))
    has_word "$tmp/name" "$fn" || fail "s3rdmafs.3: $fn is not in its NAME section"
    if [ ! -f "$man_dir/man3/$fn.3" ]; then
      fail "man3/$fn.3: no link page (S3R_MAN3_LINKS in docs/man/CMakeLists.txt)"
    elif [ "$(cat "$man_dir/man3/$fn.3")" != ".so man3/s3rdmafs.3" ]; then
      fail "man3/$fn.3: not '.so man3/s3rdmafs.3'"
    fi
  done <"$tmp/functions"
fi

# ---- d. configuration keys -------------------------------------------------

if have_page s3rdmafs.json.5; then
  tags_of "$p" >"$tmp/tags"
  # the first cells of the tables whose header starts with "| key |"
  awk '/^\| *key *\|/ { k = 1; next } !/^\|/ { k = 0 } k' "$src_dir/docs/config.md" |
    perl -ne 'print "$1\n" if /^\|\s*`([^`]+)`\s*\|/' >"$tmp/keys"
  n=$(wc -l <"$tmp/keys")
  [ "$n" -ge 40 ] || fail "only $n keys found in docs/config.md's key tables"
  while IFS= read -r key; do
    checked=$((checked + 1))
    has_word "$tmp/tags" "$key" || fail "s3rdmafs.json.5: key $key is not documented"
  done <"$tmp/keys"
fi

if [ "$fails" -gt 0 ]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "ok: ${#pages[@]} pages rendered; $checked options, commands, functions and keys documented"
