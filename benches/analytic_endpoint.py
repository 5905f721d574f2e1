#!/usr/bin/env python3
"""The analytic classes of `benches/analytic_bench.py` through the endpoint:
`cottas-tui serve --union-default-graph` against Virtuoso 7.2's SPARQL
endpoint (database loaded by `benches/virtuoso.py` from the same N-Quads;
its default graph is the union of all graphs too), warm: one request each
first, then the median of `--runs` requests, the servers alternating. Row
counts are compared; a difference is marked, not fatal (Virtuoso's own
numeric forms differ for AVG).

    python3 benches/analytic_endpoint.py --store /work/bench/ours10m \\
        --virtuoso-work /work/bench/virt [--bin target/release/cottas-tui] [--runs 5]
"""
import argparse
import json
import os
import statistics
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import virtuoso  # noqa: E402
from analytic_bench import QUERIES  # noqa: E402
from serve_bench import free_port, start_ours  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def request(port, path, query):
    """Seconds for one request answered whole, and its row count."""
    url = f"http://127.0.0.1:{port}{path}?" + urllib.parse.urlencode({"query": query})
    req = urllib.request.Request(url, headers={"Accept": "application/sparql-results+json"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        rows = len(json.load(r)["results"]["bindings"])
    return time.perf_counter() - t, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--virtuoso-work", required=True)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "cottas-tui"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    ours, ours_port = start_ours([a.bin, "serve", a.store, "--union-default-graph", "--quiet"])
    vport = free_port()
    virt = virtuoso.start(a.virtuoso_work, vport)
    servers = {"ours": (ours_port, "/query"), "virtuoso": (vport, "/sparql")}
    try:
        print(f"## Analytic shapes through the endpoint, {time.strftime('%Y-%m-%d')}: `{' '.join(sys.argv)}`\n")
        print(f"Warm, median of {a.runs} requests each; ratio = Virtuoso / ours (> 1: we are faster).\n")
        print("| class | rows ours | rows Virtuoso | ours ms | Virtuoso ms | ratio |")
        print("|---|---|---|---|---|---|")
        for name, q in QUERIES:
            rows = {who: request(port, path, q)[1] for who, (port, path) in servers.items()}
            times = {who: [] for who in servers}
            for _ in range(a.runs):
                for who, (port, path) in servers.items():
                    times[who].append(request(port, path, q)[0])
            ms = {who: statistics.median(t) * 1e3 for who, t in times.items()}
            print(f"| {name} | {rows['ours']:,} | {rows['virtuoso']:,}{'' if rows['ours'] == rows['virtuoso'] else ' ✗'} "
                  f"| {ms['ours']:.1f} | {ms['virtuoso']:.1f} | {ms['virtuoso'] / ms['ours']:.2f}× |", flush=True)
    finally:
        ours.kill()
        virtuoso.stop(virt)


if __name__ == "__main__":
    main()
