# Three ChordStore members on 127.0.0.1, for the benchmarks' three-member rows
# (tools/bench/ab --cluster, tools/bench/threads --cluster, compare's add-cluster row):
# n1 leads with quorum writes (--durability quorum), n2 and n3 follow it, and all three
# share a fresh cluster secret. Needs python3 (for free_port) and the binary's own CLI
# (for the followers' check).

# free_port: prints a TCP port on 127.0.0.1 that is free now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_cluster BINARY DIR "PORT1 PORT2 PORT3" "HTTP1 HTTP2 HTTP3" [SERVE_FLAGS...]: starts
# the members, member i serving PORTi (its console on HTTPi, `none` for none), with its
# data in DIR/ni and its log (stderr) in DIR/ni.log, SERVE_FLAGS added to each; appends
# their pids to the array `cluster_pids` (the caller stops them); returns once the leader
# wrote its admin token, DIR/n1/admin.token (1 if it did not within 10 s).
start_cluster() {
  local bin="$1" dir="$2" i j
  local ports=($3) http=($4)
  shift 4
  head -c 32 /dev/urandom | base64 >"$dir/cluster.secret"
  chmod 600 "$dir/cluster.secret"
  for i in 0 1 2; do
    local peers=() role=(--durability quorum)
    for j in 0 1 2; do [ "$j" != "$i" ] && peers+=(--peer "127.0.0.1:${ports[$j]}"); done
    [ "$i" != 0 ] && role=(--follow "127.0.0.1:${ports[0]}")
    "$bin" serve --host 127.0.0.1 --port "${ports[$i]}" --advertise "127.0.0.1:${ports[$i]}" --node "n$((i + 1))" \
      --data "$dir/n$((i + 1))" "${peers[@]}" "${role[@]}" --cluster-secret-file "$dir/cluster.secret" \
      --log-level warning --http-port "${http[$i]}" "$@" 2>"$dir/n$((i + 1)).log" &
    cluster_pids+=($!)
    if [ "$i" = 0 ]; then
      for _ in $(seq 100); do [ -f "$dir/n1/admin.token" ] && break; sleep 0.1; done
      [ -f "$dir/n1/admin.token" ] || return 1
    fi
  done
}

# followers_acked BINARY PORT1: prints how many followers the leader on PORT1 lists as
# having acknowledged (2 once both joined). Uses CHORDSTORE_TOKEN_FILE (the leader's token).
followers_acked() {
  "$1" --server "127.0.0.1:$2" status 2>/dev/null | grep -c 'follower n.*acked' || true
}

# await_followers BINARY PORT1: waits, up to 20 s, until both followers joined the leader
# on PORT1 (followers_acked); returns 1 if they did not.
await_followers() {
  for _ in $(seq 100); do
    [ "$(followers_acked "$1" "$2")" = 2 ] && return 0
    sleep 0.2
  done
  return 1
}
