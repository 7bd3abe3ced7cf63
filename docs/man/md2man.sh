#!/usr/bin/env bash
# md2man.sh: one man page from markdown, with go-md2man.
#
#   md2man.sh GO_MD2MAN VERSION OUT SRC.md [CONFIG.md [TAIL.md]]
#
# SRC.md's @VERSION@ and @DATE@ are filled in (the date from
# $SOURCE_DATE_EPOCH, for reproducible builds; else none). With CONFIG.md
# (docs/config.md), SRC.md is followed by CONFIG.md made fit for a man
# page, then by TAIL.md. CONFIG.md is made fit so:
#   - its "# " title line dropped (SRC.md has the page's title and NAME);
#   - "## " headings in capitals (man's section names), "### " kept (.SS);
#   - links reduced to their text ([text](target) -> text);
#   - tables turned into definition lists (.TP): go-md2man 2.0.2's tables
#     break rows that hold long cells, and five columns cannot fit 80
#     columns anyway. A key table (key | type | default | range | description)
#     becomes "`key` (type, default D; range)" and the description, as in
#     `s3rdmafs --help`; a two-column table, its first cell and the second;
#     any other, the first cell and "header: cell" for the rest.
# The roff is then fixed where go-md2man 2.0.2 falls short: its ".nh"
# comes before ".TH", which turns hyphenation back on, so one follows .TH
# (keys and options such as mount.allow_other are not split at line ends).
set -euo pipefail

[ $# -ge 4 ] || {
  echo "usage: $0 GO_MD2MAN VERSION OUT SRC.md [CONFIG.md [TAIL.md]]" >&2
  exit 2
}
md2man=$1 version=$2 out=$3 src=$4 config=${5:-} tail=${6:-}
date=""
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)
fi

# docs/config.md's body, as markdown go-md2man renders well
config_body() {
  sed -e '1{/^# /d}' \
      -e 's/^## \(.*\)$/## \U\1/' \
      -e 's/\[\([^]]*\)\]([^)]*)/\1/g' "$1" |
  awk '
    function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
    # the cells of a table row ("\|" is a pipe inside a cell)
    function cells(line, out,   n, i, parts) {
      gsub(/\\\|/, "\001", line)
      sub(/^[ \t]*\|/, "", line); sub(/\|[ \t]*$/, "", line)
      n = split(line, parts, "|")
      for (i = 1; i <= n; i++) {
        out[i] = trim(parts[i]); gsub(/\001/, "|", out[i])
      }
      return n
    }
    function row(   n, i, c, term, def, sep) {
      n = cells($0, c)
      if (n == 5 && hdr[1] == "key") {
        term = c[1] " (" c[2] ", default " c[3] (c[4] != "" ? "; " c[4] : "") ")"
        def = c[5]
      } else if (n == 2) {
        term = c[1]; def = c[2]
      } else {
        term = c[1]; def = ""; sep = ""
        for (i = 2; i <= n; i++)
          if (c[i] != "") { def = def sep hdr[i] ": " c[i]; sep = "; " }
      }
      print term
      print ":   " def
      print ""
    }
    /^[ \t]*\|/ {
      if (!intable) {          # the header, then the |---| line
        intable = 1; cells($0, hdr); getline; next
      }
      row(); next
    }
    { intable = 0; print }
  '
}

tmp=$out.tmp.$$
trap 'rm -f "$tmp".*' EXIT
{
  sed -e "s/@VERSION@/$version/g" -e "s/@DATE@/$date/g" "$src"
  if [ -n "$config" ]; then
    config_body "$config"
  fi
  if [ -n "$tail" ]; then
    cat "$tail"
  fi
} >"$tmp.md"
"$md2man" -in "$tmp.md" -out "$tmp.roff"
sed -e '/^\.TH /a .nh' "$tmp.roff" >"$tmp.page"
mv "$tmp.page" "$out"
