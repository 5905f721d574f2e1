#!/usr/bin/env python3
"""Analytic SPARQL shapes: cottas-tui against pyoxigraph 0.5 on disk, whole
process, same run, same answers.

    benches/analytic_bench.py --store DIR --oxigraph DIR --oxpython PY
                              [--bin PATH ...] [--runs N] [--only NAME]

`--store` is a chunk built by `cottas-tui import` from a LUBM-like N-Quads
file (`benches/gen_lubm.py`, or any generator using the univ-bench
vocabulary with `ub:age` integers); `--oxigraph` is pyoxigraph's on-disk
store loaded from the same file, opened read-only by `--oxpython` (its own
venv: pycottas pins pyoxigraph 0.3). Every query reads the union of the
graphs (`--union-default-graph`; pyoxigraph `use_default_graph_as_union`),
so one text runs on both. Each class is timed as a user runs it: a process
that opens the store, answers, prints every row and exits, median of
`--runs`, the engines interleaved so both see the same page cache. Peak
resident memory (`/usr/bin/time`) is reported for ours. Answers are compared
as sorted rows of values; a difference stops the run.

`--bin LABEL=PATH`, repeated, compares builds (the first one is the ratio's).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
P = f"PREFIX ub: <{UB}> "
U0 = "http://www.University0.edu"
D0 = "http://www.Department0.University0.edu"

# (class, query): the shapes of issue #45 as users write them.
QUERIES = [
    ("grouped count", "SELECT ?c (COUNT(*) AS ?n) { ?s a ?c } GROUP BY ?c"),
    ("grouped SUM/AVG", P + "SELECT ?d (SUM(?a) AS ?sum) (AVG(?a) AS ?avg) { ?x ub:worksFor ?d ; ub:age ?a } GROUP BY ?d"),
    ("COUNT DISTINCT", P + "SELECT (COUNT(DISTINCT ?c) AS ?n) { ?x ub:takesCourse ?c }"),
    ("DISTINCT of a join", P + "SELECT DISTINCT ?d { ?x ub:advisor ?p . ?p ub:worksFor ?d }"),
    ("ORDER BY + LIMIT", P + "SELECT ?x ?n { ?x a ub:FullProfessor ; ub:name ?n } ORDER BY DESC(?n) ?x LIMIT 10"),
    ("full ORDER BY of a class", P + "SELECT ?x { ?x a ub:FullProfessor } ORDER BY ?x"),
    ("MINUS", P + "SELECT (COUNT(*) AS ?n) { ?x a ub:UndergraduateStudent MINUS { ?x ub:advisor ?a } }"),
    ("NOT EXISTS", P + "SELECT (COUNT(*) AS ?n) { ?x a ub:UndergraduateStudent FILTER NOT EXISTS { ?x ub:advisor ?a } }"),
    ("EXISTS", P + "SELECT (COUNT(*) AS ?n) { ?x a ub:UndergraduateStudent FILTER EXISTS { ?x ub:advisor ?a } }"),
    ("OPTIONAL + !BOUND", P + "SELECT (COUNT(*) AS ?n) { ?x a ub:UndergraduateStudent OPTIONAL { ?x ub:advisor ?a } FILTER(!BOUND(?a)) }"),
    ("+ path", P + f"SELECT ?x {{ ?x ub:subOrganizationOf+ <{U0}> }}"),
    ("* path", P + f"SELECT ?x {{ ?x ub:subOrganizationOf* <{U0}> }}"),
    ("VALUES join", P + "SELECT ?x ?n { VALUES ?c { "
     + " ".join(f"<{D0}/Course{i}>" for i in range(10)) + " } ?x ub:takesCourse ?c ; ub:name ?n }"),
    ("subquery with aggregate", P + "SELECT (MAX(?n) AS ?most) (MIN(?n) AS ?least) { { SELECT ?d (COUNT(?x) AS ?n) { ?x ub:memberOf ?d } GROUP BY ?d } }"),
    ("large hash join", P + "SELECT (COUNT(*) AS ?n) { ?x ub:name ?n . ?x ub:emailAddress ?e }"),
    ("join count through objects", P + "SELECT (COUNT(*) AS ?n) { ?x ub:takesCourse ?c . ?t ub:teacherOf ?c }"),
]

OX = r'''
import json, sys, pyoxigraph as ox
s = ox.Store.read_only(sys.argv[1])
r = s.query(sys.argv[2], use_default_graph_as_union=True)
rows = [[None if t is None else t.value for t in sol] for sol in r]
json.dump(rows, sys.stdout)
'''


def values_of_ours(out):
    doc = json.loads(out)
    names = doc["head"]["vars"]
    return [[b[n]["value"] if n in b else None for n in names] for b in doc["results"]["bindings"]]


def timed(cmd):
    """Wall time, peak RSS in KiB and stdout of one whole process."""
    t = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {p.stderr.decode()[-800:]}")
    rss = int(p.stderr.decode().strip().splitlines()[-1])
    return dt, rss, p.stdout


def canon(rows, ordered):
    rows = [tuple("" if v is None else v for v in r) for r in rows]
    return rows if ordered else sorted(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--oxigraph", help="pyoxigraph's store; without it, ours only (the 100M curve)")
    ap.add_argument("--oxpython")
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--memory-limit", default="4G")
    ap.add_argument("--warm-up", action="store_true",
                    help="run each engine once, untimed, before a class's timed runs (at 100M a class "
                         "otherwise reads cold what the previous class's pyoxigraph run evicted)")
    a = ap.parse_args()
    default = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target", "release", "cottas-tui")
    labelled = [b.split("=", 1) if "=" in b else ["ours", b] for b in (a.bin or [default])]
    labels = {path: label for label, path in labelled}
    bins = [path for _, path in labelled]
    anchor = a.oxigraph is not None
    version = subprocess.run([a.oxpython, "-c", "import pyoxigraph; print(pyoxigraph.__version__)"],
                             capture_output=True, text=True).stdout.strip() if anchor else "-"
    print(f"## Analytic shapes, {time.strftime('%Y-%m-%d')}: `{' '.join(sys.argv)}`\n")
    warm = ", after one untimed run of each" if a.warm_up else ""
    print(f"pyoxigraph {version} on disk (read-only), whole process, median of {a.runs}{warm}; ratio = pyoxigraph / ours (> 1: we are faster).\n")
    heads = " | ".join(f"{labels[b]} s" for b in bins)
    print(f"| class | rows | {heads} | pyoxigraph s | ratio | our peak RSS MiB | same answers |")
    print("|---|---|" + "---|" * len(bins) + "---|---|---|---|")
    for name, q in QUERIES:
        if a.only and name not in a.only:
            continue
        ordered = "ORDER BY" in q
        times = {b: [] for b in bins}
        ox_times, rss, answers = [], 0, {}
        if a.warm_up:
            for b in bins:
                timed([b, "query", a.store, "--union-default-graph", "--memory-limit", a.memory_limit,
                       "--format", "json", "-e", q])
            if anchor:
                timed([a.oxpython, "-c", OX, a.oxigraph, q])
        for _ in range(a.runs):
            for b in bins:
                dt, r, out = timed([b, "query", a.store, "--union-default-graph", "--memory-limit", a.memory_limit,
                                    "--format", "json", "-e", q])
                times[b].append(dt)
                if b == bins[0]:
                    rss = max(rss, r)
                answers[b] = canon(values_of_ours(out), ordered)
            if anchor:
                dt, _, out = timed([a.oxpython, "-c", OX, a.oxigraph, q])
                ox_times.append(dt)
                answers["ox"] = canon(json.loads(out), ordered)
            else:
                ox_times.append(float("nan"))
                answers["ox"] = answers[bins[0]]
        same = all(v == answers["ox"] for v in answers.values())
        if not same:
            for k, v in answers.items():
                print(f"<!-- {name}: {k} gave {len(v)} rows, first {v[:3]} -->", file=sys.stderr)
        med = {b: statistics.median(t) for b, t in times.items()}
        ox = statistics.median(ox_times)
        cols = " | ".join(f"{med[b]:.3f}" for b in bins)
        ratio = f"{ox / med[bins[0]]:.2f}×" if anchor else "-"
        print(f"| {name} | {len(answers['ox']):,} | {cols} | {ox:.3f} | {ratio} | {rss / 1024:.0f} | {'✓' if same else '✗'} |",
              flush=True)


if __name__ == "__main__":
    main()
