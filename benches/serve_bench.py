#!/usr/bin/env python3
"""`cottas-tui serve` against Oxigraph's own server and Virtuoso, side by side.

The servers hold the same LUBM-like store (ours imported from the N-Quads
`benches/gen_lubm.py` writes, Oxigraph's loaded by `oxigraph load` 0.5 from
the same file, Virtuoso 7.2's bulk-loaded by `benches/virtuoso.py`) and are
started here on loopback (ours and Oxigraph's with `--union-default-graph`;
Virtuoso's default graph is the union of its graphs). ApacheBench (`ab`,
Debian's apache2-utils; a C client, so the client is not the bottleneck)
sends the same GET request N times at 1, 4, 16 and 64 concurrent clients,
with keep-alive and with a new connection per request, alternating between
the servers (each cell the better of two runs); the table gives requests
per second and ab's p50 / p99 latency (whole milliseconds). Answers are
compared once per query before timing (Virtuoso's by their number of rows:
it spells some literals differently). Updates: `INSERT DATA` of one new
quad each, from Python's http.client, each client sending its share in
sequence on its own keep-alive connection (1, 4 and 16 clients,
`--update-clients`), to a read-write server on a copy of ours and of
Oxigraph's store, first as loaded, then after one update of 200,000 new
quads (`--pending`), which in ours stay in the log until a compaction; and
to Virtuoso (its anonymous SPARQL user granted updates) on its database as
loaded.

    python3 benches/serve_bench.py --ours /work/bench/ours10m --ox /work/bench/ox10m \
        --oxigraph /work/bench/oxvenv/bin/oxigraph --virtuoso-work /work/bench/virt
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
import virtuoso  # noqa: E402

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


def ab(args, keep_alive=True, tolerate=()):
    """ab's requests per second, p50 and p99; a failed request ends the
    run, but for failures of the kinds in `tolerate` (ab's "Length": a body
    of another length than the first), which are counted in `TOLERATED`."""
    flags = ["-q"] + (["-k"] if keep_alive else [])
    out = subprocess.run(["ab", *flags, *args], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests per second:\s+([\d.]+)", out).group(1))
    failed = int(re.search(r"Failed requests:\s+(\d+)", out).group(1))
    pct = dict(re.findall(r"^\s+(\d+)%\s+(\d+)", out, re.M))
    if failed:
        kinds = dict(re.findall(r"(Connect|Receive|Length|Exceptions): (\d+)", out))
        if any(int(v) for k, v in kinds.items() if k not in tolerate):
            sys.exit(f"ab reported {failed} failed requests:\n{out}")
        TOLERATED.append(failed)
    return rps, int(pct["50"]), int(pct["99"])


# Virtuoso's answers whose length differed from its first (counted, not fatal).
TOLERATED = []


def answer_rows(port, path, query):
    url = f"http://127.0.0.1:{port}{path}?" + urllib.parse.urlencode({"query": query})
    req = urllib.request.Request(url, headers={"Accept": "application/sparql-results+json"})
    with urllib.request.urlopen(req) as r:
        return len(json.load(r)["results"]["bindings"])


def query_runs(servers, n, concurrency):
    """`servers`: name -> (port, query path). Rows of (query, clients,
    keep-alive, {name: (req/s, p50, p99)})."""
    rows = []
    for name, q in QUERIES:
        if answer(servers["ours"][0], q) != answer(servers["ox"][0], q):
            sys.exit(f"{name}: ours and Oxigraph's answer differently")
        expected = len(answer(servers["ours"][0], q))
        if "virtuoso" in servers and answer_rows(*servers["virtuoso"], q) != expected:
            sys.exit(f"{name}: Virtuoso answers {answer_rows(*servers['virtuoso'], q)} rows, ours {expected}")
        query = urllib.parse.urlencode({"query": q})
        for keep_alive in (True, False):
            for c in concurrency:
                got = {}
                for who in list(servers) * 2:  # alternate; keep the better run of each
                    port, path = servers[who]
                    tolerate = ("Length",) if who == "virtuoso" else ()
                    r = ab(["-n", str(n), "-c", str(c), "-H", "Accept: application/sparql-results+json",
                            f"http://127.0.0.1:{port}{path}?{query}"], keep_alive, tolerate)
                    got[who] = max(got.get(who, r), r, key=lambda x: x[0])
                rows.append((name, c, keep_alive, got))
    return rows


def sparql_update(i, tag):
    """Our and Oxigraph's update request: path, headers, body."""
    body = f'INSERT DATA {{ <http://ex.org/bench/{tag}/{i}> <http://ex.org/p> "{i}" }}'
    return "/update", {"Content-Type": "application/sparql-update"}, body


def virtuoso_update(i, tag):
    """Virtuoso's: SPARUL as the `query` of a form POST to /sparql, into a graph."""
    text = f'INSERT DATA {{ GRAPH <http://ex.org/bench> {{ <http://ex.org/bench/{tag}/{i}> <http://ex.org/p> "{i}" }} }}'
    return "/sparql", {"Content-Type": "application/x-www-form-urlencoded"}, urllib.parse.urlencode({"query": text})


def timed_inserts(port, n, clients, tag, request=sparql_update):
    """`n` INSERT DATA requests, each of a quad not yet in the store (so
    every one is a real write), shared by `clients` threads, each sending its
    share in sequence on its own keep-alive HTTP/1.1 connection: requests
    per second and p50 / p99 latency in ms. Any answer but 204 (a 503 when
    writers wait past --lock-wait) ends the benchmark."""
    took, failed = [], []

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for i in range(k, n, clients):
            path, headers, body = request(i, tag)
            t = time.perf_counter()
            conn.request("POST", path, body=body, headers=headers)
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


def virtuoso_updates(port, n, update_clients):
    virtuoso.isql('GRANT SPARQL_UPDATE TO "SPARQL"', harmless="already have role")
    return {c: timed_inserts(port, n, c, f"v{c}-{time.time_ns()}", virtuoso_update) for c in update_clients}


def print_query_table(rows, virt):
    print("| query | clients | keep-alive | cottas-tui req/s | p50 ms | p99 ms | Oxigraph req/s | p50 ms | p99 ms | ours / Oxigraph |"
          + (" Virtuoso req/s | p50 ms | p99 ms | ours / Virtuoso |" if virt else ""))
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|---|---|---|" if virt else ""))
    for name, c, keep_alive, got in rows:
        (r1, a50, a99), (r2, b50, b99) = got["ours"], got["ox"]
        line = (f"| {name} | {c} | {'yes' if keep_alive else 'no'} | {r1:,.0f} | {a50} | {a99} "
                f"| {r2:,.0f} | {b50} | {b99} | {r1 / r2:.2f}× |")
        if virt:
            r3, c50, c99 = got["virtuoso"]
            line += f" {r3:,.0f} | {c50} | {c99} | {r1 / r3:.2f}× |"
        print(line, flush=True)
    if TOLERATED:
        print(f"\nVirtuoso: {sum(TOLERATED)} answers of another length than its first, in {len(TOLERATED)} runs.")


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--ours", required=True, help="our store (a chunk dir)")
    a.add_argument("--ox", required=True, help="Oxigraph's store directory (same data)")
    a.add_argument("--oxigraph", required=True, help="the oxigraph CLI (pip install oxigraph==0.5.13)")
    a.add_argument("--virtuoso-work", help="a database benches/virtuoso.py loaded with the same data")
    a.add_argument("--requests", type=int, default=2000)
    a.add_argument("--concurrency", default="1,4,16,64")
    a.add_argument("--updates", type=int, default=200)
    a.add_argument("--update-clients", default="1,4,16", help="concurrent writers; a list")
    a.add_argument("--pending", default="0,200000",
                   help="quads inserted (and, in ours, left in the log) before the timed updates; a list")
    args = a.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    update_clients = [int(c) for c in args.update_clients.split(",")]
    ours, ours_port = start_ours([BIN, "serve", args.ours, "--union-default-graph", "--quiet"])
    ox, ox_port = start_other(lambda port: [args.oxigraph, "serve-read-only", "--location", args.ox,
                                            "--union-default-graph", "--bind", f"127.0.0.1:{port}"])
    servers = {"ours": (ours_port, "/query"), "ox": (ox_port, "/query")}
    virt_proc, virt_updates = None, None
    try:
        if args.virtuoso_work:
            virt_port = free_port()
            virt_proc = virtuoso.start(args.virtuoso_work, virt_port)
            servers["virtuoso"] = (virt_port, "/sparql")
        rows = query_runs(servers, args.requests, concurrency)
        print_query_table(rows, "virtuoso" in servers)
        if virt_proc:
            virt_updates = virtuoso_updates(virt_port, args.updates, update_clients)
    finally:
        for p in (ours, ox):
            p.terminate()
            p.wait()
        if virt_proc:
            virtuoso.stop(virt_proc)
    print()
    print("| one new quad per INSERT DATA | pending quads | clients | req/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|")
    for pending in (int(p) for p in args.pending.split(",")):
        up = update_runs(args.ours, args.ox, args.oxigraph, args.updates, pending, update_clients)
        for c in update_clients:
            for who, label in (("ours", "cottas-tui serve --write"), ("ox", "oxigraph serve")):
                r, p50, p99 = up[who][c]
                print(f"| {label} | {pending:,} | {c} | {r:,.0f} | {p50:.2f} | {p99:.2f} |", flush=True)
    for c, (r, p50, p99) in (virt_updates or {}).items():
        print(f"| Virtuoso 7.2 (its database as loaded) | 0 | {c} | {r:,.0f} | {p50:.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
