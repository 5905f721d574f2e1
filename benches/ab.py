#!/usr/bin/env python3
"""Two builds of cottas-tui side by side on one store, whole process.

Runs each command with the old and the new binary alternately (so drift in
the machine hits both), `--runs` times, and prints the median wall time and
the peak RSS of each, with the ratio new/old. Commands that write (update,
compact) run on fresh copies of the store, made outside the timing.

    benches/ab.py --old OLD_BIN --new NEW_BIN --store CHUNK [--runs 5]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

READS = [
    ("open + ASK {}", ["query", "{store}", "--format", "tsv", "-e", "ASK {{}}"]),
    ("lookup bound subject", ["lookup", "{store}", "-s", "{subject}"]),
    ("lookup --count bound predicate", ["lookup", "{store}", "-p", "{predicate}", "--count"]),
    ("lookup --count bound object (a class)", ["lookup", "{store}", "-o", "{klass}", "--count"]),
    ("SELECT * LIMIT 10", ["query", "{store}", "--format", "tsv", "-e", "SELECT * WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }} LIMIT 10"]),
    ("COUNT of one class", ["query", "{store}", "--format", "tsv", "-e", "SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH ?g {{ ?x a {klass} }} }}"]),
    ("COUNT(*) of everything", ["query", "{store}", "--format", "tsv", "-e", "SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"]),
    ("SELECT DISTINCT ?p", ["query", "{store}", "--format", "tsv", "-e", "SELECT DISTINCT ?p WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"]),
    ("quads of one subject (SPARQL)", ["query", "{store}", "--format", "tsv", "-e", "SELECT * WHERE {{ GRAPH ?g {{ {subject} ?p ?o }} }}"]),
    ("verify", ["verify", "{store}"]),
]


def rss_of(cmd):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return int(out.stderr.strip().splitlines()[-1]) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--work", default=None, help="where copies for compaction go (default: beside the store)")
    a = ap.parse_args()
    # A subject, predicate and class that exist, taken from the store.
    q = subprocess.run([a.new, "query", a.store, "--format", "tsv", "-e",
                        "SELECT ?s ?p ?c WHERE { GRAPH ?g { ?s a ?c . ?s ?p ?o } } LIMIT 1"],
                       capture_output=True, text=True, check=True).stdout.splitlines()[1].split("\t")
    subject, predicate, klass = q
    fill = dict(store=a.store, subject=subject, predicate=predicate, klass=klass)
    print(f"store {a.store}; subject {subject}; predicate {predicate}; class {klass}; {a.runs} runs each, alternating")
    print(f"| command | old median s | new median s | new/old | old peak RSS MiB | new peak RSS MiB |")
    print(f"|---|---|---|---|---|---|")
    for name, args in READS:
        cmd = [x.format(**fill) for x in args]
        times = {"old": [], "new": []}
        for _ in range(a.runs):
            for which in ("old", "new"):
                binary = getattr(a, which)
                t = time.perf_counter()
                r = subprocess.run([binary] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                times[which].append(time.perf_counter() - t)
                if r.returncode not in (0, 1):
                    sys.exit(f"{which} {' '.join(cmd)} -> {r.returncode}: {r.stderr.decode()[-500:]}")
        rss = {w: rss_of([getattr(a, w)] + cmd) for w in ("old", "new")}
        mo, mn = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"| {name} | {mo:.3f} | {mn:.3f} | {mn / mo:.2f} | {rss['old']:.0f} | {rss['new']:.0f} |", flush=True)
    work = a.work or os.path.dirname(os.path.abspath(a.store))
    times, rss = {"old": [], "new": []}, {"old": 0, "new": 0}
    runs = max(1, min(a.runs, 3))
    for _ in range(runs):
        for which in ("old", "new"):
            copy = tempfile.mkdtemp(prefix="ab-compact-", dir=work)
            shutil.rmtree(copy)
            shutil.copytree(a.store, copy, symlinks=True)
            binary = getattr(a, which)
            subprocess.run([binary, "update", copy, "-e", "INSERT DATA { <http://ab/x> <http://ab/p> 1 . <http://ab/y> <http://ab/p> 2 }"],
                           check=True, stdout=subprocess.DEVNULL)
            out = subprocess.run(["/usr/bin/time", "-f", "%e %M", binary, "compact", copy], capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{which} compact: {out.stderr[-500:]}")
            wall, kb = out.stderr.strip().splitlines()[-1].split()
            times[which].append(float(wall))
            rss[which] = max(rss[which], int(kb) / 1024)
            shutil.rmtree(copy)
    mo, mn = statistics.median(times["old"]), statistics.median(times["new"])
    print(f"| compact (+2 quads) | {mo:.2f} | {mn:.2f} | {mn / mo:.2f} | {rss['old']:.0f} | {rss['new']:.0f} |")


if __name__ == "__main__":
    main()
