#!/usr/bin/env python3
"""Import speed against pycottas on several inputs, whole process, side by side.

    benches/import_inputs.py [--python .venv/bin/python] [--runs 3] [--work DIR] INPUT.nq...

pycottas's cost depends on the data, so one generator's ratio says little.
For each input this runs `cottas-tui import` and `python -m pycottas
rdf2cottas -i spog` alternately (--runs each), checks that both files hold the
same number of distinct quads (ours from our summary, pycottas's counted by
DuckDB), and prints a markdown table of medians and ratios.

Inputs used in docs/benchmarks.md and docs/benchmarks-history.md:
  * benches/gen_lubm.py output (LUBM-like, 1M quads);
  * the 106 vocabularies the npm package @zazuko/vocabularies@4 ships as
    N-Quads (schema.org, DBpedia's ontology, Dublin Core, ...), one file with
    each file's blank-node labels made distinct (see vocabularies() below);
  * the same vocabularies repeated with each copy in its own graphs (so the
    dictionaries are real text and the file is large enough to time).
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "cottas-tui")


def timed(cmd, cwd=None):
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} -> {r.returncode}: {r.stderr[-800:]}")
    return wall, int(r.stderr.strip().splitlines()[-1]) / 1024, r.stdout + r.stderr


def vocabularies(node_modules, out, copies=1):
    """Concatenates every .nq file under `node_modules` into `out`, with
    blank-node labels made distinct per file (and per copy, whose graph IRIs
    get a `copyN` suffix)."""
    files = sorted(glob.glob(os.path.join(node_modules, "**", "*.nq"), recursive=True))
    blank = re.compile(r"(?<![\"\w])_:([A-Za-z0-9_]+)")
    graph = re.compile(r"<([^>]*)> \.\s*$")
    n = 0
    with open(out, "w", encoding="utf-8") as w:
        for copy in range(copies):
            for i, f in enumerate(files):
                for line in open(f, encoding="utf-8"):
                    if not line.strip():
                        continue
                    if "_:" in line:
                        line = blank.sub(lambda m: f"_:c{copy}f{i}x{m.group(1)}", line)
                    if copies > 1:
                        line = graph.sub(lambda m: f"<{m.group(1)}copy{copy}> .\n", line)
                    w.write(line)
                    n += 1
    return n


def distinct_ours(text):
    m = re.search(r"\((\d+) distinct\)", text)
    return int(m.group(1)) if m else None


def rows_theirs(python, path):
    # DuckDB draws a progress bar on stdout for long queries (10M rows): off.
    code = (
        "import duckdb; c = duckdb.connect(); c.execute('SET enable_progress_bar = false'); "
        f"print(c.sql(\"SELECT count(*) FROM (SELECT DISTINCT * FROM read_parquet('{path}'))\").fetchone()[0])"
    )
    return int(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="/tmp/cottas-import-inputs")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    print("| input | quads | cottas-tui s | RSS MiB | pycottas s | RSS MiB | pycottas / ours |")
    print("|---|---|---|---|---|---|---|")
    for nq in a.inputs:
        ours_t, theirs_t, ours_rss, theirs_rss = [], [], 0, 0
        distinct = rows = None
        for _ in range(a.runs):
            out = os.path.join(a.work, "ours")
            shutil.rmtree(out, ignore_errors=True)
            w, r, text = timed([BIN, "import", nq, "--out", out, "--quiet"])
            ours_t.append(w)
            ours_rss = max(ours_rss, r)
            distinct = distinct_ours(text) or distinct
            theirs = os.path.join(a.work, "theirs.cottas")
            if os.path.exists(theirs):
                os.remove(theirs)
            w, r, _ = timed([a.python, "-m", "pycottas", "rdf2cottas", "-r", os.path.abspath(nq), "-c", theirs, "-i", "spog"], cwd=a.work)
            theirs_t.append(w)
            theirs_rss = max(theirs_rss, r)
            rows = rows_theirs(a.python, theirs)
            print(f"  {os.path.basename(nq)}: ours {ours_t[-1]:.2f} s, pycottas {theirs_t[-1]:.1f} s", file=sys.stderr, flush=True)
        if distinct is not None and rows != distinct:
            print(f"  NOTE {nq}: ours {distinct} distinct quads, pycottas's file {rows} distinct rows", file=sys.stderr)
        mo, mt = statistics.median(ours_t), statistics.median(theirs_t)
        label = f"{distinct:,}" if distinct == rows else f"{distinct:,} (pycottas: {rows:,})"
        print(f"| {os.path.basename(nq)} | {label} | {mo:.2f} | {ours_rss:.0f} | {mt:.1f} | {theirs_rss:.0f} | {mt / mo:.1f}× |")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--make-vocabularies":
        # benches/import_inputs.py --make-vocabularies NODE_MODULES OUT.nq [COPIES]
        copies = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        print(vocabularies(sys.argv[2], sys.argv[3], copies))
    else:
        main()
