#!/usr/bin/env python3
"""`cottas-tui serve` against Oxigraph's own server, side by side.

Both servers hold the same LUBM-like store (ours from `benches/scale.py`,
Oxigraph's loaded by pyoxigraph 0.5 from the same N-Quads) and are started
here on loopback with `--union-default-graph`. ApacheBench (`ab`, Debian's
apache2-utils; a C client, so the client is not the bottleneck) sends the
same GET request N times with keep-alive at 1, 4 and 16 concurrent clients,
alternating between the servers; the table gives requests per second and
ab's p50 / p99 latency (whole milliseconds). Answers are compared once per
query before timing. Updates: 200 `INSERT DATA`, each of a new quad (so
each is a real write), from Python's http.client, each client sending its
share in sequence on its own keep-alive connection (1, 4 and 16 clients,
`--update-clients`), to a read-write server on a copy of each store: first
as loaded, then after one update of 200,000 new quads (`--pending`), which
in ours stay in the log until a compaction.

    python3 benches/serve_bench.py --ours /work/scale/bench/ours-1000000 \\
        --ox /work/scale/bench/ox-1000000 --oxigraph /path/to/venv/bin/oxigraph
"""

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import D0, P  # noqa: E402  the same data and IRIs as the scale benchmark

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# COTTAS_TUI_BIN: another build of ours, to compare two builds with one command.
BIN = os.environ.get("COTTAS_TUI_BIN") or os.path.join(ROOT, "target", "release", "cottas-tui")

QUERIES = [
    ("bound subject", f"SELECT ?p ?o WHERE {{ <{D0}/AssistantProfessor0> ?p ?o }}"),
    ("bound object", f"SELECT ?s ?p WHERE {{ ?s ?p <{D0}/AssistantProfessor0> }}"),
    ("two patterns through a bound IRI",
     P + f"SELECT ?x WHERE {{ ?x a ub:GraduateStudent ; ub:takesCourse <{D0}/GraduateCourse0> }}"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ours(cmd):
    """Starts `cottas-tui serve` on a port the kernel picks and reads the
    address it prints: no other process can hold that port."""
    proc = subprocess.Popen(cmd + ["--bind", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    m = re.search(r" on http://127\.0\.0\.1:(\d+)", line)
    if not m:
        proc.kill()
        sys.exit(f"{' '.join(cmd)} did not start: {line}{proc.stderr.read()[-800:]}")
    # Drain what it writes later (errors) so it never blocks on a full pipe.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, int(m.group(1))


def start_other(cmd_at):
    """Starts a server that cannot report its port (`cmd_at(port)` is its
    command line) on a free port; if the port was taken before it bound it,
    it exits, and another port is tried. The probe asks only while the
    process lives, so another program's server cannot pass for it."""
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(cmd_at(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if proc.poll() is not None:
                break
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                if proc.poll() is None:
                    return proc, port
            except OSError:
                time.sleep(0.05)
        proc.kill()
        proc.wait()
    sys.exit(f"{cmd_at(0)[0]} did not start: {' '.join(cmd_at(0))}")


def answer(port, query):
    url = f"http://127.0.0.1:{port}/query?" + urllib.parse.urlencode({"query": query})
    req = urllib.request.Request(url, headers={"Accept": "application/sparql-results+json"})
    with urllib.request.urlopen(req) as r:
        rows = json.load(r)["results"]["bindings"]
    return sorted(json.dumps(b, sort_keys=True) for b in rows)


def ab(args):
    out = subprocess.run(["ab", "-q", "-k", *args], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    pct = dict(re.findall(r"^\s+(\d+)%\s+(\d+)", out, re.M))
    if failed:
        sys.exit(f"ab reported {failed} failed requests:\n{out}")
    return rps, int(pct["50"]), int(pct["99"])


def query_runs(ports, n, concurrency):
    rows = []
    for name, q in QUERIES:
        if answer(ports["ours"], q) != answer(ports["ox"], q):
            sys.exit(f"{name}: the two servers answer differently")
        url_path = "/query?" + urllib.parse.urlencode({"query": q})
        for c in concurrency:
            got = {}
            for who in ("ours", "ox", "ours", "ox"):  # alternate; keep the better run of each
                r = ab(["-n", str(n), "-c", str(c), "-H", "Accept: application/sparql-results+json",
                        f"http://127.0.0.1:{ports[who]}{url_path}"])
                got[who] = max(got.get(who, r), r, key=lambda x: x[0])
            rows.append((name, c, got["ours"], got["ox"]))
    return rows


def timed_inserts(port, n, clients, tag):
    """`n` INSERT DATA requests, each of a quad not yet in the store (so
    every one is a real write), shared by `clients` threads, each sending its
    share in sequence on its own keep-alive HTTP/1.1 connection: requests
    per second and p50 / p99 latency in ms. Any answer but 204 (a 503 when
    writers wait past --lock-wait) ends the benchmark."""
    took, failed = [], []

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for i in range(k, n, clients):
            body = f'INSERT DATA {{ <http://ex.org/bench/{tag}/{i}> <http://ex.org/p> "{i}" }}'
            t = time.perf_counter()
            conn.request("POST", "/update", body=body, headers={"Content-Type": "application/sparql-update"})
            r = conn.getresponse()
            r.read()
            took.append(time.perf_counter() - t)
            if r.status not in (200, 204):
                failed.append(f"update {i} answered {r.status}")
        conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = time.perf_counter() - started
    if failed:
        sys.exit(f"{len(failed)} of {n} updates failed with {clients} clients: {failed[0]}")
    took.sort()
    return n / total, took[len(took) // 2] * 1e3, took[min(len(took) - 1, len(took) * 99 // 100)] * 1e3


def bulk_insert_file(tmp, pending):
    """One INSERT DATA of `pending` quads no store holds, as a file."""
    path = os.path.join(tmp, "pending.ru")
    with open(path, "w") as f:
        f.write("INSERT DATA {\n")
        for i in range(pending):
            f.write(f'<http://ex.org/pending/{i}> <http://ex.org/p{i % 7}> "pending {i}" .\n')
        f.write("}\n")
    return path


def update_runs(ours_store, ox_location, oxigraph, n, pending, update_clients):
    """`timed_inserts` on a copy of each store at each number of clients,
    after one update that left `pending` quads not yet compacted in ours (a
    log of that size; in Oxigraph the same quads are simply stored)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        ours = shutil.copytree(ours_store, os.path.join(tmp, "ours"), symlinks=True)
        ox = shutil.copytree(ox_location, os.path.join(tmp, "ox"))
        if pending:
            bulk = bulk_insert_file(tmp, pending)
            subprocess.run([BIN, "update", ours, "-f", bulk], check=True, stdout=subprocess.DEVNULL)
            subprocess.run([oxigraph, "update", "--location", ox, "--update-file", bulk], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        servers = {
            "ours": [BIN, "serve", ours, "--write", "--quiet"],
            "ox": [oxigraph, "serve", "--location", ox],
        }
        for who, cmd in servers.items():
            if who == "ours":
                proc, port = start_ours(cmd)
            else:
                proc, port = start_other(lambda port, cmd=cmd: cmd + ["--bind", f"127.0.0.1:{port}"])
            try:
                out[who] = {c: timed_inserts(port, n, c, f"c{c}") for c in update_clients}
            finally:
                proc.terminate()
                proc.wait()
    return out


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--ours", required=True, help="our store (a chunk dir)")
    a.add_argument("--ox", required=True, help="Oxigraph's store directory (same data)")
    a.add_argument("--oxigraph", required=True, help="the oxigraph CLI (pip install oxigraph==0.5.13)")
    a.add_argument("--requests", type=int, default=2000)
    a.add_argument("--concurrency", default="1,4,16")
    a.add_argument("--updates", type=int, default=200)
    a.add_argument("--update-clients", default="1,4,16", help="concurrent writers; a list")
    a.add_argument("--pending", default="0,200000",
                   help="quads inserted (and, in ours, left in the log) before the timed updates; a list")
    args = a.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    ours, ours_port = start_ours([BIN, "serve", args.ours, "--union-default-graph", "--quiet"])
    ox, ox_port = start_other(lambda port: [args.oxigraph, "serve-read-only", "--location", args.ox,
                                            "--union-default-graph", "--bind", f"127.0.0.1:{port}"])
    ports = {"ours": ours_port, "ox": ox_port}
    procs = [ours, ox]
    try:
        rows = query_runs(ports, args.requests, concurrency)
    finally:
        for p in procs:
            p.terminate()
            p.wait()
    print("| query | clients | cottas-tui req/s | p50 ms | p99 ms | Oxigraph req/s | p50 ms | p99 ms | ours / Oxigraph |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c, (r1, a50, a99), (r2, b50, b99) in rows:
        print(f"| {name} | {c} | {r1:,.0f} | {a50} | {a99} | {r2:,.0f} | {b50} | {b99} | {r1 / r2:.2f}× |")
    print()
    update_clients = [int(c) for c in args.update_clients.split(",")]
    print("| one new quad per INSERT DATA | pending quads | clients | req/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|")
    for pending in (int(p) for p in args.pending.split(",")):
        up = update_runs(args.ours, args.ox, args.oxigraph, args.updates, pending, update_clients)
        for c in update_clients:
            for who, label in (("ours", "cottas-tui serve --write"), ("ox", "oxigraph serve")):
                r, p50, p99 = up[who][c]
                print(f"| {label} | {pending:,} | {c} | {r:,.0f} | {p50:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
