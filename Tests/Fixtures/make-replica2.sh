#!/usr/bin/env bash
# Writes the golden fixture of device replica format 2 (docs/DEVICES.md):
# Tests/Fixtures/replica2/ (a replica directory: its two SQLite files, closed) and
# Tests/Fixtures/replica2-expected/ (what that binary printed reading it). The replica
# copied 2 events of store `songs` and holds 2 pending writes (a rename and an add made
# offline). Run once with the chordstore of the commit that introduced format 2; never
# regenerate it with a later version. Usage: make-replica2.sh PATH-TO-chordstore
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
data="$work/data"
device="$work/device"
"$bin" serve --data "$data" --port 0 --auth none --log-level notice 2>"$work/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q 'address=127.0.0.1:' "$work/server.log" && break; sleep 0.1; done
port=$(grep -o 'address=127.0.0.1:[0-9]*' "$work/server.log" | head -1 | cut -d: -f2)
at=(--server "127.0.0.1:$port")
"$bin" store create songs "${at[@]}" >/dev/null
"$bin" replica --dir "$device" --store songs add "Verse" >/dev/null
"$bin" replica --dir "$device" --store songs add "Chorus" >/dev/null
"$bin" replica --dir "$device" sync "${at[@]}" >/dev/null
id=$("$bin" replica --dir "$device" --json list | python3 -c 'import json,sys; print(json.load(sys.stdin)["chordsets"][1]["id"])')
"$bin" replica --dir "$device" rename "$id" "Chorus (offline)" >/dev/null
"$bin" replica --dir "$device" add "Bridge (offline)" >/dev/null
rm -rf "$here/replica2" "$here/replica2-expected"
mkdir -p "$here/replica2" "$here/replica2-expected"
cp "$device/queue.sqlite" "$device/events.sqlite" "$here/replica2/"
"$bin" replica --dir "$device" --json list >"$here/replica2-expected/list.json"
"$bin" replica --dir "$device" status | grep -v '^  \|^session' >"$here/replica2-expected/status.txt"
echo "wrote $here/replica2 and $here/replica2-expected"
