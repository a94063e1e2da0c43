#!/usr/bin/env bash
# Writes the golden fixture of the live state file with an evicted store (kind 15,
# Tests/Fixtures/live-state2/live-state): the live state of format 3's data directory
# (Tests/Fixtures/format3), saved at a close by a server whose memory bound
# (--max-state-memory 1) evicted every store but one. It was run once with the chordstore
# built from the commit that added evicted stores; never regenerate it with a later
# version: the point is that every later version reads exactly this.
# Usage: make-live-state2.sh PATH-TO-chordstore
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../tools/lib/wait-for-port.sh"
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$here/format3" "$work/data"
chmod 700 "$work/data"
port=$((20000 + RANDOM % 20000))
"$bin" serve --data "$work/data" --port "$port" --http-port none --live-state --max-state-memory 1 --log-level error &
pid=$!
wait_for_port "$port" "$pid"
# The store used last stays in memory; the thread that keeps the bound runs within 20 ms.
"$bin" list --server "127.0.0.1:$port" --token-file "$work/data/admin.token" --store songs > /dev/null
sleep 1
kill -INT "$pid"
wait "$pid"
pid=""
mkdir -p "$here/live-state2"
cp "$work/data/live-state" "$here/live-state2/live-state"
