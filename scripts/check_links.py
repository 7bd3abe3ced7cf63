#!/usr/bin/env python3
"""Check the links of every Markdown page of the tree (README.md, docs/,
CHANGELOG.md): a relative link must name a file that exists, and a
#fragment a heading of that page (GitHub's anchors: lower case, spaces to
'-', punctuation dropped). Links that leave the tree (http:, https:,
mailto:) are findings too: nothing in the repository points outside it.
Exit 1 with one line per finding."""
import os
import re
import sys

LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')
FENCE = re.compile(r'^(```|~~~)')


def anchors(path):
    out, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
            if fenced or not line.startswith("#"):
                continue
            t = line.lstrip("#").strip().lower()
            t = re.sub(r"[^\w\- ]", "", t).replace(" ", "-")
            out.add(t)
    return out


def pages(root):
    out = [os.path.join(root, p) for p in ("README.md", "CHANGELOG.md")
           if os.path.exists(os.path.join(root, p))]
    for d, _, names in os.walk(os.path.join(root, "docs")):
        out += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    bad, n = [], 0
    for page in pages(root):
        rel = os.path.relpath(page, root)
        fenced = False
        with open(page, encoding="utf-8") as f:
            text = f.readlines()
        for i, line in enumerate(text, 1):
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                n += 1
                if re.match(r"^[a-z]+:", target):
                    bad.append(f"{rel}:{i}: {target}: points outside the tree")
                    continue
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page),
                                                     path)) if path else page
                if not os.path.exists(dest):
                    bad.append(f"{rel}:{i}: {target}: no such file")
                elif frag and dest.endswith(".md") and \
                        frag not in anchors(dest):
                    bad.append(f"{rel}:{i}: {target}: no such heading")
    for line in bad:
        print("check_links: " + line)
    if not bad:
        print(f"check_links: {n} links in {len(pages(root))} pages, "
              "every one lands")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
