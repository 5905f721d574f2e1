#!/usr/bin/env python3
"""Compaction against a fresh import of the same quads, in one run.

    benches/compact_bench.py [--quads N] [--delta N] [--work DIR]

Builds (or reuses) the N-quad LUBM store, applies a delta of --delta quads
through `cottas-tui update` (80% new quads, 20% removals of base quads, in
requests of 1,000), then measures
  * `cottas-tui compact`: wall time and peak RSS;
  * `cottas-tui import` of exactly the quads the compaction produced (exported
    from the new data.cottas with DuckDB): wall time and peak RSS;
and checks that the two bases hold the same rows. Target: compaction at most
1.2× the import. Needs a release build and the venv of scripts/test (DuckDB).
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "cottas-tui")


def run_measured(cmd):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    out, err = p.stdout.read().decode(), p.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[:2]} failed: {err}")
    return wall, usage.ru_maxrss * 1024, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quads", type=int, default=1_000_000)
    ap.add_argument("--delta", type=int, default=10_000)
    ap.add_argument("--work", default="/tmp/cottas-compact-bench")
    a = ap.parse_args()
    import duckdb

    os.makedirs(a.work, exist_ok=True)
    nq = os.path.join(a.work, f"lubm-{a.quads}.nq")
    if not os.path.exists(nq):
        subprocess.run([sys.executable, os.path.join(ROOT, "benches", "gen_lubm.py"), str(a.quads), nq], check=True)
    pristine = os.path.join(a.work, "pristine")
    if not os.path.exists(pristine):
        subprocess.run([BIN, "import", nq, "--out", pristine, "--quiet"], check=True)
    store = os.path.join(a.work, "store")
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(pristine, store, symlinks=True)

    # The delta: new quads in a new graph, and removals of every 50th base quad.
    removals = a.delta // 5
    with open(nq, encoding="utf-8") as f:
        victims = [line.strip() for i, line in zip(range(removals * 50), f) if i % 50 == 0][:removals]
    adds = [f'<http://bench.example/n{i}> <http://bench.example/p{i % 13}> "new value {i}"@en <http://bench.example/delta> .'
            for i in range(a.delta - removals)]
    reqs = []
    for k in range(0, len(adds), 1000):
        reqs.append("INSERT DATA { " + " ".join(q.replace(" <http://bench.example/delta> .", " .") for q in adds[k:k + 1000])
                    .join(["GRAPH <http://bench.example/delta> { ", " }"]) + " }")
    for k in range(0, len(victims), 1000):
        body = " ".join(f"GRAPH {v.rsplit(' ', 2)[1]} {{ {v.rsplit(' ', 2)[0]} . }}" for v in victims[k:k + 1000])
        reqs.append("DELETE DATA { " + body + " }")
    args = [BIN, "update", store]
    for k, r in enumerate(reqs):
        path = os.path.join(a.work, f"request-{k}.ru")
        with open(path, "w", encoding="utf-8") as f:
            f.write(r)
        args += ["-f", path]
    subprocess.run(args, check=True, capture_output=True)
    log_bytes = os.path.getsize(os.path.join(store, "data.deltalog"))

    c_wall, c_rss, c_out = run_measured([BIN, "compact", store, "--quiet"])
    new_base = os.path.join(store, os.readlink(os.path.join(store, "current")), "data.cottas")

    export = os.path.join(a.work, "compacted.nq")
    duckdb.sql(
        f"COPY (SELECT s || ' ' || p || ' ' || o || CASE WHEN g = 'DEFAULT' THEN '' ELSE ' ' || g END || ' .' "
        f"FROM read_parquet('{new_base}')) TO '{export}' (HEADER false, QUOTE '', ESCAPE '', DELIMITER '\\t')"
    )
    fresh = os.path.join(a.work, "fresh")
    shutil.rmtree(fresh, ignore_errors=True)
    i_wall, i_rss, i_out = run_measured([BIN, "import", export, "--out", fresh, "--quiet"])
    same = duckdb.sql(
        f"SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet('{new_base}') EXCEPT SELECT * FROM read_parquet('{fresh}/v1/data.cottas'))) "
        f"+ (SELECT count(*) FROM (SELECT * FROM read_parquet('{fresh}/v1/data.cottas') EXCEPT SELECT * FROM read_parquet('{new_base}')))"
    ).fetchone()[0] == 0
    mib = 1024 * 1024
    print(f"{a.quads} base quads; delta {a.delta} quads ({a.delta - removals} added, {removals} removed), {log_bytes} log bytes")
    print(c_out.strip())
    print(i_out.strip())
    print("\n| | seconds | peak RSS MiB |")
    print("|---|---|---|")
    print(f"| cottas-tui compact (base ⊕ delta → new version) | {c_wall:.2f} | {c_rss / mib:.0f} |")
    print(f"| cottas-tui import of the same quads | {i_wall:.2f} | {i_rss / mib:.0f} |")
    print(f"\ncompact / import: {c_wall / i_wall:.2f}× time, {c_rss / i_rss:.2f}× RSS; same rows: {same}")


if __name__ == "__main__":
    main()
