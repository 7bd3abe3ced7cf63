#!/usr/bin/python3
"""Read a Prometheus text exposition on stdin with prometheus_client's own
parser (Debian's python3-prometheus-client) and check what a suite asks:

  prom_check.py [--family NAME:TYPE]... [--histogram NAME:LABEL=V,...]...
                [--positive NAME]...

--family: a metric family of that type is there; --histogram: a histogram
family with a sample set whose labels include those, with cumulative
buckets (non-decreasing, +Inf equal to _count) and a count above 0;
--positive: a sample of that name (any labels) above 0. Exit 0, or 1 with
one line per failure. A text the parser refuses fails too."""
import argparse
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", action="append", default=[])
    ap.add_argument("--histogram", action="append", default=[])
    ap.add_argument("--positive", action="append", default=[])
    a = ap.parse_args()
    text = sys.stdin.read()
    try:
        fams = {f.name: f for f in text_string_to_metric_families(text)}
    except Exception as e:  # the parser's own complaint
        print("not Prometheus text: %s" % e)
        return 1
    bad = []
    for spec in a.family:
        name, typ = spec.rsplit(":", 1)
        f = fams.get(name)
        if not f or f.type != typ:
            bad.append("no %s family %s (have: %s)" % (
                typ, name, f.type if f else "none"))
    for spec in a.histogram:
        name, labels = spec.split(":", 1)
        want = dict(kv.split("=", 1) for kv in labels.split(",") if kv)
        f = fams.get(name)
        if not f or f.type != "histogram":
            bad.append("no histogram %s" % name)
            continue
        mine = [s for s in f.samples
                if all(s.labels.get(k) == v for k, v in want.items())]
        buckets = sorted(((float(s.labels["le"]), s.value) for s in mine
                          if s.name == name + "_bucket"))
        count = [s.value for s in mine if s.name == name + "_count"]
        if not buckets or len(count) != 1 or count[0] <= 0:
            bad.append("%s %s: no buckets or no count" % (name, want))
            continue
        vals = [v for _, v in buckets]
        if vals != sorted(vals) or buckets[-1][0] != float("inf") or \
                vals[-1] != count[0]:
            bad.append("%s %s: buckets not cumulative to the count: %s, "
                       "count %s" % (name, want, buckets, count[0]))
    for name in a.positive:
        vals = [s.value for f in fams.values() for s in f.samples
                if s.name == name]
        if not vals or max(vals) <= 0:
            bad.append("%s: not above 0 (%s)" % (name, vals))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
