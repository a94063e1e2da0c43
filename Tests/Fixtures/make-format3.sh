#!/usr/bin/env bash
# Writes the golden fixture of on-disk format 3 (views layout 7), stores without tokens:
# Tests/Fixtures/format3/ (the data directory, compacted with mdb_copy -c) and
# Tests/Fixtures/format3-expected/ (what that binary printed when reading it, in store
# default and in store `songs`, and after one more undo and redo). It was run once with
# the chordstore built from commit db3f14c; never regenerate it with a later version: the
# point is that every later version reads exactly this. Usage: make-format3.sh PATH-TO-OLD-chordstore
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$work/data"
cs() { "$bin" --data "$data" "$@"; }
a=0195a3c1-0000-7000-8000-00000000000a
b=0195a3c1-0000-7000-8000-00000000000b
c=0195a3c1-0000-7000-8000-00000000000c
d=0195a3c1-0000-7000-8000-00000000000d
cs --session alice add "Verse" --id $a --bpm 96 >/dev/null
cs --session alice add "Chorus" --id $b >/dev/null
cs --session bob add "Bridge" --id $c --bpm 140 >/dev/null
cs --session bob add "Outro" --id $d >/dev/null
cs --session alice rename $a "Verse 1" >/dev/null
chord=$(cs --json show $b | python3 -c 'import json,sys; print(json.load(sys.stdin)["chords"][3]["id"])')
cs --session alice set-color "$chord" --hue 0.25 --purity 0.5 --brightness 0.75 --alpha 1 >/dev/null
cs --session bob set-bpm "$chord" 121.5 >/dev/null
cs --session bob set-controls --bpm 100 --hue 0.1 --purity 0.2 --brightness 0.3 >/dev/null
cs --session alice move $d 0 >/dev/null
cs --session bob delete $c >/dev/null
cs --session alice undo >/dev/null                       # the move
cs --session alice redo >/dev/null
cs --session alice undo >/dev/null
cs --session bob delete-all --yes >/dev/null
cs --session bob undo >/dev/null                         # restores them
cs --session alice rename $b "Chorus (loud)" >/dev/null
cs --session alice undo >/dev/null
cs store create songs >/dev/null
cs store create gone >/dev/null
cs --store songs --session carol add "Intro" --id 0195a3c1-0000-7000-8000-0000000000e1 --bpm 80 >/dev/null
cs --store gone add "Lost" >/dev/null
cs --store songs --session carol add "Coda" --id 0195a3c1-0000-7000-8000-0000000000e2 >/dev/null
cs store delete gone --yes >/dev/null
cs --store songs --session carol rename 0195a3c1-0000-7000-8000-0000000000e1 "Intro (soft)" >/dev/null
cs --store songs --session carol undo >/dev/null
cs --session alice add "After stores" --id 0195a3c1-0000-7000-8000-0000000000f1 >/dev/null
rm -rf "$here/format3" "$here/format3-expected"
mkdir -p "$here/format3/views" "$here/format3-expected"
mdb_copy -c "$data" "$here/format3"
mdb_copy -c "$data/views" "$here/format3/views"
cp "$data/views/open" "$here/format3/views/open" 2>/dev/null || true
out="$here/format3-expected"
dump() {  # $1: directory, $2: file prefix
  local dir="$1" p="$2"
  "$bin" --data "$dir" --json list > "$out/$p-list.json"
  "$bin" --data "$dir" --json list --sort title > "$out/$p-list-title.json"
  "$bin" --data "$dir" --json list --sort index > "$out/$p-list-index.json"
  "$bin" --data "$dir" --json profile > "$out/$p-profile.json"
  "$bin" --data "$dir" --json log > "$out/$p-log.json"
  "$bin" --data "$dir" --json list --as-of 6 > "$out/$p-list-asof6.json"
  for s in alice bob; do "$bin" --data "$dir" --session $s --json session > "$out/$p-session-$s.json"; done
  for id in $a $b $c $d; do "$bin" --data "$dir" --json history $id > "$out/$p-history-${id: -1}.json"; done
  "$bin" --data "$dir" --store songs --json list > "$out/$p-songs-list.json"
  "$bin" --data "$dir" --store songs --json log > "$out/$p-songs-log.json"
  "$bin" --data "$dir" --store songs --session carol --json session > "$out/$p-songs-session-carol.json"
  "$bin" --data "$dir" --json store list > "$out/$p-stores.json"
}
dump "$data" open
cs --session alice undo > "$out/undo-alice.json" 2>&1 || true
cs --session bob --json undo > "$out/undo-bob.json"
cs --session bob --json redo > "$out/redo-bob.json"
dump "$data" after
