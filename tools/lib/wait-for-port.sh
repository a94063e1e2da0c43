# wait_for_port PORT PID [SECONDS] [INTERVAL]: waits until a server listens on
# 127.0.0.1:PORT. Returns 0 once the port accepts a connection; prints why and returns 1
# when process PID exits first, or when SECONDS (default 30) pass without it. INTERVAL is
# the pause between tries (default 0.05 s; a script that times a start polls finer).
# Shared by the benchmarks that start a server (tools/bench/ab, stores, restart, mallocs).
wait_for_port() {
  local port="$1" pid="$2" limit="${3:-30}" interval="${4:-0.05}"
  local deadline=$((SECONDS + limit))
  until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "the server (pid $pid) exited before it listened on port $port" >&2; return 1; }
    [ "$SECONDS" -lt "$deadline" ] || { echo "the server (pid $pid) did not listen on port $port within $limit s" >&2; return 1; }
    sleep "$interval"
  done
}
