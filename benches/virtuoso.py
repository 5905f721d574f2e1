#!/usr/bin/env python3
"""Virtuoso 7.2 (Debian's `virtuoso-opensource`) as a benchmark anchor.

Keeps a database of its own under a work directory (its own virtuoso.ini,
made from the package's, with buffers for a 10M-quad store, its SPARQL
endpoint on a port given here, the data directory allowed for the bulk
loader), starts `virtuoso-t` in the foreground, and bulk-loads an N-Quads
file with the RDF bulk loader (`ld_dir` + `rdf_loader_run`, then a
checkpoint), so each quad keeps its graph. `apt-get install
virtuoso-opensource` provides `virtuoso-t` and `isql-vt`.

    python3 benches/virtuoso.py --work /work/bench/virt --load /work/bench/l10m.nq
        # loads (once; the database stays in --work), then stops

Other benchmarks `import virtuoso` and call `start(work, http_port)`.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import time

PACKAGE_INI = "/etc/virtuoso-opensource-7/virtuoso.ini"
ISQL_PORT = 1111


def write_ini(work, http_port, data_dir):
    text = open(PACKAGE_INI).read()
    db = os.path.join(work, "db")
    os.makedirs(db, exist_ok=True)
    text = text.replace("/var/lib/virtuoso-opensource-7/db", db)
    text = re.sub(r"(?m)^ServerPort(\s*)=\s*1111", f"ServerPort\\1= {ISQL_PORT}", text)
    text = re.sub(r"(?m)^(\[HTTPServer\]\s*\nServerPort\s*=\s*)\d+", f"\\g<1>{http_port}", text)
    text = re.sub(r"(?m)^DirsAllowed\s*=.*$", f"DirsAllowed = ., /usr/share/virtuoso-opensource-7/vad, {data_dir}", text)
    # The package's 8 GB line: the store and its indexes stay in memory.
    text = re.sub(r"(?m)^NumberOfBuffers\s*=\s*10000", "NumberOfBuffers = 680000", text)
    text = re.sub(r"(?m)^MaxDirtyBuffers\s*=\s*6000", "MaxDirtyBuffers = 500000", text)
    # As many HTTP threads as the largest client count the benchmarks use.
    text = re.sub(r"(?m)^ServerThreads(\s*)=\s*10$", "ServerThreads\\1= 64", text)
    text = re.sub(r"(?m)^ResultSetMaxRows(\s*)=.*$", "ResultSetMaxRows\\1= 10000000", text)
    path = os.path.join(work, "virtuoso.ini")
    open(path, "w").write(text)
    return path


def wait_for(port, proc, seconds=300):
    for _ in range(seconds * 10):
        if proc.poll() is not None:
            sys.exit(f"virtuoso-t exited with {proc.returncode}: see its log under the work directory")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"virtuoso-t did not open port {port}")


def start(work, http_port, data_dir="/nonexistent"):
    """Starts Virtuoso on its database under `work`; returns the process."""
    if not shutil.which("virtuoso-t"):
        sys.exit("virtuoso-t is not installed: apt-get install virtuoso-opensource")
    ini = write_ini(work, http_port, data_dir)
    proc = subprocess.Popen(["virtuoso-t", "+foreground", "+configfile", ini], cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(ISQL_PORT, proc)
    wait_for(http_port, proc)
    return proc


def isql(statement, harmless=None):
    """Runs one statement; an error is fatal unless its text holds `harmless`."""
    out = subprocess.run(["isql-vt", str(ISQL_PORT), "dba", "dba", f"exec={statement}"],
                         capture_output=True, text=True)
    text = out.stdout + out.stderr
    if harmless and harmless in text:
        return text
    if out.returncode != 0 or "*** Error" in text:
        sys.exit(f"isql-vt: {statement}: {out.stdout}{out.stderr}")
    return out.stdout


def load(nq):
    """Bulk-loads `nq` (N-Quads: each quad into its own graph)."""
    data_dir, name = os.path.split(os.path.abspath(nq))
    isql(f"ld_dir('{data_dir}', '{name}', 'urn:default')")
    isql("rdf_loader_run()")
    isql("checkpoint")
    return isql("SPARQL SELECT COUNT(*) WHERE { GRAPH ?g { ?s ?p ?o } }")


def stop(proc):
    try:
        isql("shutdown")
    except SystemExit:
        pass
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--work", required=True)
    a.add_argument("--load", required=True, help="an N-Quads file")
    a.add_argument("--http-port", type=int, default=8890)
    args = a.parse_args()
    os.makedirs(args.work, exist_ok=True)
    started = time.time()
    proc = start(args.work, args.http_port, os.path.dirname(os.path.abspath(args.load)))
    try:
        counted = load(args.load)
        print(f"loaded in {time.time() - started:.0f} s: {counted.strip()}")
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
