#!/usr/bin/env bash
# Writes the golden fixture of the live state file's format 1 (Tests/Fixtures/live-state1/
# live-state): the live state of format 3's data directory (Tests/Fixtures/format3), as the
# server saves it at a close. It was run once with the chordstore built from the commit
# that added the file; never regenerate it with a later version: the point is that every
# later version reads exactly this. Usage: make-live-state1.sh PATH-TO-chordstore
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
"$bin" serve --data "$work/data" --port "$port" --http-port none --live-state --log-level error &
pid=$!
wait_for_port "$port" "$pid"
kill -INT "$pid"
wait "$pid"
pid=""
mkdir -p "$here/live-state1"
cp "$work/data/live-state" "$here/live-state1/live-state"
