#!/usr/bin/env bash
# Writes the golden fixtures of the backup format (backup_format 1, data format 4) and of
# the export format (chordstore_export 1): Tests/Fixtures/backup1/ (what `chordstore
# backup` writes), Tests/Fixtures/export1.jsonl (what `chordstore export` writes) and
# Tests/Fixtures/backup1-expected/ (what that binary printed after restoring the backup
# and importing the export). It was run once with the chordstore built from commit
# 34e2420; never regenerate it with a later version: every later version must restore
# and import exactly these. Usage: make-backup1.sh PATH-TO-chordstore
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$work/data"
cs() { "$bin" --data "$data" "$@"; }
a=0195a3c1-0000-7000-8000-0000000001a1
b=0195a3c1-0000-7000-8000-0000000001b2
cs --session alice add "Verse" --id $a --bpm 96 >/dev/null
cs --session alice add "Chorus" --id $b >/dev/null
cs --session alice rename $a "Verse 1" >/dev/null
chord=$(cs --json show $b | python3 -c 'import json,sys; print(json.load(sys.stdin)["chords"][3]["id"])')
cs --session bob set-color "$chord" --hue 0.25 --purity 0.5 --brightness 0.75 --alpha 1 >/dev/null
cs --session bob set-controls --bpm 100 --hue 0.1 --purity 0.2 --brightness 0.3 >/dev/null
cs --session alice delete $b >/dev/null
cs --session alice undo >/dev/null
cs store create songs >/dev/null
cs --store songs --session carol add "Intro" --id 0195a3c1-0000-7000-8000-0000000001c3 --bpm 80 >/dev/null
rm -rf "$here/backup1" "$here/backup1-expected" "$here/export1.jsonl"
"$bin" backup --data "$data" --to "$here/backup1" >/dev/null
cs export --out "$here/export1.jsonl" >/dev/null
mkdir -p "$here/backup1-expected"
"$bin" restore --from "$here/backup1" --data "$work/restored" >/dev/null
"$bin" --data "$work/restored" --json list >"$here/backup1-expected/restored-list.json"
"$bin" --data "$work/restored" --json log >"$here/backup1-expected/restored-log.json"
"$bin" --data "$work/restored" --store songs --json list >"$here/backup1-expected/restored-songs-list.json"
"$bin" --data "$work/imported" --store moved import "$here/export1.jsonl" >/dev/null
"$bin" --data "$work/imported" --store moved --json list >"$here/backup1-expected/imported-list.json"
"$bin" --data "$work/imported" --store moved --session alice session >"$here/backup1-expected/imported-session-alice.txt"
