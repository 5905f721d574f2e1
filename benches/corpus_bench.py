#!/usr/bin/env python3
"""A corpus of chunks with pending deltas: corpus list / verify / export, and
the same queries three ways, whole process each: `cottas-tui query` over the
corpus root, DuckDB over the exported views, Spark local over them.

    benches/corpus_bench.py --work DIR [--chunks 10] [--quads-per-chunk 1000000]
        [--bin target/release/cottas-tui] [--python .venv/bin/python] [--runs 3]

The first run builds DIR/corpus: benches/gen_lubm.py makes CHUNKS × QUADS
quads, split into CHUNKS files in order (each holds whole universities, so
each chunk has its own named graphs), each imported as a chunk; then every
chunk gets one update batch inserting 1,000 quads and one deleting 1,000.
Each timing is the median of --runs whole-process runs, after one warm-up
(the files are in the page cache: the numbers compare engines, not disks).
Every engine's answer to every query must be the same, or the run stops.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

UB = "http://swat.cse.lehigh.edu/onto/univ-bench.owl#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"

# (name, SPARQL); each answers one number. The engines run what
# `cottas-tui corpus sql` translates it into, as a user would.
PREFIX = f"PREFIX ub: <{UB}> "
QUERIES = [
    ("count all quads", "SELECT (COUNT(*) AS ?n) { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"),
    ("count one class", PREFIX + "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x a ub:GraduateStudent } }"),
    ("distinct predicates", PREFIX + "SELECT (COUNT(*) AS ?n) { SELECT DISTINCT ?p { GRAPH ?g { ?s ?p ?o } } }"),
    ("one subject's quads",
     "SELECT (COUNT(*) AS ?n) { GRAPH ?g { <http://www.Department0.University0.edu/GraduateStudent0> ?p ?o } }"),
    ("join: advisors' names", PREFIX + "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x ub:advisor ?a . ?a ub:name ?name } }"),
    ("filter: names starting GraduateStudent1",
     PREFIX + 'SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x ub:name ?name FILTER(STRSTARTS(?name, "GraduateStudent1")) } }'),
    # Analytic shapes (#45), each reduced to one number.
    ("grouped count: the largest class",
     PREFIX + "SELECT (MAX(?k) AS ?n) { SELECT ?c (COUNT(*) AS ?k) { GRAPH ?g { ?x a ?c } } GROUP BY ?c }"),
    ("SUM of ages", PREFIX + "SELECT (SUM(?a) AS ?n) { GRAPH ?g { ?x ub:age ?a } }"),
    ("COUNT DISTINCT courses taken",
     PREFIX + "SELECT (COUNT(DISTINCT ?c) AS ?n) { GRAPH ?g { ?x ub:takesCourse ?c } }"),
    ("MINUS: students without an email",
     PREFIX + "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x a ub:GraduateStudent MINUS { ?x ub:emailAddress ?e } } }"),
    ("NOT EXISTS: undergraduates without an email",
     PREFIX + "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x a ub:UndergraduateStudent "
     "FILTER NOT EXISTS { ?x ub:emailAddress ?e } } }"),
    ("VALUES join: two classes' names",
     PREFIX + "SELECT (COUNT(*) AS ?n) { VALUES ?c { ub:Lecturer ub:FullProfessor } GRAPH ?g { ?x a ?c ; ub:name ?name } }"),
    ("top value: the oldest age", PREFIX + "SELECT (MAX(?a) AS ?n) { GRAPH ?g { ?x ub:age ?a } }"),
    ("+ path: faculty to their university",
     PREFIX + "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?x (ub:worksFor|ub:subOrganizationOf)+ ?u } }"),
]

# Spark SQL 4.0 has no recursive query: `corpus sql` refuses these for it.
NOT_ON_SPARK = {"+ path: faculty to their university"}

DUCKDB = r"""
import duckdb, sys
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
# Spill beside the export, not into the cwd (a checkout): 16 GB at 10x10M.
con.execute("SET temp_directory = '" + sys.argv[1].replace("'", "''") + ".spill'")
con.execute(open(sys.argv[1]).read())
print(con.execute(sys.argv[2]).fetchone()[0])
"""

SPARK = r"""
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
         .config("spark.driver.memory", "4g").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for part in open(sys.argv[1]).read().split(";\n"):
    text = "\n".join(l for l in part.splitlines() if not l.startswith("--")).strip()
    if text:
        spark.sql(text)
print(spark.sql(sys.argv[2]).collect()[0][0])
spark.stop()
"""


def timed(cmd, env=None):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t
    if out.returncode not in (0, 1):
        sys.exit(f"{cmd}: exit {out.returncode}\n{out.stderr}")
    return dt, out.stdout


WARM_UP = True


def median_of(cmd, runs, env=None):
    if WARM_UP:
        timed(cmd, env)
    times, out = [], ""
    for _ in range(runs):
        dt, out = timed(cmd, env)
        times.append(dt)
    return statistics.median(times), out


def build(args, corpus):
    here = os.path.dirname(os.path.abspath(__file__))
    total = args.chunks * args.quads_per_chunk
    nq = os.path.join(args.work, f"lubm-{total}.nq")  # reused when present
    if not os.path.exists(nq):
        subprocess.run([sys.executable, os.path.join(here, "gen_lubm.py"), str(total), nq], check=True)
    os.makedirs(corpus, exist_ok=True)
    with open(nq, encoding="utf-8") as f:
        for c in range(args.chunks):
            part = os.path.join(args.work, f"part-{c:02}.nq")
            with open(part, "w", encoding="utf-8") as out:
                for _ in range(args.quads_per_chunk):
                    out.write(f.readline())
            chunk = os.path.join(corpus, f"c{c:02}")
            subprocess.run([args.bin, "import", part, "--out", chunk], check=True, capture_output=True)
            os.remove(part)
            inserts = " ".join(f"<http://bench.example/c{c}/s{i}> <http://bench.example/p> {i} ." for i in range(1000))
            subprocess.run([args.bin, "update", chunk, "-e", f"INSERT DATA {{ {inserts} }}"], check=True,
                           capture_output=True)
            delete = ("DELETE { GRAPH ?g { ?s ?p ?o } } WHERE { SELECT ?g ?s ?p ?o "
                      f"{{ GRAPH ?g {{ ?s <{UB}emailAddress> ?o . BIND(<{UB}emailAddress> AS ?p) }} }} LIMIT 1000 }}")
            subprocess.run([args.bin, "update", chunk, "-e", delete], check=True, capture_output=True)


def bound_subject(args, corpus):
    """A lookup of one subject over the corpus against the same lookup on the
    one chunk that holds it, whole process, median of `--lookup-rounds`
    rounds that alternate the two targets (so drift hits both alike): the
    corpus must cost at most 2x (chunks are folded only when reached)."""
    chunk = os.path.join(corpus, f"c{args.chunks // 2:02}")
    first = subprocess.run([args.bin, "query", chunk, "--format", "tsv", "-e",
                            "SELECT ?s { GRAPH ?g { ?s ?p ?o } } LIMIT 1"],
                           capture_output=True, text=True, check=True).stdout.splitlines()[1]
    print(f"| bound subject {first} | corpus | the chunk alone | ratio |")
    print("|---|---|---|---|")
    for shape, q in [("GRAPH ?g { S ?p ?o }", f"SELECT ?p ?o {{ GRAPH ?g {{ {first} ?p ?o }} }}"),
                     ("GRAPH ?g { ?s ?p S }", f"SELECT ?s ?p {{ GRAPH ?g {{ ?s ?p {first} }} }}"),
                     ("ASK {}", "ASK {}")]:
        times = {corpus: [], chunk: []}
        for _ in range(args.lookup_rounds):
            for target in (corpus, chunk):
                times[target].append(timed([args.bin, "query", target, "--format", "tsv", "-e", q])[0])
        t = [statistics.median(times[target]) for target in (corpus, chunk)]
        print(f"| {shape} | {t[0] * 1e3:.1f} ms | {t[1] * 1e3:.1f} ms | {t[0] / t[1]:.2f}x |", flush=True)


def spark_start_up(args, export):
    """Spark's fixed cost, timed apart: a process that starts its session,
    defines the views and answers `SELECT 1`. Each query's Spark time below
    includes it once."""
    t, out = median_of([args.python, "-c", SPARK, os.path.join(export, "spark.sql"), "SELECT 1"], args.runs)
    if out.strip().splitlines()[-1].strip() != "1":
        sys.exit(f"Spark's start-up query answered {out!r}")
    print(f"Spark start-up (session, views, SELECT 1): {t:.2f} s", flush=True)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--quads-per-chunk", type=int, default=1_000_000)
    ap.add_argument("--bin", default="target/release/cottas-tui")
    ap.add_argument("--python", default=".venv/bin/python")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--build-only", action="store_true", help="make the corpus and stop")
    ap.add_argument("--no-warm-up", action="store_true", help="when the files are already in the page cache")
    ap.add_argument("--only", help="run only the queries whose name contains one of these (comma-separated)")
    ap.add_argument("--lookup-rounds", type=int, default=31, help="rounds of the bound-subject comparison")
    ap.add_argument("--lookups-only", action="store_true", help="only the bound-subject comparison")
    args = ap.parse_args()
    global WARM_UP
    WARM_UP = not args.no_warm_up
    corpus = os.path.join(args.work, "corpus")
    export = os.path.join(args.work, "export")
    os.makedirs(args.work, exist_ok=True)
    if not os.path.isdir(corpus):
        build(args, corpus)
    if args.build_only:
        return

    print(f"corpus: {args.chunks} chunks x {args.quads_per_chunk:,} quads, each with 1,000 inserts and 1,000 deletes pending")
    if args.lookups_only:
        bound_subject(args, corpus)
        return
    for name, cmd in [
        ("corpus list", [args.bin, "corpus", "list", corpus]),
        ("corpus verify --jobs 2", [args.bin, "corpus", "verify", corpus, "--jobs", "2"]),
        ("corpus export", [args.bin, "corpus", "export", corpus, "--out", export, "--force"]),
    ]:
        t, _ = median_of(cmd, args.runs)
        print(f"| {name} | {t:.2f} s |")
    manifest = json.load(open(os.path.join(export, "manifest.json")))
    adds = sum(c["delta"]["adds"] for c in manifest["chunks"] if c["delta"])
    removes = sum(c["delta"]["removes"] for c in manifest["chunks"] if c["delta"])
    print(f"export: {adds:,} '+' rows and {removes:,} '-' rows")

    bound_subject(args, corpus)

    start_up = None if args.no_spark else spark_start_up(args, export)
    print("| query | cottas-tui query | DuckDB | Spark local | Spark less start-up | answer |")
    print("|---|---|---|---|---|---|")
    for name, sparql in QUERIES:
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        def sql(dialect):
            out = subprocess.run([args.bin, "corpus", "sql", corpus, "--dialect", dialect, "-e", sparql],
                                 capture_output=True, text=True, check=True)
            return out.stdout.strip()
        t_ours, ours = median_of([args.bin, "query", corpus, "--format", "tsv", "-e", sparql], args.runs)
        ours = ours.splitlines()[1].split("^^")[0].strip('"')
        t_duck, duck = median_of([args.python, "-c", DUCKDB, os.path.join(export, "duckdb.sql"), sql("duckdb")],
                                 args.runs)
        row = [f"{t_ours:.2f} s", f"{t_duck:.2f} s"]
        def number(token):
            return token.strip().split("^^")[0].strip('"')
        answers = {ours, number(duck)}
        if args.no_spark or name in NOT_ON_SPARK:
            row += ["-", "-"]
        else:
            t_spark, spark = median_of([args.python, "-c", SPARK, os.path.join(export, "spark.sql"), sql("spark")],
                                       args.runs)
            row += [f"{t_spark:.2f} s", f"{t_spark - start_up:.2f} s"]
            answers.add(number(spark.strip().splitlines()[-1]))
        if len(answers) != 1:
            sys.exit(f"{name}: the engines disagree: {answers}")
        print(f"| {name} | {' | '.join(row)} | {ours} |", flush=True)


if __name__ == "__main__":
    main()
