#!/usr/bin/env python3
"""The write path, side by side with pyoxigraph's on-disk store, in one run.

    benches/update_bench.py [--base STORE_OR_NQ] [--updates N] [--log-quads N] [--work DIR]

Measures
  * the latency of a single update (one INSERT DATA of one quad): median and
    p99 over N requests applied by one `cottas-tui update` process (each its
    own batch, appended and fsynced; the receipt's own timing), and the same
    through a fresh process per request (what a shell loop pays);
  * the throughput of many small updates (N requests, one process);
  * pyoxigraph 0.3 `Store(path).update()` for the same requests (RocksDB; it
    does not fsync per update, so it is not the same durability);
  * the replay speed of a large log: `query --explain` reports the time to
    decode and fold the log, next to reading the same file into memory.
Needs a release build (cargo build --release) and the venv of scripts/test
(plus pyoxigraph; the script skips it with a notice when it is missing).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "cottas-tui")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def request(i):
    return f'INSERT DATA {{ <http://bench.example/s{i}> <http://bench.example/p> "{i}" }}'


def fresh_store(work, base, name):
    out = os.path.join(work, name)
    shutil.rmtree(out, ignore_errors=True)
    if os.path.isdir(base):
        shutil.copytree(base, out, symlinks=True)
        with open(os.path.join(out, "data.deltalog"), "wb") as f:
            f.write(b"DLOG\x01\x00\x00\x00")
    else:
        subprocess.run([BIN, "import", base, "--out", out, "--quiet"], check=True)
    return out


def ours_in_process(store, n):
    args = [BIN, "update", store]
    for i in range(n):
        args += ["-e", request(i)]
    t = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    lat = [float(m) for m in re.findall(r" in ([\d.]+) ms", p.stdout)]
    assert len(lat) == n, p.stdout[-500:]
    return lat, wall


def ours_per_process(store, n):
    lat = []
    for i in range(n):
        t = time.perf_counter()
        subprocess.run([BIN, "update", store, "-e", request(10_000_000 + i)], capture_output=True, check=True)
        lat.append((time.perf_counter() - t) * 1e3)
    return lat


def pyoxigraph_updates(work, n):
    try:
        import pyoxigraph
    except ImportError:
        print("NOTICE: pyoxigraph is not installed; its column is skipped", file=sys.stderr)
        return None
    path = os.path.join(work, "pyoxigraph-updates")
    shutil.rmtree(path, ignore_errors=True)
    store = pyoxigraph.Store(path)
    lat = []
    t0 = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        store.update(request(i))
        lat.append((time.perf_counter() - t) * 1e3)
    wall = time.perf_counter() - t0
    store.flush()
    return lat, wall, pyoxigraph.__version__


def replay(work, quads, per_batch):
    store = fresh_store(work, os.path.join(work, "empty.nq"), "replay-store")
    reqs = []
    for b in range(quads // per_batch):
        body = " ".join(
            f'<http://bench.example/r{b}_{j}> <http://bench.example/p{j % 7}> "value {j} of batch {b}"@en .'
            for j in range(per_batch)
        )
        reqs.append("INSERT DATA { " + body + " }")
    t = time.perf_counter()
    # In chunks: the argument list has a size limit.
    for k in range(0, len(reqs), 20):
        args = [BIN, "update", store]
        for r in reqs[k : k + 20]:
            args += ["-e", r]
        subprocess.run(args, capture_output=True, check=True)
    build = time.perf_counter() - t
    log = os.path.join(store, "data.deltalog")
    size = os.path.getsize(log)
    reads, replays = [], []
    for _ in range(5):
        t = time.perf_counter()
        with open(log, "rb") as f:
            f.read()
        reads.append(time.perf_counter() - t)
        p = subprocess.run(
            [BIN, "query", store, "--explain", "-e", "ASK { ?s ?p ?o }"], capture_output=True, text=True, check=True
        )
        m = re.search(r"(\d+) log bytes replayed in ([\d.]+) ms", p.stderr)
        replays.append(float(m.group(2)) / 1e3)
    return size, min(reads), min(replays), build


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", help="a chunk dir to copy, or an N-Quads file to import (default: empty)")
    ap.add_argument("--updates", type=int, default=1000)
    ap.add_argument("--per-process", type=int, default=100)
    ap.add_argument("--log-quads", type=int, default=200_000)
    ap.add_argument("--work", default="/tmp/cottas-update-bench")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    open(os.path.join(a.work, "empty.nq"), "w").close()
    base = a.base or os.path.join(a.work, "empty.nq")

    store = fresh_store(a.work, base, "ours")
    lat, wall = ours_in_process(store, a.updates)
    per = ours_per_process(store, a.per_process)
    oxi = pyoxigraph_updates(a.work, a.updates)
    size, read_s, replay_s, build_s = replay(a.work, a.log_quads, 1000)

    print(f"base: {base}; {a.updates} updates of one quad each\n")
    print("| | median ms | p99 ms | updates/s (one process) |")
    print("|---|---|---|---|")
    print(
        f"| cottas-tui update, one process (append + fsync per request) | {statistics.median(lat):.3f} | "
        f"{pct(lat, 0.99):.3f} | {a.updates / wall:.0f} |"
    )
    print(
        f"| cottas-tui update, a process per request ({a.per_process}) | {statistics.median(per):.3f} | "
        f"{pct(per, 0.99):.3f} | {1e3 / statistics.median(per):.0f} |"
    )
    if oxi:
        olat, owall, ver = oxi
        print(
            f"| pyoxigraph {ver} Store(path).update (no fsync per update) | {statistics.median(olat):.3f} | "
            f"{pct(olat, 0.99):.3f} | {a.updates / owall:.0f} |"
        )
        print(
            f"\nratio (ours / pyoxigraph), median latency: {statistics.median(lat) / statistics.median(olat):.2f}×; "
            f"throughput: {(a.updates / wall) / (a.updates / owall):.2f}×"
        )
    mb = size / 1e6
    print(f"\nreplay: {a.log_quads} added quads in {a.log_quads // 1000} batches, {mb:.1f} MB log (built in {build_s:.1f} s)")
    print("| | seconds | MB/s |")
    print("|---|---|---|")
    print(f"| read the file (warm) | {read_s:.4f} | {mb / read_s:.0f} |")
    print(f"| decode + fold into the overlay | {replay_s:.4f} | {mb / replay_s:.0f} |")
    print(f"\nreplay / read: {replay_s / read_s:.1f}×")


if __name__ == "__main__":
    main()
