#!/usr/bin/env python3
"""Maintenance at scale: `index` of a bare foreign base, `repair
rebuild-sidecars`, and `verify` of a foreign base, each beside the import of
the same quads: wall time and peak RSS of whole processes, in one run.

    benches/maintenance_bench.py --input FILE.nq --work DIR [--memory-limit 1G]
                                 [--python PY] [--keep] [--drop-input]
    benches/maintenance_bench.py --reuse --work DIR      # the same stores again

1. `import` FILE into WORK/ours (the reference: our writer, the same rows).
2. A foreign base: DuckDB (PY must import duckdb) rewrites
   ours/v1/data.cottas ordered by (p, o), another producer's row order, with
   no sidecars, into WORK/foreign/v1/data.cottas.
3. `index` of that bare base (rows out of SPOG order: subjects interned).
4. `verify` of the foreign version, digests removed first (every sidecar
   compared with what the rows give, nothing else to go by).
5. One byte of ours' `.o.dict` changed, then `repair rebuild-sidecars ours v1
   --yes` as a user runs it (it verifies the store afterwards: both shown).
6. `verify` of ours.

Every build and verify runs with --memory-limit (default 1G); the table
shows each peak beside it. Prints a markdown table for docs/benchmarks.md.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "cottas-tui")


def timed(cmd):
    """(wall seconds, peak RSS MiB) of a whole process, via /usr/bin/time."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} -> {r.returncode}: {r.stderr.decode()[-800:]}")
    rss = int(r.stderr.decode().strip().splitlines()[-1]) / 1024
    return wall, rss, r.stdout.decode()


def foreign_base(py, src, dst):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    script = (
        "import duckdb,sys\n"
        "c=duckdb.connect()\n"
        "c.execute(\"SET enable_progress_bar=false; SET preserve_insertion_order=false; SET threads=2; SET memory_limit='8GB'\")\n"
        "c.execute(f\"SET temp_directory='{sys.argv[3]}'\")\n"
        "c.execute(f\"COPY (SELECT s,p,o,g FROM read_parquet('{sys.argv[1]}') ORDER BY p,o) TO '{sys.argv[2]}' "
        "(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880)\")\n"
    )
    t = time.perf_counter()
    tmp = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(dst))), "duckdb-tmp")
    subprocess.run([py, "-c", script, src, dst, tmp], check=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", help="N-Quads to import (not needed with --reuse)")
    ap.add_argument("--reuse", action="store_true",
                    help="measure again on WORK's stores of an earlier --keep run (no import, no DuckDB)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--memory-limit", default="1G")
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--keep", action="store_true", help="keep WORK's stores afterwards")
    ap.add_argument("--drop-input", action="store_true", help="delete INPUT once imported (disk)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    ours, foreign = os.path.join(a.work, "ours"), os.path.join(a.work, "foreign")
    lim = ["--memory-limit", a.memory_limit]
    rows = []
    base = os.path.join(ours, "v1", "data.cottas")
    fbase = os.path.join(foreign, "v1", "data.cottas")
    if a.reuse:
        # The foreign version back to a bare base.
        for name in os.listdir(os.path.dirname(fbase)):
            if name != "data.cottas":
                os.remove(os.path.join(os.path.dirname(fbase), name))
    else:
        for d in (ours, foreign):
            shutil.rmtree(d, ignore_errors=True)
        wall, rss, _ = timed([BIN, "import", a.input, "--out", ours, "--quiet"] + lim)
        rows.append(("import (the reference)", wall, rss))
        if a.drop_input:
            os.remove(a.input)
        dt = foreign_base(a.python, base, fbase)
        print(f"(DuckDB wrote the foreign base ordered by p, o in {dt:.1f} s)", file=sys.stderr)

    wall, rss, out = timed([BIN, "index", os.path.join(foreign, "v1")] + lim)
    rows.append(("`index` of the bare foreign base (order p, o)", wall, rss))
    os.remove(os.path.join(foreign, "v1", "cottas-tui.digests.json"))
    wall, rss, out = timed([BIN, "verify", os.path.join(foreign, "v1")] + lim)
    assert "clean" in out, out
    rows.append(("`verify` of the foreign version, no digests", wall, rss))

    odict = base + ".o.dict"
    with open(odict, "r+b") as f:
        f.seek(os.path.getsize(odict) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x20]))
    wall, rss, out = timed([BIN, "repair", "rebuild-sidecars", ours, "v1", "--yes"] + lim)
    assert "verify: clean" in out, out
    rows.append(("`repair rebuild-sidecars` (one damaged `.o.dict`), with its closing verify", wall, rss))
    wall, rss, out = timed([BIN, "verify", ours] + lim)
    assert "clean" in out, out
    rows.append(("`verify` of ours (digests and rows)", wall, rss))
    wall, rss, out = timed([BIN, "index", os.path.join(ours, "v1")] + lim)
    rows.append(("`index` of ours (every sidecar derived and compared, none replaced)", wall, rss))

    imp = rows[0][1] if not a.reuse else None
    print(f"| step (--memory-limit {a.memory_limit}) | wall s | × import | peak RSS MiB |")
    print("|---|---|---|---|")
    for name, wall, rss in rows:
        ratio = f"{wall / imp:.2f}" if imp else "-"
        print(f"| {name} | {wall:.1f} | {ratio} | {rss:.0f} |")
    if not a.keep:
        shutil.rmtree(foreign, ignore_errors=True)


if __name__ == "__main__":
    main()
