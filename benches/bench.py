#!/usr/bin/env python3
"""Side-by-side benchmark: cottas-tui vs pycottas vs DuckDB, in one run.

    benches/bench.py [--quads N] [--work DIR] [--skip-pycottas-import]

Generates the LUBM-like file (benches/gen_lubm.py), then measures
  * import: wall time, peak RSS and bytes/quad of `cottas-tui import` and of
    `python -m pycottas rdf2cottas` on the same file;
  * warm lookups (bound s, p, o IRI, o literal, p+o): cottas-tui in-process
    (`lookup --repeat`), pycottas.search and DuckDB SQL in-process, each on
    its own file, plus DuckDB on our file;
and prints a Markdown table with ratios (paste into docs/benchmarks.md).
Needs the venv of scripts/test (pycottas, duckdb) and a release build.
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
UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

PATTERNS = [
    ("bound s", {"s": "<http://www.Department0.University0.edu/FullProfessor0>"}),
    ("bound p", {"p": f"<{UB}worksFor>"}),
    ("bound o (IRI)", {"o": "<http://www.Department0.University0.edu/Course0>"}),
    ("bound o (literal)", {"o": '"Research12"'}),
    ("bound p+o", {"p": f"<{RDF_TYPE}>", "o": f"<{UB}GraduateStudent>"}),
]


def run_measured(cmd, **kw):
    """Runs cmd; returns (wall seconds, peak RSS bytes, stdout)."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    out, err = p.stdout.read(), p.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed: {err.decode()}")
    return wall, usage.ru_maxrss * 1024, out.decode()


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def ours_lookup(store, pat, runs):
    args = [BIN, "lookup", store, "--count", "--repeat", str(runs)]
    for k, v in pat.items():
        args += [f"-{k}", v]
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    m = re.search(r"rows=(\d+) runs=\d+ min_ms=([\d.]+) median_ms=([\d.]+)", p.stderr)
    return int(m.group(1)), float(m.group(3))


def where(pat):
    return " AND ".join(f"{k} = $${v}$$" for k, v in pat.items())


def tp(pat):
    return " ".join(pat.get(k, f"?{k}") for k in "spo")


def py_timings(python, theirs, ours, runs):
    code = r'''
import duckdb, json, statistics, sys, time
import pycottas
theirs, ours, runs, patterns = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
con = duckdb.connect()
def med(f):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)
out = []
for name, tp, where in patterns:
    n_py = len(pycottas.search(theirs, tp))
    out.append({
        "name": name,
        "pycottas_rows": n_py,
        "pycottas_ms": med(lambda: pycottas.search(theirs, tp)),
        "duckdb_ms": med(lambda: con.execute(f"SELECT s, p, o, g FROM read_parquet('{theirs}') WHERE {where}").fetchall()),
        "duckdb_rows": len(con.execute(f"SELECT s, p, o, g FROM read_parquet('{theirs}') WHERE {where}").fetchall()),
        "duckdb_ours_ms": med(lambda: con.execute(f"SELECT s, p, o, g FROM read_parquet('{ours}') WHERE {where}").fetchall()),
    })
print(json.dumps(out))
'''
    pats = json.dumps([(n, tp(p), where(p)) for n, p in PATTERNS])
    p = subprocess.run([python, "-c", code, theirs, ours, str(runs), pats], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(p.stderr)
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quads", type=int, default=1_000_000)
    ap.add_argument("--work", default="/tmp/cottas-bench")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--skip-pycottas-import", action="store_true", help="reuse an earlier pycottas file")
    ap.add_argument("--import-runs", type=int, default=3,
                    help="our imports are timed this many times (median)")
    ap.add_argument("--pycottas-runs", type=int, default=1,
                    help="pycottas's import takes about a minute: this many runs (median), interleaved with ours")
    ap.add_argument("--zstd-levels", default="3:9,9:9,6:9,19:19",
                    help="also import at these levels: S or S:SMALL (s column : p/o/g columns)")
    a = ap.parse_args()
    python = os.environ.get("COTTAS_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))
    os.makedirs(a.work, exist_ok=True)
    nq = os.path.join(a.work, f"lubm-{a.quads}.nq")
    if not os.path.exists(nq):
        subprocess.run([sys.executable, os.path.join(ROOT, "benches", "gen_lubm.py"), str(a.quads), nq], check=True)
    quads = count_lines(nq)
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)

    store = os.path.join(a.work, "ours")
    theirs = os.path.join(a.work, "pycottas.cottas")
    # Ours and pycottas's runs alternate, so a slow spell of the machine
    # (this VM's speed drifts by ±20%) falls on both rather than on one.
    runs, py_runs = [], []
    py_count = 0 if (a.skip_pycottas_import and os.path.exists(theirs)) else max(1, a.pycottas_runs)
    for i in range(max(a.import_runs, py_count, 1)):
        if i < max(1, a.import_runs):
            subprocess.run(["rm", "-rf", store], check=True)
            runs.append(run_measured([BIN, "import", nq, "--out", store, "--quiet"]))
        if i < py_count:
            if os.path.exists(theirs):
                os.remove(theirs)
            py_runs.append(run_measured([python, "-m", "pycottas", "rdf2cottas", "-r", nq, "-c", theirs, "-i", "spog"], cwd=a.work))
    ours_t = statistics.median(r[0] for r in runs)
    ours_rss = max(r[1] for r in runs)
    ours_size = os.path.getsize(os.path.join(store, "v1", "data.cottas"))
    if py_runs:
        py_t = statistics.median(r[0] for r in py_runs)
        py_rss = max(r[1] for r in py_runs)
    else:
        py_t, py_rss = float("nan"), float("nan")
    py_size = os.path.getsize(theirs)
    levels = []
    for spec in [x for x in a.zstd_levels.split(",") if x]:
        big, _, small = spec.partition(":")
        small = small or big
        d = os.path.join(a.work, f"ours-z{big}-{small}")
        ts = []
        for _ in range(max(1, a.import_runs)):
            subprocess.run(["rm", "-rf", d], check=True)
            ts.append(run_measured([BIN, "import", nq, "--out", d, "--quiet", "--zstd-level", big, "--zstd-level-small", small])[0])
        t = statistics.median(ts)
        levels.append((f"{big} (s) / {small} (p, o, g)", t, os.path.getsize(os.path.join(d, "v1", "data.cottas"))))

    lookups = py_timings(python, theirs, os.path.join(store, "v1", "data.cottas"), a.runs)
    rows = []
    for (name, pat), other in zip(PATTERNS, lookups):
        n, ms = ours_lookup(store, pat, a.runs * 10)
        assert n == other["pycottas_rows"] == other["duckdb_rows"], (name, n, other)
        rows.append((name, n, ms, other))

    mib = 1 << 20
    print(f"## Run of {time.strftime('%Y-%m-%d')}: {quads:,} quads (`benches/bench.py --quads {a.quads}`)\n")
    print(f"Import times are medians: ours of {len(runs)} runs, pycottas's of {len(py_runs)}, alternating.")
    print(f"Ours: {', '.join(f'{r[0]:.2f}' for r in runs)} s; pycottas: {', '.join(f'{r[0]:.1f}' for r in py_runs)} s.\n")
    print("| import | wall s | peak RSS MiB | bytes/quad |")
    print("|---|---|---|---|")
    print(f"| cottas-tui import | {ours_t:.2f} | {ours_rss / mib:.0f} | {ours_size / quads:.2f} |")
    print(f"| pycottas rdf2cottas | {py_t:.1f} | {py_rss / mib:.0f} | {py_size / quads:.2f} |")
    print(f"| **ratio** (pycottas / ours) | **{py_t / ours_t:.1f}×** | {py_rss / ours_rss:.1f}× | {py_size / ours_size:.2f}× |\n")
    if levels:
        print("| ZSTD levels | import s | vs pycottas time | bytes/quad | vs pycottas size |")
        print("|---|---|---|---|---|")
        for lvl, t, size in levels:
            print(f"| {lvl} | {t:.2f} | {py_t / t:.1f}× faster | {size / quads:.2f} | {size / py_size:.2f}× |")
        print()
    print("| warm lookup | rows | cottas-tui ms | pycottas.search ms | DuckDB ms | DuckDB on our file ms | vs pycottas | vs DuckDB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, ms, o in rows:
        print(f"| {name} | {n:,} | {ms:.3f} | {o['pycottas_ms']:.1f} | {o['duckdb_ms']:.1f} | {o['duckdb_ours_ms']:.1f} | "
              f"{o['pycottas_ms'] / ms:.0f}× | {o['duckdb_ms'] / ms:.0f}× |")


if __name__ == "__main__":
    main()
