#!/usr/bin/env bash
# TUI measurements, run under tmux (the UI needs a terminal):
#   * time to the first frame on a big store (default: 10M quads; built if missing);
#   * key response (key → frame drawn) in every view, at 80×24 and 200×60, the
#     decoder opened on the base and on the largest sidecar, the default query;
#   * frame times while paging a 1M-batch log, and memory, next to a 10k-batch log.
#
#   benches/tui_bench.sh [QUADS] [WORK_DIR]
# Needs a release build (cargo build --release), python3 and tmux.
set -euo pipefail
cd "$(dirname "$0")/.."
QUADS=${1:-10000000}
WORK=${2:-/tmp/cottas-tui-bench}
BIN=$PWD/target/release/cottas-tui
mkdir -p "$WORK"
STORE=$WORK/s$QUADS
if [ ! -d "$STORE" ]; then
  [ -f "$WORK/lubm-$QUADS.nq" ] || python3 benches/gen_lubm.py "$QUADS" "$WORK/lubm-$QUADS.nq"
  "$BIN" import "$WORK/lubm-$QUADS.nq" --out "$STORE" --quiet
fi

in_tmux() { # in_tmux OUTFILE ENV... -- ARGS...: runs the UI in a tmux pane of $COLS×$ROWS (80×24)
  local out=$1; shift
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  tmux kill-session -t cottas-bench 2>/dev/null || true
  tmux new-session -d -s cottas-bench -x "${COLS:-80}" -y "${ROWS:-24}" "env ${envs[*]} $BIN $* 2>$out; sleep 0.2"
  for _ in $(seq 1 600); do grep -q . "$out" 2>/dev/null && break; sleep 0.1; done
  tmux send-keys -t cottas-bench q 2>/dev/null || true
  sleep 0.3
  tmux kill-session -t cottas-bench 2>/dev/null || true
}

echo "## first frame, $QUADS quads ($(du -shL "$STORE" | cut -f1) on disk)"
for i in 1 2 3; do
  in_tmux "$WORK/ff.txt" COTTAS_TUI_FIRST_FRAME=1 -- "$STORE"
  cat "$WORK/ff.txt"
done

for SIZE in "80 24" "200 60"; do
  read -r COLS ROWS <<< "$SIZE"
  echo "## key response, $QUADS quads, ${COLS}×${ROWS}"
  COLS=$COLS ROWS=$ROWS in_tmux "$WORK/keys.txt" COTTAS_TUI_BENCH_KEYS=1 -- "$STORE"
  cat "$WORK/keys.txt"
done

for N in 10000 1000000; do
  LOGSTORE=$WORK/log$N
  if [ ! -d "$LOGSTORE" ]; then
    : > "$WORK/empty.nq"
    "$BIN" import "$WORK/empty.nq" --out "$LOGSTORE" --quiet
    python3 benches/gen_log.py "$N" "$LOGSTORE/data.deltalog"
  fi
  echo "## paging the log view, $N batches ($(du -h "$LOGSTORE/data.deltalog" | cut -f1))"
  in_tmux "$WORK/scroll.txt" COTTAS_TUI_BENCH_SCROLL=300 -- "$LOGSTORE"
  cat "$WORK/scroll.txt"
done
