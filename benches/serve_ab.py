#!/usr/bin/env python3
"""Two builds of `cottas-tui serve` side by side on one store.

Starts both on loopback (read-only, `--union-default-graph`) over the same
chunk and sends each selective query of `serve_bench.py` through ApacheBench
(`ab`, Debian's apache2-utils), alternating between the builds (each cell
the better of two runs per build), at each concurrency, with keep-alive and
with a new connection per request. Prints requests per second and ab's p50 /
p99 (whole milliseconds) of each build, and new/old. Answers are compared
once per query before timing.

    benches/serve_ab.py --old OLD_BIN --new NEW_BIN --store CHUNK \\
        [--requests 5000] [--concurrency 1,4,16,64]
"""
import argparse
import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_bench import QUERIES, ab, answer, start_ours  # noqa: E402


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--old", required=True)
    a.add_argument("--new", required=True)
    a.add_argument("--store", required=True)
    a.add_argument("--requests", type=int, default=5000)
    a.add_argument("--concurrency", default="1,4,16,64")
    args = a.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    servers = {}
    for who, binary in (("old", args.old), ("new", args.new)):
        servers[who] = start_ours([binary, "serve", args.store, "--quiet", "--union-default-graph"])
    ports = {who: port for who, (_, port) in servers.items()}
    try:
        print("| query | clients | keep-alive | old req/s | p50 | p99 | new req/s | p50 | p99 | new / old |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, q in QUERIES:
            if answer(ports["old"], q) != answer(ports["new"], q):
                sys.exit(f"{name}: the two builds answer differently")
            path = "/query?" + urllib.parse.urlencode({"query": q})
            for keep_alive in (True, False):
                for c in concurrency:
                    got = {}
                    for who in ("old", "new", "old", "new"):
                        r = ab(["-n", str(args.requests), "-c", str(c), "-H",
                                "Accept: application/sparql-results+json",
                                f"http://127.0.0.1:{ports[who]}{path}"], keep_alive)
                        got[who] = max(got.get(who, r), r, key=lambda x: x[0])
                    (o, n) = (got["old"], got["new"])
                    print(f"| {name} | {c} | {'yes' if keep_alive else 'no'} | {o[0]:,.0f} | {o[1]} | {o[2]} "
                          f"| {n[0]:,.0f} | {n[1]} | {n[2]} | {n[0] / o[0]:.2f}× |", flush=True)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
