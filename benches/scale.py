#!/usr/bin/env python3
"""The store at scale: cottas-tui against pyoxigraph 0.5's on-disk store,
side by side in one run, whole process, on LUBM-like data of each size.

    benches/scale.py [--sizes 1000000,10000000,100000000] [--work DIR] [--runs 3]
                     [--oxigraph-max 10000000] [--delta 1000000]

For each size: generate the N-Quads file (benches/gen_lubm.py; deleted after
use unless --keep-input, the 100M file is about 18 GB), import it with
cottas-tui and bulk-load it into pyoxigraph (its own venv under WORK, so the
anchor is 0.5.x whatever pycottas pins), then run every query class with both,
alternating, as whole processes (Python start-up included on Oxigraph's side),
over the union of all graphs (`--union-default-graph` /
`use_default_graph_as_union`). Each answer is checked: row counts must be
equal, and sorted rows too where the query's answer is fixed (LIMIT without
ORDER BY may pick any rows). Above --oxigraph-max quads pyoxigraph is not
loaded (at 100M its store would be about 31 GB beside an 18 GB input on this
machine's disk): our own curve is shown. Then, on a copy, one `update` as a
process, a delta of --delta quads through `update -f` (requests of 100,000
quads), compaction of base + delta, and verify of the result.

Prints markdown tables; docs/benchmarks.md keeps them.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "cottas-tui")
UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
P = f"PREFIX ub: <{UB}> "
D0 = "http://www.Department0.University0.edu"

# (name, query, answer is fixed: compare sorted rows, not only counts)
QUERIES = [
    ("open + ASK {}", "ASK {}", True),
    ("bound subject", f"SELECT ?p ?o WHERE {{ <{D0}/AssistantProfessor0> ?p ?o }}", True),
    ("bound object", f"SELECT ?s ?p WHERE {{ ?s ?p <{D0}/AssistantProfessor0> }}", True),
    ("LIMIT 10 over everything", "SELECT * WHERE { ?s ?p ?o } LIMIT 10", False),
    ("COUNT(*) of everything", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", True),
    ("count of one class", P + "SELECT (COUNT(*) AS ?n) WHERE { ?x a ub:UndergraduateStudent }", True),
    ("all members of one class", P + "SELECT ?x WHERE { ?x a ub:UndergraduateStudent }", True),
    ("two patterns through a bound IRI", P + f"SELECT ?x WHERE {{ ?x a ub:GraduateStudent ; ub:takesCourse <{D0}/GraduateCourse0> }}", True),
    ("three patterns through a bound IRI", P + f"SELECT ?x ?n WHERE {{ ?x a ub:FullProfessor ; ub:worksFor <{D0}> ; ub:name ?n }}", True),
    ("cyclic join, LIMIT 10", P + "SELECT ?x ?y ?c WHERE { ?x ub:advisor ?y . ?y ub:teacherOf ?c . ?x ub:takesCourse ?c } LIMIT 10", False),
    ("DISTINCT ?p", "SELECT DISTINCT ?p WHERE { ?s ?p ?o }", True),
    ("string FILTER, LIMIT 50", P + 'SELECT ?x ?n WHERE { ?x ub:name ?n FILTER(STRSTARTS(?n, "GraduateStudent1")) } LIMIT 50', False),
    ("OPTIONAL", P + f"SELECT ?x ?e WHERE {{ ?x ub:worksFor <{D0}> OPTIONAL {{ ?x ub:emailAddress ?e }} }}", True),
]

OX_QUERY = r"""
import sys, pyoxigraph as ox
store = ox.Store.read_only(sys.argv[1])
r = store.query(sys.argv[2], use_default_graph_as_union=True)
out = sys.stdout.buffer
if isinstance(r, bool):
    out.write(b"true\n" if r else b"false\n")
else:
    r.serialize(out, ox.QueryResultsFormat.TSV)
"""

OX_LOAD = r"""
import sys, pyoxigraph as ox
store = ox.Store(sys.argv[2])
store.bulk_load(path=sys.argv[1], format=ox.RdfFormat.N_QUADS)
store.flush()
store.optimize()
"""


def timed(cmd, stdout=subprocess.DEVNULL):
    """Wall seconds and peak RSS (MiB) of a whole process."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=stdout, stderr=subprocess.PIPE, text=False)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} -> {r.returncode}: {r.stderr.decode()[-800:]}")
    rss = int(r.stderr.decode().strip().splitlines()[-1]) / 1024
    return wall, rss, r.stdout


def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()[0])


def ox_python(work):
    venv = os.path.join(work, "oxvenv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "pyoxigraph>=0.5,<0.6"], check=True)
    version = subprocess.run([py, "-c", "import pyoxigraph; print(pyoxigraph.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    return py, version


def rows(tsv_bytes):
    """Result rows without the header, sorted; literals as both write them."""
    lines = tsv_bytes.decode("utf-8").splitlines()
    if lines and lines[0].startswith("?"):
        lines = lines[1:]
    return sorted(canonical(line) for line in lines if line != "")


def canonical(line):
    # TSV lets a writer shorten xsd:integer literals to their digits.
    xsd_int = '^^<http://www.w3.org/2001/XMLSchema#integer>'
    cells = []
    for c in line.split("\t"):
        if c.startswith('"') and c.endswith(xsd_int):
            c = c[1:-len(xsd_int) - 1]
        cells.append(c)
    return "\t".join(cells)


def measure(size, a, py):
    work = a.work
    nq = os.path.join(work, f"lubm-{size}.nq")
    ours = os.path.join(work, f"ours-{size}")
    ox = os.path.join(work, f"ox-{size}")
    out = {"size": size, "queries": []}
    with_ox = size <= a.oxigraph_max
    # The input is made only when a store is missing: generating 21 GB at
    # 100M quads would also push the stores out of the page cache.
    missing = not os.path.exists(ours) or (with_ox and not os.path.exists(ox))
    if missing and not os.path.exists(nq):
        subprocess.run([sys.executable, os.path.join(ROOT, "benches", "gen_lubm.py"), str(size), nq], check=True)
    if not os.path.exists(ours):
        w, r, _ = timed([BIN, "import", nq, "--out", ours, "--quiet"])
        out["import"] = (w, r, du(ours))
    if with_ox and not os.path.exists(ox):
        w, r, _ = timed([py, "-c", OX_LOAD, nq, ox])
        out["ox_load"] = (w, r, du(ox))
    if os.path.exists(nq) and not a.keep_input:
        os.remove(nq)
    for name, q, fixed in QUERIES:
        times = {"ours": [], "ox": []}
        rss = {}
        answers = {}
        for _ in range(a.runs):
            for who in ("ours", "ox") if with_ox else ("ours",):
                cmd = ([BIN, "query", ours, "--union-default-graph", "--format", "tsv", "-e", q] if who == "ours"
                       else [py, "-c", OX_QUERY, ox, q])
                w, r, stdout = timed(cmd, stdout=subprocess.PIPE)
                times[who].append(w)
                rss[who] = max(rss.get(who, 0), r)
                answers[who] = rows(stdout)
        mo = statistics.median(times["ours"])
        if with_ox:
            same_count = len(answers["ours"]) == len(answers["ox"])
            check = ("✓ rows" if answers["ours"] == answers["ox"] else "✗ rows") if fixed else ("= count" if same_count else "✗ count")
            if not same_count:
                check = f"✗ {len(answers['ours'])} vs {len(answers['ox'])} rows"
            mx, rx = statistics.median(times["ox"]), rss["ox"]
        else:
            check, mx, rx = "—", None, None
        out["queries"].append((name, mo, rss["ours"], mx, rx, len(answers["ours"]), check))
        print(f"  {name}: ours {mo:.3f} s, oxigraph {mx if mx is None else round(mx, 3)} s, {check}", file=sys.stderr, flush=True)
    out["writes"] = writes(ours, work, size, a.delta)
    return out


def writes(ours, work, size, delta):
    """One update as a process, a delta of `delta` quads, compaction of base +
    delta, verify of the result."""
    copy = os.path.join(work, f"ours-{size}-copy")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ours, copy, symlinks=True)
    upd = timed([BIN, "update", copy, "-e", "INSERT DATA { <http://scale/x> <http://scale/p> 1 . <http://scale/y> <http://scale/p> 2 }"])
    bulk = (0.0, 0.0)
    if delta > 2:
        files = []
        for start in range(0, delta, 100_000):
            path = os.path.join(work, f"delta-{start}.ru")
            with open(path, "w") as f:
                f.write("INSERT DATA { GRAPH <http://scale/delta> {\n")
                for i in range(start, min(start + 100_000, delta)):
                    f.write(f"<http://scale/s{i // 10}> <http://scale/p{i % 7}> \"value {i}\" .\n")
                f.write("} }\n")
            files.append(path)
        args = [BIN, "update", copy]
        for path in files:
            args += ["-f", path]
        bulk = timed(args)[:2]
        for path in files:
            os.remove(path)
    comp = timed([BIN, "compact", copy])
    ver = timed([BIN, "verify", copy])
    shutil.rmtree(copy)
    return {"update": upd[:2], "delta": bulk, "delta_quads": max(delta, 2), "compact": comp[:2], "verify": ver[:2]}


def report(results, version, runs):
    print(f"## Scale run of {time.strftime('%Y-%m-%d')} (`benches/scale.py`), pyoxigraph {version}\n")
    print(f"Whole processes, median of {runs} alternating runs; union of all graphs.\n")
    for r in results:
        n = r["size"]
        print(f"### {n:,} quads\n")
        if "import" in r:
            w, rss, b = r["import"]
            print(f"- cottas-tui import: {w:.1f} s, peak RSS {rss:.0f} MiB, {b / 1e6:.0f} MB on disk ({n / w / 1e6:.2f} M quads/s)")
        if "ox_load" in r:
            w, rss, b = r["ox_load"]
            print(f"- pyoxigraph bulk load: {w:.1f} s, peak RSS {rss:.0f} MiB, {b / 1e6:.0f} MB on disk")
        wr = r["writes"]
        print(f"- one `update` (a process): {wr['update'][0] * 1000:.0f} ms, {wr['update'][1]:.0f} MiB")
        if wr["delta"][0]:
            print(f"- a delta of {wr['delta_quads']:,} quads through `update -f`: {wr['delta'][0]:.1f} s, {wr['delta'][1]:.0f} MiB")
        print(f"- compaction (+{wr['delta_quads']:,} quads): {wr['compact'][0]:.1f} s, {wr['compact'][1]:.0f} MiB; "
              f"verify of the result: {wr['verify'][0]:.1f} s, {wr['verify'][1]:.0f} MiB\n")
        print("| query | rows | cottas-tui s | RSS MiB | pyoxigraph s | RSS MiB | oxigraph / ours | answers |")
        print("|---|---|---|---|---|---|---|---|")
        for name, mo, ro, mx, rx, nrows, check in r["queries"]:
            if mx is None:
                print(f"| {name} | {nrows:,} | {mo:.3f} | {ro:.0f} | — | — | — | {check} |")
            else:
                print(f"| {name} | {nrows:,} | {mo:.3f} | {ro:.0f} | {mx:.3f} | {rx:.0f} | {mx / mo:.1f}× | {check} |")
        print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--work", default="/tmp/cottas-scale")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep-input", action="store_true")
    ap.add_argument("--oxigraph-max", type=int, default=10_000_000,
                    help="largest size pyoxigraph is loaded at (its store is about 310 bytes a quad)")
    ap.add_argument("--delta", type=int, default=2, help="quads in the delta folded by the compaction")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    py, version = ox_python(a.work)
    results = []
    for size in (int(s) for s in a.sizes.split(",")):
        print(f"{size:,} quads", file=sys.stderr, flush=True)
        results.append(measure(size, a, py))
    report(results, version, a.runs)


if __name__ == "__main__":
    main()
