#!/usr/bin/env python3
"""Check the include structure of fs/ (docs/ARCHITECTURE.md, "fs/ in rooms").

fs/ is in folders, one a room (what the part does: ops/, read/, write/,
stage/, meta/, mem/, plane/, direct/, mount/). The tiers come from the
folders, top down:
  main  the files of fs/ itself (fsx_main.c: the daemon)
  ops   fs/ops/: the operations table, the FUSE operations, their helpers
  room  every other folder
A file may include headers of its own folder and of the tiers below it,
never of a tier above. Within a folder, and among the rooms, modules
include each other without a cycle.

A module is a .c/.h pair and its private parts: fsx_X.h, fsx_X.c,
fsx_X_i.h and fsx_X_*.c that include fsx_X_i.h (fsx_wb_part.c belongs to
fsx_wb). fsx_i.h (the mount context every file sees) is a module of its
own. Also checked: a module's files lie in one folder; a private header
(fsx_X_i.h) is included by its own module alone; no header includes
itself round a cycle; an fs/ header is named from the root, in quotes
("fs/ROOM/fsx_X.h": not "fsx_X.h", "../ROOM/...", <fs/...>); and nothing
outside fs/ and tests/ includes one (the daemon is the top of the tree).
Exit 1 with one line per finding.
"""
import os
import re
import sys

RANK = {"main": -1, "ops": 0, "room": 1}


INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)
OUTSIDE = ("common", "config", "gateway", "libs3rdmafs", "rdma", "s3", "tools")


def all_includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def includes(path):
    return [name for q, name in all_includes(path)
            if q == '"' and name.startswith("fs/")]


def misnamed(path):
    """Includes of fs/ headers not named "fs/ROOM/fsx_X.h" in quotes."""
    return [f"{q}{name}{'>' if q == '<' else q}"
            for q, name in all_includes(path)
            if (q == "<" and name.startswith("fs/")) or
            (q == '"' and not name.startswith("fs/") and
             os.path.basename(name).startswith("fsx_"))]


def stem(path):
    return os.path.basename(path).rsplit(".", 1)[0]


def module_of(path, incs):
    """The module a file belongs to: fs/write/fsx_wb_part.c -> fsx_wb if it
    includes fsx_wb_i.h; fsx_wb_i.h -> fsx_wb."""
    s = stem(path)
    if s == "fsx_i":
        return s
    if s.endswith("_i"):
        return s[:-2]
    for inc in incs:
        i = stem(inc)
        if i != "fsx_i" and i.endswith("_i") and s.startswith(i[:-2] + "_"):
            return i[:-2]
    return s


def tier(path):
    folder = os.path.dirname(path)
    if folder == "fs":
        return "main"
    if folder == "fs/ops":
        return "ops"
    return "room"


def cycles(graph):
    """Every cycle found by a depth-first search, as a list of nodes."""
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif not state.get(m):
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if not state.get(n):
            visit(n)
    return found


def fs_files(root):
    out = []
    for d, _, names in os.walk(os.path.join(root, "fs")):
        rel = os.path.relpath(d, root)
        out += [os.path.join(rel, n) for n in names if n.endswith((".c", ".h"))]
    return sorted(out)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    files = fs_files(root)
    incs = {f: includes(os.path.join(root, f)) for f in files}
    mods = {f: module_of(f, incs[f]) for f in files}
    bad = []
    home = {}
    for f in files:
        for name in misnamed(os.path.join(root, f)):
            bad.append(f"{f}: includes {name}: name it from the root, "
                       f"in quotes (\"fs/ROOM/fsx_X.h\")")
    for top in OUTSIDE:
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if not n.endswith((".c", ".h")):
                    continue
                p = os.path.join(d, n)
                for q, name in all_includes(p):
                    if name.startswith("fs/"):
                        bad.append(f"{os.path.relpath(p, root)}: includes "
                                   f"{name}: fs/ is the top of the tree")
    for f in files:
        if tier(f) == "main" and f.endswith(".h"):
            bad.append(f"{f}: a header in fs/ itself: give it a room")
        if f.count("/") > 2:
            bad.append(f"{f}: rooms are one folder deep (fs/ROOM/file)")
        home.setdefault(mods[f], set()).add(os.path.dirname(f))
    for mod, dirs in sorted(home.items()):
        if len(dirs) > 1:
            bad.append(f"module {mod}: its files lie in {', '.join(sorted(dirs))}")
    hdr_graph, mod_graph = {}, {}
    for f in files:
        me = mods[f]
        for h in incs[f]:
            if h not in incs:
                bad.append(f"{f}: includes {h}, which does not exist")
                continue
            other = mods[h]
            if f.endswith(".h"):
                hdr_graph.setdefault(f, set()).add(h)
            if other == me:
                continue
            if stem(h).endswith("_i") and stem(h) != "fsx_i":
                bad.append(f"{f}: includes {h}, private to {other}")
            mod_graph.setdefault(me, set()).add(other)
            if RANK[tier(h)] < RANK[tier(f)]:
                bad.append(f"{f} ({tier(f)}): includes {h} "
                           f"({tier(h)}): a tier above")
    for c in cycles(hdr_graph):
        bad.append("header include cycle: " + " -> ".join(c))
    for c in cycles(mod_graph):
        bad.append("module include cycle: " + " -> ".join(c))
    for line in bad:
        print("check_includes: " + line)
    if not bad:
        rooms = sorted({os.path.dirname(f) for f in files} - {"fs"})
        print(f"check_includes: {len(files)} fs/ files in "
              f"{len(set(mods.values()))} modules and {len(rooms)} rooms: "
              f"tiers hold, no cycle")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
