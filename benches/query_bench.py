#!/usr/bin/env python3
"""SPARQL benchmark: cottas-tui vs pyoxigraph (in memory, on disk) vs
pycottas's rdflib store, LUBM-like queries on the 1M-quad store, in one run.

    benches/query_bench.py [--work DIR] [--timeout S]

Expects benches/bench.py to have built WORK/ours and WORK/lubm-1000000.nq
(run it first). Measures each query warm (in-process, median) and as a whole
process (start, open, query, print to /dev/null). Queries read the union of
all graphs (`--union-default-graph`; pyoxigraph `use_default_graph_as_union`;
pycottas's store ignores graphs), so the same text runs everywhere.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "cottas-tui")
P = "PREFIX ub: <http://swat.cse.lehigh.edu/onto/univ-bench.owl#> "
D0 = "http://www.Department0.University0.edu"
QUERIES = [
    ("Q1 student ∧ course", P + f"SELECT ?x WHERE {{ ?x a ub:GraduateStudent ; ub:takesCourse <{D0}/GraduateCourse0> }}"),
    ("Q3 publications of", P + f"SELECT ?x WHERE {{ ?x a ub:Publication ; ub:publicationAuthor <{D0}/AssistantProfessor0> }}"),
    ("Q4 professor details", P + f"SELECT ?x ?n ?e ?t WHERE {{ ?x a ub:FullProfessor ; ub:worksFor <{D0}> ; ub:name ?n ; ub:emailAddress ?e ; ub:telephone ?t }}"),
    ("Q5 members of", P + f"SELECT ?x WHERE {{ ?x ub:memberOf <{D0}> }}"),
    ("Q7 students of a teacher", P + f"SELECT ?x ?c WHERE {{ <{D0}/AssociateProfessor0> ub:teacherOf ?c . ?x ub:takesCourse ?c }}"),
    ("Q8 count undergrads", P + "SELECT (COUNT(*) AS ?n) WHERE { ?x a ub:UndergraduateStudent }"),
    ("Q14 all undergrads", P + "SELECT ?x WHERE { ?x a ub:UndergraduateStudent }"),
]


def whole(cmd, timeout):
    t = time.perf_counter()
    try:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return float("inf")
    return time.perf_counter() - t


def ours(store, q, runs):
    p = subprocess.run([BIN, "query", store, "--union-default-graph", "--format", "tsv", "--repeat", str(runs), "-e", q],
                       capture_output=True, text=True, check=True)
    m = re.search(r"rows=(\d+) runs=\d+ min_ms=([\d.]+) median_ms=([\d.]+)", p.stderr)
    return int(m.group(1)), float(m.group(3))


PY_WARM = r'''
import json, statistics, sys, time, pyoxigraph as ox
mode, path, nq, runs, queries = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), json.loads(sys.argv[5])
t = time.perf_counter()
if mode == "memory":
    store = ox.Store()
    try:
        store.bulk_load(nq, "application/n-quads")
    except RuntimeError:  # pyoxigraph 0.3.18 on large files: "ingestion arg list is empty"
        store.load(nq, "application/n-quads")
else:
    store = ox.Store(path)
load = time.perf_counter() - t
out = {"load_s": load, "q": []}
for q in queries:
    n = len(list(store.query(q, use_default_graph_as_union=True)))
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); list(store.query(q, use_default_graph_as_union=True)); ts.append((time.perf_counter() - t) * 1e3)
    out["q"].append({"rows": n, "ms": statistics.median(ts)})
print(json.dumps(out))
'''

PY_ONE = r'''
import sys, pyoxigraph as ox
mode, path, nq, q = sys.argv[1:5]
if mode == "memory":
    store = ox.Store()
    try:
        store.bulk_load(nq, "application/n-quads")
    except RuntimeError:
        store.load(nq, "application/n-quads")
else:
    store = ox.Store(path)
for r in store.query(q, use_default_graph_as_union=True): print(r)
'''

RDFLIB_ONE = r'''
import sys
from rdflib import Graph
from pycottas import COTTASStore
g = Graph(store=COTTASStore(sys.argv[1]))
for r in g.query(sys.argv[2]): print(r)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="/tmp/cottas-bench")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    python = os.environ.get("COTTAS_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
    store = os.path.join(a.work, "ours")
    nq = os.path.join(a.work, "lubm-1000000.nq")
    disk = os.path.join(a.work, "pyoxigraph-disk")
    if not os.path.exists(disk):
        # pyoxigraph 0.3's bulk_load into an on-disk store can fail with
        # "ingestion arg list is empty"; the transactional load works.
        loader = ("import sys, pyoxigraph as ox\ns = ox.Store(sys.argv[1])\n"
                  "try:\n    s.bulk_load(sys.argv[2], 'application/n-quads')\n"
                  "except RuntimeError:\n    s.load(sys.argv[2], 'application/n-quads')\n"
                  "print(len(s))")
        subprocess.run([python, "-c", loader, disk, nq], check=True)
    qs = [q for _, q in QUERIES]
    def warm(mode, path):
        p = subprocess.run([python, "-c", PY_WARM, mode, path, nq, str(a.runs), json.dumps(qs)], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(p.stderr)
        return json.loads(p.stdout)
    mem = warm("memory", "")
    dsk = warm("disk", disk)
    theirs_file = os.path.join(a.work, "pycottas.cottas")

    print(f"## SPARQL run of {time.strftime('%Y-%m-%d')} (`benches/query_bench.py`), pyoxigraph {subprocess.run([python, '-c', 'import pyoxigraph; print(pyoxigraph.__version__)'], capture_output=True, text=True).stdout.strip()}\n")
    print(f"pyoxigraph in-memory bulk load: {mem['load_s']:.1f} s; on-disk open: {dsk['load_s']:.2f} s.\n")
    print("| query | rows | ours warm ms | pyoxigraph mem warm ms | ours / mem | ours process s | pyox mem process s | pyox disk process s | pycottas rdflib process s | pyox disk / ours process |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (name, q), m, d in zip(QUERIES, mem["q"], dsk["q"]):
        n, ms = ours(store, q, a.runs)
        assert n == m["rows"] == d["rows"], (name, n, m, d)
        # The cheap whole-process runs are repeated (median of 3); loading
        # pyoxigraph in memory takes ~30 s per run and runs once.
        p_ours = statistics.median(whole([BIN, "query", store, "--union-default-graph", "--format", "tsv", "-e", q], a.timeout) for _ in range(3))
        p_mem = whole([python, "-c", PY_ONE, "memory", "", nq, q], a.timeout)
        p_disk = statistics.median(whole([python, "-c", PY_ONE, "disk", disk, nq, q], a.timeout) for _ in range(3))
        p_rdflib = whole([python, "-c", RDFLIB_ONE, theirs_file, q], a.timeout)
        fmt = lambda s: "timeout" if s == float("inf") else f"{s:.2f}"
        print(f"| {name} | {n:,} | {ms:.3f} | {m['ms']:.3f} | {ms / max(m['ms'], 1e-3):.2f}× | {fmt(p_ours)} | {fmt(p_mem)} | {fmt(p_disk)} | {fmt(p_rdflib)} | {p_disk / p_ours:.1f}× |")


if __name__ == "__main__":
    main()
