#!/usr/bin/env python3
"""Check the include structure of fs/ (docs/ARCHITECTURE.md, "fs/ in tiers").

Tiers, top down; a file may include headers of its own module and of the
tiers below it, never of its own tier or above (the modules of the lowest
tier include each other, without a cycle):
  main  fsx_main.c: the daemon
  top   fsx_ops.{c,h}: the operations table and init
  ops   fsx_rops, fsx_fops, fsx_wops, fsx_wns: the FUSE operations
  node  fsx_node: the helpers every operation uses
  mod   every other fs/ module (inode table, namespace, read path, ...)
A module is a .c/.h pair and its private parts: fsx_X.h, fsx_X.c,
fsx_X_i.h and fsx_X_*.c that include fsx_X_i.h (fsx_wb_part.c belongs to
fsx_wb). fsx_i.h (the mount context every file sees) is a module of its
own. Also checked: no cycle among the headers, and no cycle among the
modules (A includes B's header and B includes A's, directly or through
others). Exit 1 with one line per finding.
"""
import os
import re
import sys

MAIN = {"fsx_main"}
TOP = {"fsx_ops"}
OPS = {"fsx_rops", "fsx_fops", "fsx_wops", "fsx_wns"}
NODE = {"fsx_node"}
RANK = {"main": -1, "top": 0, "ops": 1, "node": 2, "mod": 3}


def includes(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r'^\s*#\s*include\s+"fs/([^"]+)"', f.read(), re.M)


def stem(name):
    return name.rsplit(".", 1)[0]


def module_of(name, private):
    """The module a file belongs to: fsx_wb_part.c -> fsx_wb if it includes
    fsx_wb_i.h; fsx_wb_i.h -> fsx_wb."""
    s = stem(name)
    if s == "fsx_i":
        return s
    if s.endswith("_i"):
        return s[:-2]
    for inc in private:
        if inc != "fsx_i.h" and inc.endswith("_i.h") and \
                s.startswith(stem(inc)[:-2] + "_"):
            return stem(inc)[:-2]
    return s


def tier(mod):
    if mod in MAIN:
        return "main"
    if mod in TOP:
        return "top"
    if mod in OPS:
        return "ops"
    if mod in NODE:
        return "node"
    return "mod"


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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    fsdir = os.path.join(root, "fs")
    files = sorted(f for f in os.listdir(fsdir) if f.endswith((".c", ".h")))
    incs = {f: includes(os.path.join(fsdir, f)) for f in files}
    mods = {f: module_of(f, incs[f]) for f in files}
    bad = []
    hdr_graph, mod_graph = {}, {}
    for f in files:
        me = mods[f]
        for h in incs[f]:
            if h not in incs:
                bad.append(f"{f}: includes fs/{h}, which does not exist")
                continue
            other = mods[h]
            if f.endswith(".h"):
                hdr_graph.setdefault(f, set()).add(h)
            if other == me:
                continue
            mod_graph.setdefault(me, set()).add(other)
            lower = RANK[tier(other)] - RANK[tier(me)]
            if lower < 0 or (lower == 0 and tier(me) != "mod"):
                bad.append(f"{f} ({tier(me)}): includes fs/{h} "
                           f"({tier(other)}): not a tier below")
    for c in cycles(hdr_graph):
        bad.append("header include cycle: " + " -> ".join(c))
    for c in cycles(mod_graph):
        bad.append("module include cycle: " + " -> ".join(c))
    for line in bad:
        print("check_includes: " + line)
    if not bad:
        print(f"check_includes: {len(files)} fs/ files in "
              f"{len(set(mods.values()))} modules: tiers hold, no cycle")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
