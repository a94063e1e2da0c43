#!/usr/bin/env bash
# Writes the seed corpora of the fuzz harnesses (Fuzz/Corpus/NAME), committed: real
# frames, calls and request payloads encoded with protoc from proto/, and the real log
# records of the format 3 fixture (Tests/Fixtures/format3). Run again after a protocol
# change; tools/fuzz adds what the fuzzer finds elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
out=Fuzz/Corpus
rm -rf "$out"; mkdir -p "$out"/{fuzz-frame,fuzz-call,fuzz-record,fuzz-command}
enc() { protoc -I proto -I /usr/include --encode="chordstore.v1.$1" chordstore/v1/rpc.proto; }
framed() { python3 -c 'import sys; b=sys.stdin.buffer.read(); sys.stdout.buffer.write(len(b).to_bytes(4,"big")+b)'; }
id='\001\225\243\301\000\000p\000\200\000\000\000\000\000\000\012'
n=0
seed_call() {  # method, payload text (of type $3), store, metadata lines
  local method="$1" text="$2" type="$3" store="${4:-}" meta="${5:-}"
  local payload; payload="$(printf '%s' "$text" | enc "$type" | od -An -v -tx1 | tr -d ' \n')"
  local escaped; escaped="$(printf '%s' "$payload" | sed 's/../\\x&/g')"
  local call="call_id: $((n + 1)) method: \"chordstore.v1.ChordStore/$method\" timeout_micros: 5000000 store: \"$store\" payload: \"$escaped\" $meta"
  printf '%s' "$call" | enc Call > "$out/fuzz-call/$n"
  printf 'call { %s }' "$call" | enc Frame | framed > "$out/fuzz-frame/$n"
  n=$((n + 1))
}
bearer='metadata { key: "authorization" value: "Bearer cs1.local-admin.fuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuz" }'
seed_call AddChordset "title: \"Verse\" chords { position: 2 bpm: 96 color { hue: 0.5 purity: 0.25 brightness: 1 alpha: 1 } } context { session: \"alice\" command_id: \"c1\" expected { revision: 3 } }" AddChordsetRequest "" "$bearer"
seed_call RenameChordset "chordset_id: \"$id\" title: \"Chorus\"" RenameChordsetRequest songs "$bearer"
seed_call ListChordsets "limit: 10" ListChordsetsRequest "" 'metadata { key: "session" value: "bob" }'
seed_call GetChordset "chordset_id: \"$id\"" GetChordsetRequest a 'metadata { key: "authorization" value: "Bearer cs1.0123456789ab.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }'
seed_call QueryChordsets "limit: 5" QueryRequest "" "$bearer"
seed_call Replicate "node: \"n2\" address: \"127.0.0.1:7421\" epoch: 1 from_sequence: 1" ReplicateRequest "" 'metadata { key: "cluster-secret" value: "fuzz-cluster-secret" }'
seed_call Fence "epoch: 9 leader: \"127.0.0.1:1\"" FenceRequest "" ""
seed_call CreateToken "role: TOKEN_ROLE_READ_ONLY store: \"a\"" CreateTokenRequest "" "$bearer"
seed_call Health "" HealthRequest "" ""
# Cancel and two frames in one input.
printf 'cancel { call_id: 7 }' | enc Frame | framed > "$out/fuzz-frame/cancel"
cat "$out/fuzz-frame/0" "$out/fuzz-frame/1" > "$out/fuzz-frame/two"
# A key padded past five bytes, which SwiftProtobuf refuses (found by fuzz-frame, 2026-11-30).
printf '\x00\x00\x00\x07\x8a\x80\x80\x80\x80\x00\x00' > "$out/fuzz-frame/long-key"
# The frame fuzz-frame found (an unknown field's key in six bytes, then an empty call).
echo 'AAAAfPDcg7+DAABoAHJvZAAAc3RvcmUudjFPcHRpb24AAAAA8D9AAABFCkMIAxImY2hvcmRzJ3RvcmVhbC5DaG9yZIO/gwAAcAByaG9yZHNkU3RvcmUvTCIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIAAAA6CgA=' | base64 -d > "$out/fuzz-frame/long-key-found"
# Payloads for the command harness: first byte = index of the method in Method.allCases.
payload() { printf "\\$(printf '%03o' "$1")" > "$out/fuzz-command/$2"; printf '%s' "$3" | enc "$4" >> "$out/fuzz-command/$2"; }
payload 0 add "title: \"Verse\" chords { position: 7 bpm: 120 } creation_micros: 1700000000000000" AddChordsetRequest
payload 1 rename "chordset_id: \"$id\" title: \"x\"" RenameChordsetRequest
payload 3 color "chord_id: \"$id\" color { hue: 1 purity: 1 brightness: 1 alpha: 0.5 }" SetChordColorRequest
payload 4 bpm "chord_id: \"$id\" bpm: 300" SetChordBpmRequest
payload 5 controls "bpm: 90 color { hue: 0.1 }" SetControlsChordRequest
payload 6 move "chordset_id: \"$id\" to_index: 3" MoveChordsetRequest
payload 9 get "chordset_id: \"$id\"" GetChordsetRequest
payload 12 profile "" GetProfileRequest
# Records: the log of the format 3 fixture, one file per record.
mdb_dump -s log Tests/Fixtures/format3 | python3 -c '
import sys
lines=[l.strip() for l in sys.stdin if l.startswith(" ")]
values=lines[1::2]
for i,v in enumerate(values):
    open(sys.argv[1]+"/%02d"%i,"wb").write(bytes.fromhex(v))
' "$out/fuzz-record"
# Records with tokens (token_created, token_revoked, token_id): from a server of this
# version, when one is built (.build/debug/chordstore).
bin=.build/debug/chordstore
if [ -x "$bin" ]; then
  work="$(mktemp -d)"
  "$bin" serve --data "$work/d" --port 0 --log-level notice 2>"$work/log" &
  pid=$!
  for _ in $(seq 100); do grep -q 'address=' "$work/log" && break; sleep 0.1; done
  port="$(sed -n 's/.*address=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/log" | head -1)"
  cs() { CHORDSTORE_DATA="$work/d" "$bin" --server "127.0.0.1:$port" "$@" >/dev/null 2>&1; }
  cs store create a
  cs token create --role read-write --store a
  cs --store a add "Token's"
  id="$(CHORDSTORE_DATA="$work/d" "$bin" --server "127.0.0.1:$port" --json token list | python3 -c 'import json,sys; print([t["tokenId"] for t in json.load(sys.stdin)["tokens"] if t["tokenId"] != "local-admin"][0])')"
  cs token revoke "$id"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  mdb_dump -s log "$work/d" | python3 -c '
import sys
lines=[l.strip() for l in sys.stdin if l.startswith(" ")]
for i,v in enumerate(lines[1::2]):
    open(sys.argv[1]+"/token-%02d"%i,"wb").write(bytes.fromhex(v))
' "$out/fuzz-record"
  rm -rf "$work"
fi
ls "$out"/* | wc -l
