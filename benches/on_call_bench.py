#!/usr/bin/env python3
"""What the footer copy and the damage checks cost, whole process.

Side by side in one run, an older release binary (`--before`, built from the
commit before the footer copy) and this one (`--after`):
  * `versions` and a one-pattern `ASK` on each store given (what opening a
    version costs: the version listing now checks every base's length,
    magic and footer against its recorded digests);
  * importing the first `--import-lines` lines of `--input` (the import now
    writes `cottas-tui.footer`).
Then, with this binary only, on each store: `index` where the version has
no footer copy yet, the copy's size, and `repair restore-footer --yes` after
one changed footer byte (less its closing verify, timed apart), and
`verify` finding the damage.

  python3 benches/on_call_bench.py --before /tmp/cottas-9f8 \\
      --after target/release/cottas-tui --input l10m.nq \\
      --store 10M=/work/bench/ours10m --store 100M=/work/s100/ours
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, runs=7):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - started)
        if r.returncode not in (0, 1):
            sys.exit(f"{cmd}: exit {r.returncode}: {r.stderr[:400]!r}")
    return statistics.median(times)


def footer_field(binary, base, suffix):
    out = subprocess.run([binary, "dump", "--json", "--spans", base], capture_output=True, check=True).stdout
    spans = json.loads(out)["spans"]
    return next(s["start"] for s in spans if s["name"].endswith(suffix))


def restore(binary, store):
    version = os.path.basename(os.path.realpath(os.path.join(store, "current")))
    vdir = os.path.join(store, version)
    if not os.path.exists(os.path.join(vdir, "cottas-tui.footer")):
        started = time.perf_counter()
        subprocess.run([binary, "repair", "rebuild-sidecars", store, version, "--yes"], capture_output=True, check=True)
        print(f"  index (writes the copy): {time.perf_counter() - started:.1f} s")
    copy = os.path.getsize(os.path.join(vdir, "cottas-tui.footer"))
    base = os.path.join(vdir, "data.cottas")
    print(f"  footer copy: {copy / 1024:.0f} KiB for a {os.path.getsize(base) / 2**20:.0f} MiB base")
    at = footer_field(binary, base, "columns[1].meta_data.data_page_offset")
    with open(base, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x04]))
    started = time.perf_counter()
    r = subprocess.run([binary, "verify", "--json", store], capture_output=True)
    found = [f for f in json.loads(r.stdout)["findings"] if f["check"] == "footer"]
    print(f"  verify finds it: {time.perf_counter() - started:.1f} s, at byte {found[0]['offset']} (changed {at})")
    started = time.perf_counter()
    r = subprocess.run([binary, "repair", "restore-footer", store, version, "--yes"], capture_output=True)
    total = time.perf_counter() - started
    # The repair ends with a verify of the chunk; a verify of the mended
    # chunk alone is timed next and taken off.
    started = time.perf_counter()
    clean = subprocess.run([binary, "verify", store], capture_output=True).returncode == 0
    verify = time.perf_counter() - started
    print(
        f"  restore-footer --yes: {total:.1f} s (exit {r.returncode}), of which its closing verify ≈ {verify:.1f} s"
        f" (clean: {clean}): ≈ {total - verify:.1f} s to write, check and swap the base"
    )
    backups = os.path.join(store, "cottas-tui-backups")
    newest = sorted(os.listdir(backups))[-1]
    shutil.rmtree(os.path.join(backups, newest))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--import-lines", type=int, default=1_000_000)
    ap.add_argument("--store", action="append", default=[], help="NAME=CHUNK_DIR")
    args = ap.parse_args()
    stores = [s.split("=", 1) for s in args.store]
    print("| | before | after | after / before |")
    print("|---|---|---|---|")
    for name, store in stores:
        for what, cmd in [("versions", ["versions", store]), ("ASK", ["query", store, "-e", "ASK { ?s ?p ?o }"])]:
            b, a = timed([args.before] + cmd), timed([args.after] + cmd)
            print(f"| `{what}` at {name} | {b * 1000:.1f} ms | {a * 1000:.1f} ms | {a / b:.2f} |")
    with tempfile.TemporaryDirectory() as work:
        sample = os.path.join(work, "sample.nq")
        with open(args.input) as src, open(sample, "w") as dst:
            for i, line in enumerate(src):
                if i == args.import_lines:
                    break
                dst.write(line)
        result = {}
        for name, binary in [("before", args.before), ("after", args.after)]:
            times = []
            for k in range(3):
                out = os.path.join(work, f"{name}{k}")
                started = time.perf_counter()
                subprocess.run([binary, "import", "--out", out, sample], capture_output=True, check=True)
                times.append(time.perf_counter() - started)
                shutil.rmtree(out)
            result[name] = statistics.median(times)
        n = args.import_lines / 1e6
        print(f"| import of {n:g}M quads | {result['before']:.2f} s | {result['after']:.2f} s | {result['after'] / result['before']:.2f} |")
    for name, store in stores:
        print(f"{name}:")
        restore(args.after, store)


if __name__ == "__main__":
    main()
